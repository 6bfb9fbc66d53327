/**
 * The secrets' `shard` operations on the wire (src/core/secrets/shard-messages.ts; docs/security.md,
 * Share release): what a coordinator sends is what a member accepts, and nothing malformed gets past
 * the member's shape check.
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../../src/errors/index.ts';
import { parseShareRelease, parseShareStore, shareReleaseRequest, shareStoreRequest } from '../../../../src/core/secrets/shard-messages.ts';
import { fromBase64 } from '../../../../src/crypto/index.ts';

const box = new Uint8Array([1, 2, 3, 250]);
const request = { data: '-1_7_0xabc_1700000000000_ff', signature: '0x' + '11'.repeat(65) };
const vv = { 'node-0': 3 };

function malformed(run: () => unknown, message: string): void {
  let thrown: unknown;
  try {
    run();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(AppError);
  expect((thrown as AppError).code).toBe('BAD_REQUEST');
  expect((thrown as AppError).message).toBe(message);
}

describe('shard store', () => {
  it('a Web2 store carries no chainId; a Web3 store carries its chain; both parse back', () => {
    const web2 = shareStoreRequest(-1, 7, box);
    expect(web2).toEqual({ op: 'store', secretId: 7, box: 'AQID+g==' });
    expect(parseShareStore(web2)).toEqual({ chainId: -1, secretId: 7, box: 'AQID+g==' });
    const web3 = shareStoreRequest(31337, 7, box);
    expect(web3).toEqual({ op: 'store', chainId: 31337, secretId: 7, box: 'AQID+g==' });
    const parsed = parseShareStore(web3);
    expect(parsed).toEqual({ chainId: 31337, secretId: 7, box: 'AQID+g==' });
    expect(fromBase64(parsed.box)).toEqual(box);
  });

  it('a member refuses a store without a positive secretId, a box, or with a chain that is not positive', () => {
    const ok = shareStoreRequest(-1, 7, box);
    for (const bad of [
      { ...ok, secretId: 0 },
      { ...ok, secretId: 1.5 },
      { ...ok, secretId: 'x' },
      { op: 'store', box: ok.box },
      { ...ok, box: 5 },
      { ...ok, chainId: 0 },
      { ...ok, chainId: -2 },
      { ...ok, chainId: 'main' },
    ]) {
      malformed(() => parseShareStore(bad), 'malformed share store');
    }
    // A chainId of -1 said explicitly is Web2.
    expect(parseShareStore({ ...ok, chainId: -1 }).chainId).toBe(-1);
  });
});

describe('shard release', () => {
  it('a payload decrypt names its envelope; a file decrypt says it is for a file; both parse back', () => {
    const payload = shareReleaseRequest(7, request, { cifer: 'ab', inputFormat: 'hex' }, vv);
    expect(payload).toEqual({ op: 'release', secretId: 7, data: request.data, signature: request.signature, cifer: 'ab', inputFormat: 'hex', vv });
    expect(parseShareRelease(payload)).toEqual({ secretId: 7, request, envelope: { cifer: 'ab', inputFormat: 'hex' }, vv });
    const file = shareReleaseRequest(7, request, { file: true }, vv);
    expect(file).toEqual({ op: 'release', purpose: 'file', secretId: 7, data: request.data, signature: request.signature, vv });
    expect(parseShareRelease(file)).toEqual({ secretId: 7, request, envelope: { file: true }, vv });
  });

  it('a member refuses a release without its string, signature or (for a payload) a well-formed envelope', () => {
    const payload = shareReleaseRequest(7, request, { cifer: 'ab', inputFormat: 'base64' }, vv);
    const file = shareReleaseRequest(7, request, { file: true }, vv);
    for (const bad of [
      { ...payload, secretId: -7 },
      { ...payload, data: undefined },
      { ...payload, signature: 1 },
      { ...payload, cifer: undefined },
      { ...payload, inputFormat: 'utf8' },
      { ...file, secretId: 'seven' },
      { ...file, data: 5 },
    ]) {
      malformed(() => parseShareRelease(bad), 'malformed share release');
    }
    // A file release needs no envelope: cifer and format are not looked at.
    expect(parseShareRelease({ ...file, cifer: 5, inputFormat: 'utf8' }).envelope).toEqual({ file: true });
  });
});
