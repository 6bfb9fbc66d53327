/**
 * `quorumkeep/testing`: local clusters for tests — ours and our users'.
 *
 * ```ts
 * import { startLocalCluster } from 'quorumkeep/testing';
 * const cluster = await startLocalCluster({ size: 5, threshold: 3 });
 * await fetch(`${cluster.coordinators[0]}/healthz`);
 * await cluster.stop();
 * ```
 */
export { startLocalCluster, type LocalCluster, type LocalClusterOptions } from './local-cluster.ts';
export { startMailbox, type Mailbox, type MailboxOptions, type CaughtMail } from './mailbox.ts';
export { waitFor, type WaitForOptions } from './wait.ts';
export { getFreePorts, getFreePortRange } from './ports.ts';
export type { QuorumNode } from '../node/types.ts';
