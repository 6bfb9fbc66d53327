/**
 * The `lostSecret` record (docs/security.md, "Acknowledged losses"): a coordinator — rogue or not,
 * with its genuine key — gets a loss recorded only with the signed statements of `size − threshold +
 * 1` distinct members that they hold no share of exactly that secret, made around the
 * acknowledgement's time. A property composes records from every statement the cluster has made
 * (for this secret and others, by every member, at other times) plus forgeries, and checks that a
 * member accepts exactly those the rule allows.
 *
 * Runs: `QK_PROPERTY_RUNS` (default 60 in `npm test`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lostSecretKind, lostSecretKey, missingShareDigest, ATTESTATION_MAX_AGE_MS, type LostSecretBody, type MissingShareAttestation } from '../../../../src/core/secrets/lost-records.ts';
import { shareLabel } from '../../../../src/core/secrets/rules.ts';
import { signDigest, toHex, generatePrivateKey } from '../../../../src/crypto/index.ts';
import { contextFor, unitCluster } from '../../../utils/evidence.ts';

const RUNS = Number(process.env.QK_PROPERTY_RUNS ?? 60);
const NOW = 1_800_000_000_000;
const c = unitCluster();
const kind = lostSecretKind(c.descriptor);
/** 5 members, threshold 3: three statements are needed. */
const NEEDED = c.descriptor.size - c.descriptor.threshold + 1;

/** Member `slot`'s genuine statement that it holds no share of the secret, made at `at`. */
function statement(slot: number, chainId: number, secretId: number, at: number, key = c.keys[slot]!): MissingShareAttestation {
  const digest = missingShareDigest(c.descriptor.clusterId, shareLabel(chainId, secretId), slot, at);
  return { slot, at, signature: '0x' + toHex(signDigest(digest, key)) };
}

/** The verdict of a member on a record written by coordinator `origin`. */
async function check(body: LostSecretBody, origin = 1, key = lostSecretKey(body.chainId, body.secretId)) {
  return kind.validate!(body, contextFor(c, { key, origin, atMs: NOW, kind: 'lostSecret' }));
}

const body = (attestations: MissingShareAttestation[], secretId = 7, chainId = -1): LostSecretBody => ({ chainId, secretId, acknowledgedAt: NOW, attestations });

