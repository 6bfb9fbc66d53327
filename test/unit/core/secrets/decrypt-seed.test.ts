/**
 * A decrypt short of threshold released shares (src/core/secrets/decrypt-seed.ts; docs/security.md,
 * Share release): members that refused will refuse a retry, so once too many did the client hears
 * why; a chain that is down is said so; anything else is a 503 the caller may retry.
 */
import { describe, expect, it } from 'vitest';
import { releaseShortfall } from '../../../../src/core/secrets/decrypt-seed.ts';
import { AppError, refusal } from '../../../../src/errors/index.ts';

// Five members, threshold 3: three refusals make a quorum impossible, two do not.
const cluster = { size: 5, threshold: 3 };
const spent = refusal('FORBIDDEN', 'string_used', 'this signed string was already used for a decrypt');
const malformed = refusal('BAD_REQUEST', 'not_a_decrypt', 'not a decrypt request: cifer is malformed');
const chainDown = new AppError('CHAIN_UNAVAILABLE', 'chain 31337 is unavailable');
const at = (...errors: unknown[]) => errors.map((error, slot) => ({ slot, error }));

describe('release shortfall', () => {
  it('more refusals than members that may fail: the first refusal, by its code and reason', () => {
    const shortfall = releaseShortfall(at(spent, malformed, spent), cluster, -1)!;
    expect(shortfall.refused).toBe(3);
    expect(shortfall.error).toBeInstanceOf(AppError);
    expect(shortfall.error).toMatchObject({ code: 'FORBIDDEN', reason: 'string_used', message: 'Members refused to release their shares: this signed string was already used for a decrypt' });
    expect(releaseShortfall(at(malformed, spent, spent), cluster, -1)!.error).toMatchObject({ code: 'BAD_REQUEST', reason: 'not_a_decrypt' });
  });

  it('refusals a quorum could still do without, or other failures: a retry may help', () => {
    expect(releaseShortfall(at(spent, spent, new Error('timeout'), new AppError('NOT_READY', 'catching up')), cluster, -1)).toBeUndefined();
    expect(releaseShortfall(at(new AppError('NOT_FOUND', 'no share'), new Error('unreachable'), new Error('unreachable')), cluster, -1)).toBeUndefined();
    expect(releaseShortfall([], cluster, -1)).toBeUndefined();
  });

  it('more members without a share than may fail: the secret is lost, 410 SECRET_LOST, whatever else failed', () => {
    const none = refusal('NOT_FOUND', 'no_share', 'this member holds no share of the secret');
    const mismatch = refusal('CONFLICT', 'share_mismatch', "the share held does not match the secret's digest for this slot");
    const lost = releaseShortfall(at(none, mismatch, none, new Error('timeout')), cluster, -1)!;
    expect(lost.error).toMatchObject({ code: 'SECRET_LOST', extra: { chainId: -1 } });
    expect(lost.refused).toBe(3);
    // Two without a share and two unreachable: the third holder may come back — a retry may help.
    expect(releaseShortfall(at(none, none, new Error('unreachable'), new Error('unreachable')), cluster, -1)).toBeUndefined();
  });

  it('a member that could not read the chain: CHAIN_UNAVAILABLE naming the chain', () => {
    const shortfall = releaseShortfall(at(new Error('timeout'), chainDown), cluster, 31337)!;
    expect(shortfall.refused).toBeUndefined();
    expect(shortfall.error).toMatchObject({ code: 'CHAIN_UNAVAILABLE', message: 'chain 31337 is unavailable', extra: { chainId: 31337 } });
    // Refusals that settle it come first.
    expect(releaseShortfall(at(spent, spent, spent, chainDown), cluster, 31337)!.error.code).toBe('FORBIDDEN');
  });
});
