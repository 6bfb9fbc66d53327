/**
 * Storage and key ports of the secrets capability, implemented by src/store and the composition
 * root. The core never holds a node's private keys: it asks these to open and seal.
 */

/**
 * A member's own shares, encrypted at rest (not replicated), by label: a Web2 secret's id, or
 * `<chainId>:<id>` for a Web3 secret (`shareLabel`, src/core/secrets/rules.ts).
 */
export interface ShareStore {
  get(label: number | string): Promise<Uint8Array | undefined>;
  /** Whether a box is stored for `label` (no decryption, no cache fill): the inventory's cheap look. */
  has(label: number | string): Promise<boolean>;
  /**
   * Which labels have a box, as one ordered pass over the stored keys instead of a point read per
   * label (the inventory's full scan: a point read takes LevelDB's mutex and opens every table whose
   * range holds the key). The answer is as of the pass; puts after it are not in it.
   */
  heldLabels?(): Promise<{ has(label: number | string): boolean }>;
  /** Durable, unless `durable: false` (then durable at the next {@link ShareStore.flush}). */
  put(label: number | string, box: Uint8Array, options?: { durable?: boolean }): Promise<void>;
  /** Make every earlier put durable. */
  flush(): Promise<void>;
}

/** Shares a coordinator still has to deliver: each sealed to its member's key, never in clear. */
export interface PendingShares {
  secretId: number;
  /** The chain of a Web3 secret; absent for Web2. */
  chainId?: number;
  /** Unix ms. */
  createdAt: number;
  retryCount: number;
  /** Unix ms of the last delivery attempt. */
  lastAttemptAt?: number;
  /** Slot (as a string) → the sealed share (base64) and the last error. */
  missing: Record<string, { box: string; error: string }>;
}

/** A coordinator's durable list of undelivered shares (the `secret-failures` operator view). */
export interface PendingShareStore {
  /** A Web2 secret's entry, or a Web3 secret's with its `chainId`. */
  get(secretId: number, chainId?: number): Promise<PendingShares | undefined>;
  /** Durable. */
  put(entry: PendingShares): Promise<void>;
  delete(secretId: number, chainId?: number): Promise<void>;
  list(): AsyncIterable<PendingShares>;
}

/**
 * When a used string may be forgotten (docs/security.md, Share release): a Web2 string at a time, a
 * Web3 string once its chain's head has left its block behind (./used-strings.ts says how far).
 */
export type UsedStringExpiry =
  /** Unix ms from which the entry may be forgotten. */
  | { at: number }
  /** The chain and block number the string was signed at. */
  | { chainId: number; block: number };

/** What a prune forgets (`UsedStringStore.prune`). */
export interface UsedStringHorizon {
  /** Unix ms: Web2 entries whose time is at or before it go. */
  now: number;
  /** Chain id → block: that chain's entries whose block is below it go. A chain not listed keeps every entry. */
  blocksBelow: ReadonlyMap<number, number>;
}

/**
 * Signed strings a node has acted on (docs/security.md, "Share release"): a member releases its share
 * for a decrypt string to one coordinator only — the first it released it to, its holder. Entries can
 * be forgotten once the string is too old to pass the freshness check anyway.
 */
export interface UsedStringStore {
  /**
   * Mark `key` used by `holder` (a coordinator's address), durably. True when it was not used, or
   * was used by `holder` (its mark written); false when another holder used it, or an entry of an
   * older build that names none.
   */
  use(key: string, holder: string, expiry: UsedStringExpiry): Promise<boolean>;
  /** The chains some Web3 entry waits on, ascending. */
  chains(): Promise<number[]>;
  /** Forget the entries past `horizon`; returns how many. Reads only the entries it forgets. */
  prune(horizon: UsedStringHorizon): Promise<number>;
}

/** Operations with this node's private keys (signing key for sealed shares, storage key at rest). */
export interface NodeKeyring {
  /** Open a box sealed to this node's secp256k1 key; undefined when it does not open. */
  openSealed(box: Uint8Array, aad: Uint8Array): Uint8Array | undefined;
  /**
   * {@link openSealed} on the request crypto thread while the event loop is busy (inline at light
   * load): a share dealt to this member, or released to this coordinator, as creates and decrypts
   * come many at once.
   */
  openBox(box: Uint8Array, aad: Uint8Array): Promise<Uint8Array | undefined>;
  /**
   * A share sealed to the coordinator it is released to (`recipient`: its signing public key), on the
   * request crypto thread while the event loop is busy; the caller zeroes `share`.
   */
  sealRelease(recipient: Uint8Array, share: Uint8Array, aad: Uint8Array): Promise<Uint8Array>;
  /** AES-256-GCM under the node's storage key. */
  encryptAtRest(plaintext: Uint8Array, aad: Uint8Array): Uint8Array;
  decryptAtRest(box: Uint8Array, aad: Uint8Array): Uint8Array | undefined;
  /** The x-coordinate of ECDH between this node's signing key and `publicKey` (33 or 65 bytes); the caller zeroes it. */
  ecdhX(publicKey: Uint8Array): Uint8Array;
}
