/**
 * `npm run bench -- decrypt-load` (also in the default run; issue 31): `POST /decrypt-payload` with
 * many clients at once against one coordinator, next to the same run's in-process bound for the work
 * one decrypt takes.
 *
 * The cluster is the default run's (5 members, threshold 3, 2 coordinators, every node in the bench's
 * process, no rate limits, a plan far above the load); the clients are the load worker
 * (scripts/bench-load.ts, another thread), each with one keep-alive connection and one request in
 * flight. Every decrypt needs its own signed string (a member releases a share once per string), so
 * each phase's bodies are signed before it starts, over a message encrypted for that phase alone.
 *
 * The bound is the crypto of one decrypt as the cluster does it, called directly, without HTTP,
 * libp2p, LevelDB or the session and usage checks: the coordinator's EIP-191 signer recovery; for each
 * of the threshold members asked (the coordinator's own slot first, as src/core/replication/gather.ts
 * orders them) the release checks of src/core/secrets/shard-handler.ts — the string's use key, the
 * signature checked again (not on the coordinator's own slot: its verifier remembers the signer), the
 * share's decryption at rest and its digest check (./held-share.ts), and the seal to the coordinator
 * (not for its own slot: handed over in process); then the coordinator's opening of the sealed shares,
 * the Shamir combine, and the ML-KEM import, decapsulation and AES-GCM open of the payload. The
 * recoveries go through request crypto pools as each node's do (one per node taking part: three
 * threads), the rest runs on the main thread; many decrypts are in flight at once, so the bound is what
 * this machine's cores do with both.
 */
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { LocalCluster } from '../src/testing/index.ts';
import {
  combineShares,
  createRequestCryptoPool,
  decryptAtRest,
  encryptAtRest,
  fromBase64,
  fromHex,
  generatePrivateKey,
  mlkemPublicKeyFromSeed,
  MLKEM768_SEED_BYTES,
  openPayloadWithCheckedSeed,
  openSealed,
  publicKeyOf,
  recoverPersonalSigner,
  sealPayload,
  sealTo,
  splitSecretForSlots,
  toBase64,
  toHex,
  zeroize,
  type RequestCryptoPool,
} from '../src/crypto/index.ts';
import { decodeBinary, decodeEncryptedMessage, encodeBinary } from '../src/core/payloads/binary.ts';
import { requireHeldShare, type HeldShares } from '../src/core/secrets/held-share.ts';
import { shareAtRestAad, shareDigest, shareReleaseAad } from '../src/core/secrets/records.ts';
import { releaseUseKey } from '../src/core/secrets/shard-handler.ts';
import { BOUND_YIELD_EVERY, benchSession, decryptBodies, figure, gcPerOp, load, loadAverages, median, ms, percentile, post, runConcurrent, table, watchGc, withCpuProfile, type GcPauses, type LoadResult } from './bench-lib.ts';

/** Decrypts of each timed phase (one concurrency level of one round). */
const DECRYPTS = Number(process.env.BENCH_DECRYPT_LOAD ?? 1000);
/** Rounds, each the bound then every concurrency level: the medians are the figures. */
const ROUNDS = Number(process.env.BENCH_DECRYPT_LOAD_ROUNDS ?? 3);
/** Concurrent clients of the HTTP phases; the targets are the 16's. */
const CLIENTS = (process.env.BENCH_DECRYPT_LOAD_CLIENTS ?? '16,64').split(',').map(Number);
/** Decrypts in flight at once in the bound (enough for its pools' threads to get batches). */
const BOUND_CONCURRENCY = 16;
/** Each step of the inline breakdown runs at least this often and this long, ms. */
const STEP_MIN_REPS = 200;
const STEP_MIN_MS = 200;
/** Issue 31's targets, at 16 clients. */
const TARGET_CLIENTS = 16;
const TARGET_SHARE_OF_BOUND_PCT = 50;
const TARGET_P99_MS = 50;

