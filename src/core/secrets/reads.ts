/**
 * Reads of secrets, Web2 and Web3 alike: a member's own replica (after the catch-up gate), a client's
 * lookup that looks beyond this replica before a 404 (src/core/replication/fresh-read.ts), and the
 * Web3 secrets of the chains' confirmed view (src/core/web3/service.ts).
 */
import { AppError } from '../../errors/index.ts';
import type { FreshReader } from '../replication/fresh-read.ts';
import type { StateReader } from '../replication/ports.ts';
import { kindName, stateView, type StateView } from '../replication/views.ts';
import { WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import { web3SecretKey, type Web3SecretBody } from '../web3/records.ts';
import type { Web3Service } from '../web3/service.ts';
import { secretKey, secretKindName, type SecretBody } from './records.ts';
import { resolvedOf } from './rules.ts';
import type { ResolvedSecret } from './types.ts';

/** The `web3Secret` kind's name and body type (src/core/web3/records.ts). */
const web3SecretKindName = kindName<Web3SecretBody>('web3Secret');

/** The record of a Web2 (`secret`) or Web3 (`web3Secret`) secret in `state`, or undefined. */
export async function secretRecordOf(state: StateReader, chainId: number, secretId: number): Promise<SecretBody | Web3SecretBody | undefined> {
  return chainId === WEB2_CHAIN_ID ? stateView(state, secretKindName).get(secretKey(secretId)) : stateView(state, web3SecretKindName).get(web3SecretKey(chainId, secretId));
}

/** What a node with chains resolves Web3 secrets with. */
export type Web3Secrets = Pick<Web3Service, 'resolve' | 'resolveOwn'>;

/** Dependencies of {@link createSecretReads}. */
export interface SecretReadsDeps {
  state: StateReader;
  /** Reads that catch up before answering "not found" (a client may ask right after another coordinator wrote). */
  fresh?: FreshReader;
  /** Web3 secrets, once built; undefined on a node without chains. */
  web3?: () => Web3Secrets | undefined;
}

/** Lookups of secrets for the services of this folder. */
export interface SecretReads {
  /** The `secret` kind of this replica, typed. */
  secrets: StateView<SecretBody>;
  /** Current record of a Web2 secret in this replica, or undefined. */
  getSecret(secretId: number): Promise<SecretBody | undefined>;
  /** A member's own lookup: its replica (the catch-up gate ran first); 404 when missing. */
  requireSecret(secretId: number): Promise<SecretBody>;
  /** A client's lookup: beyond this replica before a 404, 503 when that cannot be told yet. */
  findSecret(secretId: number): Promise<SecretBody>;
  /** Whether Web3 strings are accepted here (a node with chains). */
  web3Enabled(): boolean;
  /** The Web3 secrets; 400 on a node without chains. */
  requireWeb3(): Web3Secrets;
  /** A Web2 (chain `-1`) or Web3 secret a client names, with who may decrypt it. */
  resolveSecret(chainId: number, secretId: number): Promise<ResolvedSecret>;
}

/** Create the lookups. */
export function createSecretReads(deps: SecretReadsDeps): SecretReads {
  const secrets = stateView(deps.state, secretKindName);
  // The fresh reader answers `get` only; listing never needs it.
  const fresh = deps.fresh;
  const freshSecrets = fresh ? stateView({ get: (kind, key) => fresh.get(kind, key), list: (kind, options) => deps.state.list(kind, options) }, secretKindName) : secrets;

  const notFound = (secretId: number) => new AppError('NOT_FOUND', `Secret ${secretId} not found`);

  function requireWeb3(): Web3Secrets {
    const web3 = deps.web3?.();
    if (!web3) throw new AppError('BAD_REQUEST', 'Web3 secrets are not served by this node');
    return web3;
  }

  const reads: SecretReads = {
    secrets,
    getSecret: (secretId) => secrets.get(secretKey(secretId)),
    async requireSecret(secretId) {
      const s = await secrets.get(secretKey(secretId));
      if (!s) throw notFound(secretId);
      return s;
    },
    async findSecret(secretId) {
      const s = await freshSecrets.get(secretKey(secretId));
      if (!s) throw notFound(secretId);
      return s;
    },
    web3Enabled: () => deps.web3?.() !== undefined,
    requireWeb3,
    async resolveSecret(chainId, secretId) {
      return chainId === WEB2_CHAIN_ID ? resolvedOf(await reads.findSecret(secretId)) : requireWeb3().resolve(chainId, secretId);
    },
  };
  return reads;
}
