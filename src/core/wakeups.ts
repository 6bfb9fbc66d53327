/**
 * Keyed wake-ups (CONTRIBUTING.md, "Lifecycle": events, not polling): a part that waits for something
 * to change under a key is woken by whoever changes it, and ends its wait at a deadline signal.
 */

/** Waiters by key. */
export interface KeyedWakeups {
  /** Resolves at the next {@link KeyedWakeups.wake} of `key`, or when `signal` aborts (never rejects). */
  next(key: string, signal: AbortSignal): Promise<void>;
  /** Wake every waiter of `key`; each one removes itself. */
  wake(key: string): void;
}

/** Create an empty set of waiters. */
export function createKeyedWakeups(): KeyedWakeups {
  const waiting = new Map<string, Set<() => void>>();
  return {
    next(key, signal) {
      return new Promise((resolve) => {
        if (signal.aborted) return resolve();
        const listeners = waiting.get(key) ?? new Set();
        waiting.set(key, listeners);
        const wake = (): void => {
          signal.removeEventListener('abort', wake);
          listeners.delete(wake);
          if (listeners.size === 0 && waiting.get(key) === listeners) waiting.delete(key);
          resolve();
        };
        listeners.add(wake);
        signal.addEventListener('abort', wake, { once: true });
      });
    },
    wake(key) {
      for (const wake of [...(waiting.get(key) ?? [])]) wake();
    },
  };
}
