/**
 * Sequenced kinds (docs/architecture.md, "Versions"; docs/security.md, "Transitions"): the records
 * whose changes need a client's or a coordinator's authority — `secret`, `principal`, `permit` — are
 * written by slot 0 alone, one version after another, each naming the version it replaces and the
 * transition it makes. A coordinator proposes a version (src/core/replication/sequencer.ts); slot 0
 * writes it only as the successor of the version it holds, so no two versions ever follow one, and
 * every member checks the transition itself against the version it names — never against what its
 * replica happened to hold first:
 *
 * - `v.n` counts the versions of the key (1 for the first), and orders them: a later version always
 *   wins, whatever the clocks;
 * - `v.prev` is the replaced version's place in its origin's log (`null` for the first): a member
 *   reads that record itself (from the records travelling with this one, or its log) and holds this
 *   one back until it has it;
 * - `v.change` names the transition; each kind lists its transitions and what each may change, with
 *   what evidence; anything else is refused;
 * - `v.vouch` is the proposing coordinator's signature over the whole version (but the vouch), for
 *   the transitions a coordinator is trusted for (Web2 identity, a dealt key).
 */
import { z } from 'zod';
import { fromHex, taggedHash, verifyDigest } from '../../crypto/index.ts';
import { canonicalJson, type Json } from './canonical-json.ts';
import type { RecordContext } from './kinds.ts';
import { isCoordinatorEntry, signerAt, type ClusterDescriptor, type ClusterNodeEntry } from './ports.ts';
import { heldBack, refusal, type RecordRefusal, type RefusalCode } from './refusals.ts';

const ADDRESS_RE = /^0x[0-9a-f]{40}$/;

/** A record's place in its origin's log. */
export const logRefSchema = z.strictObject({ origin: z.string().regex(ADDRESS_RE), seq: z.number().int().positive() });
export type LogRef = z.infer<typeof logRefSchema>;

/** A coordinator's signature over a proposed version ({@link proposalDigest}). */
export const vouchSchema = z.strictObject({ nodeAddress: z.string().regex(ADDRESS_RE), signature: z.string().regex(/^0x[0-9a-f]{130}$/) });
export type Vouch = z.infer<typeof vouchSchema>;

/** The version envelope every body of a sequenced kind carries as `v`. */
export function versionSchema<C extends readonly [string, ...string[]]>(changes: C) {
  return z.strictObject({
    /** 1 for the first version of the key, then +1 per version. */
    n: z.number().int().positive(),
    /** The version this one replaces, or null for the first. */
    prev: logRefSchema.nullable(),
    /** The transition this version makes. */
    change: z.enum(changes),
    /** The proposing coordinator's signature, for transitions a coordinator is trusted for. */
    vouch: vouchSchema.optional(),
  });
}

/** The version envelope, typed loosely (every sequenced body has one). */
export interface Version {
  n: number;
  prev: LogRef | null;
  change: string;
  vouch?: Vouch | undefined;
}

/** A body of a sequenced kind. */
export interface VersionedBody {
  v: Version;
}

/** A body without its version: what a proposal builds from, and what the next version is made of. */
export function withoutVersion<B extends { v: unknown }>(b: B): Omit<B, 'v'> {
  const { v: _v, ...rest } = b;
  return rest;
}

/** The number and the place a version following `current` (a record of the key, or none) has. */
export function nextVersion(current: { origin: string; seq: number; body: unknown } | undefined): { n: number; prev: LogRef | null } {
  if (!current) return { n: 1, prev: null };
  return { n: ((current.body as Partial<VersionedBody> | null)?.v?.n ?? 0) + 1, prev: { origin: current.origin, seq: current.seq } };
}

/** The body with its vouch left out: what a vouch signs. */
function unvouched(body: VersionedBody): Json {
  const { vouch: _vouch, ...v } = body.v;
  return { ...body, v } as unknown as Json;
}

/** The digest a coordinator signs to vouch for a proposed version: the whole version but the vouch, bound to the cluster. */
export function proposalDigest(clusterId: string, kind: string, key: string, body: VersionedBody): Uint8Array {
  return taggedHash(`quorumkeep/proposal/v1/${clusterId}`, canonicalJson({ kind, key, body: unvouched(body) }));
}

/** Signing keys of the cluster file's nodes, parsed once (a fixed set: the cluster file's). */
const signingKeys = new WeakMap<ClusterNodeEntry, Uint8Array>();

/**
 * The coordinator that vouched for `body`, or a refusal; undefined vouch → undefined.
 * `signedBy`: the record's origin, whose signature covers `body` — verified before any body is
 * checked, or, for this node's own write, this node, about to sign it. A vouch by that same node is
 * taken without checking its signature again: the record signature is the same key over the same
 * version and more (kind, key and body, bound to the cluster), so it says all the vouch says
 * (docs/security.md, "Transitions"). On its own writes that node is slot 0, and slot 0 takes no
 * proposal vouched for in its name from another node (sequencer.ts): such a vouch is its own. A vouch
 * naming any other node is checked.
 */
