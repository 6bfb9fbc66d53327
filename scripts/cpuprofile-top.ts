/**
 * `node scripts/cpuprofile-top.ts <file.cpuprofile | file.heapprofile>… [--top=N]`: where a V8 CPU
 * profile's time went, or a sampled allocation profile's bytes (the bench writes them with
 * BENCH_CPU_PROFILE=<prefix> and BENCH_ALLOC_PROFILE=<prefix>), as text: self time (bytes) by
 * function and by file, and inclusive by file (a sample counts once for every file on its stack).
 * Several profiles of one kind are summed. Paths are shortened to the repository,
 * `node_modules/<package>` or `node:`.
 */
import { readFileSync } from 'node:fs';

type CallFrame = { functionName: string; url: string; lineNumber: number };

/** A CPU profile (`.cpuprofile`): nodes by id, and the node each sample landed in with its time, µs. */
interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
}

/** A sampled heap profile (`.heapprofile`): a tree whose nodes carry the bytes allocated there. */
interface HeapProfileNode {
  callFrame: CallFrame;
  selfSize: number;
  children?: HeapProfileNode[];
}

/** Either profile as weighted stacks: each sample's call frames from its leaf up, and its weight (µs or bytes). */
interface Weighted {
  frames: CallFrame[];
  weight: number;
}

/** A CPU profile's samples, each weighing its time. */
function cpuSamples(profile: CpuProfile): Weighted[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  return profile.samples.map((id, i) => {
    const frames: CallFrame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) frames.push(byId.get(at)!.callFrame);
    return { frames, weight: profile.timeDeltas[i] ?? 0 };
  });
}

/** A heap profile's nodes that allocated, each weighing its bytes. */
function heapSamples(head: HeapProfileNode): Weighted[] {
  const out: Weighted[] = [];
  const walk = (node: HeapProfileNode, above: CallFrame[]) => {
    const frames = [node.callFrame, ...above];
    if (node.selfSize > 0) out.push({ frames, weight: node.selfSize });
    for (const c of node.children ?? []) walk(c, frames);
  };
  walk(head, []);
  return out;
}

/** A script URL as a short place: the repository's path, the package, or a builtin. */
function placeOf(url: string): string {
  if (url === '') return '(native)';
  const path = url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(path);
  if (pkg) return `${pkg[1]}/${pkg[2]}`;
  // A bench node process runs the build of src/ (scripts/bench-build.ts): its files are named as the sources they come from.
  const built = /\/\.bench-build\/(.*)\.js$/.exec(path);
  if (built) return built[1] === 'bench-scale-probe' ? 'scripts/bench-scale-probe.ts' : `src/${built[1]}.ts`;
  const repo = /\/(src|scripts|test)\/(.*)$/.exec(path);
  return repo ? `${repo[1]}/${repo[2]}` : path;
}

function add(map: Map<string, number>, key: string, weight: number): void {
  map.set(key, (map.get(key) ?? 0) + weight);
}

/** A profile file's contents: a CPU profile or a sampled heap profile. */
export type AnyProfile = CpuProfile | { head: HeapProfileNode };

/**
 * The text summary of profiles of one kind (all CPU, or all heap): self weight by function and by
 * file, inclusive by file, the `top` of each.
 */
export function profileSummary(profiles: AnyProfile[], top = 30): string {
  const heap = profiles.every((p) => 'head' in p);
  if (!heap && profiles.some((p) => 'head' in p)) throw new Error('cpuprofile-top: CPU and heap profiles cannot be summed together');
  const selfByFunction = new Map<string, number>();
  const selfByFile = new Map<string, number>();
  const inclusiveByFile = new Map<string, number>();
  let total = 0;
  for (const raw of profiles) {
    for (const { frames, weight } of 'head' in raw ? heapSamples(raw.head) : cpuSamples(raw)) {
      total += weight;
      const { functionName, url, lineNumber } = frames[0]!;
      const place = placeOf(url);
      add(selfByFunction, `${functionName || '(anonymous)'}  ${place}${url ? `:${lineNumber + 1}` : ''}`, weight);
      add(selfByFile, place, weight);
      for (const p of new Set(frames.map((f) => placeOf(f.url)))) add(inclusiveByFile, p, weight);
    }
  }
  const lines: string[] = [];
  // Time in µs, shown in ms; bytes shown in KB.
  const shown = (w: number) => `${(w / 1000).toFixed(0).padStart(7)} ${heap ? 'KB' : 'ms'}`;
  const print = (title: string, map: Map<string, number>) => {
    lines.push('', title);
    for (const [key, w] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      lines.push(`  ${((w / Math.max(1, total)) * 100).toFixed(1).padStart(5)}%  ${shown(w)}  ${key}`);
    }
  };
  const what = heap ? 'allocated' : 'time';
  lines.push(`${profiles.length} profile(s), ${heap ? `${(total / 1e6).toFixed(0)} MB allocated (sampled)` : `${(total / 1000).toFixed(0)} ms sampled`}`);
  print(`Self ${what} by function`, selfByFunction);
  print(`Self ${what} by file`, selfByFile);
  print(`Inclusive ${what} by file (once per sample)`, inclusiveByFile);
  return lines.join('\n');
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const top = Number(args.find((a) => a.startsWith('--top='))?.slice('--top='.length) ?? 30);
  const files = args.filter((a) => !a.startsWith('--'));
  if (files.length === 0) throw new Error('usage: node scripts/cpuprofile-top.ts <file.cpuprofile | file.heapprofile>… [--top=N]');
  console.log(profileSummary(files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as AnyProfile), top));
}
