/**
 * A member's single-use rules for share releases (src/core/secrets/shard-handler.ts; docs/security.md,
 * "Single use" and Share release): one key per decrypt string whatever its spelling. How long it is
 * remembered: ./used-strings.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../../src/errors/index.ts';
import { releaseUseKey } from '../../../../src/core/secrets/shard-handler.ts';
import { signedStringKey } from '../../../../src/core/sessions/evidence.ts';
import { CIFER_BYTES, toBase64, toHex } from '../../../../src/crypto/index.ts';

const address = '0xAbCdEf0123456789aBcDeF0123456789AbCdEf01';
const message = new Uint8Array([0xde, 0xad, 0xbe, 0xef]);
const cifer = new Uint8Array(CIFER_BYTES).fill(7);
const caller = (last: string) => ({ parts: ['-1', '7', address, '1700000000000', last], extra: [last] });

describe('release single use', () => {
  it('a payload decrypt is one string whatever the spelling of its message or address', () => {
    const key = releaseUseKey(caller('deadbeef'), { cifer: toHex(cifer), inputFormat: 'hex' });
    expect(key).toBe(signedStringKey('decrypt', ['-1', '7', address.toLowerCase(), '1700000000000', 'deadbeef']));
    expect(releaseUseKey(caller('0xDEADBEEF'), { cifer: toHex(cifer), inputFormat: 'hex' })).toBe(key);
    expect(releaseUseKey(caller(toBase64(message)), { cifer: toBase64(cifer), inputFormat: 'base64' })).toBe(key);
    // Another message is another string.
    expect(releaseUseKey(caller('deadbeee'), { cifer: toHex(cifer), inputFormat: 'hex' })).not.toBe(key);
  });

  it('a payload release names a well-formed envelope for a message in its format', () => {
    const refused = (last: string, envelope: { cifer: string; inputFormat: 'hex' | 'base64' }) => {
      try {
        releaseUseKey(caller(last), envelope);
      } catch (err) {
        expect(err).toBeInstanceOf(AppError);
        return (err as AppError).code + ' ' + (err as AppError).message;
      }
      return 'accepted';
    };
    expect(refused('zz', { cifer: toHex(cifer), inputFormat: 'hex' })).toBe('BAD_REQUEST encryptedMessage is not valid hex');
    expect(refused('deadbeef', { cifer: toHex(cifer.subarray(1)), inputFormat: 'hex' })).toBe('BAD_REQUEST not a decrypt request: cifer is malformed');
    expect(refused('deadbeef', { cifer: '!!', inputFormat: 'base64' })).toBe('BAD_REQUEST cifer is not valid base64');
  });

  it('a file decrypt is its 4-part string, apart from any payload decrypt', () => {
    const parts = ['-1', '7', address, '1700000000000'];
    const key = releaseUseKey({ parts, extra: [] }, { file: true });
    expect(key).toBe(signedStringKey('decrypt-file', parts));
    expect(releaseUseKey({ parts: [...parts.slice(0, 2), address.toLowerCase(), parts[3]!], extra: [] }, { file: true })).toBe(key);
    expect(key).not.toBe(releaseUseKey(caller('deadbeef'), { cifer: toHex(cifer), inputFormat: 'hex' }));
  });
});