export function vouchedBy(descriptor: ClusterDescriptor, kind: string, key: string, body: VersionedBody, atMs: number, signedBy?: string): string | RecordRefusal | undefined {
  const vouch = body.v.vouch;
  if (!vouch) return undefined;
  const node = signerAt(descriptor, vouch.nodeAddress, atMs);
  if (!node || !isCoordinatorEntry(node)) return refusal('bad_vouch', 'not a coordinator');
  if (signedBy === vouch.nodeAddress) return vouch.nodeAddress;
  let publicKey = signingKeys.get(node);
  if (!publicKey) signingKeys.set(node, (publicKey = fromHex(node.signingPublicKey)));
  // A check against the node's known key (no recovery, no address hashing): its signature or nothing.
  const ok = verifyDigest(fromHex(vouch.signature.slice(2)), proposalDigest(descriptor.clusterId, kind, key, body), publicKey);
  return ok ? vouch.nodeAddress : refusal('bad_vouch', 'signature');
}

/**
 * A record this one needs and this node lacks: held back until it arrives — or refused for good when
 * this node refused that one (it can never arrive valid).
 */
export function awaiting(context: Pick<RecordContext, 'refusedAt'>, code: RefusalCode, ref: LogRef, what: string): RecordRefusal {
  return context.refusedAt(ref.origin, ref.seq) ? refusal(code, `${what} was refused`) : heldBack(code, ref, what);
}

/**
 * The consumed permit a change names, which must be the record right before it in its origin's log —
 * one consumption, one change (docs/security.md, "Transitions"). Its body, or why not: not adjacent,
 * not consumed, or (held back) not held yet.
 */
export async function consumedPermitBefore(context: RecordContext, permitId: string | null | undefined): Promise<{ body: Record<string, unknown> } | RecordRefusal> {
  const prev = await context.preceding();
  if (!prev) {
    // This node's own write: the consumption is not in its batch, so it never will be right before
    // it; and the first record of its origin has nothing before it.
    if (context.own || context.seq <= 1) return refusal('permit_not_adjacent');
    return awaiting(context, 'evidence_missing', { origin: context.origin, seq: context.seq - 1 }, 'the consumed permit');
  }
  if (prev.kind !== 'permit' || prev.key !== permitId) return refusal('permit_not_adjacent');
  const body = prev.body as Record<string, unknown>;
  return body.status === 'consumed' ? { body } : refusal('permit_not_consumed');
}

/** What a transition's check sees. */
export interface TransitionInput<B> {
  /** The version replaced (undefined for the first version). */
  before: B | undefined;
  after: B;
  context: RecordContext;
  /** The coordinator that vouched for the version, when one did (its signature checked). */
  vouchedBy: string | undefined;
}

/** One named transition of a sequenced kind. */
export interface Transition<B> {
  /** True for the transition that makes a key's first version (and only it may). */
  creates?: boolean;
  /** Whether the version may follow `before` with the evidence it carries. */
  check(input: TransitionInput<B>): RecordRefusal | undefined | Promise<RecordRefusal | undefined>;
}

/**
 * The check every member runs on a version of a sequenced kind: the transition is one the kind
 * names, it creates exactly when it is the first, the replaced version is the one named (held back
 * until the member has it), its vouch (if any) is a coordinator's, and the transition's own check.
 * A function of the record and the records it names, so every member decides alike whatever order
 * they arrived in.
 */
export async function checkVersion<B extends VersionedBody>(
  descriptor: ClusterDescriptor,
  transitions: Readonly<Record<string, Transition<B>>>,
  b: B,
  context: RecordContext,
): Promise<RecordRefusal | undefined> {
  const t = transitions[b.v.change];
  if (!t) return refusal('unknown_transition', b.v.change);
  if ((b.v.n === 1) !== (b.v.prev === null) || (b.v.n === 1) !== (t.creates === true)) return refusal('bad_version', `${b.v.change} as version ${b.v.n}`);
  const vouched = vouchedBy(descriptor, context.kind, context.key, b, context.atMs, context.origin);
  if (vouched !== undefined && typeof vouched !== 'string') return vouched;
  let before: B | undefined;
  if (b.v.prev) {
    const prev = await context.recordAt(b.v.prev.origin, b.v.prev.seq, { kind: context.kind, key: context.key });
    if (!prev) return awaiting(context, 'prev_missing', b.v.prev, 'the version it replaces');
    const pv = (prev.body as unknown as Partial<VersionedBody> | null)?.v;
    if (prev.kind !== context.kind || prev.key !== context.key || pv?.n !== b.v.n - 1) return refusal('prev_mismatch');
    // A version is never older than the one it replaces.
    if (prev.hlc[0] > context.atMs) return refusal('bad_time', 'older than the version it replaces');
    before = prev.body as unknown as B;
  }
  return t.check({ before, after: b, context, vouchedBy: vouched });
}

/** The fields of `a` and `b` that differ (shallow, by canonical JSON), but `v` and those in `allowed`. */
export function changedFields<B extends object>(a: B, b: B, allowed: ReadonlyArray<keyof B>): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  const out: string[] = [];
  for (const k of keys) {
    if (k === 'v' || allowed.includes(k as keyof B)) continue;
    const x = (a as Record<string, unknown>)[k];
    const y = (b as Record<string, unknown>)[k];
    if (x === y) continue;
    if (x === undefined || y === undefined || canonicalJson(x as Json) !== canonicalJson(y as Json)) out.push(k);
  }
  return out;
}

/** A refusal when anything but `allowed` (and `v`) changed from `before` to `after`. */
export function onlyChanged<B extends object>(before: B, after: B, allowed: ReadonlyArray<keyof B>): RecordRefusal | undefined {
  const changed = changedFields(before, after, allowed);
  return changed.length > 0 ? refusal('fields_changed', changed.join(',')) : undefined;
}
