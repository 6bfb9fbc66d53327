/**
 * Batch record signatures (src/core/replication/record-sig.ts; docs/security.md, "Record
 * signatures"): every record of a batch verifies alone, nothing else does — not a changed record,
 * not another record's path, not another origin's or cluster's signature, not an inner node passed
 * off as a record — and a receiver's one verification per (signature, root) never lets a forgery
 * ride on a genuine record of the same batch.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromHex, generatePrivateKey, taggedHash, toHex, uncompressedPublicKey, publicKeyOf, verifyDigest, type VerifyItem } from '../../../../src/crypto/index.ts';
import { recordDigest, type UnsignedRecord } from '../../../../src/core/replication/record.ts';
import { MAX_BATCH_LEAVES, signedDigestOf, signRecordDigests, verifyRecordSig, verifyRecordSigs } from '../../../../src/core/replication/record-sig.ts';

const CLUSTER = 'qk-batch-sig';
const keyA = generatePrivateKey();
const keyB = generatePrivateKey();
const pubA = uncompressedPublicKey(publicKeyOf(keyA));
const pubB = uncompressedPublicKey(publicKeyOf(keyB));

const unsigned = (seq: number, v: number, origin = '0x' + 'a'.repeat(40)): UnsignedRecord => ({ kind: 'note', key: `k${seq}`, origin, seq, hlc: [1000 + seq, 0], body: { v } });
const digestsOf = (n: number, from = 1) => Array.from({ length: n }, (_, i) => recordDigest(CLUSTER, unsigned(from + i, i)));
/** The 65-byte signature at the head of a sig string. */
const head = (sig: string) => sig.slice(0, 2 + 130);
/** Verify inline, counting the verifications. */
function counting() {
  const seen: VerifyItem[][] = [];
  return { seen, verify: async (items: readonly VerifyItem[]) => (seen.push([...items]), items.map((it) => verifyDigest(it.sig, it.digest, it.publicKey))) };
}

describe('signRecordDigests', () => {
  it('a lone record keeps the 65-byte form; a batch shares one signature per 8 records, each record with its own path', () => {
    expect(signRecordDigests(CLUSTER, digestsOf(1), keyA, true)[0]).toMatch(/^0x[0-9a-f]{130}$/);
    for (const n of [2, 3, 5, 8, 9, 17, 20]) {
      const digests = digestsOf(n);
      const sigs = signRecordDigests(CLUSTER, digests, keyA, true);
      expect(sigs).toHaveLength(n);
      sigs.forEach((sig, i) => expect(verifyRecordSig(CLUSTER, sig, digests[i]!, pubA), `n=${n} i=${i}`).toBe(true));
      // One signature per group of up to 8; each group's tree as deep as its size needs.
      const groups = Math.ceil(n / MAX_BATCH_LEAVES);
      expect(new Set(sigs.map(head)).size).toBe(groups);
      for (let g = 0; g < groups; g++) {
        const size = Math.min(MAX_BATCH_LEAVES, n - g * MAX_BATCH_LEAVES);
        const bytes = size === 1 ? 65 : 66 + 32 * Math.ceil(Math.log2(size));
        for (const sig of sigs.slice(g * MAX_BATCH_LEAVES, g * MAX_BATCH_LEAVES + size)) expect(fromHex(sig).length).toBe(bytes);
      }
      // The same records signed one by one (a cluster with an older node): 65 bytes each, all distinct.
      const singles = signRecordDigests(CLUSTER, digests, keyA, false);
      expect(singles.every((s) => fromHex(s).length === 65)).toBe(true);
      singles.forEach((sig, i) => expect(verifyRecordSig(CLUSTER, sig, digests[i]!, pubA)).toBe(true));
    }
  });
});

