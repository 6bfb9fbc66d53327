/**
 * scripts/cpuprofile-top.ts: a CPU profile's time and a sampled heap profile's bytes, by function and
 * by file, self and inclusive — what a developer reads to find where a bench phase went.
 */
import { describe, expect, it } from 'vitest';
import { profileSummary, type AnyProfile } from '../../../scripts/cpuprofile-top.ts';

const frame = (functionName: string, file: string, lineNumber = 9) => ({ functionName, url: file ? `file:///work/repo/${file}` : '', lineNumber });

/** root → ingest (src/core/ingest.ts) → digest (src/crypto/hash.ts); samples: 3 ms in digest, 1 ms in ingest. */
const cpu: AnyProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)', ''), children: [2] },
    { id: 2, callFrame: frame('ingest', 'src/core/ingest.ts'), children: [3] },
    { id: 3, callFrame: frame('digest', 'src/crypto/hash.ts', 41) },
  ],
  samples: [3, 2, 3, 3],
  timeDeltas: [1000, 1000, 1000, 1000],
};

/** The same stack allocating: 6 KB in digest, 2 KB in ingest, nothing at the root. */
const heap: AnyProfile = {
  head: {
    callFrame: frame('(root)', ''),
    selfSize: 0,
    children: [{ callFrame: frame('ingest', 'src/core/ingest.ts'), selfSize: 2000, children: [{ callFrame: frame('digest', 'src/crypto/hash.ts', 41), selfSize: 6000, children: [] }] }],
  },
};

/** The lines of one section of a summary. */
function section(summary: string, title: string): string[] {
  const lines = summary.split('\n');
  const from = lines.indexOf(title);
  expect(from).toBeGreaterThan(-1);
  const to = lines.indexOf('', from);
  return lines.slice(from + 1, to === -1 ? undefined : to).map((l) => l.trim().replace(/\s+/g, ' '));
}

describe('cpuprofile-top', () => {
  it("sums a CPU profile's samples by function (1-based line) and by file, and counts a file once per sample inclusively", () => {
    const summary = profileSummary([cpu]);
    expect(summary.split('\n')[0]).toBe('1 profile(s), 4 ms sampled');
    expect(section(summary, 'Self time by function')).toEqual(['75.0% 3 ms digest src/crypto/hash.ts:42', '25.0% 1 ms ingest src/core/ingest.ts:10']);
    expect(section(summary, 'Self time by file')).toEqual(['75.0% 3 ms src/crypto/hash.ts', '25.0% 1 ms src/core/ingest.ts']);
    expect(section(summary, 'Inclusive time by file (once per sample)')).toEqual(['100.0% 4 ms src/core/ingest.ts', '100.0% 4 ms (native)', '75.0% 3 ms src/crypto/hash.ts']);
  });

  it("sums a heap profile's bytes the same way, in KB", () => {
    const summary = profileSummary([heap, heap]);
    expect(summary.split('\n')[0]).toBe('2 profile(s), 0 MB allocated (sampled)');
    expect(section(summary, 'Self allocated by function')).toEqual(['75.0% 12 KB digest src/crypto/hash.ts:42', '25.0% 4 KB ingest src/core/ingest.ts:10']);
    expect(section(summary, 'Inclusive allocated by file (once per sample)')).toEqual(['100.0% 16 KB src/core/ingest.ts', '100.0% 16 KB (native)', '75.0% 12 KB src/crypto/hash.ts']);
  });

  it('refuses to add CPU time and bytes together', () => {
    expect(() => profileSummary([cpu, heap])).toThrow(/cannot be summed/);
  });

  it('keeps the top N of each section', () => {
    expect(section(profileSummary([cpu], 1), 'Self time by function')).toEqual(['75.0% 3 ms digest src/crypto/hash.ts:42']);
  });
});
