/**
 * A Web3 secret's record key (src/core/web3/records.ts): `web3SecretKey` and `parseWeb3SecretKey`
 * are inverses, and a string that is not such a key parses to nothing — the share inventory names
 * every Web3 secret from its key alone.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MAX_WEB3_SECRET_ID, parseWeb3SecretKey, web3SecretKey } from '../../../../src/core/web3/records.ts';

describe('a Web3 secret key', () => {
  it('parses back to the chain id and secret id it was made of', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), fc.integer({ min: 1, max: MAX_WEB3_SECRET_ID }), (chainId, secretId) => {
        expect(parseWeb3SecretKey(web3SecretKey(chainId, secretId))).toEqual({ chainId, secretId });
      }),
    );
  });

  it('refuses what no secret is keyed by', () => {
    for (const key of ['', '1', '1:1', '1:0000000000000001', '0:000000000000001', '1:000000000000000', '01:000000000000001', '-1:000000000000001', '1:00000000000000a', ' 1:000000000000001', '1:000000000000001\n', '9007199254740993:000000000000001', '12345678901234567:000000000000001']) {
      expect(parseWeb3SecretKey(key), key).toBeUndefined();
    }
  });
});
