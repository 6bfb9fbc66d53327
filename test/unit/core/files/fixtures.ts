/** Stub deps shared by the files unit tests (CONTRIBUTING.md rule 12: stubs through deps). */
import type { JobRecord, JobRepo } from '../../../../src/core/files/types.ts';

/** A job repository in memory: copies in and out like a store; `hold` delays writes of `processing` jobs. */
export function memoryRepo(): JobRepo & { jobs: Map<string, JobRecord>; hold?: Promise<void> } {
  const repo: JobRepo & { jobs: Map<string, JobRecord>; hold?: Promise<void> } = {
    jobs: new Map(),
    get: async (id) => (repo.jobs.has(id) ? { ...repo.jobs.get(id)! } : undefined),
    async put(job) {
      if (job.status === 'processing' && repo.hold) await repo.hold;
      repo.jobs.set(job.id, { ...job });
    },
    async *list() {
      for (const job of [...repo.jobs.values()]) yield { ...job };
    },
    async delete(id) {
      repo.jobs.delete(id);
    },
  };
  return repo;
}
