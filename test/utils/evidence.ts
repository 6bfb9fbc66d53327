/**
 * Record evidence for unit tests of the record rules (docs/security.md): a cluster of real keys
 * (members, the first two coordinators), sessions granted by its members, strings signed by session
 * wallets, and the context a kind's check sees.
 */
import { randomUUID } from 'node:crypto';
import type { RecordContext, Sibling } from '../../src/core/replication/kinds.ts';
import type { ReplicatedRecord } from '../../src/core/replication/record.ts';
import { UNNUMBERED } from '../../src/core/replication/validate.ts';
import { proposalDigest, type Version, type VersionedBody } from '../../src/core/replication/versions.ts';
import type { ClusterDescriptor } from '../../src/core/replication/ports.ts';
import type { Json } from '../../src/core/replication/canonical-json.ts';
import { sessionGrantDigest, type SessionBody } from '../../src/core/sessions/records.ts';
import type { SignedEvidence } from '../../src/core/sessions/evidence.ts';
import { addressOfPrivateKey, generatePrivateKey, publicKeyOf, signDigest, toHex } from '../../src/crypto/index.ts';
import { newSessionWallet, signData, type SessionWallet } from './session.ts';

/** `n` members with fresh keys, threshold a majority; the first `coordinators` have an HTTP URL. */
export function testCluster(n: number, options: { clusterId: string; coordinators: number }) {
  const keys = Array.from({ length: n }, () => generatePrivateKey());
  const descriptor: ClusterDescriptor = {
    clusterId: options.clusterId,
    size: n,
    threshold: Math.floor(n / 2) + 1,
    nodes: keys.map((k, i) => ({
      id: `node-${i}`,
      slot: i,
      peerId: `peer-${i}`,
      nodeAddress: addressOfPrivateKey(k),
      signingPublicKey: toHex(publicKeyOf(k)),
      multiaddrs: ['/ip4/127.0.0.1/tcp/1'],
      ...(i < options.coordinators ? { httpUrl: `http://127.0.0.1:${3010 + i}` } : {}),
    })),
  };
  return { keys, descriptor };
}

/** Five members, threshold 3; nodes 0 and 1 are coordinators. */
export function unitCluster() {
  return testCluster(5, { clusterId: 'qk-unit-evidence', coordinators: 2 });
}

export type UnitCluster = ReturnType<typeof unitCluster>;

/** A session of `principalId` for a new wallet, granted by members `granters` (default 0–2). */
export function grantedSession(c: UnitCluster, principalId: string, now: number, granters = [0, 1, 2], publicKey = 'ab'.repeat(32)): { session: SessionBody; wallet: SessionWallet } {
  const wallet = newSessionWallet();
  const grant = { principalId, sessionAddress: wallet.address, publicKey, issuedAt: now - 1000, expiresAt: now + 900_000 };
  const digest = sessionGrantDigest(c.descriptor.clusterId, grant);
  const grants = granters.map((i) => ({ nodeAddress: c.descriptor.nodes[i]!.nodeAddress, signature: '0x' + toHex(signDigest(digest, c.keys[i]!)) }));
  return { session: { ...grant, grants }, wallet };
}

/** `data` signed by the session's wallet, as a record carries it. */
export function evidence(s: { session: SessionBody; wallet: SessionWallet }, data: string): SignedEvidence {
  const signed = signData(s.wallet, data);
  return { data, signature: signed.signature, session: s.session };
}

/** A log as a member holds it, in memory: records by (origin, seq). */
export class MemoryLog {
  readonly records = new Map<string, ReplicatedRecord>();
  put(r: ReplicatedRecord): void {
    this.records.set(`${r.origin}!${r.seq}`, r);
  }
  get(origin: string, seq: number): ReplicatedRecord | undefined {
    return this.records.get(`${origin}!${seq}`);
  }
}

