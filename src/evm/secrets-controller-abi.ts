/**
 * The secrets controller's interface: the contract on each enabled chain that holds Web3 secrets'
 * owner, delegate, sync state, type and `publicKeyCid` (docs/web3.md § "The secrets controller").
 * A verbatim copy of the controller's published ABI, `as const` so viem infers argument and return
 * types; test/integration/chain.test.ts checks the test contract compiles to exactly this interface.
 */
export const secretsControllerAbi = [
  {
    type: 'constructor',
    inputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'MAX_BLACKBOXES',
    inputs: [],
    outputs: [
      { name: '', type: 'uint8', internalType: 'uint8' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'MAX_PUBLIC_KEY_CID_LENGTH',
    inputs: [],
    outputs: [
      { name: '', type: 'uint16', internalType: 'uint16' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'addWhitelistedBlackBox',
    inputs: [
      { name: 'blackBox', type: 'address', internalType: 'address' },
    ],
    outputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'createSecret',
    inputs: [
      { name: 'secretType', type: 'uint8', internalType: 'uint8' },
    ],
    outputs: [
      { name: 'secretId', type: 'uint256', internalType: 'uint256' },
    ],
    stateMutability: 'payable',
  },
  {
    type: 'function',
    name: 'createSecret',
    inputs: [],
    outputs: [
      { name: 'secretId', type: 'uint256', internalType: 'uint256' },
    ],
    stateMutability: 'payable',
  },
  {
    type: 'function',
    name: 'defaultSecretType',
    inputs: [],
    outputs: [
      { name: '', type: 'uint8', internalType: 'uint8' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'getAllBlackBoxes',
    inputs: [],
    outputs: [
      { name: '', type: 'address[]', internalType: 'address[]' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'getBlackBoxCount',
    inputs: [],
    outputs: [
      { name: '', type: 'uint8', internalType: 'uint8' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'getDelegate',
    inputs: [
      { name: 'secretId', type: 'uint256', internalType: 'uint256' },
    ],
    outputs: [
      { name: '', type: 'address', internalType: 'address' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'getSecretOwner',
    inputs: [
      { name: 'secretId', type: 'uint256', internalType: 'uint256' },
    ],
    outputs: [
      { name: '', type: 'address', internalType: 'address' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'getSecretState',
    inputs: [
      { name: 'secretId', type: 'uint256', internalType: 'uint256' },
    ],
    outputs: [
      { name: '', type: 'address', internalType: 'address' },
      { name: '', type: 'address', internalType: 'address' },
      { name: '', type: 'bool', internalType: 'bool' },
      { name: '', type: 'uint8', internalType: 'uint8' },
      { name: '', type: 'uint8', internalType: 'uint8' },
      { name: '', type: 'string', internalType: 'string' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'getSecretsByWallet',
    inputs: [
      { name: 'wallet', type: 'address', internalType: 'address' },
    ],
    outputs: [
      { name: 'owned', type: 'uint256[]', internalType: 'uint256[]' },
      { name: 'delegated', type: 'uint256[]', internalType: 'uint256[]' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'getSecretsCountByWallet',
    inputs: [
      { name: 'wallet', type: 'address', internalType: 'address' },
    ],
    outputs: [
      { name: 'ownedCount', type: 'uint256', internalType: 'uint256' },
      { name: 'delegatedCount', type: 'uint256', internalType: 'uint256' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'initialize',
    inputs: [
      { name: '_secretCreationFee', type: 'uint256', internalType: 'uint256' },
      { name: '_defaultSecretType', type: 'uint8', internalType: 'uint8' },
    ],
    outputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'isBlackBoxWhitelisted',
    inputs: [
      { name: 'blackBox', type: 'address', internalType: 'address' },
    ],
    outputs: [
      { name: '', type: 'bool', internalType: 'bool' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'markSecretSynced',
    inputs: [
      { name: 'secretId', type: 'uint256', internalType: 'uint256' },
      { name: 'clusterId', type: 'uint8', internalType: 'uint8' },
      { name: 'publicKeyCid', type: 'string', internalType: 'string' },
    ],
    outputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'nextSecretId',
    inputs: [],
    outputs: [
      { name: '', type: 'uint256', internalType: 'uint256' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'owner',
    inputs: [],
    outputs: [
      { name: '', type: 'address', internalType: 'address' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'removeWhitelistedBlackBox',
    inputs: [
      { name: 'blackBox', type: 'address', internalType: 'address' },
    ],
    outputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'renounceOwnership',
    inputs: [],
    outputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'secretCreationFee',
    inputs: [],
    outputs: [
      { name: '', type: 'uint256', internalType: 'uint256' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'secrets',
    inputs: [
      { name: '', type: 'uint256', internalType: 'uint256' },
    ],
    outputs: [
      { name: 'owner', type: 'address', internalType: 'address' },
      { name: 'delegate', type: 'address', internalType: 'address' },
      { name: 'isSyncing', type: 'bool', internalType: 'bool' },
      { name: 'clusterId', type: 'uint8', internalType: 'uint8' },
      { name: 'secretType', type: 'uint8', internalType: 'uint8' },
      { name: 'publicKeyCid', type: 'string', internalType: 'string' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'setDefaultSecretType',
    inputs: [
      { name: '_type', type: 'uint8', internalType: 'uint8' },
    ],
    outputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'setDelegate',
    inputs: [
      { name: 'secretId', type: 'uint256', internalType: 'uint256' },
      { name: 'newDelegate', type: 'address', internalType: 'address' },
    ],
    outputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'setSecretCreationFee',
    inputs: [
      { name: '_fee', type: 'uint256', internalType: 'uint256' },
    ],
    outputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'transferOwnership',
    inputs: [
      { name: 'newOwner', type: 'address', internalType: 'address' },
    ],
    outputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'transferSecret',
    inputs: [
      { name: 'secretId', type: 'uint256', internalType: 'uint256' },
      { name: 'newOwner', type: 'address', internalType: 'address' },
    ],
    outputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'whitelistedBlackBoxes',
    inputs: [
      { name: '', type: 'address', internalType: 'address' },
    ],
    outputs: [
      { name: '', type: 'bool', internalType: 'bool' },
    ],
    stateMutability: 'view',
  },
  {
    type: 'function',
    name: 'withdrawBalance',
    inputs: [
      { name: 'to', type: 'address', internalType: 'address payable' },
      { name: 'amount', type: 'uint256', internalType: 'uint256' },
    ],
    outputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'event',
    name: 'BalanceWithdrawn',
    inputs: [
      { name: 'to', type: 'address', indexed: true, internalType: 'address' },
      { name: 'amount', type: 'uint256', indexed: false, internalType: 'uint256' },
    ],
    anonymous: false,
  },
  {
    type: 'event',
    name: 'BlackBoxRemoved',
    inputs: [
      { name: 'blackBox', type: 'address', indexed: true, internalType: 'address' },
    ],
    anonymous: false,
  },
  {
    type: 'event',
    name: 'BlackBoxWhitelisted',
    inputs: [
      { name: 'blackBox', type: 'address', indexed: true, internalType: 'address' },
    ],
    anonymous: false,
  },
  {
    type: 'event',
    name: 'DefaultSecretTypeUpdated',
    inputs: [
      { name: 'oldType', type: 'uint8', indexed: false, internalType: 'uint8' },
      { name: 'newType', type: 'uint8', indexed: false, internalType: 'uint8' },
    ],
    anonymous: false,
  },
  {
    type: 'event',
    name: 'DelegateUpdated',
    inputs: [
      { name: 'secretId', type: 'uint256', indexed: true, internalType: 'uint256' },
      { name: 'newDelegate', type: 'address', indexed: true, internalType: 'address' },
    ],
    anonymous: false,
  },
  {
    type: 'event',
    name: 'Initialized',
    inputs: [
      { name: 'version', type: 'uint8', indexed: false, internalType: 'uint8' },
    ],
    anonymous: false,
  },
  {
    type: 'event',
    name: 'OwnershipTransferred',
    inputs: [
      { name: 'previousOwner', type: 'address', indexed: true, internalType: 'address' },
      { name: 'newOwner', type: 'address', indexed: true, internalType: 'address' },
    ],
    anonymous: false,
  },
  {
    type: 'event',
    name: 'SecretCreated',
    inputs: [
      { name: 'secretId', type: 'uint256', indexed: true, internalType: 'uint256' },
      { name: 'owner', type: 'address', indexed: true, internalType: 'address' },
      { name: 'secretType', type: 'uint8', indexed: false, internalType: 'uint8' },
    ],
    anonymous: false,
  },
  {
    type: 'event',
    name: 'SecretCreationFeeUpdated',
    inputs: [
      { name: 'oldFee', type: 'uint256', indexed: false, internalType: 'uint256' },
      { name: 'newFee', type: 'uint256', indexed: false, internalType: 'uint256' },
    ],
    anonymous: false,
  },
  {
    type: 'event',
    name: 'SecretOwnershipTransferred',
    inputs: [
      { name: 'secretId', type: 'uint256', indexed: true, internalType: 'uint256' },
      { name: 'oldOwner', type: 'address', indexed: true, internalType: 'address' },
      { name: 'newOwner', type: 'address', indexed: true, internalType: 'address' },
    ],
    anonymous: false,
  },
  {
    type: 'event',
    name: 'SecretSynced',
    inputs: [
      { name: 'secretId', type: 'uint256', indexed: true, internalType: 'uint256' },
      { name: 'clusterId', type: 'uint8', indexed: true, internalType: 'uint8' },
      { name: 'publicKeyCid', type: 'string', indexed: false, internalType: 'string' },
    ],
    anonymous: false,
  },
] as const;
