/**
 * Who signs a route's `data` (./forms.ts): a Web2 session's wallet — an ephemeral secp256k1 key the
 * principal's Ed25519 key vouched for when the session was opened — or a Web3 wallet's own key. Both
 * sign EIP-191 `personal_sign` with the project's crypto (src/crypto/eip191.ts); they differ in the
 * freshness part: Unix ms (Web2, ±10 min of the server's clock) or the chain's latest block (Web3, at
 * most the chain's window behind). After a refusal as stale, `fresh({ renew: true })` gives a better
 * one: the server's clock (from `GET /healthz` `serverTime`) or a block read again.
 */
import { fromHex, toHex, zeroize } from '../crypto/bytes.ts';
import { signPersonalMessage } from '../crypto/eip191.ts';
import { addressOfPrivateKey, isValidPrivateKey } from '../crypto/secp256k1.ts';
import { ClientError } from './errors.ts';
import { WEB2_CHAIN_ID } from './forms.ts';

/** Signs `data` strings for one principal. */
export interface DataSigner {
  /** −1 for a Web2 session, the chain id for a wallet. */
  readonly chainId: number;
  /** The address inside `data`: lowercase `0x` and 40 hex digits. */
  readonly address: string;
  /**
   * The freshness part for a string signed now. `renew` after a refusal as stale: undefined when
   * nothing better can be had (a fixed block number and no RPC), so the refusal stands.
   */
  fresh(options?: { renew?: boolean }): Promise<number | undefined>;
  /** The EIP-191 signature of `data`: `0x` and 130 hex digits. */
  sign(data: string): string;
  /** Zero the private key; the signer signs nothing after. */
  dispose(): void;
}

/** A Web2 session as the client holds it (and `quorumkeep login` stores it: docs/client.md). */
export interface Web2Session {
  readonly principalId: string;
  /** The session wallet's address, lowercase. */
  readonly sessionAddress: string;
  /** The session wallet's private key, 32 bytes: ephemeral, good until `expiresAt`. */
  readonly privateKey: Uint8Array;
  /** When the session ends, Unix ms. */
  readonly expiresAt: number;
  /** The server's clock minus this machine's, in ms, as last measured (0 until a stale refusal). */
  clockOffsetMs: number;
}

/** The JSON form of a {@link Web2Session} (the key as hex): what the CLI's session file holds. */
export interface StoredSession {
  principalId: string;
  sessionAddress: string;
  /** The session wallet's private key, 64 hex digits. */
  sessionKey: string;
  /** ISO-8601. */
  expiresAt: string;
  clockOffsetMs: number;
}

/** A session as JSON (its private key included: keep it where only its owner can read it). */
export function storeSession(session: Web2Session): StoredSession {
  return {
    principalId: session.principalId,
    sessionAddress: session.sessionAddress,
    sessionKey: toHex(session.privateKey),
    expiresAt: new Date(session.expiresAt).toISOString(),
    clockOffsetMs: session.clockOffsetMs,
  };
}

/** A session back from its JSON form; throws `INVALID_INPUT` on anything malformed. */
export function restoreSession(stored: unknown): Web2Session {
  const s = stored as Partial<StoredSession> | null;
  const bad = (what: string) => new ClientError('INVALID_INPUT', `stored session: ${what}`);
  if (typeof s !== 'object' || s === null) throw bad('not an object');
  if (typeof s.principalId !== 'string' || s.principalId === '') throw bad('principalId');
  if (typeof s.sessionKey !== 'string' || !/^[0-9a-f]{64}$/.test(s.sessionKey)) throw bad('sessionKey');
  const expiresAt = typeof s.expiresAt === 'string' ? Date.parse(s.expiresAt) : NaN;
  if (!Number.isFinite(expiresAt)) throw bad('expiresAt');
  const privateKey = fromHex(s.sessionKey);
  const address = isValidPrivateKey(privateKey) ? addressOfPrivateKey(privateKey) : undefined;
  if (address === undefined || address !== s.sessionAddress) {
    zeroize(privateKey);
    throw bad('sessionKey does not match sessionAddress');
  }
  return { principalId: s.principalId, sessionAddress: address, privateKey, expiresAt, clockOffsetMs: Number.isFinite(s.clockOffsetMs) ? Number(s.clockOffsetMs) : 0 };
}

