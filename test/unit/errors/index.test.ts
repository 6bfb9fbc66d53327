/**
 * Member refusals (src/errors/index.ts; docs/security.md, "Member refusals"): a refusal carries a
 * reason of the closed set next to its code; a check run through another module gets one without
 * losing its code, message or fields; a peer's unknown reason is not believed.
 */
import { describe, expect, it } from 'vitest';
import { AppError, isRefusalReason, refusal, refusedAs, REFUSAL_REASONS, withReason } from '../../../src/errors/index.ts';

describe('refusal reasons', () => {
  it('a refusal has its code, status, message and reason', () => {
    const err = refusal('FORBIDDEN', 'string_used', 'already used');
    expect(err).toBeInstanceOf(AppError);
    expect({ code: err.code, status: err.status, message: err.message, reason: err.reason }).toEqual({ code: 'FORBIDDEN', status: 403, message: 'already used', reason: 'string_used' });
    expect(new AppError('FORBIDDEN', 'no reason').reason).toBeUndefined();
  });

  it('an AppError without a reason gets one, keeping its code, message, fields and itself as the cause; one with a reason keeps it', () => {
    const plain = new AppError('CHAIN_UNAVAILABLE', 'chain 1 is down', { chainId: 1 });
    const tagged = withReason(plain, 'secret_unavailable') as AppError;
    expect({ code: tagged.code, message: tagged.message, extra: tagged.extra, reason: tagged.reason, cause: tagged.cause }).toEqual({
      code: 'CHAIN_UNAVAILABLE',
      message: 'chain 1 is down',
      extra: { chainId: 1 },
      reason: 'secret_unavailable',
      cause: plain,
    });
    const already = refusal('FORBIDDEN', 'not_owner_or_delegate', 'no right');
    expect(withReason(already, 'unverified')).toBe(already);
    const bug = new TypeError('not a refusal');
    expect(withReason(bug, 'unverified')).toBe(bug);
    expect(() => refusedAs('unverified')(plain)).toThrow(expect.objectContaining({ code: 'CHAIN_UNAVAILABLE', reason: 'unverified' }));
  });

  it('only the closed set is a reason', () => {
    for (const reason of REFUSAL_REASONS) expect(isRefusalReason(reason)).toBe(true);
    for (const other of ['because', '', 'MALFORMED', 7, null, undefined]) expect(isRefusalReason(other)).toBe(false);
  });
});
