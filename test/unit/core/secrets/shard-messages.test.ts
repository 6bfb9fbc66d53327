/**
 * The `shard` operations on the wire (src/core/secrets/shard-messages.ts; docs/security.md, Share
 * release and Share recovery): what a coordinator or a recovering member sends is what a member
 * decodes at its edge, and nothing malformed gets past it — refused as `malformed`, by code and
 * reason.
 */
import { describe, expect, it } from 'vitest';
import { parseShardRequest, RECOVER_MAX_ITEMS, shareRecoverRequest, shareReleaseRequest, shareStoreRequest } from '../../../../src/core/secrets/shard-messages.ts';
import { fromBase64 } from '../../../../src/crypto/index.ts';
import { refusalOf } from '../../../utils/refusal.ts';

const box = new Uint8Array([1, 2, 3, 250]);
const request = { data: '-1_7_0xabc_1700000000000_ff', signature: '0x' + '11'.repeat(65) };
const vv = { ['0x' + 'ab'.repeat(20)]: 3 };

async function expectMalformed(body: unknown): Promise<void> {
  expect(await refusalOf(() => parseShardRequest(body)), JSON.stringify(body)).toEqual({ code: 'BAD_REQUEST', reason: 'malformed' });
}

describe('shard store', () => {
  it('a Web2 store carries no chainId; a Web3 store carries its chain; both decode', () => {
    const web2 = shareStoreRequest(-1, 7, box);
    expect(web2).toEqual({ op: 'store', secretId: 7, box: 'AQID+g==' });
    expect(parseShardRequest(web2)).toEqual({ op: 'store', chainId: -1, secretId: 7, box: 'AQID+g==' });
    const web3 = shareStoreRequest(31337, 7, box);
    expect(web3).toEqual({ op: 'store', chainId: 31337, secretId: 7, box: 'AQID+g==' });
    const parsed = parseShardRequest(web3);
    expect(parsed).toEqual({ op: 'store', chainId: 31337, secretId: 7, box: 'AQID+g==' });
    expect(fromBase64((parsed as { box: string }).box)).toEqual(box);
  });

  it('a member refuses a store without a positive integer secretId, a base64 box, or with a chain that is not positive', async () => {
    const ok = shareStoreRequest(-1, 7, box);
    for (const bad of [
      { ...ok, secretId: 0 },
      { ...ok, secretId: 1.5 },
      { ...ok, secretId: '7' },
      { ...ok, secretId: 2 ** 53 },
      { op: 'store', box: ok.box },
      { ...ok, box: 5 },
      { ...ok, box: '' },
      { ...ok, box: 'not base64!' },
      { ...ok, box: 'A'.repeat(2000) },
      { ...ok, chainId: 0 },
      { ...ok, chainId: -2 },
      { ...ok, chainId: 'main' },
    ]) {
      await expectMalformed(bad);
    }
    // A chainId of -1 said explicitly is Web2.
    expect(parseShardRequest({ ...ok, chainId: -1 })).toMatchObject({ chainId: -1 });
  });
});

describe('shard release', () => {
  it('a payload decrypt names its envelope; a file decrypt says it is for a file; both decode, with the version vector', () => {
    const payload = shareReleaseRequest(7, request, { cifer: 'ab', inputFormat: 'hex' }, vv);
    expect(payload).toEqual({ op: 'release', secretId: 7, data: request.data, signature: request.signature, cifer: 'ab', inputFormat: 'hex', vv });
    expect(parseShardRequest(payload)).toEqual({ op: 'release', secretId: 7, request, envelope: { cifer: 'ab', inputFormat: 'hex' }, vv });
    const file = shareReleaseRequest(7, request, { file: true }, vv);
    expect(file).toEqual({ op: 'release', purpose: 'file', secretId: 7, data: request.data, signature: request.signature, vv });
    expect(parseShardRequest(file)).toEqual({ op: 'release', secretId: 7, request, envelope: { file: true }, vv });
  });

  it('malformed version vector entries are dropped, not refused (a dropped entry only costs resends)', () => {
    const body = { ...shareReleaseRequest(7, request, { file: true }, vv), vv: { ...vv, 'node-0': 3, ['0x' + 'cd'.repeat(20)]: -1 } };
    expect(parseShardRequest(body)).toMatchObject({ vv });
    expect(parseShardRequest({ ...body, vv: undefined })).toMatchObject({ vv: {} });
    const { vv: _absent, ...withoutVv } = body;
    expect(parseShardRequest(withoutVv)).toMatchObject({ vv: {} });
  });

  it('a member refuses a release without its string, signature or (for a payload) a well-formed envelope', async () => {
    const payload = shareReleaseRequest(7, request, { cifer: 'ab', inputFormat: 'base64' }, vv);
    const file = shareReleaseRequest(7, request, { file: true }, vv);
    for (const bad of [
      { ...payload, secretId: -7 },
      { ...payload, data: undefined },
      { ...payload, data: '' },
      { ...payload, signature: 1 },
      { ...payload, cifer: undefined },
      { ...payload, cifer: 'ab'.repeat(2000) },
      { ...payload, inputFormat: undefined },
      { ...payload, inputFormat: 'utf8' },
      { ...payload, purpose: 'other' },
      { ...file, secretId: 'seven' },
      { ...file, data: 5 },
    ]) {
      await expectMalformed(bad);
    }
    // A file release needs no envelope.
    expect(parseShardRequest({ ...file, inputFormat: 'hex' })).toMatchObject({ envelope: { file: true } });
  });
});

describe('shard recover', () => {
  it('a recovering member names its secrets (Web3 ones with their chain), the helper set and a round; a helper decodes them', () => {
    const body = shareRecoverRequest([{ chainId: -1, secretId: 7 }, { chainId: 31337, secretId: 8 }], [0, 2, 3], 'round-0001', vv);
    expect(body).toEqual({ op: 'recover', items: [{ secretId: 7 }, { chainId: 31337, secretId: 8 }], helpers: [0, 2, 3], round: 'round-0001', vv });
    expect(parseShardRequest(body)).toEqual({ op: 'recover', items: [{ chainId: -1, secretId: 7 }, { chainId: 31337, secretId: 8 }], helpers: [0, 2, 3], round: 'round-0001', vv });
  });

  it(`a helper refuses a batch of none or more than ${RECOVER_MAX_ITEMS} secrets, a malformed item, round or helper list`, async () => {
    const ok = shareRecoverRequest([{ chainId: -1, secretId: 7 }], [0, 2, 3], 'round-0001', vv);
    for (const bad of [
      { ...ok, items: [] },
      { ...ok, items: Array.from({ length: RECOVER_MAX_ITEMS + 1 }, () => ({ secretId: 1 })) },
      { ...ok, items: [{ secretId: 0 }] },
      { ...ok, items: [{ chainId: 0, secretId: 7 }] },
      { ...ok, items: [null] },
      { ...ok, round: 'short' },
      { ...ok, round: 'round 0001' },
      { ...ok, helpers: [0, 2, 'three'] },
      { ...ok, helpers: [0, 2, -3] },
      { ...ok, helpers: undefined },
    ]) {
      await expectMalformed(bad);
    }
  });
});

describe('any shard call', () => {
  it('an unknown or missing op, or no object at all, is malformed', async () => {
    for (const bad of [{ op: 'delete', secretId: 7 }, { secretId: 7 }, null, 'store', []]) await expectMalformed(bad);
  });
});
