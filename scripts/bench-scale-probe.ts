/**
 * Preloaded into the member process of `npm run bench -- scale-store` (`node --import` this file, its types
 * stripped, then the node's built `main.js start` unchanged: ./bench-build.ts): it answers the bench over the IPC channel with what only the process
 * itself can see — `process.memoryUsage()`, V8's heap spaces, a full GC, a CPU profile of its start-up
 * (`BENCH_CPU_PROFILE=<prefix>`) and a heap snapshot. It adds nothing to the member's heap but this
 * module and, while profiling, the profiler's samples.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { performance, PerformanceObserver, type EventLoopUtilization } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString, writeHeapSnapshot } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * What the bench asks: memory; memory after a full GC; a CPU profile started (the start-up one runs
 * from load with `BENCH_CPU_PROFILE`) or written; a heap snapshot written; the event loop's
 * utilisation and GC pauses observed from `observeStart` to `observeStop` (a {@link ProbeObserved}).
 */
export type ProbeOp =
  | { op: 'memory' }
  | { op: 'gc' }
  | { op: 'startProfile' }
  | { op: 'stopProfile'; path: string }
  | { op: 'heapSnapshot'; path: string }
  | { op: 'observeStart' }
  | { op: 'observeStop' };

/** What the process's main thread went through between `observeStart` and `observeStop`. */
export interface ProbeObserved {
  /** Share of the time the event loop was busy, 0–1. */
  busy: number;
  /** Garbage-collection pauses of the main thread: how many, and their total, ms. */
  gcCount: number;
  gcMs: number;
}
/** A request of the bench; answered `{ id, result }` or `{ id, error }`. */
export type ProbeRequest = ProbeOp & { id: number };

/** The member's memory as it sees it, bytes. */
export interface ProbeMemory {
  rss: number;
  /** Peak RSS of the process so far (VmHWM). */
  peakRss: number;
  /** RSS by kind (/proc/self/status): anonymous (heaps, stacks, native allocations) and file-backed (code, mapped files). */
  rssAnon: number;
  rssFile: number;
  /** Of the file-backed RSS, the pages of LevelDB's table files (`.ldb`) it has mapped to read them (/proc/self/smaps). */
  ldbMapped: number;
  /** Mappings of `.ldb` files. */
  ldbMaps: number;
  /** Threads of the process (the event loop, V8's, libuv's pool, worker threads). */
  threads: number;
  heapTotal: number;
  heapUsed: number;
  /** C++ objects bound to JS ones (LevelDB, libp2p's native parts, Buffers' backing stores…). */
  external: number;
  arrayBuffers: number;
  /** Used bytes per V8 heap space (new, old, code, large objects…). */
  spaces: Record<string, number>;
}

/** What the probe sends unasked, once: when this module ran (Unix ms), before any of src/ loads. */
export interface ProbeLoaded {
  loadedAt: number;
}

const send = process.send?.bind(process);
if (send) {
  const profilePrefix = process.env.BENCH_CPU_PROFILE;
  let profiler: Session | undefined;
  const startProfile = async (): Promise<void> => {
    if (profiler) return;
    profiler = new Session();
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.setSamplingInterval', { interval: 500 });
    await profiler.post('Profiler.start');
  };
  if (profilePrefix) await startProfile();
  let observing: { elu: EventLoopUtilization; gcs: PerformanceObserver; counts: { gcCount: number; gcMs: number } } | undefined;
  let gc: (() => void) | undefined;
  const memory = (): ProbeMemory => {
    const usage = process.memoryUsage();
    const status = readFileSync('/proc/self/status', 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
    let ldbMapped = 0;
    let ldbMaps = 0;
    let inLdb = false;
    for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
      // A mapping's header line starts with its address range; its fields (`Rss:   12 kB`) follow.
      if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) {
        inLdb = line.endsWith('.ldb');
        if (inLdb) ldbMaps++;
      } else if (inLdb && line.startsWith('Rss:')) ldbMapped += Number(/(\d+) kB/.exec(line)?.[1] ?? 0) * 1024;
    }
    return {
      rss: usage.rss,
      peakRss: kb('VmHWM'),
      rssAnon: kb('RssAnon'),
      rssFile: kb('RssFile'),
      ldbMapped,
      ldbMaps,
      threads: readdirSync('/proc/self/task').length,
      heapTotal: usage.heapTotal,
      heapUsed: usage.heapUsed,
      external: usage.external,
      arrayBuffers: usage.arrayBuffers,
      spaces: Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size])),
    };
  };
  const handle = async (request: ProbeRequest): Promise<unknown> => {
    switch (request.op) {
      case 'memory':
        return memory();
      case 'gc':
        if (!gc) {
          setFlagsFromString('--expose-gc');
          gc = runInNewContext('gc') as () => void;
        }
        gc();
        return memory();
      case 'startProfile':
        return startProfile();
      case 'observeStart': {
        observing?.gcs.disconnect();
        const counts = { gcCount: 0, gcMs: 0 };
        const gcs = new PerformanceObserver((list) => {
          for (const entry of list.getEntries()) {
            counts.gcCount += 1;
            counts.gcMs += entry.duration;
          }
        });
        gcs.observe({ entryTypes: ['gc'] });
        observing = { elu: performance.eventLoopUtilization(), gcs, counts };
        return undefined;
      }
      case 'observeStop': {
        if (!observing) throw new Error('observeStart first');
        const { elu, gcs, counts } = observing;
        observing = undefined;
        gcs.disconnect();
        return { busy: performance.eventLoopUtilization(elu).utilization, ...counts } satisfies ProbeObserved;
      }
      case 'stopProfile': {
        if (!profiler) return undefined;
        const { profile } = await profiler.post('Profiler.stop');
        profiler.disconnect();
        profiler = undefined;
        await writeFile(request.path, JSON.stringify(profile));
        return request.path;
      }
      case 'heapSnapshot':
        return writeHeapSnapshot(request.path);
    }
  };
  process.on('message', (request: ProbeRequest) => {
    handle(request).then(
      (result) => send({ id: request.id, result }),
      (err: unknown) => send({ id: request.id, error: String(err) }),
    );
  });
  // The channel alone must not keep the member alive once it stops.
  process.channel?.unref();
  send({ loadedAt: Date.now() } satisfies ProbeLoaded);
}
