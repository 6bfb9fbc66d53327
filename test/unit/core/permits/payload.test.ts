/**
 * The rules of a permit request's own text (docs/permits.md, "POST /web2/permit — request", "The
 * legacy form"): the payload of each action, the current and legacy forms, the derived requestId.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { currentForm, legacyRequestId, parsePayload, summaryOf } from '../../../../src/core/permits/payload.ts';
import { UUID_V4_RE } from '../../../../src/core/permits/records.ts';
import type { PermitRequestInput } from '../../../../src/core/permits/types.ts';

const KEY = 'ab'.repeat(32);
const isKey = (hex: string) => hex === KEY;
const target = randomUUID();

/** `run` throws a 400 with `message`. */
function rejects(run: () => unknown, message: string | RegExp) {
  let thrown: unknown;
  try {
    run();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toMatchObject({ code: 'BAD_REQUEST', message: typeof message === 'string' ? message : expect.stringMatching(message) });
}

describe('parsePayload', () => {
  it('returns the one value of each action', () => {
    expect(parsePayload('rotate', `{"newPublicKey":"${KEY}"}`, isKey)).toBe(KEY);
    expect(parsePayload('transfer', `{"newOwnerPrincipalId":"${target}"}`, isKey)).toBe(target);
    expect(parsePayload('delegate', `{"delegatePrincipalId":"${target}"}`, isKey)).toBe(target);
    expect(parsePayload('delegate', '{"delegatePrincipalId":null}', isKey)).toBeNull();
  });

  it('refuses text that is not one compact JSON object', () => {
    rejects(() => parsePayload('delegate', '{"delegatePrincipalId":', isKey), 'payload must be JSON text');
    rejects(() => parsePayload('delegate', '[null]', isKey), 'payload must be a JSON object');
    rejects(() => parsePayload('delegate', 'null', isKey), 'payload must be a JSON object');
    rejects(() => parsePayload('delegate', '{ "delegatePrincipalId": null }', isKey), /must be compact JSON/);
    rejects(() => parsePayload('rotate', `{"newPublicKey":"${'a'.repeat(4200)}"}`, () => true), 'payload is too long');
  });

  it('wants exactly the action’s key', () => {
    rejects(() => parsePayload('transfer', `{"delegatePrincipalId":"${target}"}`, isKey), 'payload must have exactly one key, "newOwnerPrincipalId", for action transfer');
    rejects(() => parsePayload('delegate', `{"delegatePrincipalId":null,"x":1}`, isKey), /exactly one key, "delegatePrincipalId"/);
    rejects(() => parsePayload('rotate', '{}', isKey), /exactly one key, "newPublicKey"/);
  });

  it('rotate: an Ed25519 key, as the injected check says', () => {
    for (const value of ['""', '"cd"', '1', 'null', `"${'cd'.repeat(32)}"`]) {
      rejects(() => parsePayload('rotate', `{"newPublicKey":${value}}`, isKey), 'newPublicKey must be an Ed25519 public key: 64 lowercase hex characters');
    }
  });

  it('transfer and delegate: a principal id; null removes a delegate only', () => {
    rejects(() => parsePayload('transfer', '{"newOwnerPrincipalId":null}', isKey), 'newOwnerPrincipalId must be a principal id');
    rejects(() => parsePayload('transfer', `{"newOwnerPrincipalId":"${target.toUpperCase()}"}`, isKey), 'newOwnerPrincipalId must be a principal id');
    rejects(() => parsePayload('delegate', '{"delegatePrincipalId":42}', isKey), 'delegatePrincipalId must be a principal id or null');
  });
});

describe('currentForm', () => {
  const requestId = randomUUID();
  const legacyData = `-1_7_0x${'12'.repeat(20)}_${Date.now()}`;
  const legacy: PermitRequestInput = { action: 'delegate', payload: { delegatePrincipalId: null }, data: legacyData, signature: '0xsig' };

  it('the current form passes as it is', () => {
    const input: PermitRequestInput = { requestId, action: 'rotate', payload: `{"newPublicKey":"${KEY}"}`, email: 'a@b.c', password: 'pw' };
    expect(currentForm(input, false)).toEqual({ ...input, legacy: false });
    expect(currentForm(input, true)).toEqual({ ...input, legacy: false });
  });

  it('needs a requestId and the payload as text', () => {
    rejects(() => currentForm({ action: 'rotate', payload: '{}' }, true), 'requestId is required');
    rejects(() => currentForm({ requestId, action: 'delegate', payload: { delegatePrincipalId: null } }, true), 'payload must be the compact JSON text (a string), not an object');
  });

  it('takes the legacy form only when accepted, for transfer and delegate with 4-part data', () => {
    rejects(() => currentForm(legacy, false), 'requestId is required');
    const upgraded = currentForm(legacy, true);
    expect(upgraded).toMatchObject({ legacy: true, payload: '{"delegatePrincipalId":null}', requestId: legacyRequestId(legacyData, '0xsig') });
    rejects(() => currentForm({ ...legacy, action: 'rotate' }, true), 'requestId is required');
    rejects(() => currentForm({ ...legacy, data: `${legacyData}_permit` }, true), 'requestId is required');
    rejects(() => currentForm({ ...legacy, signature: undefined }, true), 'requestId is required');
    // A legacy payload already sent as text stays as it is.
    expect(currentForm({ ...legacy, payload: '{"delegatePrincipalId":null}' }, true).payload).toBe('{"delegatePrincipalId":null}');
  });
});

describe('legacyRequestId', () => {
  it('is a lowercase UUIDv4 drawn from the data and its signature', () => {
    const id = legacyRequestId('-1_7_0xabc_1', '0xsig');
    expect(id).toMatch(UUID_V4_RE);
    expect(legacyRequestId('-1_7_0xabc_1', '0xsig')).toBe(id);
    expect(legacyRequestId('-1_7_0xabc_1', '0xsig2')).not.toBe(id);
    expect(legacyRequestId('-1_7_0xabc_2', '0xsig')).not.toBe(id);
    for (let i = 0; i < 50; i++) expect(legacyRequestId(`-1_${i}_0xabc_1`, '0xsig')).toMatch(UUID_V4_RE);
  });
});

describe('summaryOf', () => {
  it('describes the change in one line, with only the start of a key', () => {
    expect(summaryOf('rotate', 0, KEY)).toBe(`New Ed25519 key ${KEY.slice(0, 16)}…`);
    expect(summaryOf('transfer', 7, target)).toBe(`Secret 7: new owner principal ${target}`);
    expect(summaryOf('delegate', 7, target)).toBe(`Secret 7: delegate principal ${target}`);
    expect(summaryOf('delegate', 7, null)).toBe('Secret 7: remove the delegate');
  });
});
