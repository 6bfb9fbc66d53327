/**
 * Node keys (docs/architecture.md, "Keys and crypto"): an Ed25519 libp2p identity, a secp256k1 signing key
 * (its address is the node's `nodeAddress`) and a 32-byte storage key that encrypts shards at rest.
 * Stored in the keys directory with mode 0600, created on first start when absent.
 */
import { mkdir, readFile, writeFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { generatePrivateKey, publicKeyOf, addressOfPrivateKey, toHex, fromHex, systemRandom } from '../crypto/index.ts';

/** A node's private keys. */
export interface NodeKeys {
  /** libp2p identity (Ed25519). */
  identity: PrivateKey;
  /** secp256k1 private key, 32 bytes. */
  signing: Uint8Array;
  /** AES-256 key for shards at rest, 32 bytes. */
  storage: Uint8Array;
}

/** The public facts of a node's keys, as written to the cluster file. */
export interface NodeKeyFacts {
  peerId: string;
  nodeAddress: string;
  signingPublicKey: string;
}

const IDENTITY_FILE = 'identity.key';
const SIGNING_FILE = 'signing.key';
const STORAGE_FILE = 'storage.key';

/** Generate a fresh key set. */
export async function generateNodeKeys(): Promise<NodeKeys> {
  return {
    identity: await generateKeyPair('Ed25519'),
    signing: generatePrivateKey(),
    storage: systemRandom(32),
  };
}

/** Public facts of a key set. */
export function describeNodeKeys(keys: NodeKeys): NodeKeyFacts {
  return {
    peerId: peerIdFromPrivateKey(keys.identity).toString(),
    nodeAddress: addressOfPrivateKey(keys.signing),
    signingPublicKey: toHex(publicKeyOf(keys.signing, true)),
  };
}

/** Write a key set to `dir` (created 0700), each file 0600. */
export async function writeNodeKeys(dir: string, keys: NodeKeys): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const files: Array<[string, Uint8Array | string]> = [
    [IDENTITY_FILE, privateKeyToProtobuf(keys.identity)],
    [SIGNING_FILE, toHex(keys.signing) + '\n'],
    [STORAGE_FILE, toHex(keys.storage) + '\n'],
  ];
  for (const [name, content] of files) {
    const path = join(dir, name);
    await writeFile(path, content, { mode: 0o600, flag: 'wx' });
    await chmod(path, 0o600);
  }
}

async function readOptional(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Load the key set from `dir`; when none of the files exist, create and store a new one.
 * A partial set is an error (never silently replace an identity).
 */
export async function loadOrCreateNodeKeys(dir: string): Promise<{ keys: NodeKeys; created: boolean }> {
  const [id, sig, sto] = await Promise.all([IDENTITY_FILE, SIGNING_FILE, STORAGE_FILE].map((f) => readOptional(join(dir, f))));
  if (!id && !sig && !sto) {
    const keys = await generateNodeKeys();
    await writeNodeKeys(dir, keys);
    return { keys, created: true };
  }
  if (!id || !sig || !sto) throw new Error(`incomplete key set in ${dir}: expected ${IDENTITY_FILE}, ${SIGNING_FILE} and ${STORAGE_FILE}`);
  const signing = fromHex(sig.toString('utf8').trim());
  const storage = fromHex(sto.toString('utf8').trim());
  if (signing.length !== 32 || storage.length !== 32) throw new Error(`malformed key file in ${dir}`);
  return { keys: { identity: privateKeyFromProtobuf(id), signing, storage }, created: false };
}
