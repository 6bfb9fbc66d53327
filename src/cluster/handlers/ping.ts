/**
 * `ping`: liveness and round-trip time; the body comes back as it came, with this build's features
 * (docs/architecture.md, "Membership").
 */
import type { ProtocolHandler } from './serve.ts';

/** Create the `ping` handler: the body back, with what this node can do (src/cluster/protocols.ts, NODE_FEATURES). */
export function createPingHandler(features: readonly string[]): ProtocolHandler {
  return async (body) => (body !== null && typeof body === 'object' && !Array.isArray(body) ? { ...body, features } : body);
}
