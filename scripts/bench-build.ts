/**
 * The JavaScript the bench's node processes run (./bench-scale-store.ts, `spawnNode`): src/ built
 * with tsconfig.build.json into `.bench-build/` at the repository's root (gitignored), as `npm pack`
 * builds dist/ for the shipped systemd unit (docs/deployment.md) — so a measured node runs what a
 * deployed one runs, not src/ with its types stripped as it loads. Stripping costs every isolate of
 * the process (the event loop's and each crypto thread's) the TypeScript stripper's own heap, which
 * a deployed node does not carry; RSS figures would be measured on it. The preloaded probe
 * (./bench-scale-probe.ts, node built-ins only) has its types stripped into the same directory.
 *
 * Built once per bench process, on the first node spawned (a few seconds), fresh every run: never a
 * stale build of an earlier checkout.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(fileURLToPath(import.meta.url), '../..');
/** Where the build goes: beside dist/, so paths relative to a module (../package.json) resolve alike. */
export const BENCH_BUILD_DIR = join(REPO, '.bench-build');

let built = false;

/** Build src/ and the probe into {@link BENCH_BUILD_DIR} once per process; returns the node's entry and the probe's path. */
export function benchBuild(): { main: string; probe: string } {
  const out = { main: join(BENCH_BUILD_DIR, 'main.js'), probe: join(BENCH_BUILD_DIR, 'bench-scale-probe.js') };
  if (built) return out;
  rmSync(BENCH_BUILD_DIR, { recursive: true, force: true });
  execFileSync(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', join(REPO, 'tsconfig.build.json'), '--outDir', BENCH_BUILD_DIR, '--declaration', 'false', '--sourceMap', 'false'], { stdio: 'inherit' });
  // In a child, whose warning for the (experimental) stripping API is turned off: the bench's output stays its figures.
  const strip = `import { stripTypeScriptTypes } from 'node:module'; import { readFileSync, writeFileSync } from 'node:fs'; const [from, to] = process.argv.slice(1); writeFileSync(to, stripTypeScriptTypes(readFileSync(from, 'utf8')));`;
  execFileSync(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', strip, join(REPO, 'scripts/bench-scale-probe.ts'), out.probe], { stdio: 'inherit' });
  built = true;
  return out;
}
