import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { normalizeEmail, emailHexOf } from '../../../../src/core/accounts/rules.ts';
import { AppError } from '../../../../src/errors/index.ts';

describe('normalizeEmail', () => {
  it('trims and lowercases (docs/http.md: normalised trim+lowercase)', () => {
    expect(normalizeEmail('  Alice@Example.COM ')).toBe('alice@example.com');
  });

  it.each(['no-at-sign', 'a@b@c', 'a b@x.org', 'a,b@x.org', 'a;b@x.org', '<a>@x.org', '"a"@x.org', '@x.org', 'a@', `a@${'x'.repeat(260)}`, 'a\u0000b@x.org'])(
    'refuses %j with a 400',
    (email) => {
      const err = (() => {
        try {
          normalizeEmail(email);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).status).toBe(400);
    },
  );

  it('is idempotent and its hex decodes back to the normalised email', () => {
    fc.assert(
      fc.property(fc.emailAddress(), (email) => {
        const n = normalizeEmail(email);
        expect(normalizeEmail(n)).toBe(n);
        expect(Buffer.from(emailHexOf(n), 'hex').toString('utf8')).toBe(n);
      }),
    );
  });
});