/** The context a kind's check sees for a record of `origin` (a slot) at `seq`, written at `atMs`. */
export function contextFor(
  c: UnitCluster,
  options: {
    key: string;
    origin: number;
    atMs: number;
    kind?: string;
    seq?: number;
    /** The member's log (records named by `v.prev`, the record before this one). */
    log?: MemoryLog;
    held?: Map<string, Json>;
    siblings?: Sibling[];
    self?: { kind: string };
    /** Checked as this node's own write, not numbered yet. */
    own?: boolean;
    /** Records this node refused for good. */
    refused?: (origin: string, seq: number) => boolean;
  },
): RecordContext {
  const node = c.descriptor.nodes[options.origin]!;
  const held = options.held ?? new Map<string, Json>();
  const kind = options.kind ?? options.self?.kind ?? 'note';
  const log = options.log ?? new MemoryLog();
  const siblings = options.siblings ?? [];
  const seq = options.own ? UNNUMBERED : (options.seq ?? 1);
  const recordAt = async (origin: string, s: number) => siblings.find((x) => x.origin === origin && x.seq === s) ?? log.get(origin, s);
  return {
    kind,
    key: options.key,
    origin: node.nodeAddress,
    seq,
    own: options.own === true,
    originSlot: node.slot,
    originIsCoordinator: node.httpUrl !== undefined,
    atMs: options.atMs,
    siblings,
    recordAt,
    refusedAt: options.refused ?? (() => false),
    preceding: async () => (options.own ? siblings.at(-1) : seq > 1 ? recordAt(node.nodeAddress, seq - 1) : undefined),
    current: async (k, key) => {
      const body = held.get(`${k}!${key}`);
      if (body !== undefined) return { body, origin: node.nodeAddress, seq: 0 };
      let best: ReplicatedRecord | undefined;
      for (const r of log.records.values()) if (r.kind === k && r.key === key && (!best || rankOf(r) > rankOf(best))) best = r;
      return best ? { body: best.body, origin: best.origin, seq: best.seq } : undefined;
    },
  };
}

const rankOf = (r: ReplicatedRecord) => (r.body as { v?: { n?: number } } | null)?.v?.n ?? 0;

/**
 * Slot 0 of a unit cluster writing versions of sequenced kinds into a member's log, as the sequencer
 * does: each version follows the one it names (by default the latest of its key), numbered in slot
 * 0's log, optionally vouched for by a coordinator. Nothing is checked: tests check.
 */
export class Slot0Writer {
  private seq = 0;
  private clock: number;
  readonly log = new MemoryLog();
  readonly c: UnitCluster;
  constructor(c: UnitCluster, now: number) {
    this.c = c;
    this.clock = now;
  }
  get origin(): string {
    return this.c.descriptor.nodes[0]!.nodeAddress;
  }
  /** The latest version of (kind, key) in the log. */
  latest(kind: string, key: string): ReplicatedRecord | undefined {
    let best: ReplicatedRecord | undefined;
    for (const r of this.log.records.values()) if (r.kind === kind && r.key === key && (!best || rankOf(r) > rankOf(best))) best = r;
    return best;
  }
  /**
   * The next version's body of (kind, key) after `prev` (default: the latest), vouched for by
   * coordinator `vouchBy` — in the name of node `vouchAs` (default `vouchBy`: a forged vouch otherwise).
   */
  version<B extends VersionedBody>(kind: string, key: string, change: string, body: Omit<B, 'v'>, options: { prev?: ReplicatedRecord | null; vouchBy?: number; vouchAs?: number } = {}): B {
    const prev = options.prev === undefined ? this.latest(kind, key) : (options.prev ?? undefined);
    const v: Version = { n: prev ? rankOf(prev) + 1 : 1, prev: prev ? { origin: prev.origin, seq: prev.seq } : null, change };
    const out = { ...body, v } as unknown as B;
    if (options.vouchBy !== undefined) {
      const node = this.c.descriptor.nodes[options.vouchAs ?? options.vouchBy]!;
      v.vouch = { nodeAddress: node.nodeAddress, signature: '0x' + toHex(signDigest(proposalDigest(this.c.descriptor.clusterId, kind, key, out), this.c.keys[options.vouchBy]!)) };
    }
    return out;
  }
  /** The record of `body` as slot 0's next record (not stored); `peek` leaves the next seq to the next record. */
  record(kind: string, key: string, body: Json, atMs = (this.clock += 10), peek = false): ReplicatedRecord {
    return { kind, key, body, origin: this.origin, seq: peek ? this.seq + 1 : ++this.seq, hlc: [atMs, 0], sig: '0x' };
  }
  /** Store a record in the log. */
  put(r: ReplicatedRecord): ReplicatedRecord {
    this.log.put(r);
    return r;
  }
  /** The context a member checks `r` with, over this log. */
  contextOf(r: ReplicatedRecord, siblings: Sibling[] = []): RecordContext {
    return contextFor(this.c, { kind: r.kind, key: r.key, origin: 0, seq: r.seq, atMs: r.hlc[0], log: this.log, siblings });
  }
}

export const newId = () => randomUUID();
