/** Temp dirs and a cleanup stack for tests (CONTRIBUTING.md rule 12: clean up in afterEach from a stack). */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A LIFO stack of cleanups; run it in afterEach. */
export function cleanupStack() {
  const stack: Array<() => unknown> = [];
  return {
    push(fn: () => unknown) {
      stack.push(fn);
    },
    async run() {
      while (stack.length) await stack.pop()!();
    },
  };
}

/** A fresh temp directory, removed by the stack. */
export async function tempDir(stack: ReturnType<typeof cleanupStack>, prefix = 'qk-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  stack.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