describe('a batch signature verifies its own record and nothing else', () => {
  const digests = digestsOf(6);
  const sigs = signRecordDigests(CLUSTER, digests, keyA, true);
  const sig = sigs[2]!;
  const bytes = fromHex(sig);
  const withByte = (at: number, xor: number) => {
    const b = bytes.slice();
    b[at]! ^= xor;
    return '0x' + toHex(b);
  };

  it('refuses a changed record, another record of the batch, another key, another cluster', () => {
    expect(verifyRecordSig(CLUSTER, sig, digests[2]!, pubA)).toBe(true);
    expect(verifyRecordSig(CLUSTER, sig, recordDigest(CLUSTER, unsigned(3, 99)), pubA)).toBe(false);
    expect(verifyRecordSig(CLUSTER, sig, digests[3]!, pubA)).toBe(false);
    expect(verifyRecordSig(CLUSTER, sig, digests[2]!, pubB)).toBe(false);
    expect(verifyRecordSig('qk-other', sig, digests[2]!, pubA)).toBe(false);
  });

  it('refuses a changed path: a sibling, the index, the signature, a level more or less, a depth past 3', () => {
    expect(verifyRecordSig(CLUSTER, withByte(70, 1), digests[2]!, pubA)).toBe(false); // first sibling
    expect(verifyRecordSig(CLUSTER, withByte(bytes.length - 1, 0x80), digests[2]!, pubA)).toBe(false); // last sibling
    expect(verifyRecordSig(CLUSTER, withByte(65, 1), digests[2]!, pubA)).toBe(false); // index 2 → 3
    expect(verifyRecordSig(CLUSTER, withByte(10, 1), digests[2]!, pubA)).toBe(false); // r
    expect(verifyRecordSig(CLUSTER, sig.slice(0, -64), digests[2]!, pubA)).toBe(false); // a level less
    expect(verifyRecordSig(CLUSTER, sig + '00'.repeat(32), digests[2]!, pubA)).toBe(false); // a level more
    // Not a signature at all: the form is refused before any verification.
    expect(signedDigestOf(CLUSTER, sig + '00'.repeat(32 * 2), digests[2]!)).toBeUndefined(); // depth 5
    expect(signedDigestOf(CLUSTER, sig.slice(0, -2), digests[2]!)).toBeUndefined(); // not whole levels
    expect(signedDigestOf(CLUSTER, '0x' + toHex(bytes.slice(0, 66)), digests[2]!)).toBeUndefined(); // depth 0
    expect(signedDigestOf(CLUSTER, withByte(65, 0x08), digests[2]!)).toBeUndefined(); // index 10 in a tree of 8
    expect(signedDigestOf(CLUSTER, 'zz', digests[2]!)).toBeUndefined();
  });

  it('refuses an inner node of the tree passed off as a record, with the shorter path above it', () => {
    // Leaves 0..3 of a tree of 4: the inner node over leaves 0 and 1, with leaf 2's second sibling,
    // reaches the same root — but at depth 1, which is not what was signed (the depth is).
    const four = digestsOf(4);
    const [s0] = signRecordDigests(CLUSTER, four, keyA, true);
    const b = fromHex(s0!);
    const inner = taggedHash('quorumkeep/record-batch-node/v1', new Uint8Array([...four[0]!, ...four[1]!]));
    const short = new Uint8Array(66 + 32);
    short.set(b.subarray(0, 65), 0);
    short[65] = 0;
    short.set(b.subarray(66 + 32, 66 + 64), 66); // the sibling of inner: the node over leaves 2 and 3
    expect(verifyRecordSig(CLUSTER, '0x' + toHex(short), inner, pubA)).toBe(false);
  });

  it('a single signature is not a batch root, nor a batch signature a single one', () => {
    // A lone record signed over its digest: its signature does not pass for a tree over that digest.
    const [single] = signRecordDigests(CLUSTER, [digests[0]!], keyA, true);
    const dressed = single! + '00' + '00'.repeat(32);
    expect(verifyRecordSig(CLUSTER, dressed, digests[0]!, pubA)).toBe(false);
    // A batch signature's first 65 bytes alone, over the record's digest.
    expect(verifyRecordSig(CLUSTER, head(sigs[0]!), digests[0]!, pubA)).toBe(false);
  });

  it('a batch checked record by record: each path is its own, whatever its siblings computed before it', () => {
    // The records of a batch arrive together and are checked one after another, so their paths
    // reuse the nodes their siblings computed; a node is reused only over the same children.
    const digests = digestsOf(8, 40);
    const sigs = signRecordDigests(CLUSTER, digests, keyA, true);
    const rootOf = (sig: string, digest: Uint8Array) => toHex(signedDigestOf(CLUSTER, sig, digest)!.signed);
    const root = rootOf(sigs[0]!, digests[0]!);
    for (let i = 0; i < 8; i++) {
      expect(verifyRecordSig(CLUSTER, sigs[i]!, digests[i]!, pubA)).toBe(true);
      for (let level = 0; level < 3; level++) {
        // Right after its genuine siblings: one changed sibling, or the record changed, leads elsewhere.
        const b = fromHex(sigs[i]!);
        b[66 + 32 * level + 5]! ^= 1;
        expect(rootOf('0x' + toHex(b), digests[i]!)).not.toBe(root);
        expect(verifyRecordSig(CLUSTER, '0x' + toHex(b), digests[i]!, pubA)).toBe(false);
      }
      expect(verifyRecordSig(CLUSTER, sigs[i]!, recordDigest(CLUSTER, unsigned(40 + i, 999)), pubA)).toBe(false);
      // Another record's path under this one's index: refused, and the genuine record passes after it.
      expect(verifyRecordSig(CLUSTER, sigs[(i + 1) % 8]!, digests[i]!, pubA)).toBe(false);
      expect(rootOf(sigs[i]!, digests[i]!)).toBe(root);
    }
    // Two batches interleaved, record by record: each still verifies, and never under the other's root.
    const others = digestsOf(8, 60);
    const otherSigs = signRecordDigests(CLUSTER, others, keyA, true);
    for (let i = 0; i < 8; i++) {
      expect(verifyRecordSig(CLUSTER, sigs[i]!, digests[i]!, pubA)).toBe(true);
      expect(verifyRecordSig(CLUSTER, otherSigs[i]!, others[i]!, pubA)).toBe(true);
      expect(verifyRecordSig(CLUSTER, otherSigs[i]!, digests[i]!, pubA)).toBe(false);
      expect(rootOf(sigs[i]!, digests[i]!)).toBe(root);
    }
    // The same signature bytes read for another cluster: a root of that cluster's, not this one's.
    expect(verifyRecordSig('qk-other', sigs[0]!, digests[0]!, pubA)).toBe(false);
    expect(verifyRecordSig(CLUSTER, sigs[1]!, digests[1]!, pubA)).toBe(true);
  });
});

