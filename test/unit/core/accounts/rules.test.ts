/**
 * The accounts capability's plain rules (src/core/accounts/rules.ts): shapes, the password check's
 * order and cost, and when a password is contested. The crypto they need is stubbed.
 */
import { describe, expect, it } from 'vitest';
import {
  checkAccountPassword,
  checkPassword,
  checkPrincipalId,
  emailHexOf,
  emailOfQuery,
  mailCooldownError,
  parseKeyProof,
  passwordContested,
  provenRegistration,
  registrationStatus,
  verificationRequiresReset,
} from '../../../../src/core/accounts/rules.ts';
import { NOW, PRINCIPAL_ID, principalBody as body } from './fixtures.ts';

/** A password check that counts its calls: a "hash" names its password. */
function passwordCrypto() {
  const calls: string[] = [];
  return {
    calls,
    verifyPassword: async (password: string, phc: string) => {
      calls.push('verify');
      return phc.startsWith(`$argon2id$pw$${password}$`);
    },
    verifyDummy: async (): Promise<false> => {
      calls.push('dummy');
      return false;
    },
  };
}

function errorOf(run: () => unknown): unknown {
  try {
    run();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('emailOfQuery', () => {
  it('prefers emailHex, decodes and normalises it', () => {
    expect(emailOfQuery({ emailHex: emailHexOf(' Bob@X.org'), email: 'other@x.org' })).toBe('bob@x.org');
    expect(emailOfQuery({ emailHex: emailHexOf('bob@x.org').toUpperCase() })).toBe('bob@x.org');
  });

  it('falls back to the plain email', () => {
    expect(emailOfQuery({ email: ' Bob@X.org ' })).toBe('bob@x.org');
  });

  it.each([
    [{ emailHex: 'abc' }, 'emailHex must be hex'],
    [{ emailHex: 'zz' }, 'emailHex must be hex'],
    [{}, 'emailHex or email is required'],
    [{ email: 'no-at-sign' }, 'Invalid email address'],
  ])('refuses %j with a 400', (query, message) => {
    expect(errorOf(() => emailOfQuery(query))).toMatchObject({ code: 'BAD_REQUEST', status: 400, message });
  });
});

describe('checkPassword and checkPrincipalId', () => {
  it('bounds a password to 8..1024 characters, naming the field', () => {
    expect(() => checkPassword('x'.repeat(8))).not.toThrow();
    expect(() => checkPassword('x'.repeat(1024))).not.toThrow();
    expect(errorOf(() => checkPassword('x'.repeat(7)))).toMatchObject({ code: 'BAD_REQUEST', message: 'password must be at least 8 characters' });
    expect(errorOf(() => checkPassword('x'.repeat(1025), 'newPassword'))).toMatchObject({ code: 'BAD_REQUEST', message: 'newPassword must be at most 1024 characters' });
  });

  it('accepts a UUIDv4 principal id only', () => {
    expect(() => checkPrincipalId(PRINCIPAL_ID)).not.toThrow();
    for (const id of ['', PRINCIPAL_ID.toUpperCase(), PRINCIPAL_ID.replace('-4b8e', '-1b8e'), `${PRINCIPAL_ID}0`]) {
      expect(errorOf(() => checkPrincipalId(id))).toMatchObject({ code: 'BAD_REQUEST', message: 'principalId is malformed' });
    }
  });
});

describe('parseKeyProof', () => {
  const keyCheck = { isEd25519PublicKeyHex: (hex: string) => /^[0-9a-f]{64}$/.test(hex) };
  const key = 'ab'.repeat(32);

  it('lowercases the signature and drops a 0x prefix', () => {
    expect(parseKeyProof(key, `0x${'CD'.repeat(64)}`, keyCheck)).toBe('cd'.repeat(64));
    expect(parseKeyProof(key, 'cd'.repeat(64), keyCheck)).toBe('cd'.repeat(64));
  });

  it('refuses a key that is not an Ed25519 public key before looking at the signature', () => {
    expect(errorOf(() => parseKeyProof('AB'.repeat(32), 'nonsense', keyCheck))).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringMatching(/^publicKey must be/) });
  });

  it('refuses a signature that is not 128 hex characters', () => {
    for (const signature of ['cd'.repeat(63), 'cd'.repeat(65), `0x0x${'cd'.repeat(63)}`, 'zz'.repeat(64)]) {
      expect(errorOf(() => parseKeyProof(key, signature, keyCheck))).toMatchObject({ code: 'BAD_REQUEST', message: 'signature must be 128 hex characters' });
    }
  });
});

describe('registrationStatus', () => {
  it.each([
    [5, 'complete'],
    [6, 'complete'],
    [3, 'partial'],
    [4, 'partial'],
    [1, 'pending'],
    [2, 'pending'],
    [0, 'failed'],
  ])('%i of 5 members with threshold 3: %s', (acked, status) => {
    expect(registrationStatus(acked, 5, 3)).toBe(status);
  });
});

