/**
 * A Web2 principal as the SDK holds it: an account, its Ed25519 key, and session wallets (ephemeral
 * secp256k1 keys) that sign the `data` strings of docs/architecture.md, "Signed data strings".
 */
import type { LocalCluster } from 'quorumkeep/testing';
import { WEB2_CHAIN_ID, sessionMessage, signedData } from 'quorumkeep/client';
import { addressOfPrivateKey, generatePrivateKey, signPersonalMessage } from '../../src/crypto/index.ts';
import { postJson, type JsonResponse } from './http.ts';
import { registerKey, verifiedAccount, type newEd25519 } from './web2.ts';

/** A session wallet. */
export interface SessionWallet {
  privateKey: Uint8Array;
  /** Checksum-free lowercase address. */
  address: string;
}

export function newSessionWallet(): SessionWallet {
  const privateKey = generatePrivateKey();
  return { privateKey, address: addressOfPrivateKey(privateKey) };
}

/** Sign `data` with a wallet: the `{ data, signature }` pair of a signed route. */
export function signData(wallet: SessionWallet, data: string): { data: string; signature: string } {
  return { data, signature: signPersonalMessage(data, wallet.privateKey) };
}

/** The body of POST /web2/session for a principal's key and a wallet. */
export function sessionRequest(principalId: string, key: ReturnType<typeof newEd25519>, wallet: SessionWallet, options: { timestamp?: number; ttl?: number } = {}) {
  const timestamp = String(options.timestamp ?? Date.now());
  const message = sessionMessage(principalId, timestamp, wallet.address, options.ttl);
  return { principalId, timestamp, sessionAddress: wallet.address, signature: key.sign(message), ...(options.ttl === undefined ? {} : { ttl: options.ttl }) };
}

/** A verified principal with a registered key. */
export interface Principal {
  email: string;
  password: string;
  principalId: string;
  key: ReturnType<typeof newEd25519>;
  /** The current session wallet (after {@link openSession}). */
  wallet: SessionWallet;
  /** `{ data, signature }` for `-1_<subject>_<address>_<now>[_extra]`, signed by the session wallet. */
  signed(subject: string | number, extra?: string, at?: number): { data: string; signature: string };
}

/** A principal of a verified account and its registered key, with a new session wallet (no session yet). */
export function principalOf(account: { email: string; password: string; principalId: string }, key: ReturnType<typeof newEd25519>): Principal {
  const p: Principal = {
    ...account,
    key,
    wallet: newSessionWallet(),
    signed(subject, extra, at) {
      return signData(p.wallet, signedData(WEB2_CHAIN_ID, subject, p.wallet.address, at ?? Date.now(), ...(extra === undefined ? [] : [extra])));
    },
  };
  return p;
}

/** Register, verify and register a key through `url`. */
export async function newPrincipal(cluster: LocalCluster, url: string, tag = 'user'): Promise<Principal> {
  const account = await verifiedAccount(cluster, url, tag);
  const reg = await registerKey(url, account);
  if (reg.status !== 201) throw new Error(`register-key: ${reg.status} ${JSON.stringify(reg.body)}`);
  return principalOf(account, reg.key);
}

/** Open a session for the principal's current wallet through `url`; throws unless 201. */
export async function openSession(url: string, p: Principal, options: { ttl?: number; timestamp?: number } = {}): Promise<JsonResponse> {
  const res = await postJson(`${url}/web2/session`, sessionRequest(p.principalId, p.key, p.wallet, options));
  if (res.status !== 201) throw new Error(`session: ${res.status} ${JSON.stringify(res.body)}`);
  return res;
}

/** A principal with an open session. */
export async function principalWithSession(cluster: LocalCluster, url: string, tag = 'user'): Promise<Principal> {
  const p = await newPrincipal(cluster, url, tag);
  await openSession(url, p);
  return p;
}

/** The other valid signature of the same message: s → n − s, recovery id flipped. */
export function highSTwin(signature: string): string {
  const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
  const hex = signature.replace(/^0x/, '');
  const s = BigInt('0x' + hex.slice(64, 128));
  const v = parseInt(hex.slice(128, 130), 16);
  const flipped = v === 27 ? 28 : v === 28 ? 27 : v ^ 1;
  return '0x' + hex.slice(0, 64) + (n - s).toString(16).padStart(64, '0') + flipped.toString(16).padStart(2, '0');
}