describe('verifyRecordSigs', () => {
  it('verifies a batch travelling together once, and a forgery sharing its signature on its own', async () => {
    const digests = digestsOf(8);
    const sigs = signRecordDigests(CLUSTER, digests, keyA, true);
    const items = sigs.map((s, i) => ({ ...signedDigestOf(CLUSTER, s, digests[i]!)!, publicKey: pubA }));
    const one = counting();
    expect(await verifyRecordSigs(items, one.verify)).toEqual(Array(8).fill(true));
    expect(one.seen.flat()).toHaveLength(1);
    // A changed record carrying record 3's path: its root differs, so it is verified apart, and fails.
    const forged = { ...signedDigestOf(CLUSTER, sigs[3]!, recordDigest(CLUSTER, unsigned(4, 1234)))!, publicKey: pubA };
    const two = counting();
    expect(await verifyRecordSigs([...items.slice(0, 4), forged, ...items.slice(4)], two.verify)).toEqual([true, true, true, true, false, true, true, true, true]);
    expect(two.seen.flat()).toHaveLength(2);
    // The same signature and root under another origin's key: verified apart, and fails.
    const three = counting();
    expect(await verifyRecordSigs([items[0]!, { ...items[1]!, publicKey: pubB }], three.verify)).toEqual([true, false]);
    expect(three.seen.flat()).toHaveLength(2);
  });

  it('property: composed from every signature, path and record seen, a record passes only with the signature made for it', async () => {
    // What the cluster has seen: batches of two origins, of every size up to 12, and lone records.
    const seen: Array<{ digest: Uint8Array; sig: string; key: 'A' | 'B' }> = [];
    let seq = 1;
    for (const [key, priv] of [['A', keyA], ['B', keyB]] as const) {
      for (const n of [1, 2, 3, 4, 7, 8, 12]) {
        const digests = Array.from({ length: n }, () => recordDigest(CLUSTER, unsigned(seq, seq++)));
        signRecordDigests(CLUSTER, digests, priv, true).forEach((sig, i) => seen.push({ digest: digests[i]!, sig, key }));
      }
    }
    const genuine = new Set(seen.map((s) => `${s.key}|${toHex(s.digest)}|${s.sig}`));
    const siblings = seen.flatMap((s) => {
      const b = fromHex(s.sig);
      return Array.from({ length: (b.length - 66) / 32 }, (_, l) => b.slice(66 + 32 * l, 98 + 32 * l));
    });
    const composed = fc.record({
      digestFrom: fc.nat(seen.length - 1),
      sigFrom: fc.nat(seen.length - 1),
      key: fc.constantFrom<'A' | 'B'>('A', 'B'),
      // Optionally: one level's sibling taken from another path, or another index.
      swap: fc.option(fc.record({ level: fc.nat(2), from: fc.nat(siblings.length - 1) })),
      index: fc.option(fc.nat(7)),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(composed, { minLength: 1, maxLength: 12 }), async (picks) => {
        const records = picks.map((p) => {
          const bytes = fromHex(seen[p.sigFrom]!.sig);
          const depth = (bytes.length - 66) / 32;
          if (depth >= 1 && p.swap && p.swap.level < depth) bytes.set(siblings[p.swap.from]!, 66 + 32 * p.swap.level);
          if (depth >= 1 && p.index !== null) bytes[65] = p.index % 2 ** depth;
          return { digest: seen[p.digestFrom]!.digest, sig: '0x' + toHex(bytes), key: p.key };
        });
        // Alongside the genuine records the picks came from, so forgeries share their signatures.
        const all = [...records, ...picks.map((p) => seen[p.sigFrom]!)];
        const items = all.map((r) => ({ parsed: signedDigestOf(CLUSTER, r.sig, r.digest), publicKey: r.key === 'A' ? pubA : pubB }));
        const parsedOk = items.filter((it) => it.parsed !== undefined);
        const verdicts = await verifyRecordSigs(
          parsedOk.map((it) => ({ ...it.parsed!, publicKey: it.publicKey })),
          async (xs) => xs.map((x) => verifyDigest(x.sig, x.digest, x.publicKey)),
        );
        let v = 0;
        all.forEach((r, i) => {
          const accepted = items[i]!.parsed !== undefined && verdicts[v++] === true;
          expect(accepted).toBe(genuine.has(`${r.key}|${toHex(r.digest)}|${r.sig}`));
          expect(verifyRecordSig(CLUSTER, r.sig, r.digest, r.key === 'A' ? pubA : pubB)).toBe(accepted);
        });
      }),
      { numRuns: 300 },
    );
  });
});
