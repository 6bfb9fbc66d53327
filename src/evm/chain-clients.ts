/**
 * The clients of every enabled chain, by chain id: what `src/node` builds from `config.chains` and
 * hands to the core as its {@link Web3Chains} port and to `/healthz` as per-chain status. viem
 * (./chain-client.ts) is loaded only when a chain is enabled: a node without chains — Web2 only —
 * does not carry its code.
 */
import type { Web3Chains } from '../core/web3/ports.ts';
import type { Startable } from '../core/lifecycle.ts';
import type { ChainClient, ChainClientDeps, ChainClientOptions, ChainStatus } from './chain-client.ts';

/** Every enabled chain's client. */
export interface ChainClients extends Web3Chains, Startable {
  get(chainId: number): ChainClient | undefined;
  /** In config order. */
  list(): readonly ChainClient[];
  /** Each chain's {@link ChainClient.status}, in config order. */
  status(): ChainStatus[];
  /** Stop every client's follower. Idempotent. */
  stop(): Promise<void>;
}

/**
 * One client per chain (ids must be unique: the config schema checks it). `tuning` applies to every
 * chain (timeouts, retries); `deps` are shared, the signing key included — each chain's `syncer`
 * flag decides whether it sends.
 */
export async function createChainClients(
  chains: readonly ChainClientOptions[],
  deps: ChainClientDeps,
  tuning: Omit<ChainClientOptions, 'chainId' | 'name' | 'rpcUrl' | 'blockTimeMs'> = {},
): Promise<ChainClients> {
  const clients: ChainClient[] = [];
  if (chains.length > 0) {
    const { createChainClient } = await import('./chain-client.ts');
    for (const chain of chains) clients.push(createChainClient({ ...tuning, ...chain }, deps));
  }
  const byId = new Map(clients.map((client) => [client.chainId, client]));
  if (byId.size !== clients.length) throw new Error('chains: a chain id is listed twice');
  let stopping: Promise<void> | undefined;
  return {
    get: (chainId) => byId.get(chainId),
    list: () => clients,
    status: () => clients.map((client) => client.status()),
    stop: () => (stopping ??= Promise.all(clients.map((client) => client.stop())).then(() => undefined)),
  };
}
