/**
 * The one signed-data verifier (docs/architecture.md, Signed data strings): every signed route and every member's
 * own check (`shard`) goes through {@link createSignedDataVerifier}. It splits `data` into the
 * endpoint's exact part count, checks the chain and freshness, recovers the EIP-191 signer, compares
 * it case-insensitively with the address inside `data`, and resolves the session (Web2).
 *
 * Cheap checks run first, so malformed input never costs a signature recovery.
 */
import { recoverSdkSigner } from '../../crypto/index.ts';
import { AppError } from '../../errors/index.ts';
import type { StateReader } from '../replication/ports.ts';
import type { PrincipalBody } from '../accounts/records.ts';
import { isSessionActive, type SessionBody } from './records.ts';
import type { SignedDataShape, SignedDataVerifier, SignedRequest, SignerRecovery, VerifiedCaller } from './types.ts';
import { createSignerMemo, type SignerMemo } from './signer-memo.ts';
import { FUTURE_BLOCK_TOLERANCE, type ChainHead, type ChainHeads } from '../web3/ports.ts';

/** Web2 chain id. */
export const WEB2_CHAIN_ID = -1;
/** Web2 freshness window: |now − timestamp| ≤ 10 min (docs/architecture.md, Signed data strings). */
export const WEB2_FRESHNESS_MS = 600_000;
/** Longest `data` the verifier parses (the JSON body limit binds first on the routes; members bound a release's with it). */
export const MAX_DATA_CHARS = 4 * 1024 * 1024;

// Numbers only in their canonical decimal form (no `-01`, no leading zeros): one authorisation has
// one spelling, so single use keyed on the string cannot be dodged by rewriting a number.
const CHAIN_RE = /^-?[1-9]\d{0,11}$|^0$/;
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
const FRESH_RE = /^(?:0|[1-9]\d{0,15})$/;
const SIGNATURE_RE = /^(?:0x)?[0-9a-fA-F]{130}$/;

/** Dependencies of {@link createSignedDataVerifier}. */
export interface SignedDataVerifierDeps {
  state: StateReader;
  /**
   * EIP-191 signer recovery: lowercase 0x address, or undefined for an invalid signature (inline, or
   * on the node's request crypto thread, src/crypto/request-pool.ts).
   */
  recoverSigner(message: string, signature: string): string | undefined | Promise<string | undefined>;
  /** Wall clock, Unix ms. */
  clock: () => number;
  /** The enabled EVM chains (Web3 principals, on routes that accept them). @default none */
  chains?: ChainHeads;
  /** Signers recovered on this node (./signer-memo.ts), shared with its evidence checks. @default its own */
  signers?: SignerMemo;
}

/** Split `data` per the shape; undefined when the part count is wrong. */
export function splitSignedData(data: string, shape: SignedDataShape): string[] | undefined {
  if (!shape.rest) {
    const parts = data.split('_');
    return parts.length === shape.parts ? parts : undefined;
  }
  const parts: string[] = [];
  let from = 0;
  for (let i = 0; i < shape.parts - 1; i++) {
    const at = data.indexOf('_', from);
    if (at < 0) return undefined;
    parts.push(data.slice(from, at));
    from = at + 1;
  }
  parts.push(data.slice(from));
  return parts;
}

function bad(message: string): AppError {
  return new AppError('BAD_REQUEST', message);
}

/**
 * Parse a chain id (a `data` part or a path parameter): -1 (Web2), or an enabled chain of `chains`
 * when given (Web3); anything else is 400 `Chain <id> is not supported` (docs/http.md).
 */
export function parseChainId(raw: string, chains?: ChainHeads): number {
  if (!CHAIN_RE.test(raw)) throw bad(`Invalid chain id "${raw.slice(0, 24)}"`);
  const chainId = Number(raw);
  if (chainId !== WEB2_CHAIN_ID && !(chainId > 0 && chains?.get(chainId))) throw bad(`Chain ${chainId} is not supported`);
  return chainId;
}

/**
 * A Web3 string's block number against the chain's head (docs/http.md, Signed data strings): at most
 * {@link FUTURE_BLOCK_TOLERANCE} ahead — judged against a fresh read before refusing, since the head
 * is cached for up to a block time — and at most the chain's window behind. The messages are matched
 * by the deployed client, which re-signs only on "is too old".
 */