/** What one HTTP phase measured. */
interface Phase {
  /** Decrypts per second. */
  rate: number;
  p50: number;
  p99: number;
  /** Main-thread CPU per decrypt, µs (every node runs on it; the clients do not). */
  cpuUs: number;
  /** How late the main thread's event loop ran a timer over the phase, ms: p99 and the longest (a stall every request then waits out). */
  loopDelayP99: number;
  loopDelayMax: number;
  /** The main thread's GC pauses over the phase (every node's heap is that thread's). */
  gc: GcPauses;
}

/** One member's part of the bound's secret: its share as it holds it, and the record's digest of it. */
interface BoundMember {
  slot: number;
  held: HeldShares;
  digest: string;
}

/** The bound's secret, dealt in process as a coordinator deals one, and the coordinator's keys. */
interface BoundSecret {
  clusterId: string;
  secretId: number;
  /** The secret's ML-KEM-768 public key (what the rebuilt seed is checked against). */
  publicKey: Uint8Array;
  members: BoundMember[];
  coordinator: { slot: number; nodeAddress: string; privateKey: Uint8Array; publicKey: Uint8Array; publicKeyHex: string };
  /** An envelope of the bench's payload size, as `POST /encrypt-payload` answers it (hex). */
  envelope: { cifer: string; encryptedMessage: string };
}

/**
 * A secret of `size` shares (any `threshold` rebuild it), each encrypted at rest under its member's
 * own storage key; the coordinator (slot 0) with a fresh signing key; an envelope of `payloadBytes`.
 */
function boundSecret(payloadBytes: number, size: number, threshold: number): BoundSecret {
  const clusterId = `bench-${toHex(randomBytes(8))}`;
  const secretId = 1;
  const seed = new Uint8Array(randomBytes(MLKEM768_SEED_BYTES));
  const publicKey = mlkemPublicKeyFromSeed(seed);
  const slots = Array.from({ length: size }, (_, slot) => slot);
  const shares = splitSecretForSlots(seed, slots, threshold);
  const members = slots.map((slot): BoundMember => {
    const storageKey = new Uint8Array(randomBytes(32));
    const box = encryptAtRest(storageKey, shares[slot]!, shareAtRestAad(clusterId, secretId, slot));
    return {
      slot,
      held: { shares: { get: async () => box }, keyring: { decryptAtRest: (b, aad) => decryptAtRest(storageKey, b, aad) }, clusterId, slot },
      digest: shareDigest(clusterId, secretId, slot, shares[slot]!),
    };
  });
  const sealed = sealPayload(publicKey, new Uint8Array(payloadBytes).fill(0x78));
  zeroize(seed, ...shares);
  const privateKey = generatePrivateKey();
  const coordinatorPublicKey = publicKeyOf(privateKey, true);
  return {
    clusterId,
    secretId,
    publicKey,
    members,
    coordinator: { slot: 0, nodeAddress: `0x${toHex(randomBytes(20))}`, privateKey, publicKey: coordinatorPublicKey, publicKeyHex: toHex(coordinatorPublicKey) },
    envelope: { cifer: encodeBinary(sealed.cifer, 'hex'), encryptedMessage: encodeBinary(sealed.encryptedMessage, 'hex') },
  };
}

/** A decrypt request body as the route parses it. */
interface DecryptBody {
  cifer: string;
  data: string;
  signature: string;
}

/** The encrypted message of a decrypt's signed string (its last part). */
const messageOf = (data: string) => decodeEncryptedMessage(data.slice(data.lastIndexOf('_') + 1), 'hex');

/**
 * One member's release of its share for `request` (src/core/secrets/shard-handler.ts): the use key,
 * the signature checked again (not on the coordinator's own slot, whose verifier remembers the
 * signer), the share read and checked, and — for another slot — sealed to the coordinator, which
 * opens it.
 */
async function release(secret: BoundSecret, member: BoundMember, request: DecryptBody, recoverSigner: RequestCryptoPool['recoverSigner'] | undefined): Promise<Uint8Array> {
  const { clusterId, secretId, coordinator } = secret;
  releaseUseKey(request.data, { cifer: request.cifer, inputFormat: 'hex' });
  if (recoverSigner && !(await recoverSigner(request.data, request.signature))) throw new Error('bound: member recovery');
  const share = await requireHeldShare(member.held, secretId, member.digest);
  if (member.slot === coordinator.slot) return share;
  const aad = shareReleaseAad(clusterId, secretId, member.slot, coordinator.nodeAddress);
  let box: string;
  try {
    box = toBase64(sealTo(fromHex(coordinator.publicKeyHex), share, aad));
  } finally {
    zeroize(share);
  }
  const opened = openSealed(coordinator.privateKey, fromBase64(box), aad, coordinator.publicKey);
  if (!opened) throw new Error('bound: released share does not open');
  return opened;
}

