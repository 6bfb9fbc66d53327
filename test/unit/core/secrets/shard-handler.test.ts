/**
 * A member's `shard` rules (src/core/secrets/shard-handler.ts; docs/security.md, Share release and
 * "Single use"): a release needs a decrypt's shape — a "remove delegate" string never has one — and
 * has one key per decrypt string whatever its spelling. Refusals are told apart by code and reason.
 */
import { describe, expect, it } from 'vitest';
import { releaseUseKey, usedStringForgetAt } from '../../../../src/core/secrets/shard-handler.ts';
import type { DecryptEnvelope } from '../../../../src/core/secrets/shard-messages.ts';
import { signedStringKey } from '../../../../src/core/sessions/evidence.ts';
import { WEB2_FRESHNESS_MS } from '../../../../src/core/sessions/signed-data.ts';
import { CIFER_BYTES, toBase64, toHex } from '../../../../src/crypto/index.ts';
import { refusalOf } from '../../../utils/refusal.ts';

const address = '0xAbCdEf0123456789aBcDeF0123456789AbCdEf01';
const message = new Uint8Array([0xde, 0xad, 0xbe, 0xef]);
const cifer = new Uint8Array(CIFER_BYTES).fill(7);
const TS = '1700000000000';
const data = (last: string) => `-1_7_${address}_${TS}_${last}`;
const hexEnvelope: DecryptEnvelope = { cifer: toHex(cifer), inputFormat: 'hex' };
const base64Envelope: DecryptEnvelope = { cifer: toBase64(cifer), inputFormat: 'base64' };

describe('release single use', () => {
  it('a payload decrypt is one string whatever the spelling of its message or address', () => {
    const key = releaseUseKey(data('deadbeef'), hexEnvelope);
    expect(key).toBe(signedStringKey('decrypt', ['-1', '7', address.toLowerCase(), TS, 'deadbeef']));
    expect(releaseUseKey(data('0xDEADBEEF'), hexEnvelope)).toBe(key);
    expect(releaseUseKey(data(toBase64(message)), base64Envelope)).toBe(key);
    // Another message is another string.
    expect(releaseUseKey(data('deadbeee'), hexEnvelope)).not.toBe(key);
  });

  it('a file decrypt is its 4-part string, apart from any payload decrypt', () => {
    const parts = ['-1', '7', address, TS];
    const key = releaseUseKey(parts.join('_'), { file: true });
    expect(key).toBe(signedStringKey('decrypt-file', parts));
    expect(releaseUseKey(['-1', '7', address.toLowerCase(), TS].join('_'), { file: true })).toBe(key);
    expect(key).not.toBe(releaseUseKey(data('deadbeef'), hexEnvelope));
  });

  it('a used string is remembered for twice the freshness window: from its timestamp (Web2) or from now (Web3)', () => {
    expect(usedStringForgetAt({ chainId: -1, fresh: 1_000 }, 50_000)).toBe(1_000 + 2 * WEB2_FRESHNESS_MS);
    // A Web3 string's freshness part is a block number, not a time.
    expect(usedStringForgetAt({ chainId: 31337, fresh: 1_000 }, 50_000)).toBe(50_000 + 2 * WEB2_FRESHNESS_MS);
  });
});

describe("a release needs a decrypt's shape", () => {
  const notADecrypt = { code: 'BAD_REQUEST', reason: 'not_a_decrypt' };
  const shapeOf = (signed: string, envelope: DecryptEnvelope) => refusalOf(() => releaseUseKey(signed, envelope));

  it('the owner\'s "remove delegate" setDelegate string (empty last part) releases nothing, in either format', async () => {
    expect(await shapeOf(data(''), hexEnvelope)).toEqual(notADecrypt);
    expect(await shapeOf(data(''), base64Envelope)).toEqual(notADecrypt);
    // `0x` alone is empty hex.
    expect(await shapeOf(data('0x'), hexEnvelope)).toEqual(notADecrypt);
  });

  it('a setDelegate string naming a delegate (a principal id) is neither hex nor base64', async () => {
    const delegate = '0b5d6c1e-2f3a-4b4c-8d5e-6f7a8b9c0d1e';
    expect(await shapeOf(data(delegate), hexEnvelope)).toEqual(notADecrypt);
    expect(await shapeOf(data(delegate), base64Envelope)).toEqual(notADecrypt);
  });

  it('a message that does not decode, a malformed or short cifer, the wrong part count: not a decrypt', async () => {
    expect(await shapeOf(data('zz'), hexEnvelope)).toEqual(notADecrypt);
    expect(await shapeOf(data('deadbeef'), { cifer: toHex(cifer.subarray(1)), inputFormat: 'hex' })).toEqual(notADecrypt);
    expect(await shapeOf(data('deadbeef'), { cifer: '!!', inputFormat: 'base64' })).toEqual(notADecrypt);
    expect(await shapeOf(`-1_7_${address}_${TS}`, hexEnvelope)).toEqual(notADecrypt);
    expect(await shapeOf(data('dead_beef'), hexEnvelope)).toEqual(notADecrypt);
    expect(await shapeOf(data('deadbeef'), { file: true })).toEqual(notADecrypt);
  });

  it('one byte of message is enough (the encrypt route\'s own minimum)', async () => {
    expect(await shapeOf(data('00'), hexEnvelope)).toBe('accepted');
    expect(await shapeOf(data('AA=='), base64Envelope)).toBe('accepted');
  });
});
