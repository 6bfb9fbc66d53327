/**
 * The common scene of the cross-coordinator tests: a 5-member cluster (threshold 3) with two
 * coordinators, and Alice and Bob, verified, with keys and open sessions. Registers its own
 * beforeAll/afterAll; read the fields inside tests.
 */
import { afterAll, beforeAll } from 'vitest';
import { startLocalCluster, type LocalCluster, type LocalClusterOptions } from 'quorumkeep/testing';
import { principalWithSession, type Principal } from './session.ts';
import { cleanupStack } from './temp.ts';

export interface AliceAndBob {
  cluster: LocalCluster;
  /** Coordinator URLs (nodes 0 and 1). */
  A: string;
  B: string;
  alice: Principal;
  bob: Principal;
}

/** Start the scene before the file's tests and stop it after; Bob registers on `bobOn`. */
export function aliceAndBob(options: LocalClusterOptions = {}, bobOn: 'A' | 'B' = 'A'): AliceAndBob {
  const scene = {} as AliceAndBob;
  const stack = cleanupStack();
  beforeAll(async () => {
    scene.cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, ...options });
    stack.push(() => scene.cluster.stop());
    [scene.A, scene.B] = scene.cluster.coordinators as [string, string];
    [scene.alice, scene.bob] = await Promise.all([principalWithSession(scene.cluster, scene.A, 'alice'), principalWithSession(scene.cluster, bobOn === 'A' ? scene.A : scene.B, 'bob')]);
  }, 60_000);
  afterAll(() => stack.run());
  return scene;
}
