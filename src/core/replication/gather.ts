/**
 * Ask members one by one until enough answered: the quorum reads of grants and shards. Starts
 * `needed` calls on the first candidates; every failure starts the next candidate, so the work is
 * `needed` calls when everyone answers and never waits on a member that already failed.
 */

import { AppError, type MemberFailure } from '../../errors/index.ts';
import { membersOf, type MembershipView } from './ports.ts';

/**
 * The member slots reachable now, this node's first (its answer costs no round trip); 503
 * QUORUM_UNAVAILABLE when fewer than threshold are reachable, before any work is done.
 */
export function reachableMemberSlots(membership: MembershipView): number[] {
  const { descriptor, self } = membership;
  const slots = membersOf(descriptor)
    .map((m) => m.slot)
    .filter((slot) => membership.isReachable(slot))
    .sort((a, b) => (a === self.slot ? -1 : b === self.slot ? 1 : a - b));
  if (slots.length < descriptor.threshold) {
    throw new AppError('QUORUM_UNAVAILABLE', `Only ${slots.length} of ${descriptor.size} members are reachable; ${descriptor.threshold} are needed`);
  }
  return slots;
}

/** Gather failures as the members they were, for logs and QuorumErrors. */
export function memberFailures(membership: MembershipView, failures: GatherFailure[]): MemberFailure[] {
  const members = membersOf(membership.descriptor);
  return failures.map((f) => ({ slot: f.slot, nodeAddress: members[f.slot]!.nodeAddress, error: (f.error instanceof Error ? f.error.message : String(f.error)).slice(0, 200) }));
}

/** One member's answer. */
export interface Gathered<T> {
  slot: number;
  value: T;
}

/** One member's failure. */
export interface GatherFailure {
  slot: number;
  error: unknown;
}

/** Options of {@link gatherFromMembers}. */
export interface GatherOptions<T> {
  /** Candidate slots in preference order (e.g. self first). */
  slots: number[];
  /** Answers wanted. */
  needed: number;
  /** Deadline of each call, ms. */
  timeoutMs: number;
  /** One call; must honour the signal. */
  call(slot: number, signal: AbortSignal): Promise<T>;
  signal?: AbortSignal;
}

/**
 * Resolves with the first `needed` answers (fewer when the candidates ran out) and every failure
 * seen. Outstanding calls are aborted once enough answered.
 */
export function gatherFromMembers<T>(options: GatherOptions<T>): Promise<{ results: Gathered<T>[]; failures: GatherFailure[] }> {
  const { slots, needed } = options;
  const results: Gathered<T>[] = [];
  const failures: GatherFailure[] = [];
  const abort = new AbortController();
  const signal = options.signal ? AbortSignal.any([abort.signal, options.signal]) : abort.signal;
  let next = 0;
  let running = 0;
  return new Promise((resolve) => {
    const finish = () => {
      abort.abort(new Error('enough answers'));
      resolve({ results, failures });
    };
    const launch = () => {
      while (running + results.length < needed && next < slots.length) {
        const slot = slots[next++]!;
        running++;
        options
          .call(slot, AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]))
          .then(
            (value) => {
              if (results.length < needed) results.push({ slot, value });
            },
            (error: unknown) => {
              failures.push({ slot, error });
            },
          )
          .finally(() => {
            running--;
            if (results.length >= needed) return finish();
            launch();
            if (running === 0) finish();
          });
      }
      if (running === 0) finish();
    };
    launch();
  });
}
