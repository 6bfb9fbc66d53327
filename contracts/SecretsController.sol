// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

/**
 * @title SecretsController (test double)
 * @notice A stand-in for the production secrets controller, written for quorumkeep's tests on a
 *         local anvil chain. Its ABI is exactly the interface in src/evm/secrets-controller-abi.ts
 *         (docs/web3.md § "The secrets controller"); the semantics below are this contract's own
 *         choices, documented in docs/web3.md § "Test chain", except that it reverts with the
 *         published controller's reason strings wherever those are published (`Secret not found`,
 *         `Not secret owner`, `Incorrect fee`, `Delegate unchanged`, `New owner is zero`,
 *         `Already secret owner`): clients match them. Rebuild the committed artifact
 *         (src/evm/artifacts/secrets-controller.json) with `npm run build:contract`.
 * @dev A plain contract, not behind a proxy: the constructor does nothing and `initialize` runs once,
 *      making its caller the owner. Reverts carry reason strings only (no custom errors), so the
 *      compiled ABI has no `error` entries beyond the interface's.
 */
contract SecretsController {
    /// @notice The most black boxes (cluster nodes allowed to mark secrets synced) at once.
    uint8 public constant MAX_BLACKBOXES = 16;
    /// @notice The longest `publicKeyCid` accepted by `markSecretSynced`, in bytes.
    uint16 public constant MAX_PUBLIC_KEY_CID_LENGTH = 128;

    struct Secret {
        address owner;
        address delegate;
        bool isSyncing;
        uint8 clusterId;
        uint8 secretType;
        string publicKeyCid;
    }

    /// @notice Secrets by id; an id that was never created reads as all zeros.
    mapping(uint256 => Secret) public secrets;
    /// @notice The id the next `createSecret` assigns; ids start at 1.
    uint256 public nextSecretId;
    /// @notice Wei that `createSecret` requires, exactly.
    uint256 public secretCreationFee;
    /// @notice The type `createSecret()` without arguments assigns.
    uint8 public defaultSecretType;
    /// @notice Whether an address may call `markSecretSynced`.
    mapping(address => bool) public whitelistedBlackBoxes;

    address private _owner;
    bool private _initialized;
    address[] private _blackBoxes;

    // Per-wallet id lists with 1-based positions, so adding and removing are O(1) (swap and pop).
    mapping(address => uint256[]) private _owned;
    mapping(uint256 => uint256) private _ownedPosition;
    mapping(address => uint256[]) private _delegated;
    mapping(uint256 => uint256) private _delegatedPosition;

    event Initialized(uint8 version);
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    event SecretCreated(uint256 indexed secretId, address indexed owner, uint8 secretType);
    event SecretSynced(uint256 indexed secretId, uint8 indexed clusterId, string publicKeyCid);
    event DelegateUpdated(uint256 indexed secretId, address indexed newDelegate);
    event SecretOwnershipTransferred(uint256 indexed secretId, address indexed oldOwner, address indexed newOwner);
    event BlackBoxWhitelisted(address indexed blackBox);
    event BlackBoxRemoved(address indexed blackBox);
    event SecretCreationFeeUpdated(uint256 oldFee, uint256 newFee);
    event DefaultSecretTypeUpdated(uint8 oldType, uint8 newType);
    event BalanceWithdrawn(address indexed to, uint256 amount);

    modifier onlyOwner() {
        require(msg.sender == _owner, "caller is not the owner");
        _;
    }

    modifier secretExists(uint256 secretId) {
        // transferSecret refuses the zero address, so a zero owner means "never created".
        require(secrets[secretId].owner != address(0), "Secret not found");
        _;
    }

    modifier onlySecretOwner(uint256 secretId) {
        require(secrets[secretId].owner != address(0), "Secret not found");
        require(secrets[secretId].owner == msg.sender, "Not secret owner");
        _;
    }

    constructor() {}

    // --- Setup and administration (contract owner) ---

    /// @notice Set the fee and default type and make the caller the owner; runs once.
    function initialize(uint256 _secretCreationFee, uint8 _defaultSecretType) external {
        require(!_initialized, "already initialized");
        _initialized = true;
        nextSecretId = 1;
        secretCreationFee = _secretCreationFee;
        defaultSecretType = _defaultSecretType;
        _transferOwnership(msg.sender);
        emit Initialized(1);
    }

    function owner() external view returns (address) {
        return _owner;
    }

    function transferOwnership(address newOwner) external onlyOwner {
        require(newOwner != address(0), "new owner is the zero address");
        _transferOwnership(newOwner);
    }

    function renounceOwnership() external onlyOwner {
        _transferOwnership(address(0));
    }

    function setSecretCreationFee(uint256 _fee) external onlyOwner {
        emit SecretCreationFeeUpdated(secretCreationFee, _fee);
        secretCreationFee = _fee;
    }

    function setDefaultSecretType(uint8 _type) external onlyOwner {
        emit DefaultSecretTypeUpdated(defaultSecretType, _type);
        defaultSecretType = _type;
    }

    /// @notice Send `amount` wei of collected fees to `to`.
    function withdrawBalance(address to, uint256 amount) external onlyOwner {
        require(to != address(0), "recipient is the zero address");
        require(amount <= address(this).balance, "insufficient balance");
        (bool ok, ) = payable(to).call{value: amount}("");
        require(ok, "transfer failed");
        emit BalanceWithdrawn(to, amount);
    }

    function addWhitelistedBlackBox(address blackBox) external onlyOwner {
        require(blackBox != address(0), "black box is the zero address");
        require(!whitelistedBlackBoxes[blackBox], "black box already whitelisted");
        require(_blackBoxes.length < MAX_BLACKBOXES, "too many black boxes");
        whitelistedBlackBoxes[blackBox] = true;
        _blackBoxes.push(blackBox);
        emit BlackBoxWhitelisted(blackBox);
    }

    function removeWhitelistedBlackBox(address blackBox) external onlyOwner {
        require(whitelistedBlackBoxes[blackBox], "black box not whitelisted");
        whitelistedBlackBoxes[blackBox] = false;
        uint256 last = _blackBoxes.length - 1;
        for (uint256 i = 0; i <= last; i++) {
            if (_blackBoxes[i] == blackBox) {
                _blackBoxes[i] = _blackBoxes[last];
                _blackBoxes.pop();
                break;
            }
        }
        emit BlackBoxRemoved(blackBox);
    }

    function isBlackBoxWhitelisted(address blackBox) external view returns (bool) {
        return whitelistedBlackBoxes[blackBox];
    }

    function getAllBlackBoxes() external view returns (address[] memory) {
        return _blackBoxes;
    }

    function getBlackBoxCount() external view returns (uint8) {
        // Bounded by MAX_BLACKBOXES, so the cast cannot truncate.
        return uint8(_blackBoxes.length);
    }

    // --- Secrets ---

    /// @notice Create a secret of the default type, owned by the caller.
    function createSecret() external payable returns (uint256 secretId) {
        return _createSecret(defaultSecretType);
    }

    /// @notice Create a secret of `secretType`, owned by the caller. Any type is accepted: the
    ///         cluster decides which types it serves.
    function createSecret(uint8 secretType) external payable returns (uint256 secretId) {
        return _createSecret(secretType);
    }

    /// @notice Record that the cluster holds the secret's key: only a whitelisted black box, once.
    function markSecretSynced(uint256 secretId, uint8 clusterId, string calldata publicKeyCid) external {
        require(whitelistedBlackBoxes[msg.sender], "caller is not a whitelisted black box");
        Secret storage secret = secrets[secretId];
        require(secret.owner != address(0), "Secret not found");
        require(secret.isSyncing, "already synced");
        require(bytes(publicKeyCid).length > 0, "publicKeyCid is empty");
        require(bytes(publicKeyCid).length <= MAX_PUBLIC_KEY_CID_LENGTH, "publicKeyCid too long");
        secret.isSyncing = false;
        secret.clusterId = clusterId;
        secret.publicKeyCid = publicKeyCid;
        emit SecretSynced(secretId, clusterId, publicKeyCid);
    }

    /// @notice Set or clear (`address(0)`) the secret's delegate; only its owner, and only to a new value.
    function setDelegate(uint256 secretId, address newDelegate) external onlySecretOwner(secretId) {
        require(secrets[secretId].delegate != newDelegate, "Delegate unchanged");
        _setDelegate(secretId, newDelegate);
    }

    /// @notice Give the secret to `newOwner`; only its owner. The delegate is cleared (with a
    ///         `DelegateUpdated(secretId, address(0))` first) — the new owner has not chosen them.
    function transferSecret(uint256 secretId, address newOwner) external onlySecretOwner(secretId) {
        require(newOwner != address(0), "New owner is zero");
        Secret storage secret = secrets[secretId];
        require(secret.owner != newOwner, "Already secret owner");
        if (secret.delegate != address(0)) _setDelegate(secretId, address(0));
        address oldOwner = secret.owner;
        _removeOwned(oldOwner, secretId);
        secret.owner = newOwner;
        _addOwned(newOwner, secretId);
        emit SecretOwnershipTransferred(secretId, oldOwner, newOwner);
    }

    /// @notice (owner, delegate, isSyncing, clusterId, secretType, publicKeyCid); reverts for an
    ///         unknown id (`Secret not found`).
    function getSecretState(uint256 secretId)
        external
        view
        secretExists(secretId)
        returns (address, address, bool, uint8, uint8, string memory)
    {
        Secret storage s = secrets[secretId];
        return (s.owner, s.delegate, s.isSyncing, s.clusterId, s.secretType, s.publicKeyCid);
    }

    function getSecretOwner(uint256 secretId) external view secretExists(secretId) returns (address) {
        return secrets[secretId].owner;
    }

    function getDelegate(uint256 secretId) external view secretExists(secretId) returns (address) {
        return secrets[secretId].delegate;
    }

    /// @notice Ids the wallet owns and ids it is the delegate of (no particular order).
    function getSecretsByWallet(address wallet)
        external
        view
        returns (uint256[] memory owned, uint256[] memory delegated)
    {
        return (_owned[wallet], _delegated[wallet]);
    }

    function getSecretsCountByWallet(address wallet)
        external
        view
        returns (uint256 ownedCount, uint256 delegatedCount)
    {
        return (_owned[wallet].length, _delegated[wallet].length);
    }

    // --- Internals ---

    function _transferOwnership(address newOwner) private {
        address previousOwner = _owner;
        _owner = newOwner;
        emit OwnershipTransferred(previousOwner, newOwner);
    }

    function _createSecret(uint8 secretType) private returns (uint256 secretId) {
        require(_initialized, "not initialized");
        require(msg.value == secretCreationFee, "Incorrect fee");
        secretId = nextSecretId++;
        Secret storage secret = secrets[secretId];
        secret.owner = msg.sender;
        secret.isSyncing = true;
        secret.secretType = secretType;
        _addOwned(msg.sender, secretId);
        emit SecretCreated(secretId, msg.sender, secretType);
    }

    function _setDelegate(uint256 secretId, address newDelegate) private {
        Secret storage secret = secrets[secretId];
        if (secret.delegate != address(0)) _removeDelegated(secret.delegate, secretId);
        secret.delegate = newDelegate;
        if (newDelegate != address(0)) _addDelegated(newDelegate, secretId);
        emit DelegateUpdated(secretId, newDelegate);
    }

    function _addOwned(address wallet, uint256 secretId) private {
        _owned[wallet].push(secretId);
        _ownedPosition[secretId] = _owned[wallet].length;
    }

    function _removeOwned(address wallet, uint256 secretId) private {
        uint256[] storage ids = _owned[wallet];
        uint256 index = _ownedPosition[secretId] - 1;
        uint256 moved = ids[ids.length - 1];
        ids[index] = moved;
        _ownedPosition[moved] = index + 1;
        ids.pop();
        delete _ownedPosition[secretId];
    }

    function _addDelegated(address wallet, uint256 secretId) private {
        _delegated[wallet].push(secretId);
        _delegatedPosition[secretId] = _delegated[wallet].length;
    }

    function _removeDelegated(address wallet, uint256 secretId) private {
        uint256[] storage ids = _delegated[wallet];
        uint256 index = _delegatedPosition[secretId] - 1;
        uint256 moved = ids[ids.length - 1];
        ids[index] = moved;
        _delegatedPosition[moved] = index + 1;
        ids.pop();
        delete _delegatedPosition[secretId];
    }
}
