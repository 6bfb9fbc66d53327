/** Waiting on conditions instead of sleeping (CONTRIBUTING.md rule 12). */

/** Options of {@link waitFor}. */
export interface WaitForOptions {
  /** Give up after this long, ms. @default 5000 */
  timeoutMs?: number;
  /** Poll interval, ms. @default 20 */
  intervalMs?: number;
  /** Included in the timeout error. */
  description?: string;
}

/**
 * Poll `condition` until it returns a truthy value (which is returned) or the timeout passes
 * (rejects, naming `description`). Exceptions from `condition` count as "not yet".
 */
export async function waitFor<T>(condition: () => T | Promise<T>, options: WaitForOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const intervalMs = options.intervalMs ?? 20;
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await condition();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    if (performance.now() > deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`waitFor timed out after ${timeoutMs} ms: ${options.description ?? 'condition'}${why}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