/** The coordinator's last step: combine the shares, open the envelope with the seed (checked), zero both. */
async function combineAndOpen(secret: BoundSecret, shares: Uint8Array[], cifer: Uint8Array, message: Uint8Array): Promise<void> {
  const seed = await combineShares(shares);
  zeroize(...shares);
  const opened = openPayloadWithCheckedSeed(seed, secret.publicKey, cifer, message);
  zeroize(seed);
  if (!opened.ok) throw new Error(`bound: ${opened.reason}`);
  utf8Decoder.decode(opened.plaintext);
  zeroize(opened.plaintext);
}

const utf8Decoder = new TextDecoder();

/**
 * The in-process bound: the decrypts of `bodies` (each a fresh string, like the HTTP phases'),
 * {@link BOUND_CONCURRENCY} in flight, recoveries through `pools` as on the nodes (the
 * coordinator's, then one per remote member asked); decrypts per second.
 */
async function measureBound(secret: BoundSecret, bodies: string[], threshold: number, pools: RequestCryptoPool[]): Promise<number> {
  const asked = secret.members.slice(0, threshold);
  const run = await runConcurrent(bodies.length, BOUND_CONCURRENCY, async (i) => {
    // The members share this thread: a loop kept busy too long would read as peers falling silent.
    if (i % BOUND_YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
    const request = JSON.parse(bodies[i]!) as DecryptBody;
    if (!(await pools[0]!.recoverSigner(request.data, request.signature))) throw new Error('bound: coordinator recovery');
    const cifer = decodeBinary(request.cifer, 'hex', 'cifer');
    const message = messageOf(request.data);
    const shares = await Promise.all(asked.map((m) => release(secret, m, request, m.slot === secret.coordinator.slot ? undefined : pools[m.slot]!.recoverSigner)));
    await combineAndOpen(secret, shares, cifer, message);
  });
  return (bodies.length / run.wallMs) * 1000;
}

/** The bound's steps done inline on this thread, one after another: CPU per decrypt by step, µs (where its time goes). */
async function boundSteps(secret: BoundSecret, body: string, threshold: number): Promise<Array<[string, number]>> {
  const request = JSON.parse(body) as DecryptBody;
  const { clusterId, secretId, coordinator } = secret;
  const member = secret.members[1]!;
  const aad = shareReleaseAad(clusterId, secretId, member.slot, coordinator.nodeAddress);
  const share = await requireHeldShare(member.held, secretId, member.digest);
  const box = sealTo(coordinator.publicKey, share, aad);
  const shares = () => Promise.all(secret.members.slice(0, threshold).map((m) => requireHeldShare(m.held, secretId, m.digest)));
  const seed = await combineShares(await shares());
  const cifer = decodeBinary(request.cifer, 'hex', 'cifer');
  const message = messageOf(request.data);
  // Long enough for the thread's CPU clock, which advances in scheduler ticks, to measure each step.
  const cpuUs = async (fn: () => unknown): Promise<number> => {
    const c0 = process.threadCpuUsage();
    const t0 = performance.now();
    let reps = 0;
    while (reps < STEP_MIN_REPS || performance.now() - t0 < STEP_MIN_MS) {
      await fn();
      reps++;
    }
    const c = process.threadCpuUsage(c0);
    return (c.user + c.system) / reps;
  };
  const remote = threshold - 1;
  const steps: Array<[string, number]> = [
    [`EIP-191 signer recovery × ${1 + remote}`, (1 + remote) * (await cpuUs(() => recoverPersonalSigner(request.data, request.signature)))],
    [`release use key × ${threshold}`, threshold * (await cpuUs(() => releaseUseKey(request.data, { cifer: request.cifer, inputFormat: 'hex' })))],
    [`share decrypted at rest + digest check × ${threshold}`, threshold * (await cpuUs(async () => zeroize(await requireHeldShare(member.held, secretId, member.digest))))],
    [`share sealed to the coordinator × ${remote}`, remote * (await cpuUs(() => sealTo(coordinator.publicKey, share, aad)))],
    [`sealed share opened × ${remote}`, remote * (await cpuUs(() => openSealed(coordinator.privateKey, box, aad, coordinator.publicKey)))],
    ['Shamir combine', await cpuUs(async () => zeroize(await combineShares(await shares())))],
    ['ML-KEM key import + decapsulation + AES-GCM open', await cpuUs(() => openPayloadWithCheckedSeed(seed, secret.publicKey, cifer, message))],
  ];
  zeroize(seed, share);
  return steps;
}

/**
 * Decrypt throughput and latency with {@link CLIENTS} concurrent clients against coordinator 0, next
 * to the in-process bound, in {@link ROUNDS} rounds (each: the bound, then every client count);
 * `payloadBytes` is each message's plaintext.
 */
export async function benchDecryptLoad(cluster: LocalCluster, payloadBytes: number): Promise<void> {
  const url = cluster.coordinators[0]!;
  const { session, signed } = await benchSession(cluster, url);
  const created = await post(`${url}/web2/secret`, signed(0));
  if (created.status !== 201 || created.body.status !== 'complete') throw new Error(`decrypt-load: secret ${created.status} ${JSON.stringify(created.body)}`);
  const secretId = created.body.secretId as number;
  // A message of its own for every phase: two phases' strings never coincide (each decrypts once).
  let serial = 0;
  const phaseBodies = async (count: number) => {
    const enc = await post(`${url}/encrypt-payload`, signed(secretId, `decrypt-load ${serial++} `.padEnd(payloadBytes, 'x')));
    if (enc.status !== 200) throw new Error(`decrypt-load: encrypt ${enc.status} ${JSON.stringify(enc.body)}`);
    return decryptBodies(session, secretId, enc.body, count);
  };
  const phase = async (clients: number, tag: string): Promise<Phase> => {
    const bodies = await phaseBodies(DECRYPTS);
    const loop = monitorEventLoopDelay({ resolution: 2 });
    loop.enable();
    const gcWatch = watchGc();
    const c0 = process.threadCpuUsage();
    const run: LoadResult = await withCpuProfile(tag, () => load(`${url}/decrypt-payload`, bodies, clients));
    const c = process.threadCpuUsage(c0);
    loop.disable();
    const gc = await gcWatch.stop();
    if (run.failures > 0) throw new Error(`decrypt-load: ${run.failures} failures of ${DECRYPTS} at ${clients} clients, first: ${run.firstFailure}`);
    return {
      rate: (DECRYPTS / run.wallMs) * 1000,
      p50: median(run.latencies),
      p99: percentile(run.latencies, 99),
      cpuUs: (c.user + c.system) / DECRYPTS,
      // The histogram counts from the timer's due time: its resolution is not delay.
      loopDelayP99: Math.max(0, loop.percentile(99) / 1e6 - 2),
      loopDelayMax: Math.max(0, loop.max / 1e6 - 2),
      gc,
    };
  };
  await load(`${url}/decrypt-payload`, await phaseBodies(300), Math.max(...CLIENTS)); // warm-up

  const { size, threshold } = cluster.descriptor;
  const secret = boundSecret(payloadBytes, size, threshold);
  const boundBodies = (count: number) => decryptBodies(session, secret.secretId, secret.envelope, count);
  // The pools of the nodes a decrypt involves: the coordinator's and each remote member's.
  const pools = Array.from({ length: threshold }, () => createRequestCryptoPool());
  const bound: number[] = [];
  const http = new Map<number, Phase[]>(CLIENTS.map((c) => [c, []]));
  const loads: string[] = [];
  try {
    await measureBound(secret, boundBodies(300), threshold, pools); // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      loads.push(loadAverages());
      bound.push(await measureBound(secret, boundBodies(DECRYPTS), threshold, pools));
      for (const clients of CLIENTS) http.get(clients)!.push(await phase(clients, `decrypt-load-${clients}-${round}`));
    }
  } finally {
    await Promise.all(pools.map((p) => p.close()));
  }
  const steps = await boundSteps(secret, boundBodies(1)[0]!, threshold);
  const stepsUs = steps.reduce((sum, [, us]) => sum + us, 0);

  const boundRate = median(bound);
  const where = `${size} members, threshold ${threshold}, every node in the bench's process; clients on a worker thread; ${DECRYPTS} decrypts × ${ROUNDS} rounds, medians`;
  const rows: Array<[string, string]> = [
    ['in-process bound, /s', `${boundRate.toFixed(0)}  (rounds: ${bound.map((r) => r.toFixed(0)).join(', ')}; ${BOUND_CONCURRENCY} in flight, ${threshold} request crypto threads)`],
    ['… its crypto inline on one thread, µs per decrypt', `${stepsUs.toFixed(0)}  (${steps.map(([name, us]) => `${name} ${us.toFixed(0)}`).join('; ')})`],
  ];
  for (const [clients, phases] of http) {
    const rates = phases.map((p) => p.rate);
    const ratios = phases.map((p, i) => p.rate / bound[i]!);
    const p50 = median(phases.map((p) => p.p50));
    const p99 = median(phases.map((p) => p.p99));
    const targeted = clients === TARGET_CLIENTS;
    const name = (what: string) => `POST /decrypt-payload, ${clients} clients, ${what} (in-process)`;
    figure({ name: name('throughput'), value: median(rates), unit: '/s', note: `${where}; rounds: ${rates.map((r) => r.toFixed(0)).join(', ')}` });
    figure({
      name: name('/ its in-process bound'),
      value: median(ratios) * 100,
      unit: '%',
      ...(targeted ? { target: { op: '>=' as const, value: TARGET_SHARE_OF_BOUND_PCT } } : {}),
      note: `${where}; bound ${boundRate.toFixed(0)} /s (signer recoveries, ${threshold} releases' checks and seals, combine, ML-KEM decapsulation; no HTTP, libp2p or LevelDB)`,
    });
    figure({ name: name('p50'), value: p50, unit: 'ms', note: where });
    figure({ name: name('p99'), value: p99, unit: 'ms', ...(targeted ? { target: { op: '<=' as const, value: TARGET_P99_MS } } : {}), note: where });
    const target = (t: string) => (targeted ? `; target ${t}` : '');
    rows.push(
      [`${clients} clients: decrypts/s`, `${median(rates).toFixed(0)}  (rounds: ${rates.map((r) => r.toFixed(0)).join(', ')})`],
      [`${clients} clients: / bound`, `${(median(ratios) * 100).toFixed(0)}%  (rounds: ${ratios.map((r) => (r * 100).toFixed(0)).join(', ')}${target(`≥ ${TARGET_SHARE_OF_BOUND_PCT}%`)})`],
      [`${clients} clients: p50 / p99`, `${ms(p50)} / ${ms(p99)}${targeted ? `  (target p99 ≤ ${TARGET_P99_MS} ms)` : ''}`],
      [`${clients} clients: main-thread CPU per decrypt`, `${median(phases.map((p) => p.cpuUs)).toFixed(0)} µs  (every node on that thread; the clients and request crypto threads not)`],
      [`${clients} clients: main-thread event loop delay, p99 / longest`, `${ms(median(phases.map((p) => p.loopDelayP99)))} / ${ms(median(phases.map((p) => p.loopDelayMax)))}  (medians; rounds' longest: ${phases.map((p) => ms(p.loopDelayMax)).join(', ')})`],
      // The five nodes share this thread's heap and its young generation (docs/benchmarks.md, "As deployed").
      [`${clients} clients: GC pauses of the main thread a decrypt`, phases.map((p) => gcPerOp(p.gc, DECRYPTS)).join(' | ')],
    );
  }
  table(`POST /decrypt-payload under concurrent clients vs its in-process bound (${where}; load at each round ${loads.join(' | ')})`, rows);
}
