/**
 * Share recovery for a member that lost its data but kept its keys (docs/security.md, "Share
 * recovery"; docs/operations.md, "Lose a disk"). Nobody combines a seed.
 *
 * Shares sit at x = slot + 1, so the lost share of slot i is f(i + 1). For one secret, the recovering
 * member picks `threshold` helpers H and a fresh round id; helper j answers
 *
 *     c_j = λ_j(x_i) · y_j  ⊕  m_j,     m_j = ⊕_{k ∈ H, k ≠ j} pad(j, k)
 *
 * sealed to slot i's key, where λ_j is j's Lagrange coefficient at x_i over H and pad(j, k) = pad(k, j)
 * comes from the ECDH secret of j's and k's node keys, the secret, the round and H. Every pad appears
 * twice, so ⊕ c_j = Σ λ_j y_j = y_i: the member gets its own share and nothing else — any single c_j
 * is masked by pads it cannot compute (with two honest helpers or more, i.e. unless threshold parties
 * collude, who could rebuild the seed anyway). The rebuilt share is checked against the digest the
 * secret's record holds for the slot before it is stored, so a helper that lies is caught, not stored;
 * and a share already held, or contributed by a helper, counts only when it matches its own slot's
 * digest (held-share.ts), so junk a rogue coordinator planted is recovered over, never built on.
 *
 * Helpers check that the request comes from slot i's own identity (the authenticated peer), that
 * slot i's `memberStatus` is `recovering` in their replica (after the catch-up gate), and that the
 * helper set is `threshold` distinct members without i and with themselves.
 */