describe('lostSecret: what a coordinator can record', () => {
  it('is accepted with the statements of size − threshold + 1 distinct members about this secret', async () => {
    expect(await check(body([statement(2, -1, 7, NOW), statement(3, -1, 7, NOW), statement(4, -1, 7, NOW)]))).toBeUndefined();
    // A Web3 secret: its label names the chain.
    expect(await check(body([statement(0, 8453, 7, NOW), statement(3, 8453, 7, NOW), statement(4, 8453, 7, NOW)], 7, 8453))).toBeUndefined();
  });

  it('a rogue coordinator cannot record a healthy secret lost: too few statements, a slot twice, another secret’s, another chain’s, forged, stale, or from the future', async () => {
    const cases: Array<[string, LostSecretBody]> = [
      ['two members', body([statement(3, -1, 7, NOW), statement(4, -1, 7, NOW)])],
      ['one slot three times', body([statement(4, -1, 7, NOW), statement(4, -1, 7, NOW - 1), statement(4, -1, 7, NOW - 2)])],
      ['statements about secret 8', body([statement(2, -1, 8, NOW), statement(3, -1, 8, NOW), statement(4, -1, 8, NOW)])],
      ['statements about the Web3 secret 7', body([statement(2, 8453, 7, NOW), statement(3, 8453, 7, NOW), statement(4, 8453, 7, NOW)])],
      ['one signed by the coordinator for slot 4', body([statement(2, -1, 7, NOW), statement(3, -1, 7, NOW), statement(4, -1, 7, NOW, c.keys[1]!)])],
      ['one signed by a stranger', body([statement(2, -1, 7, NOW), statement(3, -1, 7, NOW), statement(4, -1, 7, NOW, generatePrivateKey())])],
      ['one made long before', body([statement(2, -1, 7, NOW), statement(3, -1, 7, NOW), statement(4, -1, 7, NOW - ATTESTATION_MAX_AGE_MS - 1)])],
      ['one dated after', body([statement(2, -1, 7, NOW), statement(3, -1, 7, NOW), statement(4, -1, 7, NOW + 120_000)])],
      ['a slot outside the cluster', body([statement(2, -1, 7, NOW), statement(3, -1, 7, NOW), { ...statement(4, -1, 7, NOW), slot: 5 }])],
    ];
    for (const [name, b] of cases) expect(await check(b), name).toMatchObject({ code: 'loss_unattested' });
    // A genuine record under another secret's key.
    const genuine = body([statement(2, -1, 7, NOW), statement(3, -1, 7, NOW), statement(4, -1, 7, NOW)]);
    expect(await check(genuine, 1, lostSecretKey(-1, 8))).toMatchObject({ code: 'key_mismatch' });
    // A re-dated acknowledgement: the statements are not from its time.
    expect(await check({ ...genuine, acknowledgedAt: NOW + ATTESTATION_MAX_AGE_MS + 60_000 })).toMatchObject({ code: 'loss_unattested' });
  });

  it('only a coordinator writes one', () => {
    expect(kind.writers).toEqual(['coordinator']);
  });

  it('property: composed from every statement the cluster made, and forgeries, a record is accepted exactly when size − threshold + 1 distinct members stated it for this secret, in time', async () => {
    // Every statement the cluster has made: each member, about secrets 7 and 8 and the Web3 secret 7, at several times.
    const times = [NOW, NOW - 60_000, NOW - ATTESTATION_MAX_AGE_MS - 1, NOW + 30_000, NOW + 120_000];
    const pool: Array<{ a: MissingShareAttestation; about: string; genuine: boolean }> = [];
    for (let slot = 0; slot < c.descriptor.size; slot++) {
      for (const [chainId, secretId] of [[-1, 7], [-1, 8], [8453, 7]] as const) {
        for (const at of times) pool.push({ a: statement(slot, chainId, secretId, at), about: `${chainId}:${secretId}`, genuine: true });
      }
      // Forgeries: the rogue coordinator's key under another slot (under its own, slot 1, the
      // statement is its genuine one: it is trusted for its own slot).
      if (slot !== 1) pool.push({ a: statement(slot, -1, 7, NOW, c.keys[1]!), about: '-1:7', genuine: false });
    }
    const inTime = (at: number) => at >= NOW - ATTESTATION_MAX_AGE_MS && at <= NOW + 60_000;
    const valid = pool.flatMap((p, i) => (p.genuine && p.about === '-1:7' && inTime(p.a.at) ? [i] : []));
    await fc.assert(
      // Statements that count (most runs hold a few), anything else from the pool, in any order.
      fc.asyncProperty(fc.subarray(valid), fc.array(fc.nat(pool.length - 1), { maxLength: 4 }), fc.nat(), async (good, noise, seed) => {
        const chosen = [...good, ...noise].map((i) => pool[i]!);
        if (chosen.length === 0) return;
        for (let i = chosen.length - 1; i > 0; i--) {
          const j = (seed + i * 7919) % (i + 1);
          [chosen[i], chosen[j]] = [chosen[j]!, chosen[i]!];
        }
        const verdict = await check(body(chosen.map((p) => p.a)));
        const slots = chosen.map((p) => p.a.slot);
        const allValid = chosen.every((p) => p.genuine && p.about === '-1:7' && inTime(p.a.at)) && new Set(slots).size === slots.length;
        const expected = allValid && new Set(slots).size >= NEEDED;
        expect(verdict === undefined).toBe(expected);
        if (!expected) expect(verdict).toMatchObject({ code: 'loss_unattested' });
      }),
      { numRuns: RUNS },
    );
  });
});
