/**
 * Who may ask for a permit, and who may be named in one (docs/permits.md, "Authorization"), with the
 * accounts service, the signed-data verifier and the replica stubbed through deps.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { authorizePermit, type PermitAuthorizeDeps } from '../../../../src/core/permits/authorize.ts';
import type { CurrentRequest } from '../../../../src/core/permits/payload.ts';
import type { PermitActionName } from '../../../../src/core/permits/records.ts';
import type { SignedDataShape, VerifiedCaller } from '../../../../src/core/sessions/types.ts';
import { AppError } from '../../../../src/errors/index.ts';
import { grantedSession, unitCluster } from '../../../utils/evidence.ts';
import { NOW, ids, principal, replica, secret } from './fixtures.ts';

const { owner, verified, unverified, deleted, stranger, requestId } = ids('owner', 'verified', 'unverified', 'deleted', 'stranger', 'requestId');
const DIGEST = 'ef'.repeat(32);
const session = grantedSession(unitCluster(), owner, NOW).session;

const state = replica(
  { [owner]: principal(), [verified]: principal(), [unverified]: principal({ emailVerified: false }), [deleted]: principal({ status: 'deleted' }) },
  [secret(7, owner), secret(8, stranger)],
);

/** Deps whose verifier resolves `data` to the session's principal and records the shape it was asked for. */
function deps(options: { caller?: Partial<VerifiedCaller>; credentials?: () => Promise<{ valid: true; principalId: string }> } = {}) {
  const shapes: SignedDataShape[] = [];
  const d: PermitAuthorizeDeps = {
    ...state,
    accounts: { verifyCredentials: options.credentials ?? (async () => ({ valid: true, principalId: owner })) },
    verifier: {
      async verify(request, shape) {
        shapes.push(shape);
        const parts = request.data.split('_');
        return { chainId: -1, userType: 'web2', subject: parts[1]!, signer: parts[2]!, fresh: Number(parts[3]), extra: parts.slice(4), principalId: owner, parts, sessionRecord: session, ...options.caller };
      },
    },
  };
  return { d, shapes };
}

/** A transfer or delegate request in the current form, signed for `secretId`. */
function ownerRequest(action: PermitActionName, secretId = 7, extra: string[] = ['permit', requestId, action, DIGEST]): CurrentRequest {
  const data = ['-1', secretId, '0x' + '12'.repeat(20), NOW, ...extra].join('_');
  return { requestId, action, payload: '{}', data, signature: 'AB'.repeat(65), legacy: false };
}

const authorize = (input: CurrentRequest, target: string | null, d = deps().d) => authorizePermit(input, input.action as PermitActionName, DIGEST, target, d);

describe('authorizePermit: rotate', () => {
  const rotate: CurrentRequest = { requestId, action: 'rotate', payload: '{}', email: 'a@example.com', password: 'pw', legacy: false };

  it('acts as the account whose credentials are given, on secret 0, with no signed string', async () => {
    expect(await authorize(rotate, null)).toEqual({ principalId: owner, secretId: 0, auth: null });
  });

  it('needs email and password', async () => {
    await expect(authorize({ ...rotate, password: undefined }, null)).rejects.toMatchObject({ code: 'BAD_REQUEST', message: 'email and password are required for rotate' });
  });

  it('answers every credentials failure as 403 Invalid credentials, but a required reset as itself', async () => {
    for (const code of ['UNAUTHORIZED', 'NOT_FOUND', 'FORBIDDEN'] as const) {
      const { d } = deps({ credentials: () => Promise.reject(new AppError(code, 'whatever')) });
      await expect(authorize(rotate, null, d)).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'Invalid credentials' });
    }
    const { d } = deps({ credentials: () => Promise.reject(new AppError('PASSWORD_RESET_REQUIRED', 'reset')) });
    await expect(authorize(rotate, null, d)).rejects.toMatchObject({ code: 'PASSWORD_RESET_REQUIRED' });
  });
});

describe('authorizePermit: transfer and delegate', () => {
  it('acts as the session’s principal on the secret its string names, and carries the string', async () => {
    const input = ownerRequest('transfer');
    const { d, shapes } = deps();
    expect(await authorize(input, verified, d)).toEqual({ principalId: owner, secretId: 7, auth: { data: input.data, signature: '0x' + 'ab'.repeat(65), session } });
    expect(shapes).toEqual([{ parts: 8 }]);
  });

  it('needs data and signature', async () => {
    await expect(authorize({ ...ownerRequest('delegate'), signature: undefined }, null)).rejects.toMatchObject({ code: 'BAD_REQUEST', message: 'data and signature are required for delegate' });
  });

  it('the string must name this request: the word permit, its requestId, action and digest', async () => {
    const cases: Array<[string[], string]> = [
      [['permits', requestId, 'transfer', DIGEST], 'Invalid data format: the 5th part must be "permit"'],
      [['permit', randomUUID(), 'transfer', DIGEST], 'The requestId in data does not match the body'],
      [['permit', requestId, 'delegate', DIGEST], 'The action in data does not match the body'],
      [['permit', requestId, 'transfer', 'ee'.repeat(32)], 'The payload digest in data does not match the payload'],
    ];
    for (const [extra, message] of cases) {
      await expect(authorize(ownerRequest('transfer', 7, extra), verified)).rejects.toMatchObject({ code: 'BAD_REQUEST', message });
    }
  });

  it('the legacy form is verified as 4 parts, without the request parts', async () => {
    const { d, shapes } = deps();
    const legacy = { ...ownerRequest('delegate', 7, []), legacy: true };
    expect(await authorize(legacy, null, d)).toMatchObject({ principalId: owner, secretId: 7 });
    expect(shapes).toEqual([{ parts: 4 }]);
  });

  it('only the owner of a known secret may ask', async () => {
    await expect(authorize(ownerRequest('delegate', 9), null)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'Secret 9 not found' });
    await expect(authorize(ownerRequest('delegate', 8), null)).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'Only the owner may request this change' });
    await expect(authorize(ownerRequest('delegate', 0), null)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });

  it('the target: not the owner, and an active principal with a verified email; null names none', async () => {
    await expect(authorize(ownerRequest('transfer'), owner)).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'The owner cannot be named new owner' });
    await expect(authorize(ownerRequest('delegate'), owner)).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'The owner cannot be named delegate' });
    for (const target of [unverified, deleted, randomUUID()]) {
      await expect(authorize(ownerRequest('delegate'), target)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'Target principal not found' });
    }
    expect(await authorize(ownerRequest('delegate'), verified)).toMatchObject({ principalId: owner, secretId: 7 });
    expect(await authorize(ownerRequest('delegate'), null)).toMatchObject({ principalId: owner, secretId: 7 });
  });
});
