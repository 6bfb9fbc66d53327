/**
 * A member's inventory of its own shares (docs/operations.md, "Data safety"): which secrets the
 * replicated records say it holds a share of, and which of those its store lacks. A member whose
 * store lacks shares — started on an empty data directory, restored from an old backup, or down while
 * a secret was dealt — finds out here by itself, marks itself `recovering` (recovery.ts) and is not
 * ready until it holds them again (docs/http.md, GET /readyz).
 *
 * A share counts as held when a box is stored for it (no decryption: the look is cheap enough to
 * repeat); recovery itself checks every box against its record's digest (held-share.ts). A share
 * found lacking less than {@link CONFIRM_MISSING_MS} ago is `pending`, not missing: its dealer may
 * still be delivering it. A secret whose loss an operator acknowledged (lost-records.ts)
 * and whose share this member lacks is neither expected nor missing.
 *
 * Members also sign, on a coordinator's request, that they hold no share of named secrets: the
 * evidence of a `lostSecret` record.
 */
import type { Logger } from '../../log/index.ts';
import { zeroize } from '../../crypto/index.ts';
import { runPeriodic, type Periodic, type Startable } from '../lifecycle.ts';
import type { StateKeys, StateReader } from '../replication/ports.ts';
import { WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import { parseWeb3SecretKey } from '../web3/records.ts';
import { readHeldShare, type HeldShares } from './held-share.ts';
import { lostSecretKey, missingShareDigest, type MissingShareAttestation } from './lost-records.ts';
import type { ShareStore } from './ports.ts';
import { secretRecordOf } from './reads.ts';
import { shareLabel } from './rules.ts';
import type { SecretItem } from './shard-messages.ts';

/** A share lacking for less than this may still be on its way from its dealer, ms. */
export const CONFIRM_MISSING_MS = 3_000;
/** Most missing secrets a report names (the count is always whole). */
export const INVENTORY_MAX_LISTED = 20_000;
/** How often the inventory looks, ms: a full scan at most this often (a large store waits longer, see {@link SCAN_SPACING}); else a recheck of the lacking shares. */
const SCAN_INTERVAL_MS = 500;
/**
 * A full scan waits this many times its own last duration before the next: at most 1/41 of a core
 * goes to it, whatever the store's size. A 100,000-secret store took about 150 ms a pass, so it is
 * scanned about every 6 s — as often as the nodes ask for the report (src/core/secrets/data-safety.ts,
 * every 5 s). At 10 it was a tenth of a core, all the time, on an idle member.
 */
const SCAN_SPACING = 40;

/** One member's inventory, as it reports it (`shard` op `inventory`). */
export interface InventoryReport {
  slot: number;
  /** When the scan began, Unix ms. */
  at: number;
  /** Shares the records say this member holds (acknowledged losses it lacks not counted). */
  expected: number;
  /** Of those, the ones it holds. */
  held: number;
  /** Secrets whose share it has lacked for {@link CONFIRM_MISSING_MS} or more: up to {@link INVENTORY_MAX_LISTED}. */
  missing: SecretItem[];
  /** How many it lacks in all (may exceed `missing.length`). */
  missingTotal: number;
  /** Lacking for less than {@link CONFIRM_MISSING_MS}: perhaps on their way. */
  pending: number;
  /** Secrets lost by acknowledgement whose share it lacks. */
  acknowledgedLost: number;
  /**
   * Whether the replica held every secret a quorum acknowledged when the scan began (the node knows
   * its own log: it synced with `size − threshold + 1` other members). Without it, what lacks is
   * still lacking — the counts are a floor — but "nothing lacks" proves nothing.
   */
  complete: boolean;
}

/** Dependencies of {@link createShareInventory}. */
export interface InventoryDeps {
  state: StateReader & StateKeys;
  /** This member's shares, and how to open them (for the signed statements). */
  held: Omit<HeldShares, 'shares'> & { shares: Pick<ShareStore, 'get' | 'has' | 'heldLabels'> };
  /** True once the first sync rounds are done (no scan before). */
  caughtUp(): boolean;
  /** True once the replica holds every secret a quorum acknowledged when this node started ({@link InventoryReport.complete}). */
  complete(): boolean;
  /**
   * One catch-up round with every reachable peer before the first scan called complete (as recovery
   * does before it lists the secrets); true when enough members answered it for the replica to hold
   * every secret a quorum acknowledged.
   */
  settle(): Promise<boolean>;
  /** Sign a 32-byte digest with this node's signing key: 0x + 130 hex. */
  signDigest(digest: Uint8Array): string;
  clock: () => number;
  logger: Logger;
  signal: AbortSignal;
}

/** The member's inventory. */
export interface ShareInventory extends Startable {
  /** The last complete scan taken since the node caught up, or undefined before the first. */
  last(): InventoryReport | undefined;
  /** Scan now (or wait for the scan under way) and answer it. */
  refresh(): Promise<InventoryReport | undefined>;
  /** Signed statements that this member holds no usable share of each of `items` it lacks (the others, and secrets it has no record of, are left out). */
  attestMissing(items: SecretItem[]): Promise<Array<SecretItem & MissingShareAttestation>>;
  start(): void;
  stop(): Promise<void>;
}

/**
 * Every secret of the replica, Web2 then Web3, from the keys of their states alone: the key names
 * the secret (records.ts `secretKey`, web3/records.ts `web3SecretKey`; a member stores no state whose
 * key its kind refuses), and reading each winner from the log mapped most of LevelDB's tables of a
 * store grown by writes into memory at start-up.
 */
async function* secretPages(state: StateKeys): AsyncGenerator<SecretItem[]> {
  for await (const page of state.keyPages('secret')) yield page.map((key) => ({ chainId: WEB2_CHAIN_ID, secretId: Number(key) }));
  for await (const page of state.keyPages('web3Secret')) yield page.flatMap((key) => parseWeb3SecretKey(key) ?? []);
}

/** Create a member's share inventory. */
export function createShareInventory(deps: InventoryDeps): ShareInventory {
  const { held } = deps;
  const log = deps.logger.child({ module: 'inventory' });
  let report: InventoryReport | undefined;
  let lastDurationMs = 0;
  let lastEnd = 0;
  let loop: Periodic | undefined;
  let scanning: Promise<InventoryReport | undefined> | undefined;
  /** The shares the last scan found lacking, with when each was first found lacking (Unix ms), by label. */
  let lacking = new Map<number | string, { item: SecretItem; since: number }>();
  /** The last full scan's counts (a recheck of the lacking ones moves shares from lacking to held). */
  let counted = { expected: 0, held: 0, acknowledgedLost: 0 };
  /** Whether the last full scan saw a complete replica. */
  let complete = false;
  /** Whether the catch-up round before the first complete scan has run. */
  let settled = false;

  /** The report from the counts and what lacks, at `at`. */
  function reportAt(at: number): InventoryReport {
    const next: InventoryReport = { slot: held.slot, at, ...counted, missing: [], missingTotal: 0, pending: 0, complete };
    for (const { item, since } of lacking.values()) {
      if (at - since < CONFIRM_MISSING_MS) {
        next.pending++;
        continue;
      }
      next.missingTotal++;
      if (next.missing.length < INVENTORY_MAX_LISTED) next.missing.push(item);
    }
    if (next.missingTotal > (report?.missingTotal ?? 0)) {
      log.warn({ expected: next.expected, held: next.held, missing: next.missingTotal }, 'this member lacks shares the records say it holds');
    }
    report = next;
    return next;
  }

  /** Every secret of the replica against the store. */
  async function scan(): Promise<InventoryReport | undefined> {
    if (!deps.caughtUp()) return undefined;
    let wasComplete = deps.complete();
    if (wasComplete && !settled) settled = await deps.settle().catch(() => false);
    wasComplete &&= settled;
    const at = deps.clock();
    const started = performance.now();
    const lost = new Set<string>();
    for await (const r of deps.state.list('lostSecret')) lost.add(r.key);
    const next = { expected: 0, held: 0, acknowledgedLost: 0 };
    const nextLacking = new Map<number | string, { item: SecretItem; since: number }>();
    // The labels held, in one pass over the stored keys (a point read per secret took 10 s and
    // mapped most of LevelDB's tables at 100,000 secrets). A share stored after that pass counts as
    // lacking for now: lacking is pending until the recheck, which looks each one up again.
    const heldNow = await held.shares.heldLabels?.();
    for await (const page of secretPages(deps.state)) {
      for (const s of page) {
        const label = shareLabel(s.chainId, s.secretId);
        if (heldNow ? heldNow.has(label) : await held.shares.has(label)) {
          next.expected++;
          next.held++;
          continue;
        }
        if (lost.has(lostSecretKey(s.chainId, s.secretId))) {
          next.acknowledgedLost++;
          continue;
        }
        // A listed key whose winner an equivocation displaced (its log place now holds the other
        // record) is no secret: looked up for the lacking ones only, which are few.
        if (!(await secretRecordOf(deps.state, s.chainId, s.secretId))) continue;
        next.expected++;
        nextLacking.set(label, { item: s, since: lacking.get(label)?.since ?? at });
      }
    }
    lacking = nextLacking;
    counted = next;
    complete = wasComplete;
    lastDurationMs = performance.now() - started;
    lastEnd = performance.now();
    return reportAt(at);
  }

  /**
   * Only the shares found lacking, again: cheap, so a lacking share is confirmed missing (or found
   * delivered) {@link CONFIRM_MISSING_MS} after it was first seen, whatever a full scan costs.
   */
  async function recheck(): Promise<InventoryReport | undefined> {
    const at = deps.clock();
    for (const label of [...lacking.keys()]) {
      if (!(await held.shares.has(label))) continue;
      lacking.delete(label);
      counted.held++;
    }
    return reportAt(at);
  }

  function refresh(): Promise<InventoryReport | undefined> {
    scanning ??= scan().finally(() => (scanning = undefined));
    return scanning;
  }

  async function attestMissing(items: SecretItem[]): Promise<Array<SecretItem & MissingShareAttestation>> {
    const out: Array<SecretItem & MissingShareAttestation> = [];
    for (const item of items) {
      const label = shareLabel(item.chainId, item.secretId);
      // Only a share that opens and is the one its record names counts: junk, or a box that does not open, is no share.
      // Only of a secret that exists: a statement about an id not handed out yet would outlive it.
      const record = await secretRecordOf(deps.state, item.chainId, item.secretId);
      if (!record) continue;
      const read = await readHeldShare(held, label, record.shareDigests?.[held.slot]);
      if ('share' in read) {
        zeroize(read.share);
        continue;
      }
      const at = deps.clock();
      out.push({ ...item, slot: held.slot, at, signature: deps.signDigest(missingShareDigest(held.clusterId, label, held.slot, at)) });
    }
    return out;
  }

  return {
    last: () => report,
    refresh,
    attestMissing,
    start() {
      loop ??= runPeriodic(
        async () => {
          // A full scan when due, and at once when the replica has just become complete.
          if (performance.now() - lastEnd >= SCAN_SPACING * lastDurationMs || (!complete && deps.complete())) await refresh();
          else if (lacking.size > 0) await (scanning ??= recheck().finally(() => (scanning = undefined)));
        },
        { intervalMs: SCAN_INTERVAL_MS, signal: deps.signal, logger: log, name: 'share inventory', immediate: true },
      );
    },
    async stop() {
      await loop?.stop();
      await scanning;
    },
  };
}
