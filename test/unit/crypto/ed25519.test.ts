import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ed25519 } from '@noble/curves/ed25519.js';
import {
  createEd25519Verifier,
  ed25519PublicKeyOf,
  fromHex,
  isEd25519PublicKeyHex,
  signEd25519,
  toHex,
  verifyEd25519,
  verifyEd25519Noble,
} from '../../../src/crypto/index.ts';

/** Both implementations, which must always agree. */
function verifyBoth(publicKeyHex: string, message: string | Uint8Array, signatureHex: string): boolean {
  const native = verifyEd25519(publicKeyHex, message, signatureHex);
  const noble = verifyEd25519Noble(publicKeyHex, message, signatureHex);
  expect(native, 'node:crypto and noble disagree').toBe(noble);
  return native;
}

// RFC 8032 §7.1
const RFC8032 = [
  {
    name: 'TEST 1 (empty message)',
    secret: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
    public: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    message: '',
    signature:
      'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
  },
  {
    name: 'TEST 2 (one byte)',
    secret: '4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb',
    public: '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c',
    message: '72',
    signature:
      '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
  },
  {
    name: 'TEST 3 (two bytes)',
    secret: 'c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7',
    public: 'fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025',
    message: 'af82',
    signature:
      '6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a',
  },
];

// Group order L, little-endian arithmetic on the S half of a signature.
const L = 2n ** 252n + 27742317777372353535851937790883648493n;
function leToBigint(bytes: Uint8Array): bigint {
  return BigInt('0x' + (toHex(Uint8Array.from(bytes).reverse()) || '0'));
}
function bigintToLe(n: bigint, length: number): Uint8Array {
  return fromHex(n.toString(16).padStart(length * 2, '0')).reverse();
}

function flipBit(bytes: Uint8Array, bit: number): Uint8Array {
  const out = Uint8Array.from(bytes);
  out[(bit >> 3) % out.length]! ^= 1 << (bit & 7);
  return out;
}

const seedArb = fc.uint8Array({ minLength: 32, maxLength: 32 });
const messageArb = fc.oneof(fc.uint8Array({ maxLength: 256 }), fc.string({ maxLength: 64 }));

describe('RFC 8032 test vectors', () => {
  for (const v of RFC8032) {
    it(v.name, () => {
      const seed = fromHex(v.secret);
      const message = fromHex(v.message);
      expect(toHex(ed25519PublicKeyOf(seed))).toBe(v.public);
      expect(toHex(signEd25519(seed, message))).toBe(v.signature);
      expect(isEd25519PublicKeyHex(v.public)).toBe(true);
      expect(verifyBoth(v.public, message, v.signature)).toBe(true);
      expect(verifyBoth(v.public, message, `0x${v.signature}`)).toBe(true);
      expect(verifyBoth(v.public, message, v.signature.toUpperCase())).toBe(true);
      expect(verifyBoth(v.public, Uint8Array.of(...message, 0), v.signature)).toBe(false);
    });
  }

  it('TEST 1 also verifies given the empty string as message', () => {
    const v = RFC8032[0]!;
    expect(verifyBoth(v.public, '', v.signature)).toBe(true);
  });
});

