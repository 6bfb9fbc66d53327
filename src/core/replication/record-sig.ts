/**
 * Record signatures, one per record or one per batch (docs/architecture.md, "Records"; docs/security.md,
 * "Record signatures").
 *
 * A record's `sig` is hex in one of two forms, told apart by length:
 * - **single** (65 bytes): the origin's secp256k1 signature `r ‖ s ‖ v` over the record's digest;
 * - **batch** (66 + 32·d bytes, 1 ≤ d ≤ {@link MAX_BATCH_DEPTH}): `sig ‖ index ‖ sibling₁ … sibling_d`.
 *   The records an origin commits together are the leaves (their digests) of a Merkle tree of 2^d
 *   leaves, the unused ones 32 zero bytes; `sig` is the origin's signature over the tree's root and
 *   its depth, and the siblings are the record's path from its leaf (`index`) to the root.
 *
 * Either way a record carries everything needed to check it alone: a member, a node catching up or a
 * restored archive verifies each record by itself, exactly as before. What a batch saves is the
 * ECDSA: its origin signs once for up to 2^{@link MAX_BATCH_DEPTH} records, and a receiver that
 * gets several of them in one message verifies the signature once ({@link verifyRecordSigs}).
 *
 * The tree's inner nodes and its root are hashed under their own tags, apart from the record digest's:
 * an inner node cannot pass for a record, nor a root for a single record's digest. Forging a leaf
 * takes a second preimage of SHA-256.
 */
import { signDigest, taggedHash, toHex, fromHex, verifyDigest, type VerifyItem } from '../../crypto/index.ts';

/** Deepest batch tree: at most 2^3 = 8 records under one signature (each carries 3 siblings, 98 bytes more than a single signature). */
export const MAX_BATCH_DEPTH = 3;
/** Most records under one batch signature. */
export const MAX_BATCH_LEAVES = 2 ** MAX_BATCH_DEPTH;

const SIG_BYTES = 65;
const HASH_BYTES = 32;
const NODE_TAG = 'quorumkeep/record-batch-node/v1';
const EMPTY_LEAF = new Uint8Array(HASH_BYTES);

/** What a record's signature covers: the 65-byte signature and the 32-byte digest it is over. */
export interface SignedDigest {
  sig: Uint8Array;
  signed: Uint8Array;
}

/** The digest a batch signature is over: the tree's root and depth, bound to the cluster. */
function rootDigest(clusterId: string, root: Uint8Array, depth: number): Uint8Array {
  const message = new Uint8Array(HASH_BYTES + 1);
  message.set(root, 0);
  message[HASH_BYTES] = depth;
  return taggedHash(`quorumkeep/record-batch/v1/${clusterId}`, message);
}

/** What an inner node hashes: its two children, left first. */
function childrenOf(left: Uint8Array, right: Uint8Array): Uint8Array {
  const both = new Uint8Array(2 * HASH_BYTES);
  both.set(left, 0);
  both.set(right, HASH_BYTES);
  return both;
}

function innerNode(left: Uint8Array, right: Uint8Array): Uint8Array {
  return taggedHash(NODE_TAG, childrenOf(left, right));
}

/**
 * What a record's `sig` signs, given the record's digest: the signature and the digest it must be
 * valid over. Undefined when the string is neither form (not hex, a wrong length, an index outside
 * the tree) — a `bad_signature`.
 */
export function signedDigestOf(clusterId: string, sigHex: string, recordDigest: Uint8Array): SignedDigest | undefined {
  let bytes: Uint8Array;
  try {
    bytes = fromHex(sigHex);
  } catch {
    return undefined;
  }
  if (bytes.length === SIG_BYTES) return { sig: bytes, signed: recordDigest };
  const depth = (bytes.length - SIG_BYTES - 1) / HASH_BYTES;
  if (!Number.isInteger(depth) || depth < 1 || depth > MAX_BATCH_DEPTH) return undefined;
  const index = bytes[SIG_BYTES]!;
  if (index >= 2 ** depth) return undefined;
  const tree = treeOf(clusterId, sigHex, depth);
  let node = recordDigest;
  for (let level = 0; level < depth; level++) {
    const at = SIG_BYTES + 1 + level * HASH_BYTES;
    const sibling = bytes.subarray(at, at + HASH_BYTES);
    const right = (index >> level) & 1;
    node = tree.node(level, index >> (level + 1), right ? sibling : node, right ? node : sibling);
  }
  return { sig: bytes.subarray(0, SIG_BYTES), signed: tree.root(node) };
}

/** The inner nodes and root one batch's records led to so far (see {@link treeOf}). */
interface TreeSeen {
  /** The node at `level` + 1, position `position`, over `left ‖ right`. */
  node(level: number, position: number, left: Uint8Array, right: Uint8Array): Uint8Array;
  /** The digest signed for `root`. */
  root(root: Uint8Array): Uint8Array;
}

/** A computed hash and the bytes it was computed over. */
interface Hashed {
  input: Uint8Array;
  out: Uint8Array;
}

let lastTree: { clusterId: string; sigPrefix: string; depth: number; seen: TreeSeen } | undefined;

/**
 * The hashes of the batch whose signature `sigHex` carries, as the records checked just before
 * computed them. A batch's records travel together and their paths share every level but the first:
 * each recomputes nodes its siblings' paths already did (8 records by their paths: 24 inner nodes and
 * 8 roots; 7 and 1 distinct). A node is reused only when its two children are byte for byte those it
 * was computed over, so the result is always the hash of this record's own path — nothing is taken
 * on trust, a wrong path still leads to a wrong root.
 */