describe('mailCooldownError', () => {
  it('is a 429 with whole seconds to wait, at least one', () => {
    expect(mailCooldownError(59_001)).toMatchObject({ code: 'RATE_LIMITED', status: 429, extra: { retryAfterSeconds: 60 } });
    expect(mailCooldownError(1)).toMatchObject({ extra: { retryAfterSeconds: 1 }, message: 'Please wait 1 seconds before requesting another code' });
    expect(mailCooldownError(0)).toMatchObject({ extra: { retryAfterSeconds: 1 } });
  });
});

describe('checkAccountPassword', () => {
  const messages = { notFound: 'Account not found', wrongPassword: 'Invalid credentials' };

  it('returns the account when the password is right and the email verified, after one real check', async () => {
    const crypto = passwordCrypto();
    const found = { id: PRINCIPAL_ID, body: body() };
    await expect(checkAccountPassword(found, 'right', crypto, messages)).resolves.toBe(found);
    expect(crypto.calls).toEqual(['verify']);
  });

  it('an unknown account costs one dummy check, then 404 with the given message', async () => {
    const crypto = passwordCrypto();
    await expect(checkAccountPassword(undefined, 'right', crypto, messages)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'Account not found' });
    expect(crypto.calls).toEqual(['dummy']);
  });

  it('a verified account waiting for a reset costs one dummy check, then PASSWORD_RESET_REQUIRED, even with its old password', async () => {
    const crypto = passwordCrypto();
    await expect(checkAccountPassword({ body: body({ passwordResetRequired: true }) }, 'right', crypto, messages)).rejects.toMatchObject({ code: 'PASSWORD_RESET_REQUIRED', status: 403 });
    expect(crypto.calls).toEqual(['dummy']);
  });

  it('a wrong password is a 401 with the given message, before the verification is looked at', async () => {
    const crypto = passwordCrypto();
    await expect(checkAccountPassword({ body: body({ emailVerified: false }) }, 'wrong', crypto, { notFound: 'x', wrongPassword: 'Invalid password' })).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
      message: 'Invalid password',
    });
  });

  it('the right password of an unverified email is a 403; an unverified record flagged for reset still checks its password', async () => {
    for (const change of [{ emailVerified: false }, { emailVerified: false, passwordResetRequired: true }]) {
      const crypto = passwordCrypto();
      await expect(checkAccountPassword({ body: body(change) }, 'right', crypto, messages)).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'Email not verified' });
      expect(crypto.calls).toEqual(['verify']);
    }
  });
});

describe('contested passwords', () => {
  it('provenRegistration: the counted registration, unless flagged; an uncounted record only while never rewritten', () => {
    expect(provenRegistration(body({ registration: 3 }))).toBe(3);
    expect(provenRegistration(body({ registration: 3, passwordResetRequired: true }))).toBeUndefined();
    expect(provenRegistration(body({ registration: undefined, updatedAt: body().createdAt }))).toBe(0);
    expect(provenRegistration(body({ registration: undefined, updatedAt: NOW }))).toBeUndefined();
  });

  it('passwordContested: a first registration is not; a claim past the first with no record seen is', async () => {
    const crypto = passwordCrypto();
    expect(await passwordContested(undefined, 1, 'right', crypto)).toBe(false);
    expect(await passwordContested(undefined, 2, 'right', crypto)).toBe(true);
    expect(crypto.calls).toEqual([]);
  });

  it('passwordContested: over the registration just before, the same password is not, another is', async () => {
    const crypto = passwordCrypto();
    expect(await passwordContested(body({ registration: 1 }), 2, 'right', crypto)).toBe(false);
    expect(await passwordContested(body({ registration: 1 }), 2, 'other', crypto)).toBe(true);
  });

  it('passwordContested: a gap in the registrations seen, or a contested record before, is contested without a password check', async () => {
    const crypto = passwordCrypto();
    expect(await passwordContested(body({ registration: 1 }), 3, 'right', crypto)).toBe(true);
    expect(await passwordContested(body({ registration: 1, passwordResetRequired: true }), 2, 'right', crypto)).toBe(true);
    expect(crypto.calls).toEqual([]);
  });

  it('verificationRequiresReset: only a code for a registration the record proves keeps the password', () => {
    expect(verificationRequiresReset(body({ registration: 2 }), 2)).toBe(false);
    expect(verificationRequiresReset(body({ registration: 2 }), 1)).toBe(false);
    expect(verificationRequiresReset(body({ registration: 2 }), 3)).toBe(true);
    expect(verificationRequiresReset(body({ registration: 2, passwordResetRequired: true }), 2)).toBe(true);
    // Codes and records from before registrations were counted.
    expect(verificationRequiresReset(body({ registration: undefined, updatedAt: body().createdAt }), undefined)).toBe(false);
    expect(verificationRequiresReset(body({ registration: undefined, updatedAt: NOW }), undefined)).toBe(true);
  });
});
