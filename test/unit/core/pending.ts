/** Test helper of the lifecycle tests: whether a stop is still waiting for work in flight. */

/** True when `promise` has not settled once the event loop has turned (its ready callbacks ran). */
export async function stillPending(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  const mark = () => {
    settled = true;
  };
  void promise.then(mark, mark);
  await new Promise((r) => setImmediate(r));
  return !settled;
}
