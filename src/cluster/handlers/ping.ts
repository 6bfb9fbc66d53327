/**
 * `ping`: liveness and round-trip time; the body comes back as it came, with this build's features
 * (docs/architecture.md, "Membership").
 */
import { NODE_FEATURES } from '../protocols.ts';
import type { ProtocolHandler } from './serve.ts';

/** Create the `ping` handler: the body back, with what this build can do ({@link NODE_FEATURES}). */
export function createPingHandler(): ProtocolHandler {
  return async (body) => (body !== null && typeof body === 'object' && !Array.isArray(body) ? { ...body, features: Object.values(NODE_FEATURES) } : body);
}
