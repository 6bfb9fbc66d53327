/**
 * Strings signed as cifer-sdk's private-key signer signs them (docs/security.md, "Signed strings"):
 * its EIP-191 prefix counts UTF-16 code units, not bytes. A coordinator (the signed-data verifier)
 * and a member (a record's evidence) take such a signature for its own string, Web2 or Web3, and for
 * no other — properties over strings in any script, and over the strings whose prefixed bytes are the
 * same as a signed one's with the length's digits moved across the boundary.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkSignedEvidence } from '../../../../src/core/sessions/evidence.ts';
import { createSignedDataVerifier, signedInSdkForm, WEB2_CHAIN_ID } from '../../../../src/core/sessions/signed-data.ts';
import type { ChainHead } from '../../../../src/core/web3/ports.ts';
import type { StateReader } from '../../../../src/core/replication/ports.ts';
import { addressOfPrivateKey, eip191Digest, recoverPersonalSigner, signDigest, signPersonalMessage, systemRandom, toHex, utf8 } from '../../../../src/crypto/index.ts';
import { evidence, grantedSession, unitCluster } from '../../../utils/evidence.ts';

const key = systemRandom(32);
const address = addressOfPrivateKey(key).toLowerCase();

/** As the client's `PrivateKeySignerAdapter.signMessage` signs: the prefix counts `message.length`. */
const sdkSign = (message: string, k = key) => '0x' + toHex(signDigest(eip191Digest(message, 'utf16'), k));

/** What a coordinator and a member take as the key's signature of a string. */
const accepted = (data: string, signature: string) => recoverPersonalSigner(data, signature) === address || signedInSdkForm(data, signature, address);

/**
 * Every other string whose prefixed bytes, under some length, are the bytes a signature of `m` in
 * either form covers: `prefix ‖ len ‖ m` read with the length's digits split elsewhere — `m` with
 * length digits moved in front of it, or its leading digits taken into the length.
 */
function regroupings(m: string): string[] {
  const out: string[] = [];
  for (const len of new Set([utf8(m).length, m.length])) {
    const digits = String(len);
    for (let j = 1; j < digits.length; j++) out.push(digits.slice(j) + m);
    for (let k = 1; k <= m.length && /\d/.test(m[k - 1]!); k++) out.push(m.slice(k));
  }
  return out;
}

const web2String = (extra: string) => `${WEB2_CHAIN_ID}_7_${address}_${Date.now()}_${extra}`;
const web3String = (chain: number, extra: string) => `${chain}_7_${address}_123456_${extra}`;

describe("cifer-sdk's private-key signatures", () => {
  it('hold for their own string, Web2 or Web3, in either form, and for no other string (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.integer({ min: 1, max: 2 ** 31 }), (a, b, chain) => {
        for (const [data, other] of [
          [web2String(a), web2String(b)],
          [web3String(chain, a), web3String(chain, b)],
        ] as const) {
          for (const signature of [sdkSign(data), signPersonalMessage(data, key)]) {
            expect(accepted(data, signature)).toBe(true);
            if (other !== data) expect(accepted(other, signature)).toBe(false);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('hold for no string that regroups the length digits with the message (property)', () => {
    // Messages of every length class and script, most starting with digits as a Web3 string does.
    const message = fc.tuple(fc.stringMatching(/^\d{0,12}/), fc.string({ unit: 'binary', maxLength: 1200 })).map(([d, rest]) => d + rest);
    fc.assert(
      fc.property(message, (m) => {
        for (const signature of [sdkSign(m), signPersonalMessage(m, key)]) {
          for (const forged of regroupings(m)) if (forged !== m) expect(accepted(forged, signature)).toBe(false);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('differ from the standard form exactly for a string that is not ASCII', () => {
    const ascii = web2String('cafe');
    expect(sdkSign(ascii)).toBe(signPersonalMessage(ascii, key));
    const data = web2String('café');
    expect(recoverPersonalSigner(data, sdkSign(data))).not.toBe(address);
    expect(signedInSdkForm(data, sdkSign(data), address)).toBe(true);
  });

  it('the coordinator takes one for a Web3 string as for a Web2 one: the wallet is the principal', async () => {
    const chain: ChainHead = { chainId: 8453, name: 'Base', freshnessWindow: 300, blockNumber: async () => 1000 };
    const state = { get: async () => undefined } as unknown as StateReader;
    const verifier = createSignedDataVerifier({ state, recoverSigner: recoverPersonalSigner, clock: () => Date.now(), chains: { get: (id) => (id === 8453 ? chain : undefined) } });
    const web3 = `8453_7_${address}_999_café`;
    expect(await verifier.verify({ data: web3, signature: sdkSign(web3) }, { parts: 5, web3: true })).toMatchObject({ signer: address, principalId: address });
    await expect(verifier.verify({ data: web3.replace('café', 'cafe'), signature: sdkSign(web3) }, { parts: 5, web3: true })).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });

  it("a member takes one as a record's evidence for its own string, and not for another", async () => {
    const c = unitCluster();
    const now = Date.now();
    const s = grantedSession(c, '11111111-1111-4111-8111-111111111111', now);
    const data = `${WEB2_CHAIN_ID}_7_${s.wallet.address}_${now}_naïve`;
    const sdkEvidence = { ...evidence(s, data), signature: sdkSign(data, s.wallet.privateKey) };
    expect(await checkSignedEvidence(c.descriptor, sdkEvidence, { parts: 5, atMs: now })).toMatchObject({ principalId: s.session.principalId });
    const other = `${WEB2_CHAIN_ID}_7_${s.wallet.address}_${now}_naive`;
    expect(await checkSignedEvidence(c.descriptor, { ...sdkEvidence, data: other }, { parts: 5, atMs: now })).toBe('evidence: signature is not the session wallet');
  });
});
