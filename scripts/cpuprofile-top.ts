/**
 * `node scripts/cpuprofile-top.ts <file.cpuprofile>… [--top=N]`: where a V8 CPU profile's time went
 * (the bench writes them with BENCH_CPU_PROFILE=<prefix>), as text: self time by function and by
 * file, and inclusive time by file (a sample counts once for every file on its stack). Several
 * profiles are summed. Paths are shortened to the repository, `node_modules/<package>` or `node:`.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
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

function add(map: Map<string, number>, key: string, us: number): void {
  map.set(key, (map.get(key) ?? 0) + us);
}

function main(args: string[]): void {
  const top = Number(args.find((a) => a.startsWith('--top='))?.slice('--top='.length) ?? 30);
  const files = args.filter((a) => !a.startsWith('--'));
  if (files.length === 0) throw new Error('usage: node scripts/cpuprofile-top.ts <file.cpuprofile>… [--top=N]');
  const selfByFunction = new Map<string, number>();
  const selfByFile = new Map<string, number>();
  const inclusiveByFile = new Map<string, number>();
  let total = 0;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    profile.samples.forEach((id, i) => {
      const us = profile.timeDeltas[i] ?? 0;
      total += us;
      const node = byId.get(id)!;
      const { functionName, url, lineNumber } = node.callFrame;
      const place = placeOf(url);
      add(selfByFunction, `${functionName || '(anonymous)'}  ${place}${url ? `:${lineNumber + 1}` : ''}`, us);
      add(selfByFile, place, us);
      const seen = new Set<string>();
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const p = placeOf(byId.get(at)!.callFrame.url);
        if (!seen.has(p)) {
          seen.add(p);
          add(inclusiveByFile, p, us);
        }
      }
    });
  }
  const print = (title: string, map: Map<string, number>) => {
    console.log(`\n${title}`);
    for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(`  ${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${key}`);
    }
  };
  console.log(`${files.length} profile(s), ${(total / 1000).toFixed(0)} ms sampled`);
  print('Self time by function', selfByFunction);
  print('Self time by file', selfByFile);
  print('Inclusive time by file (once per sample)', inclusiveByFile);
}

main(process.argv.slice(2));
