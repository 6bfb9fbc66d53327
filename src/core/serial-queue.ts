/**
 * One-at-a-time execution of async steps (slot 0's read-modify-write operations on its claims): each
 * step starts after the previous one settled, whether it succeeded or failed.
 */

/** Create a queue; the returned function runs `task` after every task queued before it. */
export function serialQueue(): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (task) => {
    const run = tail.then(task);
    tail = run.catch(() => undefined);
    return run;
  };
}
