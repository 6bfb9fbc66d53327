/**
 * Shared pieces of the route fuzz tests (docs/http.md, Errors: "Every error is JSON … never a 500 for
 * bad input"): the reply check every property makes, and the fast-check arbitraries both fuzzers draw
 * their odd values from.
 */
import { waitFor } from '../../src/testing/index.ts';
import { expect } from 'vitest';
import fc from 'fast-check';
import { getJson } from './http.ts';

/** An answer as the fuzzers check it: the status, the Content-Type and the body as text. */
export interface Reply {
  status: number;
  contentType: string;
  text: string;
}

/** Fetch and read the whole answer as a {@link Reply}. */
export async function fetchReply(url: string, init?: RequestInit): Promise<Reply> {
  const res = await fetch(url, init);
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
}

/** Never ≥ 500; JSON always; `error` and `code` strings on errors; only 200/201 on success. */
export function checkReply(reply: Reply): void {
  const shown = `${reply.status} ${reply.contentType} ${reply.text.slice(0, 500)}`;
  expect(reply.status, shown).toBeLessThan(500);
  expect(reply.contentType, shown).toMatch(/^application\/json/);
  const body = JSON.parse(reply.text) as Record<string, unknown>;
  if (reply.status >= 400) {
    expect(typeof body.error, shown).toBe('string');
    expect(typeof body.code, shown).toBe('string');
  } else {
    expect([200, 201], shown).toContain(reply.status);
  }
}

/** JSON text of an object with these entries, in order (so `__proto__` travels as a plain key). */
export function objectText(entries: Array<[string, unknown]>): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',')}}`;
}

/**
 * Short strings of every flavour: ASCII, any code point, graphemes, lone surrogates (all up to 24
 * units), and the given special values.
 */
export function shortTextWith(specials: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(fc.string({ maxLength: 24 }), fc.string({ unit: 'grapheme', maxLength: 24 }), fc.string({ unit: 'binary', maxLength: 24 }), fc.constantFrom(...specials));
}

/** Strings of 1,000 to `maxLength` characters (one repeated chunk, possibly cut inside a surrogate pair). */
export function bigTextUpTo(maxLength: number): fc.Arbitrary<string> {
  return fc
    .tuple(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 4 }), fc.integer({ min: 1_000, max: maxLength }))
    .map(([chunk, n]) => chunk.repeat(Math.ceil(n / chunk.length)).slice(0, n));
}

/** Anything but a string. */
export const wrongType: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
);

/**
 * After fuzzing: every coordinator answers /healthz 200 `ok` with all 5 members reachable — within a
 * few seconds: a flood may leave a member briefly not ready, which `ok` rightly does not hide.
 */
export async function expectCoordinatorsHealthy(coordinators: readonly string[]): Promise<void> {
  for (const url of coordinators) {
    let last: { status: string; problems?: string[]; cluster: { reachable: number } } | undefined;
    await waitFor(
      async () => {
        const health = await getJson<{ status: string; problems?: string[]; cluster: { reachable: number } }>(`${url}/healthz`);
        expect(health.status).toBe(200);
        last = health.body;
        return last.status === 'ok';
      },
      { timeoutMs: 20_000, intervalMs: 200, description: `${url} to report ok` },
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; last: ${JSON.stringify(last)}`);
    });
    expect(last!.cluster.reachable).toBe(5);
  }
}