/** What a session signer needs. */
export interface SessionSignerDeps {
  /** This machine's clock, Unix ms. */
  clock: () => number;
  /** The server's clock (`GET /healthz` `serverTime`). */
  serverTime: () => Promise<number>;
}

/** The server's clock minus `clock`, ms: the server read its clock about halfway through the round trip. */
export async function measureClockOffset(deps: SessionSignerDeps): Promise<number> {
  const before = deps.clock();
  const server = await deps.serverTime();
  return Math.round(server - (before + deps.clock()) / 2);
}

/** Sign as a Web2 session: chain −1, freshness = now on the server's clock as last measured. */
export function createSessionSigner(session: Web2Session, deps: SessionSignerDeps): DataSigner {
  let disposed = false;
  // Strictly increasing: two strings signed in one millisecond still differ (a decrypt string is
  // released to one coordinator only: docs/security.md, "Share release").
  let last = 0;
  const now = () => (last = Math.max(deps.clock() + session.clockOffsetMs, last + 1));
  return {
    chainId: WEB2_CHAIN_ID,
    address: session.sessionAddress,
    async fresh(options) {
      if (options?.renew) {
        session.clockOffsetMs = await measureClockOffset(deps);
        last = 0;
      }
      const at = now();
      if (at >= session.expiresAt) throw new ClientError('SESSION_EXPIRED', `the session ended at ${new Date(session.expiresAt).toISOString()}: log in again`);
      return at;
    },
    sign(data) {
      if (disposed) throw new ClientError('NO_SIGNER', 'the session was closed');
      return signPersonalMessage(data, session.privateKey);
    },
    dispose() {
      disposed = true;
      zeroize(session.privateKey);
    },
  };
}

/** A Web3 wallet that signs with its own key. */
export interface WalletOptions {
  /** The wallet's secp256k1 private key: 32 bytes, or 64 hex digits (`0x` optional). Copied; the copy is zeroed by `close()`. */
  privateKey: Uint8Array | string;
  /** An enabled chain of the cluster (`GET /healthz` `supportedChains`). */
  chainId: number;
  /** The chain's JSON-RPC endpoint for `eth_blockNumber`. @default the chain's `rpcUrl` in `GET /healthz` */
  rpcUrl?: string;
  /**
   * The block to sign with, instead of reading the latest from the RPC: a number (used as given; a
   * refusal as too old is then retried with the RPC's block when one is known), or a function asked
   * each time.
   */
  blockNumber?: number | (() => Promise<number>);
}

/** What a wallet signer needs. */
export interface WalletSignerDeps {
  /** The chain's latest block from its RPC (src/client/client.ts reads `eth_blockNumber`). */
  latestBlock: () => Promise<number>;
}

/** The wallet key's bytes, checked. */
function walletKeyBytes(key: Uint8Array | string): Uint8Array {
  let bytes: Uint8Array;
  if (typeof key === 'string') {
    if (!/^(0x)?[0-9a-fA-F]{64}$/.test(key)) throw new ClientError('INVALID_INPUT', 'wallet private key: expected 64 hex digits, 0x optional');
    bytes = fromHex(key);
  } else {
    bytes = new Uint8Array(key);
  }
  if (!isValidPrivateKey(bytes)) {
    zeroize(bytes);
    throw new ClientError('INVALID_INPUT', 'wallet private key: not a valid secp256k1 key');
  }
  return bytes;
}

/** Sign as a Web3 wallet: the chain's id, freshness = a block number. */
export function createWalletSigner(options: WalletOptions, deps: WalletSignerDeps): DataSigner {
  if (!Number.isSafeInteger(options.chainId) || options.chainId <= 0) throw new ClientError('INVALID_INPUT', 'wallet chainId: expected a positive integer');
  const key = walletKeyBytes(options.privateKey);
  const address = addressOfPrivateKey(key);
  const given = options.blockNumber;
  let disposed = false;
  return {
    chainId: options.chainId,
    address,
    async fresh(opts) {
      if (typeof given === 'function') return given();
      if (typeof given === 'number' && !opts?.renew) return given;
      return deps.latestBlock();
    },
    sign(data) {
      if (disposed) throw new ClientError('NO_SIGNER', 'the wallet was closed');
      return signPersonalMessage(data, key);
    },
    dispose() {
      disposed = true;
      zeroize(key);
    },
  };
}