function treeOf(clusterId: string, sigHex: string, depth: number): TreeSeen {
  // The signature itself (its `0x` and 65 bytes): the same for every record of the batch.
  const sigPrefix = sigHex.slice(0, 2 + 2 * SIG_BYTES);
  if (lastTree && lastTree.sigPrefix === sigPrefix && lastTree.depth === depth && lastTree.clusterId === clusterId) return lastTree.seen;
  const nodes: Array<Hashed | undefined> = [];
  let root: Hashed | undefined;
  const seen: TreeSeen = {
    node(level, position, left, right) {
      const slot = (1 << (MAX_BATCH_DEPTH - level)) + position;
      const held = nodes[slot];
      if (held && sameBytes(held.input, 0, left) && sameBytes(held.input, HASH_BYTES, right)) return held.out;
      const input = childrenOf(left, right);
      const out = taggedHash(NODE_TAG, input);
      nodes[slot] = { input, out };
      return out;
    },
    root(node) {
      if (root && sameBytes(root.input, 0, node)) return root.out;
      const out = rootDigest(clusterId, node, depth);
      root = { input: node, out };
      return out;
    },
  };
  lastTree = { clusterId, sigPrefix, depth, seen };
  return seen;
}

/** Whether `b` equals `a[from … from + b.length)`. */
function sameBytes(a: Uint8Array, from: number, b: Uint8Array): boolean {
  for (let i = 0; i < b.length; i++) if (a[from + i] !== b[i]) return false;
  return true;
}

/**
 * Sign records by their digests: one signature for a lone record, one per group of up to
 * {@link MAX_BATCH_LEAVES} otherwise (`batch` false: one per record, for a cluster with a node that
 * cannot check the batch form yet). Returns each record's `sig` string, in order.
 */
export function signRecordDigests(clusterId: string, digests: readonly Uint8Array[], signingKey: Uint8Array, batch: boolean): string[] {
  const out: string[] = [];
  for (let from = 0; from < digests.length; from += batch ? MAX_BATCH_LEAVES : 1) {
    const group = digests.slice(from, from + (batch ? MAX_BATCH_LEAVES : 1));
    if (group.length === 1) {
      out.push('0x' + toHex(signDigest(group[0]!, signingKey)));
      continue;
    }
    const depth = Math.ceil(Math.log2(group.length));
    // levels[0] are the leaves, levels[depth] the root.
    const levels: Uint8Array[][] = [Array.from({ length: 2 ** depth }, (_, i) => group[i] ?? EMPTY_LEAF)];
    for (let level = 0; level < depth; level++) {
      const below = levels[level]!;
      const above: Uint8Array[] = [];
      for (let i = 0; i < below.length; i += 2) above.push(innerNode(below[i]!, below[i + 1]!));
      levels.push(above);
    }
    const sig = signDigest(rootDigest(clusterId, levels[depth]![0]!, depth), signingKey);
    for (let i = 0; i < group.length; i++) {
      const bytes = new Uint8Array(SIG_BYTES + 1 + depth * HASH_BYTES);
      bytes.set(sig, 0);
      bytes[SIG_BYTES] = i;
      for (let level = 0; level < depth; level++) bytes.set(levels[level]![(i >> level) ^ 1]!, SIG_BYTES + 1 + level * HASH_BYTES);
      out.push('0x' + toHex(bytes));
    }
  }
  return out;
}

/**
 * Verify many records' signatures, each signature once: records of one batch that travel together
 * share the signature and the root it covers, and are checked by one verification. A record whose
 * path leads to another root is checked on its own (and fails).
 */
export async function verifyRecordSigs(items: ReadonlyArray<SignedDigest & { publicKey: Uint8Array }>, verify: (items: readonly VerifyItem[]) => Promise<boolean[]>): Promise<boolean[]> {
  const unique: VerifyItem[] = [];
  // A batch's records share (signature, root, key): the key is one array per signer and the root one
  // array per batch ({@link treeOf}), so they are matched by identity and the signatures by their
  // bytes. Equal bytes in other arrays are only verified once more.
  const slotsOf = new Map<Uint8Array, Map<Uint8Array, number[]>>();
  const slots = items.map((it) => {
    let byRoot = slotsOf.get(it.publicKey);
    if (!byRoot) slotsOf.set(it.publicKey, (byRoot = new Map()));
    let candidates = byRoot.get(it.signed);
    if (!candidates) byRoot.set(it.signed, (candidates = []));
    const seen = candidates.find((slot) => unique[slot]!.sig.length === it.sig.length && sameBytes(unique[slot]!.sig, 0, it.sig));
    if (seen !== undefined) return seen;
    const slot = unique.push({ sig: it.sig, digest: it.signed, publicKey: it.publicKey }) - 1;
    candidates.push(slot);
    return slot;
  });
  const valid = await verify(unique);
  return slots.map((s) => valid[s] === true);
}

/** One record's signature, checked inline (tests and tools; the engine batches with {@link verifyRecordSigs}). */
export function verifyRecordSig(clusterId: string, sigHex: string, recordDigest: Uint8Array, publicKey: Uint8Array): boolean {
  const s = signedDigestOf(clusterId, sigHex, recordDigest);
  return s !== undefined && verifyDigest(s.sig, s.signed, publicKey);
}