import { randomUUID } from 'node:crypto';
import { AppError, refusal } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { ClusterNodeEntry, MemberRpc, MembershipView, Replicator, StateReader, VersionVector } from '../replication/ports.ts';
import { isCoordinatorEntry, membersOf } from '../replication/ports.ts';
import { WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import { runPeriodic, type Periodic, type Startable } from '../lifecycle.ts';
import { fromBase64, fromHex, gfMul, lagrangeAt, pairwisePad, sealTo, shareXOfSlot, toBase64, utf8, zeroize } from '../../crypto/index.ts';
import { shareAtRestAad, type SecretBody } from './records.ts';
import type { Web3SecretBody } from '../web3/records.ts';
import type { NodeKeyring, ShareStore } from './ports.ts';
import { MEMBER_SLOT_RE, type MemberStatusBody } from './member-records.ts';
import { isSlotShare, readHeldShare, requireHeldShare, type HeldShares } from './held-share.ts';
import { secretRecordOf } from './reads.ts';
import { shareLabel } from './rules.ts';
import { shareRecoverRequest, type AttestMissingRequest, type SecretItem, type ShareRecoverRequest } from './shard-messages.ts';
import type { InventoryReport, ShareInventory } from './inventory.ts';
import type { DataSafety, DataSafetyMonitor, LossAcknowledgement, MemberSafety } from './data-safety.ts';
import { lostSecretKey } from './lost-records.ts';

/** Secrets per recovery round (one call per helper for all of them; a helper answers up to `RECOVER_MAX_ITEMS`, shard-messages.ts). */
const BATCH_SIZE = 32;
/** Rounds in flight at once. */
const BATCHES_AT_ONCE = 4;
/** Helper sets tried for one secret before it is counted failed (each a fresh round). */
const ATTEMPTS_PER_SECRET = 4;
/** An incomplete run starts again this long after the last one started, ms. */
const RERUN_AFTER_MS = 30_000;
/** …or this soon, once more members are reachable than when it started (a helper came back), ms. */
const RERUN_ON_REACHABLE_MS = 2_000;
/** How often the recovering member looks at its status, ms. */
const STATUS_CHECK_INTERVAL_MS = 500;
/** Bytes of a seed share's y part (a 64-byte ML-KEM seed). */
const SHARE_Y_BYTES = 64;

/** Associated data of a helper's sealed contribution. */
export function recoverContributionAad(clusterId: string, label: number | string, target: number, round: string, helper: number): Uint8Array {
  return utf8(`quorumkeep/share-recover/v1\n${clusterId}\n${label}\n${target}\n${round}\n${helper}`);
}

/** A secret as recovery names it. */
interface SecretRef extends SecretItem {
  shareDigests: string[] | undefined;
}

/** What the recovering member reports (`/healthz`, `quorumkeep member status`). */
export interface RecoveryProgress {
  /** `idle` (not recovering), `running`, `done` (every share held), `incomplete` (some failed; retried). */
  state: 'idle' | 'running' | 'done' | 'incomplete';
  /** Secrets known to this member's replica. */
  total: number;
  /** Shares this member holds (kept or recovered). */
  held: number;
  /** Recovered in this run. */
  recovered: number;
  /** Could not be recovered in this run (no digest, random coordinate, or helpers unavailable). */
  failed: number;
  /** Unix ms of the run's start, or null. */
  startedAt: number | null;
}

/** Dependencies of {@link createShareRecovery}. */
export interface RecoveryDeps {
  state: StateReader;
  replicator: Replicator;
  membership: MembershipView;
  members: MemberRpc;
  shares: ShareStore;
  keyring: NodeKeyring;
  versionVector(): VersionVector;
  catchUp(requester: VersionVector, from: ClusterNodeEntry): Promise<void>;
  /** One catch-up round with every reachable peer. */
  syncAll(): Promise<unknown>;
  clock: () => number;
  logger: Logger;
  /** Deadline of one helper call, ms. */
  timeoutMs: number;
  /** This member's inventory (inventory.ts): a member that lacks shares marks itself recovering. */
  inventory: ShareInventory;
  /** Whether this node is ready now (docs/http.md, GET /readyz): sent with its inventory. */
  ready(): boolean;
  /** The node's lifetime: ends the loop (and a run under way, at its next batch) when aborted. @default only {@link ShareRecovery.stop} ends it */
  signal?: AbortSignal;
}

/** Share recovery: the helpers' `shard` op `recover`, and the recovering member's loop. */
export interface ShareRecovery extends Startable {
  /**
   * A helper's answer to `{ op: 'recover', items: [{ chainId?, secretId }], helpers, round, vv }`
   * (decoded at the edge, shard-messages.ts): `{ results: [{ box } | { error, reason? }] }`, one per
   * item, in order.
   */
  handleRecover(request: ShareRecoverRequest, from: ClusterNodeEntry): Promise<unknown>;
  /** This member's progress. */
  progress(): RecoveryProgress;
  /** The `shard` op `inventory`: this member's last inventory and its readiness, to any node of the cluster (the not-yet-taken one: 503 NOT_READY). */
  handleInventory(): Promise<InventoryReport & { ready: boolean }>;
  /** The `shard` op `attestMissing`: signed statements of the named secrets this member holds no share of, to a coordinator. */
  handleAttestMissing(request: AttestMissingRequest, from: ClusterNodeEntry): Promise<unknown>;
  /** Start watching this member's status (recovers while it is `recovering`). */
  start(): void;
  /** Stop watching (a run under way stops at its next batch, and is waited for); idempotent. */
  stop(): Promise<void>;
}

/** Create share recovery for this node. */
export function createShareRecovery(deps: RecoveryDeps): ShareRecovery {
  const { membership, keyring } = deps;
  const { descriptor, self } = membership;
  const clusterId = descriptor.clusterId;
  const memberList = membersOf(descriptor);
  const log = deps.logger.child({ module: 'recovery' });
  const ownShares: HeldShares = { shares: deps.shares, keyring, clusterId, slot: self.slot! };

  async function statusOf(slot: number): Promise<MemberStatusBody | undefined> {
    return (await deps.state.get('memberStatus', String(slot)))?.body as MemberStatusBody | undefined;
  }

  /**
   * The ECDH secret with each other member, computed once: node keys do not change while the process
   * runs, and it is the same for every secret (each pad is derived from it per secret and round).
   * Zeroed at stop.
   */
  const pairSecrets = new Map<number, Uint8Array>();
  const pairSecret = (slot: number): Uint8Array => {
    let shared = pairSecrets.get(slot);
    if (!shared) {
      shared = keyring.ecdhX(fromHex(memberList[slot]!.signingPublicKey));
      pairSecrets.set(slot, shared);
    }
    return shared;
  };

  /** The xor of this helper's pads with every other helper of the round. */
  function maskFor(label: number | string, target: number, round: string, helpers: number[]): Uint8Array {
    const mask = new Uint8Array(SHARE_Y_BYTES);
    for (const k of helpers) {
      if (k === self.slot) continue;
      const [lo, hi] = k < self.slot! ? [k, self.slot!] : [self.slot!, k];
      const pad = pairwisePad(pairSecret(k), `${clusterId}\n${label}\n${target}\n${round}\n${helpers.join(',')}\n${lo},${hi}`, SHARE_Y_BYTES);
      for (let i = 0; i < SHARE_Y_BYTES; i++) mask[i]! ^= pad[i]!;
      zeroize(pad);
    }
    return mask;
  }

  /** One secret's contribution, sealed to the recovering member; throws an AppError for this item. */
  async function contribution(item: SecretItem, target: number, round: string, sorted: number[], to: ClusterNodeEntry): Promise<string> {
    const { chainId, secretId } = item;
    const record = await secretRecordOf(deps.state, chainId, secretId);
    if (!record) throw refusal('NOT_FOUND', 'secret_unavailable', 'no such secret');
    const label = shareLabel(chainId, secretId);
    // Only the share the record's digest names: a helper holding another would spoil the rebuild.
    const share = await requireHeldShare(ownShares, label, record.shareDigests?.[self.slot!]);
    const mask = maskFor(label, target, round, sorted);
    try {
      if (share.length !== SHARE_Y_BYTES + 1 || share[SHARE_Y_BYTES] !== shareXOfSlot(self.slot!)) {
        throw refusal('CONFLICT', 'not_recoverable', 'this share has a random x-coordinate (dealt before recovery support): it cannot be recovered from');
      }
      const lambda = lagrangeAt(sorted.map(shareXOfSlot), sorted.indexOf(self.slot!), shareXOfSlot(target));
      for (let i = 0; i < SHARE_Y_BYTES; i++) mask[i]! ^= gfMul(lambda, share[i]!);
      return toBase64(sealTo(fromHex(to.signingPublicKey), mask, recoverContributionAad(clusterId, label, target, round, self.slot!)));
    } finally {
      zeroize(share, mask);
    }
  }

  async function handleRecover({ items, helpers, round, vv }: ShareRecoverRequest, from: ClusterNodeEntry): Promise<unknown> {
    const target = from.slot;
    // Only the slot's own identity, for itself: what it gets back is its own share.
    if (target === null) throw refusal('FORBIDDEN', 'not_member', 'only a member recovers shares');
    if (helpers.length !== descriptor.threshold || new Set(helpers).size !== helpers.length || helpers.some((h) => h >= descriptor.size) || helpers.includes(target) || !helpers.includes(self.slot!)) {
      throw refusal('BAD_REQUEST', 'malformed', `helpers must be ${descriptor.threshold} distinct members, this one among them, the recovering one not`);
    }
    await deps.catchUp(vv, from);
    if ((await statusOf(target))?.status !== 'recovering') throw refusal('FORBIDDEN', 'not_recovering', `slot ${target} is not recovering`);
    const sorted = [...helpers].sort((x, y) => x - y);
    const results: Array<{ box: string } | { error: string; reason?: string }> = [];
    for (const item of items) {
      try {
        results.push({ box: await contribution(item, target, round, sorted, from) });
      } catch (err) {
        const error = (err instanceof Error ? err.message : String(err)).slice(0, 160);
        results.push(err instanceof AppError && err.reason ? { error, reason: err.reason } : { error });
      }
    }
    log.info({ target, items: items.length, refused: results.filter((r) => 'error' in r).length }, 'recovery contributions sent');
    return { results };
  }

  // --- The recovering member ---

  let progress: RecoveryProgress = { state: 'idle', total: 0, held: 0, recovered: 0, failed: 0, startedAt: null };
  let watching: Periodic | undefined;
  /** Members reachable when the last run started. */
  let reachableAtStart = 0;

  /** The helper sets to try, in order: reachable members but this one, rotated per attempt. */
  function helperSets(): number[][] {
    const others = memberList.map((m) => m.slot).filter((s) => s !== self.slot && membership.isReachable(s));
    if (others.length < descriptor.threshold) return [];
    const sets: number[][] = [];
    for (let shift = 0; shift < Math.min(ATTEMPTS_PER_SECRET, others.length); shift++) {
      sets.push(Array.from({ length: descriptor.threshold }, (_, i) => others[(i + shift) % others.length]!).sort((a, b) => a - b));
    }
    return sets;
  }

  /**
   * Rebuild the shares of a batch of secrets; returns how many were stored. Each helper set is one
   * round (one call per helper for the whole batch); what a set could not rebuild goes to the next.
   */
  async function recoverBatch(batch: SecretRef[], signal: AbortSignal): Promise<number> {
    let pending = batch.filter((ref) => {
      if (ref.shareDigests?.[self.slot!]) return true;
      log.warn({ chainId: ref.chainId, secretId: ref.secretId }, 'secret has no share digest (dealt before recovery support): not recoverable');
      return false;
    });
    let stored = 0;
    for (const helpers of helperSets()) {
      if (pending.length === 0 || signal.aborted) break;
      const round = randomUUID();
      const answers = await Promise.allSettled(
        helpers.map(async (h) => {
          const res = (await deps.members.call(h, 'shard', shareRecoverRequest(pending, helpers, round, deps.versionVector()), { signal: AbortSignal.timeout(deps.timeoutMs) })) as { results?: unknown };
          if (!Array.isArray(res?.results) || res.results.length !== pending.length) throw new Error('malformed contributions');
          return res.results as Array<{ box?: unknown; error?: unknown; reason?: unknown }>;
        }),
      );
      const failedHelpers = answers.flatMap((a, i) => (a.status === 'rejected' ? [`${helpers[i]}: ${String((a.reason as Error)?.message ?? a.reason).slice(0, 120)}`] : []));
      if (failedHelpers.length > 0) {
        log.warn({ helpers, reasons: failedHelpers }, 'recovery round incomplete');
        continue;
      }
      const perHelper = answers.map((a) => (a as PromiseFulfilledResult<Array<{ box?: unknown; error?: unknown; reason?: unknown }>>).value);
      const next: SecretRef[] = [];
      for (const [index, ref] of pending.entries()) {
        if (await rebuild(ref, helpers, round, perHelper.map((results) => results[index]!))) stored++;
        else next.push(ref);
      }
      pending = next;
    }
    return stored;
  }

  /** Combine one secret's contributions, check the digest, store; true when stored. */
  async function rebuild(ref: SecretRef, helpers: number[], round: string, parts: Array<{ box?: unknown; error?: unknown; reason?: unknown }>): Promise<boolean> {
    const label = shareLabel(ref.chainId, ref.secretId);
    const opened: Uint8Array[] = [];
    try {
      for (const [i, part] of parts.entries()) {
        const c = typeof part?.box === 'string' ? keyring.openSealed(fromBase64(part.box), recoverContributionAad(clusterId, label, self.slot!, round, helpers[i]!)) : undefined;
        if (!c || c.length !== SHARE_Y_BYTES) {
          log.warn({ chainId: ref.chainId, secretId: ref.secretId, helper: helpers[i], reason: typeof part?.error === 'string' ? part.error : 'does not open', refusal: part?.reason }, 'recovery contribution missing');
          return false;
        }
        opened.push(c);
      }
      const share = new Uint8Array(SHARE_Y_BYTES + 1);
      for (const c of opened) for (let i = 0; i < SHARE_Y_BYTES; i++) share[i]! ^= c[i]!;
      share[SHARE_Y_BYTES] = shareXOfSlot(self.slot!);
      try {
        if (!isSlotShare(clusterId, label, self.slot!, share, ref.shareDigests![self.slot!]!)) {
          log.error({ chainId: ref.chainId, secretId: ref.secretId, helpers }, 'rebuilt share does not match its digest: a helper lied or holds a bad share');
          return false;
        }
        // Not synced one by one: a share lost to a crash before the flush is simply recovered again.
        await deps.shares.put(label, keyring.encryptAtRest(share, shareAtRestAad(clusterId, label, self.slot!)), { durable: false });
        return true;
      } finally {
        zeroize(share);
      }
    } finally {
      zeroize(...opened);
    }
  }

  async function secrets(): Promise<SecretRef[]> {
    const out: SecretRef[] = [];
    for await (const r of deps.state.list('secret')) {
      const b = r.body as SecretBody;
      out.push({ chainId: WEB2_CHAIN_ID, secretId: b.secretId, shareDigests: b.shareDigests });
    }
    for await (const r of deps.state.list('web3Secret')) {
      const b = r.body as Web3SecretBody;
      out.push({ chainId: b.chainId, secretId: b.secretId, shareDigests: b.shareDigests });
    }
    return out;
  }

  async function recoverAll(signal: AbortSignal): Promise<void> {
    // The secrets to recover are those of the replica: bring it up to date with every peer first,
    // or a member that started empty a moment ago would call itself done after the first few.
    await deps.syncAll();
    const all = await secrets();
    reachableAtStart = membership.reachableCount();
    progress = { state: 'running', total: all.length, held: 0, recovered: 0, failed: 0, startedAt: deps.clock() };
    log.info({ total: all.length }, 'share recovery started');
    const missing = await withoutShare(all);
    progress.held = all.length - missing.length;
    let next = 0;
    await Promise.all(
      Array.from({ length: BATCHES_AT_ONCE }, async () => {
        while (next < missing.length && !signal.aborted) {
          const batch = missing.slice(next, next + BATCH_SIZE);
          next += batch.length;
          const stored = await recoverBatch(batch, signal);
          progress.recovered += stored;
          progress.held += stored;
          progress.failed += batch.length - stored;
        }
      }),
    );
    await deps.shares.flush();
    if (signal.aborted) return;
    // Secrets created meanwhile: their shares came from their dealer, or come in the next run.
    const now = await secrets();
    if (now.length > all.length) progress.failed += (await withoutShare(now)).length;
    progress.state = progress.failed === 0 ? 'done' : 'incomplete';
    log.info({ total: progress.total, recovered: progress.recovered, failed: progress.failed }, 'share recovery finished');
    // The inventory (and with it readiness) sees the recovered shares now, not at its next scan.
    await deps.inventory.refresh();
    if (progress.failed === 0) {
      await deps.replicator.replicate({ kind: 'memberStatus', key: String(self.slot), body: { slot: self.slot!, status: 'active', since: deps.clock() } satisfies MemberStatusBody });
    }
  }

  /**
   * The secrets of `refs` this member holds no share of — counting as missing a share that does not
   * open, or that is not the one its record's digest names (junk stored before the record existed,
   * or before stores were checked against the digest): recovery replaces it.
   */
  async function withoutShare(refs: SecretRef[]): Promise<SecretRef[]> {
    const out: SecretRef[] = [];
    for (const ref of refs) {
      const read = await readHeldShare(ownShares, shareLabel(ref.chainId, ref.secretId), ref.shareDigests?.[self.slot!]);
      if ('share' in read) {
        zeroize(read.share);
        continue;
      }
      // An acknowledged loss (lost-records.ts) is not tried again: fewer than threshold members hold it.
      if (await deps.state.get('lostSecret', lostSecretKey(ref.chainId, ref.secretId))) continue;
      if (read.missing !== 'none') log.warn({ chainId: ref.chainId, secretId: ref.secretId, held: read.missing }, "share held is not this slot's: recovering it");
      out.push(ref);
    }
    return out;
  }

  /**
   * One look at this member's status: recover while it says `recovering` (an incomplete run again
   * after a pause). A member whose inventory finds shares missing marks itself recovering first: no
   * operator command is needed (docs/operations.md, "Data safety").
   */
  async function tick(signal: AbortSignal): Promise<void> {
    if ((await statusOf(self.slot!))?.status !== 'recovering') {
      if (progress.state !== 'idle' && progress.state !== 'done') progress.state = 'idle';
      const inventory = deps.inventory.last();
      if (!inventory || inventory.missingTotal === 0) return;
      log.warn({ missing: inventory.missingTotal, expected: inventory.expected }, 'shares missing: this member marks itself recovering');
      await deps.replicator.replicate({ kind: 'memberStatus', key: String(self.slot), body: { slot: self.slot!, status: 'recovering', since: deps.clock() } satisfies MemberStatusBody });
    }
    if (progress.state === 'incomplete') {
      const since = deps.clock() - (progress.startedAt ?? 0);
      const helperBack = membership.reachableCount() > reachableAtStart;
      // Nothing left to rebuild (a share delivered meanwhile, a loss acknowledged): finish now.
      const inventory = deps.inventory.last();
      const nothingLacking = inventory !== undefined && inventory.at > (progress.startedAt ?? 0) && inventory.missingTotal === 0 && inventory.pending === 0;
      if (!nothingLacking && since < (helperBack ? RERUN_ON_REACHABLE_MS : RERUN_AFTER_MS)) return;
    }
    await recoverAll(signal);
  }

  return {
    handleRecover,
    progress: () => ({ ...progress }),
    async handleInventory() {
      const report = deps.inventory.last();
      if (!report) throw refusal('NOT_READY', 'not_ready', 'this member has not taken its inventory yet');
      return { ...report, ready: deps.ready() };
    },
    async handleAttestMissing(request, from) {
      if (!isCoordinatorEntry(from)) throw refusal('FORBIDDEN', 'not_coordinator', 'only a coordinator asks for statements of missing shares');
      return { attestations: await deps.inventory.attestMissing(request.items) };
    },
    start() {
      if (self.slot === null) return;
      watching ??= runPeriodic(tick, { intervalMs: STATUS_CHECK_INTERVAL_MS, signal: deps.signal ?? new AbortController().signal, logger: log, name: 'share recovery', immediate: true });
    },
    async stop() {
      await watching?.stop();
      for (const shared of pairSecrets.values()) zeroize(shared);
      pairSecrets.clear();
    },
  };
}

/** One member slot as operators see it (`GET /admin/members`). */
export interface MemberView {
  slot: number;
  nodeId: string;
  nodeAddress: string;
  /** `active` unless an operator started a recovery that has not finished. */
  status: 'recovering' | 'active';
  /** When the status was set, Unix ms, or null when never set. */
  since: number | null;
  reachable: boolean;
  /** Its shares as it last reported them (data-safety.ts), or null when it never answered. */
  shares: MemberSafety['shares'];
}

/** The operator's side of recovery: the members' statuses, marking a slot `recovering`, and acknowledging losses. */
export interface MemberAdmin {
  list(): Promise<MemberView[]>;
  /** Mark `slot` (raw path string) recovering, replicated; 400 for a slot that is not a member's. */
  markRecovering(slotRaw: string): Promise<MemberView>;
  /** The secrets at risk and lost, freshly asked of the members. */
  dataSafety(): Promise<DataSafety>;
  /** Record the loss of `items` (default: every lost secret), with the members' statements (data-safety.ts). */
  acknowledgeLoss(items?: SecretItem[]): Promise<LossAcknowledgement>;
}

/** Create the operator's member admin (coordinators). */
export function createMemberAdmin(deps: Pick<RecoveryDeps, 'state' | 'replicator' | 'membership' | 'clock' | 'logger'> & { safety: DataSafetyMonitor }): MemberAdmin {
  const { descriptor } = deps.membership;
  const log = deps.logger.child({ module: 'recovery' });
  const viewOf = async (m: ClusterNodeEntry & { slot: number }): Promise<MemberView> => {
    const status = (await deps.state.get('memberStatus', String(m.slot)))?.body as MemberStatusBody | undefined;
    const shares = deps.safety.view().members.find((f) => f.slot === m.slot)?.shares ?? null;
    return { slot: m.slot, nodeId: m.id, nodeAddress: m.nodeAddress, status: status?.status ?? 'active', since: status?.since ?? null, reachable: deps.membership.isReachable(m.slot), shares };
  };
  return {
    dataSafety: () => deps.safety.refresh(),
    acknowledgeLoss: (items) => deps.safety.acknowledge(items),
    async list() {
      await deps.safety.refresh();
      return Promise.all(membersOf(descriptor).map(viewOf));
    },
    async markRecovering(slotRaw) {
      const slot = MEMBER_SLOT_RE.test(slotRaw) ? Number(slotRaw) : NaN;
      const member = membersOf(descriptor).find((m) => m.slot === slot);
      if (!member) throw new AppError('BAD_REQUEST', `Invalid slot "${slotRaw.slice(0, 8)}": expected a member slot from 0 to ${descriptor.size - 1}`);
      await deps.replicator.replicate({ kind: 'memberStatus', key: String(slot), body: { slot, status: 'recovering', since: deps.clock() } satisfies MemberStatusBody });
      log.warn({ slot }, 'member marked recovering');
      return viewOf(member);
    },
  };
}
