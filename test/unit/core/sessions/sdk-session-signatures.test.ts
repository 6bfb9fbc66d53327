/**
 * Web2 strings signed as cifer-sdk's session signer signs them (docs/security.md, "Signed strings"):
 * its EIP-191 prefix counts UTF-16 code units, not bytes. A coordinator (the signed-data verifier)
 * and a member (a record's evidence) take such a signature for its own Web2 string, and for no other
 * string — a property over strings in any script — and never for a Web3 string.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkSignedEvidence } from '../../../../src/core/sessions/evidence.ts';
import { createSignedDataVerifier, signedAsSdkSession, WEB2_CHAIN_ID } from '../../../../src/core/sessions/signed-data.ts';
import type { ChainHead } from '../../../../src/core/web3/ports.ts';
import type { StateReader } from '../../../../src/core/replication/ports.ts';
import { addressOfPrivateKey, eip191Digest, recoverPersonalSigner, signDigest, signPersonalMessage, systemRandom, toHex } from '../../../../src/crypto/index.ts';
import { evidence, grantedSession, unitCluster } from '../../../utils/evidence.ts';

const key = systemRandom(32);
const address = addressOfPrivateKey(key).toLowerCase();

/** As the client's `PrivateKeySignerAdapter.signMessage` signs: the prefix counts `message.length`. */
const sdkSign = (message: string, k = key) => '0x' + toHex(signDigest(eip191Digest(message, 'utf16'), k));

/** What a coordinator and a member take as the wallet's signature of a Web2 string. */
const accepted = (data: string, signature: string) => recoverPersonalSigner(data, signature) === address || signedAsSdkSession(data, signature, address);

const web2String = (extra: string) => `${WEB2_CHAIN_ID}_7_${address}_${Date.now()}_${extra}`;

describe("cifer-sdk's session signatures", () => {
  it('hold for their own Web2 string in either form, and for no other (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), (a, b) => {
        const data = web2String(a);
        const other = web2String(b);
        for (const signature of [sdkSign(data), signPersonalMessage(data, key)]) {
          expect(accepted(data, signature)).toBe(true);
          if (other !== data) expect(accepted(other, signature)).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('differ from the standard form exactly for a string that is not ASCII', () => {
    expect(sdkSign(web2String('cafe'))).toBe(signPersonalMessage(web2String('cafe'), key));
    const data = web2String('café');
    expect(recoverPersonalSigner(data, sdkSign(data))).not.toBe(address);
    expect(signedAsSdkSession(data, sdkSign(data), address)).toBe(true);
  });

  it('the coordinator takes one for a Web2 string only: a Web3 string in that form is 403', async () => {
    const chain: ChainHead = { chainId: 8453, name: 'Base', freshnessWindow: 300, blockNumber: async () => 1000 };
    const state = { get: async () => undefined } as unknown as StateReader;
    const verifier = createSignedDataVerifier({ state, recoverSigner: recoverPersonalSigner, clock: () => Date.now(), chains: { get: (id) => (id === 8453 ? chain : undefined) } });
    const web3 = `8453_7_${address}_999_café`;
    await expect(verifier.verify({ data: web3, signature: sdkSign(web3) }, { parts: 5, web3: true })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await verifier.verify({ data: web3, signature: signPersonalMessage(web3, key) }, { parts: 5, web3: true })).toMatchObject({ signer: address });
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
