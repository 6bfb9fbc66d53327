/**
 * `ping`: liveness and round-trip time; the body comes back as it came (docs/architecture.md,
 * "Membership").
 */
import type { ProtocolHandler } from './serve.ts';

/** Create the `ping` handler. */
export function createPingHandler(): ProtocolHandler {
  return async (body) => body;
}
