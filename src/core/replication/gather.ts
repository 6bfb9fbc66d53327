/**
 * Ask members one by one until enough answered: the quorum reads of grants and shards. Starts
 * `needed` calls on the first candidates; every failure starts the next candidate, so the work is
 * `needed` calls when everyone answers and never waits on a member that already failed.
 */

import { AppError, type MemberFailure } from '../../errors/index.ts';
import { withDeadline } from '../lifecycle.ts';
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

/**
 * Where this node sends its quorum reads (share releases, session grants): its own slot first, then
 * the other reachable members by the calls it has in flight to each, fewest first, and among those
 * with as many, in turn. A read needs `threshold` answers of `size` members: asking the lowest slots
 * every time left the others idle while those did every release (with 5 members, threshold 3 and two
 * coordinators, slot 2 released for every decrypt and slots 3 and 4 for none). Spread in turn, a
 * member that is not a coordinator releases for half the decrypts; one that is slow or cut off
 * keeps its calls in flight and is asked last until they settle.
 */
export interface MemberLoad {
  /** The reachable member slots in the order to ask them; 503 QUORUM_UNAVAILABLE as {@link reachableMemberSlots}. */
  order(membership: MembershipView): number[];
  /** Calls in flight to `slot` counted by {@link MemberLoad.track}. */
  inFlight(slot: number): number;
  /** Run `call` to `slot`, counted in flight until it settles ({@link gatherFromMembers} does, given the picker). */
  track<T>(slot: number, call: () => Promise<T>): Promise<T>;
}

/** Create a {@link MemberLoad}, one per kind of read a node makes. */
export function createMemberLoad(): MemberLoad {
  const inFlight: number[] = [];
  let turn = 0;
  return {
    order(membership) {
      const slots = reachableMemberSlots(membership);
      const self = membership.self.slot;
      const own = slots[0] === self ? [self] : [];
      const others = own.length > 0 ? slots.slice(1) : slots;
      const start = others.length > 0 ? turn++ % others.length : 0;
      const rotated = [...others.slice(start), ...others.slice(0, start)];
      // Stable: ties keep their turn order.
      rotated.sort((a, b) => (inFlight[a] ?? 0) - (inFlight[b] ?? 0));
      return [...own, ...rotated];
    },
    inFlight: (slot) => inFlight[slot] ?? 0,
    async track(slot, call) {
      inFlight[slot] = (inFlight[slot] ?? 0) + 1;
      try {
        return await call();
      } finally {
        inFlight[slot]!--;
      }
    },
  };
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
  /** Counts each call in flight to its member while it runs (the picker that ordered `slots`). */
  load?: Pick<MemberLoad, 'track'>;
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
        const call = () => withDeadline(options.timeoutMs, signal, (callSignal) => options.call(slot, callSignal));
        (options.load ? options.load.track(slot, call) : call())
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
