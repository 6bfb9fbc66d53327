/**
 * scripts/bench-report.ts: the markdown table of a bench run's figures (met? computed from the
 * target), and its merge into docs/benchmarks.md between the markers — only the measured rows change.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  TABLE_END,
  TABLE_START,
  figureRow,
  formatValue,
  meetsTarget,
  mergeTable,
  renderTable,
  rowCells,
  type Figure,
  type RunInfo,
} from '../../../scripts/bench-report.ts';

const RUN: RunInfo = { date: '2026-11-28', commit: 'abc1234', machine: '2 cores, AMD EPYC, 23.4 GiB, load 1.00 → 2.00', runs: 1 };

const decrypt: Figure = { name: 'POST /decrypt-payload, p50 (in-process)', value: 4.56, unit: 'ms', target: { op: '<=', value: 5 }, note: '300 decrypts' };
const encrypt: Figure = { name: 'POST /encrypt-payload, throughput', value: 1700.4, unit: '/s', target: { op: '>=', value: 1785 } };
const rtt: Figure = { name: 'libp2p loopback round trip, p50', value: 0.4321, unit: 'ms' };

describe('bench report', () => {
  it('formats values: thousands separators from 100 up, three significant digits below, percentages without a space', () => {
    expect(formatValue(3058.4, '/s')).toBe('3,058 /s');
    expect(formatValue(12.64, 'ms')).toBe('12.6 ms');
    expect(formatValue(0.0012, '')).toBe('0.0012');
    expect(formatValue(56.2, '%')).toBe('56.2%');
    expect(formatValue(Number.NaN, 'ms')).toBe('—');
  });

  it('computes whether a target is met, in either direction', () => {
    expect(meetsTarget(decrypt)).toBe(true);
    expect(meetsTarget({ ...decrypt, value: 5 })).toBe(true);
    expect(meetsTarget({ ...decrypt, value: 5.01 })).toBe(false);
    expect(meetsTarget(encrypt)).toBe(false);
    expect(meetsTarget({ ...encrypt, value: 1785 })).toBe(true);
    expect(meetsTarget(rtt)).toBeUndefined();
    expect(meetsTarget({ ...decrypt, value: Number.NaN })).toBeUndefined();
  });

  it('renders one row per figure with its target, met?, runs, date, commit, machine and note', () => {
    const table = renderTable([decrypt, encrypt, rtt], RUN).split('\n');
    expect(table).toHaveLength(5);
    expect(rowCells(table[0]!)).toEqual(['figure', 'latest value', 'target', 'met?', 'runs', 'date', 'commit', 'machine', 'note']);
    expect(rowCells(table[2]!)).toEqual([decrypt.name, '4.56 ms', '≤ 5 ms', 'yes', '1', '2026-11-28', 'abc1234', RUN.machine, '300 decrypts']);
    expect(rowCells(table[3]!).slice(1, 4)).toEqual(['1,700 /s', '≥ 1,785 /s', 'no']);
    expect(rowCells(table[4]!).slice(1, 4)).toEqual(['0.432 ms', '—', '—']);
  });

  it('keeps a cell with a pipe in one cell, and a figure recorded twice once, with its last value', () => {
    const piped = figureRow({ ...rtt, note: 'a | b' }, RUN);
    expect(rowCells(piped)).toHaveLength(9);
    expect(rowCells(piped)[8]).toBe('a | b');
    const table = renderTable([rtt, decrypt, { ...rtt, value: 0.5 }], RUN).split('\n');
    expect(table).toHaveLength(4);
    expect(rowCells(table[2]!).slice(0, 2)).toEqual([rtt.name, '0.5 ms']);
  });

  it('merges in place: measured rows replaced, new ones appended, the rest and the text around untouched', () => {
    const older: RunInfo = { date: '2026-11-01', commit: 'ffffff0', machine: '2 cores, load 1–2', runs: 3 };
    const kept = figureRow({ name: 'catch-up of a restarted member', value: 9030, unit: 'records/s', target: { op: '>=', value: 8000 }, note: 'median of 3 runs' }, older);
    const doc = [
      '# Benchmarks',
      '',
      'Intro.',
      '',
      TABLE_START,
      renderTable([decrypt], older),
      kept,
      TABLE_END,
      '',
      '## Method notes',
      '',
    ].join('\n');
    const merged = mergeTable(doc, [{ ...decrypt, value: 6.1 }, rtt], RUN);
    expect(merged.replaced).toEqual([decrypt.name]);
    expect(merged.added).toEqual([rtt.name]);
    const lines = merged.text.split('\n');
    expect(lines.slice(0, 5)).toEqual(['# Benchmarks', '', 'Intro.', '', TABLE_START]);
    expect(lines.slice(-4)).toEqual([TABLE_END, '', '## Method notes', '']);
    const rows = lines.slice(lines.indexOf(TABLE_START) + 3, lines.indexOf(TABLE_END));
    expect(rows.map((r) => rowCells(r)[0])).toEqual([decrypt.name, 'catch-up of a restarted member', rtt.name]);
    expect(rowCells(rows[0]!).slice(1, 7)).toEqual(['6.1 ms', '≤ 5 ms', 'no', '1', '2026-11-28', 'abc1234']);
    expect(rows[1]).toBe(kept);
    // Merging the same run again changes nothing.
    expect(mergeTable(merged.text, [{ ...decrypt, value: 6.1 }, rtt], RUN).text).toBe(merged.text);
  });

  it('refuses a document without exactly one pair of markers in order', () => {
    expect(() => mergeTable('# no table\n', [rtt], RUN)).toThrow(/bench:table/);
    expect(() => mergeTable(`${TABLE_END}\n${TABLE_START}\n`, [rtt], RUN)).toThrow(/bench:table/);
    expect(() => mergeTable(`${TABLE_START}\n${TABLE_END}\n${TABLE_START}\n${TABLE_END}\n`, [rtt], RUN)).toThrow(/bench:table/);
    expect(mergeTable(`${TABLE_START}\n${TABLE_END}\n`, [rtt], RUN).added).toEqual([rtt.name]);
  });

  it('docs/benchmarks.md has the table between its markers, every row complete and its met? computed', () => {
    const doc = readFileSync(new URL('../../../docs/benchmarks.md', import.meta.url), 'utf8');
    const inside = doc.slice(doc.indexOf(TABLE_START) + TABLE_START.length, doc.indexOf(TABLE_END));
    const lines = inside.split('\n').filter((l) => l.startsWith('|'));
    expect(lines.slice(0, 2)).toEqual(renderTable([], RUN).split('\n'));
    const rows = lines.slice(2).map(rowCells);
    expect(rows.length).toBeGreaterThan(10);
    for (const [name, value, target, met, runs, date, commit] of rows) {
      expect(name, 'figure').not.toBe('');
      expect(Number(runs), `${name}: runs`).toBeGreaterThan(0);
      expect(date, `${name}: date`).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(commit, `${name}: commit`).toMatch(/^[0-9a-f]{7}/);
      // met? is what the value and target give, never a hand-written verdict.
      const number = (text: string) => Number(text.replace(/^[≤≥] /, '').split(' ')[0]!.replace(/,/g, '').replace(/%$/, ''));
      const expected = target === '—' || value === '—' ? '—' : (target!.startsWith('≤') ? number(value!) <= number(target!) : number(value!) >= number(target!)) ? 'yes' : 'no';
      expect(met, `${name}: met?`).toBe(expected);
    }
    expect(new Set(rows.map((r) => r[0])).size, 'one row per figure').toBe(rows.length);
  });
});
