/**
 * Diagnostics of the catch-up bench (`npm run bench -- catchup`, scripts/bench.ts `catchUpRound`),
 * for finding what moves its rate between rounds on a shared machine: `BENCH_CATCHUP_DIAG=1` prints,
 * per round, the load, CPU by thread, GC and event-loop delay, and the sync streams the other members
 * served; `BENCH_CATCHUP_LOG=1` adds the restarted member's `caught up from peer` lines.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { QuorumNode } from '../src/testing/index.ts';
import { watchGc } from './bench-lib.ts';

/**
 * `BENCH_CATCHUP_DIAG=1`: per catch-up round, on stderr, what moves its rate on a shared machine — the
 * load average, this process's CPU, GC pauses and event-loop delay (restart and catch-up phases
 * apart), records the member had before the timed phase began, its records applied by source, and
 * (with BENCH_CATCHUP_LOG=1) its `caught up from peer` lines.
 */
export function catchUpDiagnostics() {
  const loadBefore = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const gc = watchGc();
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  let cpu = process.cpuUsage();
  let threads = threadTicks();
  let machine = machineTicks();
  const logFrom = catchUpLog.length;
  let restartPhase = '';
  const phase = () => {
    const c = process.cpuUsage(cpu);
    const t = threadTicks();
    const m = machineTicks();
    const byName = [...t].map(([name, ticks]) => [name, ticks - (threads.get(name) ?? 0)] as const).filter(([, d]) => d > 0).sort((a, b) => b[1] - a[1]);
    const busy = m.busy - machine.busy;
    const all = busy + m.idle - machine.idle;
    const ours = [...t.values()].reduce((a, b) => a + b, 0) - [...threads.values()].reduce((a, b) => a + b, 0);
    const threadText = `\n    machine busy ${((busy / Math.max(1, all)) * 100).toFixed(0)}% (steal ${m.steal - machine.steal} ticks), others' ${((busy - ours) * 10).toFixed(0)} ms; threads ${byName.map(([n, d]) => `${n} ${d * 10}`).join(', ')} ms`;
    const g = gc.take();
    const gcMs = g.scavengeMs + g.markCompactMs + g.otherMs;
    // Mark-compacts apart: their concurrent marking runs on V8's helper threads, beside the round.
    const text = `cpu ${((c.user + c.system) / 1000).toFixed(0)} ms, gc ${gcMs.toFixed(0)} ms/${g.scavenges + g.markCompacts + g.others} (mark-compact ${g.markCompactMs.toFixed(0)} ms/${g.markCompacts}), loop delay p50 ${(loop.percentile(50) / 1e6).toFixed(1)} p99 ${(loop.percentile(99) / 1e6).toFixed(1)} max ${(loop.max / 1e6).toFixed(1)} ms${threadText}`;
    threads = t;
    machine = m;
    cpu = process.cpuUsage();
    loop.reset();
    return text;
  };
  return {
    connected() {
      restartPhase = phase();
    },
    async report(tag: string, r: { records: number; restartMs: number; catchUpMs: number; recordsPerSecond: number; missingAtConnect: number; member: QuorumNode }) {
      const catchUpPhase = phase();
      await gc.stop();
      loop.disable();
      const applied = (await r.member.metrics.recordsApplied.get()).values.map((v) => `${v.labels.source}=${v.value}`).join(' ');
      const lines = [
        `catch-up ${tag}: ${r.recordsPerSecond.toFixed(0)} records/s, restart ${r.restartMs.toFixed(0)} ms, catch-up ${r.catchUpMs.toFixed(0)} ms, missing at connect ${r.missingAtConnect}/${r.records}`,
        `  load before ${loadBefore}, after ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
        `  restart phase: ${restartPhase}`,
        `  catch-up phase: ${catchUpPhase}`,
        `  member applied: ${applied}`,
        ...catchUpLog.slice(logFrom).filter((l) => l.msg === 'caught up from peer' && l.node === r.member.nodeId).map((l) => `  ${l.time} caught up from ${String(l.peer)}: ${String(l.applied)} records, ${String(l.pages)} pages, ${String(l.ms)} ms`),
      ];
      process.stderr.write(`${lines.join('\n')}\n`);
    },
  };
}

/**
 * Count the sync streams each member serves and the records in them, from now until `report`: the
 * engine is the object the member's sync responder reads from, so wrapping its `missingFor` sees
 * every stream (a bench aid only).
 */
export function countSyncServed(members: QuorumNode[]) {
  const t0 = performance.now();
  const streams: Array<{ node: string; at: number; records: number }> = [];
  const restore: Array<() => void> = [];
  for (const m of members) {
    const engine = m.replicator as unknown as { missingFor: (...a: unknown[]) => AsyncGenerator<unknown[]> };
    const original = engine.missingFor;
    engine.missingFor = async function* (...args: unknown[]) {
      const s = { node: m.nodeId, at: performance.now() - t0, records: 0 };
      streams.push(s);
      for await (const page of original.apply(engine, args)) {
        s.records += page.length;
        yield page;
      }
    };
    restore.push(() => (engine.missingFor = original));
  }
  return {
    report() {
      for (const r of restore) r();
      return streams.map((s) => `${s.node}@${s.at.toFixed(0)}: ${s.records}`).join(', ');
    },
  };
}

/** Records a node applied since it started, every source. */
export async function appliedTotal(m: QuorumNode): Promise<number> {
  return (await m.metrics.recordsApplied.get()).values.reduce((a, v) => a + v.value, 0);
}

/** This process's CPU ticks (10 ms) by thread name (`node` is the main thread; workers, libuv and LevelDB threads have their own). */
function threadTicks(): Map<string, number> {
  const out = new Map<string, number>();
  for (const task of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(name, (out.get(name) ?? 0) + Number(f[11]) + Number(f[12]));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/** The machine's CPU ticks since boot, every core: busy, idle (with iowait) and stolen by the hypervisor. */
function machineTicks(): { busy: number; idle: number; steal: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { busy: f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + f[7]!, idle: f[3]! + f[4]!, steal: f[7]! };
}

/** The nodes' log lines (BENCH_CATCHUP_LOG=1, `-- catchup` only), parsed. */
export const catchUpLog: Record<string, unknown>[] = [];