describe('node:crypto and @noble/curves agree', () => {
  it('on keys, signatures and verification for random seeds and messages', () => {
    fc.assert(
      fc.property(seedArb, messageArb, (seed, message) => {
        const publicKey = ed25519PublicKeyOf(seed);
        expect(toHex(publicKey)).toBe(toHex(ed25519.getPublicKey(seed)));
        const bytes = typeof message === 'string' ? new TextEncoder().encode(message) : message;
        const signature = signEd25519(seed, message);
        expect(toHex(signature)).toBe(toHex(ed25519.sign(bytes, seed)));
        expect(isEd25519PublicKeyHex(toHex(publicKey))).toBe(true);
        expect(verifyBoth(toHex(publicKey), message, toHex(signature))).toBe(true);
        expect(verifyBoth(toHex(publicKey), bytes, toHex(signature))).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it('refuse a tampered message, signature or key', () => {
    fc.assert(
      fc.property(seedArb, fc.uint8Array({ minLength: 1, maxLength: 128 }), fc.nat(), (seed, message, bit) => {
        const publicKey = ed25519PublicKeyOf(seed);
        const signature = signEd25519(seed, message);
        expect(verifyBoth(toHex(publicKey), flipBit(message, bit), toHex(signature))).toBe(false);
        expect(verifyBoth(toHex(publicKey), message, toHex(flipBit(signature, bit)))).toBe(false);
        expect(verifyBoth(toHex(flipBit(publicKey, bit)), message, toHex(signature))).toBe(false);
        // Someone else's key.
        expect(verifyBoth(toHex(ed25519PublicKeyOf(flipBit(seed, bit))), message, toHex(signature))).toBe(false);
      }),
      { numRuns: 100 },
    );
  });

  it('refuse a malleated signature (S + L)', () => {
    const v = RFC8032[0]!;
    const sig = fromHex(v.signature);
    const s = leToBigint(sig.subarray(32));
    const malleated = Uint8Array.of(...sig.subarray(0, 32), ...bigintToLe(s + L, 32));
    expect(verifyBoth(v.public, '', toHex(malleated))).toBe(false);
  });
});

describe('malformed input gives false, never throws', () => {
  const v = RFC8032[0]!;

  it('for arbitrary strings in every position', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (key, message, signature) => {
        expect(verifyBoth(key, message, signature)).toBe(false);
        expect(verifyBoth(v.public, message, signature)).toBe(false);
        expect(verifyBoth(key, '', v.signature)).toBe(false);
        expect(isEd25519PublicKeyHex(key)).toBe(false);
      }),
    );
  });

  it('for arbitrary hex of the right lengths', () => {
    const hex = (length: number) =>
      fc.uint8Array({ minLength: length, maxLength: length }).map((b) => toHex(b));
    fc.assert(
      fc.property(hex(32), hex(64), messageArb, (key, signature, message) => {
        // Random 32 bytes are a valid point about half the time: both paths must still agree.
        verifyBoth(key, message, signature);
        expect(verifyBoth(key, '', signature)).toBe(false);
      }),
    );
  });

  it('for wrong lengths, prefixes, case and types', () => {
    const cases: Array<[unknown, unknown, unknown]> = [
      [v.public.slice(2), '', v.signature],
      [v.public + '00', '', v.signature],
      [`0x${v.public}`, '', v.signature], // keys are plain lowercase hex
      [v.public.toUpperCase(), '', v.signature],
      [v.public, '', v.signature.slice(2)],
      [v.public, '', v.signature + '00'],
      [v.public, '', `0X${v.signature}`],
      [v.public, '', `0x0x${v.signature.slice(4)}`],
      [v.public, '', ` ${v.signature}`],
      [v.public, '', `${v.signature.slice(0, 127)}g`],
      [v.public, '', ''],
      ['', '', ''],
      [undefined, '', v.signature],
      [v.public, undefined, v.signature],
      [v.public, '', undefined],
      [v.public, 42, v.signature],
      [v.public, [], v.signature],
      [fromHex(v.public), '', v.signature],
      [v.public, '', fromHex(v.signature)],
    ];
    for (const [key, message, signature] of cases) {
      expect(verifyBoth(key as string, message as string, signature as string)).toBe(false);
    }
  });
});

describe('public key validation', () => {
  // The 8 points of small order: multiples of one of order 8.
  const order8 = ed25519.Point.fromHex('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a');
  const smallOrder = Array.from({ length: 8 }, (_, k) => order8.multiplyUnsafe(BigInt(k)).toHex());

  it('refuses all 8 small-order points, including a key that OpenSSL alone would accept', () => {
    expect(new Set(smallOrder).size).toBe(8);
    for (const hex of smallOrder) {
      expect(ed25519.Point.fromHex(hex).isSmallOrder()).toBe(true);
      expect(isEd25519PublicKeyHex(hex), hex).toBe(false);
      expect(verifyBoth(hex, 'm', toHex(new Uint8Array(64)))).toBe(false);
    }
    // Identity key: R = [1]B, S = 1 satisfies [S]B = R + [k]A for every message.
    const identity = '01' + '00'.repeat(31);
    const forged = ed25519.Point.BASE.toHex() + '01' + '00'.repeat(31);
    expect(verifyBoth(identity, 'any message at all', forged)).toBe(false);
    expect(createEd25519Verifier().verify(identity, 'another', forged)).toBe(false);
  });

  it('refuses non-canonical encodings (y ≥ p, negative zero)', () => {
    const nonCanonical = [
      'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p
      'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p + 1
      'ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
      '0100000000000000000000000000000000000000000000000000000000000080', // x = 0 with sign bit
      'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
    ];
    for (let y = 0; y < 19; y++) {
      const bytes = bigintToLe(2n ** 255n - 19n + BigInt(y), 32);
      nonCanonical.push(toHex(bytes), toHex(Uint8Array.of(...bytes.subarray(0, 31), bytes[31]! | 0x80)));
    }
    for (const hex of nonCanonical) {
      expect(isEd25519PublicKeyHex(hex), hex).toBe(false);
      expect(verifyBoth(hex, '', RFC8032[0]!.signature)).toBe(false);
    }
  });

  it('refuses points off the curve', () => {
    expect(isEd25519PublicKeyHex('02' + '00'.repeat(31))).toBe(false);
    expect(verifyBoth('02' + '00'.repeat(31), '', RFC8032[0]!.signature)).toBe(false);
  });
});

describe('createEd25519Verifier', () => {
  it('keeps at most keyCacheSize keys and still verifies after eviction', () => {
    const verifier = createEd25519Verifier({ keyCacheSize: 2 });
    const seeds = [1, 2, 3].map((b) => new Uint8Array(32).fill(b));
    const signed = seeds.map((seed) => ({ key: toHex(ed25519PublicKeyOf(seed)), sig: toHex(signEd25519(seed, 'hi')) }));
    for (const { key, sig } of [...signed, ...signed]) expect(verifier.verify(key, 'hi', sig)).toBe(true);
    expect(verifier.cachedKeys()).toBe(2);
    // A malformed key is refused before import and cached nowhere.
    expect(verifier.verify('zz', 'hi', signed[0]!.sig)).toBe(false);
    expect(verifier.cachedKeys()).toBe(2);
  });

  it('works without a cache and refuses a bad size', () => {
    const verifier = createEd25519Verifier({ keyCacheSize: 0 });
    const v = RFC8032[0]!;
    expect(verifier.verify(v.public, '', v.signature)).toBe(true);
    expect(verifier.cachedKeys()).toBe(0);
    expect(() => createEd25519Verifier({ keyCacheSize: -1 })).toThrow(RangeError);
  });
});

describe('signEd25519 / ed25519PublicKeyOf', () => {
  it('refuse a seed that is not 32 bytes', () => {
    expect(() => signEd25519(new Uint8Array(31), 'm')).toThrow(TypeError);
    expect(() => ed25519PublicKeyOf(new Uint8Array(64))).toThrow(TypeError);
    expect(() => signEd25519('seed' as unknown as Uint8Array, 'm')).toThrow(TypeError);
  });

  it('sign UTF-8 for string messages', () => {
    const seed = new Uint8Array(32).fill(7);
    expect(toHex(signEd25519(seed, 'héllo'))).toBe(toHex(signEd25519(seed, new TextEncoder().encode('héllo'))));
  });
});
