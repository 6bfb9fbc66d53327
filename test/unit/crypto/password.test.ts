import { argon2Sync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  ARGON2ID_DEFAULTS,
  createHashLimiter,
  createTimingEqualizer,
  derivePasswordKeySeed,
  hashPassword,
  PASSWORD_KEY_PARAMS,
  needsRehash,
  verifyPassword,
  type RandomSource,
} from '../../../src/crypto/index.ts';

// Cheap parameters keep the suite fast; the defaults are exercised where they matter.
const FAST = { memoryKiB: 1024, passes: 1 } as const;

/** A counting, deterministic randomness source. */
function fixedRandom(byte = 0x2a): RandomSource & { calls: number } {
  const source = Object.assign((length: number) => {
    source.calls++;
    return new Uint8Array(length).fill(byte);
  }, { calls: 0 });
  return source;
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const flush = () => new Promise<void>((r) => setImmediate(r));

describe('hashPassword / verifyPassword', () => {
  it('round-trips with the default parameters and refuses a wrong password', async () => {
    const phc = await hashPassword('correct horse battery staple');
    expect(phc).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    expect(await verifyPassword('correct horse battery staple', phc)).toBe(true);
    expect(await verifyPassword('correct horse battery stapler', phc)).toBe(false);
    expect(await verifyPassword('', phc)).toBe(false);
  });

  it('uses a fresh salt per hash', async () => {
    const [a, b] = await Promise.all([hashPassword('same', FAST), hashPassword('same', FAST)]);
    expect(a).not.toBe(b);
    expect(await verifyPassword('same', a)).toBe(true);
    expect(await verifyPassword('same', b)).toBe(true);
  });

  it('stores the parameters it used and verifies with the stored ones', async () => {
    const phc = await hashPassword('pw', { memoryKiB: 1024, passes: 1, parallelism: 2, tagLength: 16, saltLength: 24 });
    const [, alg, version, params, salt, hash] = phc.split('$');
    expect([alg, version, params]).toEqual(['argon2id', 'v=19', 'm=1024,t=1,p=2']);
    expect(Buffer.from(salt!, 'base64')).toHaveLength(24);
    expect(Buffer.from(hash!, 'base64')).toHaveLength(16);
    expect(await verifyPassword('pw', phc)).toBe(true);
    // Same salt and password, other passes: a different hash, so the stored t really is used.
    const other = phc.replace('t=1', 't=2');
    expect(await verifyPassword('pw', other)).toBe(false);
  });

  it('matches the argon2 reference implementation (known answer)', async () => {
    // `echo -n password | argon2 somesalt -id -t 2 -m 16 -p 1 -l 32` (phc-winner-argon2)
    const phc = '$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc';
    expect(await verifyPassword('password', phc)).toBe(true);
    expect(await verifyPassword('Password', phc)).toBe(false);
  });

  it('hashes the salt from the injected random source', async () => {
    const random = fixedRandom(0);
    const phc = await hashPassword('pw', FAST, random);
    expect(phc.split('$')[4]).toBe('AAAAAAAAAAAAAAAAAAAAAA');
    expect(random.calls).toBe(1);
  });

  it('treats canonically equivalent Unicode passwords as the same (NFC)', async () => {
    const composed = 'caf\u00e9';
    const decomposed = 'cafe\u0301';
    const phc = await hashPassword(composed, FAST);
    expect(await verifyPassword(decomposed, phc)).toBe(true);
  });

  it('refuses out-of-range options when hashing', async () => {
    await expect(hashPassword('pw', { memoryKiB: 2 * 1024 * 1024 })).rejects.toThrow(RangeError);
    await expect(hashPassword('pw', { passes: 0 })).rejects.toThrow(RangeError);
    await expect(hashPassword('pw', { saltLength: 4 })).rejects.toThrow(RangeError);
    await expect(hashPassword('pw', { memoryKiB: 16, parallelism: 4 })).rejects.toThrow(RangeError);
    await expect(hashPassword('pw', { tagLength: 1.5 })).rejects.toThrow(RangeError);
  });

  it('returns false, never throws, for malformed or absurd stored hashes', async () => {
    const good = await hashPassword('pw', FAST);
    const [, , , , salt, hash] = good.split('$');
    const malformed: unknown[] = [
      '',
      'pw',
      '$argon2id$',
      good.replace('argon2id', 'argon2i'),
      good.replace('argon2id', 'argon2d'),
      good.replace('v=19', 'v=16'),
      good.replace('$v=19', ''),
      good.replace('m=1024', 'm=01024'),
      good.replace('m=1024', 'm=-1024'),
      good.replace('m=1024,t=1', 't=1,m=1024'),
      good.replace('m=1024', 'm=4194304'), // 4 GiB
      good.replace('m=1024', 'm=1048577'), // just over 1 GiB
      good.replace('t=1', 't=11'),
      good.replace('t=1', 't=0'),
      good.replace('p=1', 'p=0'),
      good.replace('p=1', 'p=200'),
      good.replace('t=1', 't=99999999999999999999'),
      `$argon2id$v=19$m=1024,t=1,p=1$${salt}$`,
      `$argon2id$v=19$m=1024,t=1,p=1$$${hash}`,
      `$argon2id$v=19$m=1024,t=1,p=1$${salt}=$${hash}`, // padding
      `$argon2id$v=19$m=1024,t=1,p=1$${salt}$${hash}=`,
      `$argon2id$v=19$m=1024,t=1,p=1$${salt}$${hash}$`,
      `$argon2id$v=19$m=1024,t=1,p=1$${salt}$${hash!.slice(0, 10)}`, // 7-byte tag
      `$argon2id$v=19$m=1024,t=1,p=1$AAAA$${hash}`, // 3-byte salt
      `$argon2id$v=19$m=1024,t=1,p=1$${salt}$${'A'.repeat(100)}`, // 75-byte tag
      `$argon2id$v=19$m=1024,t=1,p=1$${salt}$${hash!.slice(0, -1)}B`, // non-zero trailing bits
      `$argon2id$v=19$m=1024,t=1,p=1$${salt}$${hash!.replace(/./, '-')}`, // base64url alphabet
      ` ${good}`,
      `${good}\n`,
      good + 'A'.repeat(300),
      undefined,
      null,
      42,
    ];
    for (const phc of malformed) {
      await expect(verifyPassword('pw', phc as string), String(phc)).resolves.toBe(false);
    }
    await expect(verifyPassword(undefined as unknown as string, good)).resolves.toBe(false);
    expect(await verifyPassword('pw', good)).toBe(true);
  });
});

describe('needsRehash', () => {
  it('is false for a hash made with the current parameters and true when any differs', async () => {
    const phc = await hashPassword('pw', FAST);
    expect(needsRehash(phc, FAST)).toBe(false);
    expect(needsRehash(phc)).toBe(true); // defaults are stronger
    expect(needsRehash(phc, { ...FAST, memoryKiB: 2048 })).toBe(true);
    expect(needsRehash(phc, { ...FAST, passes: 2 })).toBe(true);
    expect(needsRehash(phc, { ...FAST, parallelism: 2 })).toBe(true);
    expect(needsRehash(phc, { ...FAST, tagLength: 64 })).toBe(true);
    expect(needsRehash(phc, { ...FAST, saltLength: 32 })).toBe(true);
  });

  it('is false for a default hash against the defaults, true for anything malformed', async () => {
    expect(needsRehash(await hashPassword('pw'))).toBe(false);
    expect(needsRehash('$2b$12$notargon')).toBe(true);
    expect(needsRehash('')).toBe(true);
  });

  it('throws on out-of-range current parameters (a configuration error)', () => {
    expect(() => needsRehash('', { passes: 100 })).toThrow(RangeError);
  });
});

describe('createHashLimiter', () => {
  it('refuses a non-positive or fractional bound', () => {
    expect(() => createHashLimiter(0)).toThrow(RangeError);
    expect(() => createHashLimiter(1.5)).toThrow(RangeError);
  });

  it('never runs more than N at once and starts them in arrival order', async () => {
    const limiter = createHashLimiter(2);
    const gates = Array.from({ length: 6 }, deferred);
    const started: number[] = [];
    let running = 0;
    let peak = 0;
    const results = gates.map((gate, i) =>
      limiter.run(async () => {
        started.push(i);
        running++;
        peak = Math.max(peak, running);
        await gate.promise;
        running--;
        return i;
      }),
    );
    await flush();
    expect(started).toEqual([0, 1]);
    expect([limiter.active(), limiter.queued()]).toEqual([2, 4]);

    // Finish out of order: the freed slot still goes to the oldest waiter.
    gates[1]!.resolve();
    await flush();
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.resolve();
    await flush();
    expect(started).toEqual([0, 1, 2, 3]);
    expect([limiter.active(), limiter.queued()]).toEqual([2, 2]);

    for (const gate of gates) gate.resolve();
    expect(await Promise.all(results)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    expect(peak).toBe(2);
    expect([limiter.active(), limiter.queued()]).toEqual([0, 0]);
  });

  it('releases the slot when the function throws or rejects', async () => {
    const limiter = createHashLimiter(1);
    const syncThrow = limiter.run(() => {
      throw new Error('boom');
    });
    const reject = limiter.run(() => Promise.reject(new Error('nope')));
    const ok = limiter.run(async () => 'ok');
    await expect(syncThrow).rejects.toThrow('boom');
    await expect(reject).rejects.toThrow('nope');
    await expect(ok).resolves.toBe('ok');
    expect([limiter.active(), limiter.queued()]).toEqual([0, 0]);
  });

  it('bounds real argon2 work under a burst', async () => {
    const limiter = createHashLimiter(2);
    let peak = 0;
    const burst = Array.from({ length: 8 }, (_, i) =>
      limiter.run(async () => {
        peak = Math.max(peak, limiter.active());
        return hashPassword(`pw${i}`, FAST);
      }),
    );
    expect(limiter.active()).toBe(2);
    expect(limiter.queued()).toBe(6);
    const hashes = await Promise.all(burst);
    expect(peak).toBe(2);
    expect(await verifyPassword('pw7', hashes[7]!)).toBe(true);
  });

  it('refuses a bad maxQueued', () => {
    expect(() => createHashLimiter(1, { maxQueued: -1 })).toThrow(RangeError);
    expect(() => createHashLimiter(1, { maxQueued: 1.5 })).toThrow(RangeError);
    expect(() => createHashLimiter(1, { maxQueued: Number.NaN })).toThrow(RangeError);
  });

  it('with maxQueued, refuses at once when that many wait: the function never runs and nothing changes', async () => {
    let refusals = 0;
    const overloaded = () => new Error(`busy #${++refusals}`);
    const limiter = createHashLimiter(1, { maxQueued: 2, overloaded });
    const gates = Array.from({ length: 3 }, deferred);
    const ran: number[] = [];
    const admitted = gates.map((gate, i) =>
      limiter.run(async () => {
        ran.push(i);
        await gate.promise;
        return i;
      }),
    );
    expect([limiter.active(), limiter.queued()]).toEqual([1, 2]);

    let extraRan = false;
    const refused = limiter.run(async () => {
      extraRan = true;
      return -1;
    });
    await expect(refused).rejects.toThrow('busy #1');
    expect(extraRan).toBe(false);
    expect(refusals).toBe(1);
    expect([limiter.active(), limiter.queued()]).toEqual([1, 2]);

    // A slot frees: the oldest waiter gets it, and the queue has room for one more again.
    gates[0]!.resolve();
    await flush();
    expect(ran).toEqual([0, 1]);
    expect([limiter.active(), limiter.queued()]).toEqual([1, 1]);
    const late = limiter.run(async () => 'late');
    await expect(limiter.run(async () => 'refused')).rejects.toThrow('busy #2');
    expect([limiter.active(), limiter.queued()]).toEqual([1, 2]);

    for (const gate of gates) gate.resolve();
    expect(await Promise.all(admitted)).toEqual([0, 1, 2]);
    await expect(late).resolves.toBe('late');
    expect([limiter.active(), limiter.queued()]).toEqual([0, 0]);
    // Shedding left nothing behind: the limiter works as new.
    await expect(limiter.run(async () => 'after')).resolves.toBe('after');
    expect(refusals).toBe(2);
  });

  it('maxQueued 0 runs up to maxConcurrent and refuses the rest; the default error is a plain Error', async () => {
    const limiter = createHashLimiter(2, { maxQueued: 0 });
    const gate = deferred();
    const running = [limiter.run(() => gate.promise), limiter.run(() => gate.promise)];
    await expect(limiter.run(async () => 'x')).rejects.toThrow('hash queue full');
    gate.resolve();
    await Promise.all(running);
    expect([limiter.active(), limiter.queued()]).toEqual([0, 0]);
  });

  it('sheds a burst of real argon2 work: exactly maxConcurrent + maxQueued run, the rest are refused without hashing', async () => {
    let refusals = 0;
    const limiter = createHashLimiter(2, { maxQueued: 3, overloaded: () => new Error(`shed ${++refusals}`) });
    let hashed = 0;
    const burst = Array.from({ length: 20 }, (_, i) =>
      limiter.run(async () => {
        hashed++;
        return hashPassword(`pw${i}`, FAST);
      }),
    );
    const results = await Promise.allSettled(burst);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(15);
    expect(hashed).toBe(5);
    expect(refusals).toBe(15);
    expect([limiter.active(), limiter.queued()]).toEqual([0, 0]);
  });
});

describe('createTimingEqualizer', () => {
  it('always resolves false, even for the dummy password, and hashes the dummy once', async () => {
    const random = fixedRandom(0);
    const equalizer = createTimingEqualizer(FAST, random);
    expect(random.calls).toBe(0); // lazy
    // The dummy password is the hex of random(16): all zeros here, so this one would match.
    expect(await equalizer.verifyAgainstDummy('0'.repeat(32))).toBe(false);
    const calls = random.calls;
    expect(calls).toBe(2); // dummy password + salt
    await Promise.all([equalizer.verifyAgainstDummy('a'), equalizer.verifyAgainstDummy('b')]);
    expect(random.calls).toBe(calls);
  });

  it('validates its parameters eagerly', () => {
    expect(() => createTimingEqualizer({ memoryKiB: 1 })).toThrow(RangeError);
  });

  it('costs about what a real verification with the same parameters costs', async () => {
    const equalizer = createTimingEqualizer(ARGON2ID_DEFAULTS);
    const phc = await hashPassword('known account');
    await equalizer.verifyAgainstDummy('warm-up'); // builds the dummy hash
    const time = async (fn: () => Promise<unknown>) => {
      const t0 = performance.now();
      await fn();
      return performance.now() - t0;
    };
    // Real and dummy in alternation, the median of the pairs' ratios: both sides of a pair see the
    // same machine (timed as two runs of five, one after the other, a busy machine moved the ratio to 0.38).
    const ratios: number[] = [];
    for (let i = 0; i < 7; i++) {
      const real = await time(() => verifyPassword('wrong password', phc));
      const dummy = await time(() => equalizer.verifyAgainstDummy('wrong password'));
      ratios.push(dummy / real);
    }
    const ratio = ratios.sort((a, b) => a - b)[3]!;
    // Loose on purpose: this guards against a shortcut (no argon2, or other parameters), not jitter.
    expect(ratio).toBeGreaterThan(0.4);
    expect(ratio).toBeLessThan(2.5);
  });
});

describe('derivePasswordKeySeed', () => {
  it('the same password, label and context give the same 32 bytes; any other gives others', async () => {
    const seed = await derivePasswordKeySeed('correct horse', 'label/v1', 'principal-1');
    expect(seed).toHaveLength(32);
    expect(await derivePasswordKeySeed('correct horse', 'label/v1', 'principal-1')).toEqual(seed);
    const others = await Promise.all([
      derivePasswordKeySeed('correct horsf', 'label/v1', 'principal-1'),
      derivePasswordKeySeed('correct horse', 'label/v2', 'principal-1'),
      derivePasswordKeySeed('correct horse', 'label/v1', 'principal-2'),
    ]);
    for (const other of others) expect(other).not.toEqual(seed);
  });

  it('is argon2id over the NFC password with the documented parameters and salt', async () => {
    const expected = argon2Sync('argon2id', { message: Buffer.from('é', 'utf8'), nonce: Buffer.from('label/v1:ctx'), memory: PASSWORD_KEY_PARAMS.memoryKiB, passes: PASSWORD_KEY_PARAMS.passes, parallelism: 1, tagLength: 32 });
    expect(Buffer.from(await derivePasswordKeySeed('e\u0301', 'label/v1', 'ctx'))).toEqual(expected);
  });
});
