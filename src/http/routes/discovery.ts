/**
 * Discovery: `GET /healthz` (docs/http.md, "Discovery") and `GET /readyz`, no auth; and `GET /metrics`, which
 * needs the admin bearer token unless `http.metricsPublic` (its series describe the node's load and
 * the cluster's state, which is an operator's business).
 */
import { Router } from '@koa/router';
import { ERROR_CODES } from '../../errors/index.ts';
import type { HealthSource } from '../../core/health/index.ts';
import type { ChainStatusView } from '../../core/web3/ports.ts';
import type { RecoveryProgress } from '../../core/secrets/recovery.ts';
import type { NodeMetrics } from '../../metrics/index.ts';
import type { ApiRouter, HttpChain } from '../types.ts';
import { requireBearer } from './admin.ts';

/** Chain id of Web2 principals (docs/http.md, "Conventions"): never an EVM chain, never advertised. */
const WEB2_CHAIN_ID = -1;

/** Options of {@link createDiscoveryRouter}. */
export interface DiscoveryOptions {
  /** Enabled EVM chains. */
  chains: readonly HttpChain[];
  /**
   * Who may read `GET /metrics`: anyone, holders of the admin bearer token, or nobody (not served).
   * @default "off"
   */
  metrics?: 'public' | 'off' | { token: string };
}

/** Dependencies of {@link createDiscoveryRouter}. */
export interface DiscoveryDeps {
  /** Wall clock, Unix ms (`serverTime`). */
  clock: () => number;
  health: HealthSource;
  metrics: Pick<NodeMetrics, 'render' | 'contentType'>;
  /** What the node last saw of each chain (docs/web3.md); read, never fetched. @default none */
  chainStatus?: () => readonly ChainStatusView[];
  /** A member's share recovery (docs/operations.md); absent on a gateway. @default none */
  recovery?: () => RecoveryProgress;
}

/** Routes `GET /healthz`, `GET /readyz` and `GET /metrics`. */
export function createDiscoveryRouter(options: DiscoveryOptions, deps: DiscoveryDeps): ApiRouter {
  const { clock, health, metrics } = deps;
  // Config is frozen: the chain part of the answer is built once.
  const chains = options.chains.filter((chain) => chain.chainId !== WEB2_CHAIN_ID);
  const supportedChains = chains.map((chain) => chain.chainId);
  const configurations = {
    chains: chains.map(({ chainId, name, rpcUrl, secretsControllerAddress, blockTimeMs }) => ({
      chainId,
      name,
      rpcUrl,
      secretsControllerAddress,
      blockTimeMs,
    })),
  };

  const router: ApiRouter = new Router();

  router.get('/healthz', (ctx) => {
    const cluster = health.clusterHealth();
    // Still 200 when degraded: clients read `status`; load balancers use /readyz.
    ctx.body = {
      status: cluster.status,
      problems: cluster.problems,
      // Which build answers: a rolling upgrade shows up here and in quorumkeep_build_info.
      version: health.build.version,
      commit: health.build.commit,
      serverTime: clock(),
      enclaveWalletAddress: health.nodeAddress,
      supportedChains,
      configurations,
      clusterMap: cluster.clusterMap,
      cluster: {
        clusterId: cluster.clusterId,
        size: cluster.size,
        threshold: cluster.threshold,
        reachable: cluster.reachable,
        slot0Reachable: cluster.slot0Reachable,
        equivocating: cluster.equivocating,
      },
      // For operators: each member's shares, and the secrets at risk or lost (docs/operations.md, "Data safety").
      dataSafety: cluster.dataSafety,
      // For operators: head, cursor lag and reachability per chain, as last seen (no RPC per request).
      chainStatus: (deps.chainStatus?.() ?? []).map(({ chainId, name, head, headAt, cursor, lag, reachable, lastError }) => ({ chainId, name, head, headAt, cursor, lag, reachable, lastError })),
      // For operators: this member's share recovery (`idle` unless its slot is being recovered).
      ...(deps.recovery ? { recovery: deps.recovery() } : {}),
    };
  });

  router.get('/readyz', (ctx) => {
    const { ready, checks } = health.readiness();
    if (ready) {
      ctx.body = { ready: true, checks };
      return;
    }
    // Answered here rather than thrown: `checks` (booleans) is not an AppError extra.
    ctx.status = ERROR_CODES.NOT_READY;
    ctx.body = { error: 'Not ready', code: 'NOT_READY', checks };
  });

  const metricsAccess = options.metrics ?? 'off';
  if (metricsAccess !== 'off') {
    const render: Parameters<ApiRouter['get']>[1] = async (ctx) => {
      ctx.type = metrics.contentType;
      ctx.body = await metrics.render();
    };
    if (metricsAccess === 'public') router.get('/metrics', render);
    else router.get('/metrics', requireBearer(metricsAccess.token), render);
  }

  return router;
}
