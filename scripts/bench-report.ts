/**
 * The headline figures of a bench run as one markdown table (`npm run bench -- [mode] --markdown`),
 * and that table merged into docs/benchmarks.md between its marker comments (`--markdown=<file>`):
 * the rows of the figures measured in this run are replaced or added, every other row is kept as
 * it was, with its own value, date and commit. Whether a figure meets its target is computed here,
 * never written by hand.
 *
 * Pure apart from {@link describeRun}, which reads the machine and the checkout.
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gitHeadCommit } from '../src/build-info.ts';

/** A bound a figure should keep: `<=` for costs (latency, memory), `>=` for rates and shares. */
export interface Target {
  op: '<=' | '>=';
  value: number;
}

/** One headline figure of a run (recorded with `figure()` of ./bench-lib.ts). */
export interface Figure {
  /** The row's key in docs/benchmarks.md: keep it stable, put the run's parameters in `note`. */
  name: string;
  value: number;
  /** Printed after the value (`ms`, `/s`, `%`, `MiB`, …). */
  unit: string;
  target?: Target;
  /** What the value is made of: rounds, samples, parameters, the same run's reference. */
  note?: string;
}

/** Where and when a run measured. */
export interface RunInfo {
  /** Day the run started, `YYYY-MM-DD` (UTC). */
  date: string;
  /** Short commit of the checkout, `+dirty` when tracked files differed from it. */
  commit: string;
  /** Cores, CPU model, memory, and the 1-minute load average at the start and end of the run. */
  machine: string;
  /** Runs the row is from: a bench run writes 1; rows written by hand say how many they summarise. */
  runs: number;
}

/** The table's columns, in order. */
export const COLUMNS = ['figure', 'latest value', 'target', 'met?', 'runs', 'date', 'commit', 'machine', 'note'] as const;

/** The comments that enclose the table in docs/benchmarks.md. */
export const TABLE_START = '<!-- bench:table:start -->';
export const TABLE_END = '<!-- bench:table:end -->';

/** A number as the table prints it: integers with thousands separators from 100 up, else 3 significant digits. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return '—';
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en');
  return String(Number(value.toPrecision(3)));
}

/** `value unit`; a percentage without the space. */
export function formatValue(value: number, unit: string): string {
  if (!Number.isFinite(value)) return '—';
  const number = formatNumber(value);
  return unit === '%' || unit === '' ? `${number}${unit}` : `${number} ${unit}`;
}

/** `≤ 15 ms`, `≥ 8,000 records/s`, or `—` without a target. */
export function formatTarget(target: Target | undefined, unit: string): string {
  return target ? `${target.op === '<=' ? '≤' : '≥'} ${formatValue(target.value, unit)}` : '—';
}

/** Whether the figure keeps its target; undefined without a target or without a value. */
export function meetsTarget(figure: Pick<Figure, 'value' | 'target'>): boolean | undefined {
  if (!figure.target || !Number.isFinite(figure.value)) return undefined;
  return figure.target.op === '<=' ? figure.value <= figure.target.value : figure.value >= figure.target.value;
}

/** A cell's text: pipes escaped, line breaks folded, so one row stays one line. */
function cell(text: string): string {
  return text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|').trim();
}

/** The markdown row of one figure of a run. */
export function figureRow(figure: Figure, run: RunInfo): string {
  const met = meetsTarget(figure);
  const cells = [
    figure.name,
    formatValue(figure.value, figure.unit),
    formatTarget(figure.target, figure.unit),
    met === undefined ? '—' : met ? 'yes' : 'no',
    String(run.runs),
    run.date,
    run.commit,
    run.machine,
    figure.note ?? '',
  ];
  return `| ${cells.map(cell).join(' | ')} |`;
}

/** The header and separator lines. */
export function tableHead(): string[] {
  return [`| ${COLUMNS.join(' | ')} |`, `|${COLUMNS.map(() => '---').join('|')}|`];
}

/** The whole table of a run's figures, in the order they were recorded (a figure recorded twice: its last value). */
export function renderTable(figures: readonly Figure[], run: RunInfo): string {
  return [...tableHead(), ...latestByName(figures).map((f) => figureRow(f, run))].join('\n');
}

/** One figure per name, the last recorded, at the place of the first. */
export function latestByName(figures: readonly Figure[]): Figure[] {
  const byName = new Map<string, Figure>();
  for (const f of figures) byName.set(f.name, f);
  return [...byName.values()];
}

/** The cells of a markdown table row (escaped pipes kept inside their cell, unescaped). */
export function rowCells(line: string): string[] {
  const body = line.trim().replace(/^\|/, '').replace(/(?<!\\)\|$/, '');
  return body.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));
}

/** What {@link mergeTable} did. */
export interface MergeResult {
  text: string;
  replaced: string[];
  added: string[];
}

/**
 * `doc` with the table between {@link TABLE_START} and {@link TABLE_END} merged with this run's
 * figures: a row whose figure was measured is replaced in place, a new figure's row is appended,
 * every other row is kept byte for byte, and nothing outside the markers changes. Throws when the
 * markers are missing, repeated or out of order.
 */
export function mergeTable(doc: string, figures: readonly Figure[], run: RunInfo): MergeResult {
  const start = doc.indexOf(TABLE_START);
  const end = doc.indexOf(TABLE_END);
  if (start < 0 || end < 0 || end < start || doc.indexOf(TABLE_START, start + 1) >= 0 || doc.indexOf(TABLE_END, end + 1) >= 0) {
    throw new Error(`expected one ${TABLE_START} … ${TABLE_END} pair, in that order`);
  }
  const inside = doc.slice(start + TABLE_START.length, end);
  // Rows of the old table, after its header and separator (any other line between the markers goes).
  const lines = inside.split('\n').filter((l) => l.trim().startsWith('|'));
  const rows = lines.slice(2).map((line) => ({ name: rowCells(line)[0] ?? '', line }));
  const replaced: string[] = [];
  const added: string[] = [];
  for (const f of latestByName(figures)) {
    const line = figureRow(f, run);
    const at = rows.findIndex((r) => r.name === f.name);
    if (at >= 0) {
      rows[at] = { name: f.name, line };
      replaced.push(f.name);
    } else {
      rows.push({ name: f.name, line });
      added.push(f.name);
    }
  }
  const table = [...tableHead(), ...rows.map((r) => r.line)].join('\n');
  return { text: `${doc.slice(0, start)}${TABLE_START}\n${table}\n${doc.slice(end)}`, replaced, added };
}

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The 1-minute load average now, as the machine column prints it. */
export function loadNow(): string {
  return loadavg()[0]!.toFixed(2);
}

/** This run's {@link RunInfo}: `startedAt` and `loadAtStart` taken when the run began. */
export function describeRun(startedAt: Date, loadAtStart: string): RunInfo {
  const full = gitHeadCommit(REPO);
  let commit = full ? full.slice(0, 7) : 'unknown';
  try {
    if (full && execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: REPO, encoding: 'utf8' }).trim() !== '') commit += '+dirty';
  } catch {
    // No git binary: the commit alone.
  }
  const cores = cpus();
  const model = cores[0]?.model.trim() || 'unknown CPU';
  const memory = `${(totalmem() / 1024 ** 3).toFixed(1)} GiB`;
  return { date: startedAt.toISOString().slice(0, 10), commit, machine: `${cores.length} cores, ${model}, ${memory}, load ${loadAtStart} → ${loadNow()}`, runs: 1 };
}
