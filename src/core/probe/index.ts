/**
 * Write probes: an operator's end-to-end check of the quorum write path. A probe is a small record
 * (kind `probe`) replicated like any other; reading it back on any node shows replication works.
 */
import { z } from 'zod';
import type { RecordKindDefinition } from '../replication/kinds.ts';
import type { Replicator, StateReader, WriteReport } from '../replication/ports.ts';
import type { ReplicatedRecord } from '../replication/record.ts';
import { AppError } from '../../errors/index.ts';

/** Probe record body. */
export const probeBodySchema = z.strictObject({
  note: z.string().max(1024),
  /** Unix ms at the origin. */
  writtenAt: z.number().int().nonnegative(),
});
export type ProbeBody = z.infer<typeof probeBodySchema>;

/** Keys: 1–128 chars of [A-Za-z0-9._:-]. */
export const PROBE_KEY_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/** The `probe` record kind. */
export const probeKind: RecordKindDefinition<ProbeBody> = {
  name: 'probe',
  body: probeBodySchema,
  // Written through the admin API, which only coordinators serve.
  writers: ['coordinator'],
  key: (k) => PROBE_KEY_RE.test(k),
};

/** Operator write probes. */
export interface ProbeService {
  /** Replicate a probe record; rejects with QuorumError (503) below threshold. */
  write(key: string, note: string): Promise<WriteReport>;
  /** Read a probe from this node's replica. */
  read(key: string): Promise<ReplicatedRecord | undefined>;
}

/** Dependencies of {@link createProbeService}. */
export interface ProbeDeps {
  replicator: Replicator;
  state: StateReader;
  clock: () => number;
}

/** Create the probe service. */
export function createProbeService(deps: ProbeDeps): ProbeService {
  return {
    async write(key, note) {
      if (!PROBE_KEY_RE.test(key)) throw new AppError('BAD_REQUEST', 'probe key must be 1-128 characters of A-Z a-z 0-9 . _ : -');
      return deps.replicator.replicate({ kind: probeKind.name, key, body: { note, writtenAt: deps.clock() } });
    },
    read(key) {
      if (!PROBE_KEY_RE.test(key)) throw new AppError('BAD_REQUEST', 'probe key must be 1-128 characters of A-Z a-z 0-9 . _ : -');
      return deps.state.get(probeKind.name, key);
    },
  };
}