async function checkBlockFreshness(chain: ChainHead, block: number): Promise<void> {
  let current = await chain.blockNumber();
  if (block > current + FUTURE_BLOCK_TOLERANCE) current = await chain.blockNumber({ fresh: true });
  if (block > current + FUTURE_BLOCK_TOLERANCE) throw bad(`Block number ${block} is in the future (current: ${current})`);
  if (block < current - chain.freshnessWindow) throw bad(`Block number ${block} is too old (current: ${current}, max window: ${chain.freshnessWindow})`);
}

/**
 * Whether `expected` signed `data` as cifer-sdk's private-key signer signs it — its EIP-191 prefix
 * counts UTF-16 code units, not bytes ({@link recoverSdkSigner}; only a string that is not ASCII
 * differs). A length in either count must match the string, so no signature can be taken for
 * another string (docs/security.md, "Signed strings"). Checked by a coordinator on a request and by
 * every member on a record's evidence.
 */
export function signedInSdkForm(data: string, signature: string, expected: string): boolean {
  return recoverSdkSigner(data, signature) === expected;
}

/** Create the verifier. */
export function createSignedDataVerifier(deps: SignedDataVerifierDeps): SignedDataVerifier {
  const { state, clock } = deps;
  const signers = deps.signers ?? createSignerMemo();
  const recover = async (data: string, signature: string): Promise<string | undefined> => {
    const known = signers.get(data, signature);
    if (known !== null) return known;
    const signer = await deps.recoverSigner(data, signature);
    signers.set(data, signature, signer);
    return signer;
  };
  return {
    async verify(request: SignedRequest, shape: SignedDataShape, recovery?: SignerRecovery): Promise<VerifiedCaller> {
      if (request.data.length > MAX_DATA_CHARS) throw bad('data is too long');
      const parts = splitSignedData(request.data, shape);
      if (!parts) throw bad(`Invalid data format: expected ${shape.parts} parts separated by "_"`);
      const [chainPart, subject, address, freshPart] = parts as [string, string, string, string];
      const chainId = parseChainId(chainPart, shape.web3 ? deps.chains : undefined);
      if (!ADDRESS_RE.test(address)) throw bad('Invalid address in data: expected 0x and 40 hex characters');
      const chain = chainId === WEB2_CHAIN_ID ? undefined : deps.chains?.get(chainId);
      if (!FRESH_RE.test(freshPart)) throw bad(chain ? 'Invalid block number in data' : 'Invalid timestamp in data: expected Unix milliseconds');
      const fresh = Number(freshPart);
      const now = clock();
      if (!chain) {
        const at = shape.at ?? now;
        if (Math.abs(at - fresh) > WEB2_FRESHNESS_MS) {
          throw bad(`Timestamp ${fresh} is outside the allowed window of ±${WEB2_FRESHNESS_MS} ms (now: ${at})`);
        }
      }
      if (!SIGNATURE_RE.test(request.signature)) throw bad('Invalid signature format: expected 65 bytes of hex');
      // Format before the chain: a malformed request costs no RPC.
      if (chain) await checkBlockFreshness(chain, fresh);
      const own = recovery ? await recovery({ chainId, subject, extra: parts.slice(4) }) : undefined;
      const signer = own ? own.signer : await recover(request.data, request.signature);
      if (!signer) throw new AppError('FORBIDDEN', 'Invalid signature');
      // The signer: the address in data (a session wallet, or a Web3 wallet), once it signed.
      const sessionAddress = address.toLowerCase();
      if (signer !== sessionAddress && !signedInSdkForm(request.data, request.signature, sessionAddress)) {
        throw new AppError('FORBIDDEN', 'Signature does not match the signer address in data');
      }
      if (chain) {
        // A Web3 principal is its wallet: no session.
        return { chainId, userType: 'web3', subject, signer: sessionAddress, fresh, extra: parts.slice(4), principalId: sessionAddress, parts };
      }

      const session = (await state.get('session', sessionAddress))?.body as SessionBody | undefined;
      const principal = session ? ((await state.get('principal', session.principalId))?.body as PrincipalBody | undefined) : undefined;
      if (!session || !isSessionActive(session, principal, now)) {
        if (shape.inactiveSession === 'session-inactive') throw new AppError('SESSION_INACTIVE', 'Session inactive');
        throw new AppError('FORBIDDEN', 'No active session');
      }
      return {
        chainId,
        userType: 'web2',
        subject,
        signer: sessionAddress,
        fresh,
        extra: parts.slice(4),
        principalId: session.principalId,
        session: { principalId: session.principalId, sessionAddress, expiresAt: session.expiresAt },
        parts,
        sessionRecord: session,
      };
    },
  };
}
