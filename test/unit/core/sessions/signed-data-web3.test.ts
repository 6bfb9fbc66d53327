/**
 * Web3 signed strings in the one verifier (docs/http.md, Signed data strings; docs/web3.md): enabled
 * chains only and only on routes that opt in, block freshness with the exact messages the deployed
 * client matches, a fresh head read before "in the future", case-insensitive signer match, the wallet
 * as the principal. The chain is a stub head here; test/integration covers a real chain.
 */
import { describe, expect, it } from 'vitest';
import { createSignedDataVerifier } from '../../../../src/core/sessions/signed-data.ts';
import type { ChainHead } from '../../../../src/core/web3/ports.ts';
import { addressOfPrivateKey, recoverPersonalSigner, signPersonalMessage, systemRandom, toHex } from '../../../../src/crypto/index.ts';
import type { StateReader } from '../../../../src/core/replication/ports.ts';

const key = systemRandom(32);
const address = addressOfPrivateKey(key).toLowerCase();
const WINDOW = 300;

function setup(head: number, options: { advanceOnFreshRead?: number } = {}) {
  let current = head;
  const reads = { cached: 0, fresh: 0 };
  const chain: ChainHead = {
    chainId: 8453,
    name: 'Base',
    freshnessWindow: WINDOW,
    async blockNumber(opts) {
      if (opts?.fresh) {
        reads.fresh += 1;
        current += options.advanceOnFreshRead ?? 0;
      } else reads.cached += 1;
      return current;
    },
  };
  const state = { get: async () => undefined } as unknown as StateReader;
  const verifier = createSignedDataVerifier({ state, recoverSigner: recoverPersonalSigner, clock: () => Date.now(), chains: { get: (id) => (id === 8453 ? chain : undefined) } });
  return { verifier, reads };
}

function signed(data: string) {
  return { data, signature: signPersonalMessage(data, key) };
}

describe('Web3 signed strings', () => {
  it('a fresh string from the wallet: the wallet is the principal, whatever the case of its address in data', async () => {
    const { verifier } = setup(1000);
    const caller = await verifier.verify(signed(`8453_7_${address.toUpperCase().replace('0X', '0x')}_998`), { parts: 4, web3: true });
    expect(caller).toMatchObject({ chainId: 8453, userType: 'web3', principalId: address, signer: address, subject: '7', fresh: 998 });
    expect(caller.session).toBeUndefined();
  });

  it('a route that does not opt in, or a chain that is not enabled, is "Chain <id> is not supported"', async () => {
    const { verifier } = setup(1000);
    await expect(verifier.verify(signed(`8453_7_${address}_998`), { parts: 4 })).rejects.toThrow('Chain 8453 is not supported');
    await expect(verifier.verify(signed(`1_7_${address}_998`), { parts: 4, web3: true })).rejects.toThrow('Chain 1 is not supported');
  });

  it('too old and in the future, with the exact messages; the head is read again before "in the future"', async () => {
    const { verifier, reads } = setup(1000);
    await expect(verifier.verify(signed(`8453_7_${address}_${1000 - WINDOW - 1}`), { parts: 4, web3: true })).rejects.toThrow(
      `Block number ${1000 - WINDOW - 1} is too old (current: 1000, max window: ${WINDOW})`,
    );
    await verifier.verify(signed(`8453_7_${address}_${1000 - WINDOW}`), { parts: 4, web3: true });
    await verifier.verify(signed(`8453_7_${address}_1005`), { parts: 4, web3: true });
    expect(reads.fresh).toBe(0);
    await expect(verifier.verify(signed(`8453_7_${address}_1006`), { parts: 4, web3: true })).rejects.toThrow('Block number 1006 is in the future (current: 1000)');
    expect(reads.fresh).toBe(1);
  });

  it('a block the cached head has not reached yet passes once a fresh read shows it', async () => {
    const { verifier, reads } = setup(1000, { advanceOnFreshRead: 3 });
    await expect(verifier.verify(signed(`8453_7_${address}_1008`), { parts: 4, web3: true })).resolves.toMatchObject({ fresh: 1008 });
    expect(reads.fresh).toBe(1);
  });

  it('a signature by another wallet is 403; malformed parts cost no head read', async () => {
    const { verifier, reads } = setup(1000);
    const other = toHex(systemRandom(20));
    await expect(verifier.verify(signed(`8453_7_0x${other}_1000`), { parts: 4, web3: true })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const before = reads.cached;
    await expect(verifier.verify({ data: `8453_7_${address}_01000`, signature: '0x00' }, { parts: 4, web3: true })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(verifier.verify({ data: `8453_7_${address}_1000`, signature: 'zz' }, { parts: 4, web3: true })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    expect(reads.cached).toBe(before);
  });
});
