/**
 * How long a member remembers a decrypt string it released for (src/core/secrets/used-strings.ts;
 * docs/security.md, Share release): a Web2 string by the clock, a Web3 string by its chain's head and
 * never by the clock. The head is a stub the test moves (or stalls, or breaks); the verifier that
 * judges the string's freshness reads the same head, and the marks sit in a real store.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { pruneUsedStrings, usedStringExpiry } from '../../../../src/core/secrets/used-strings.ts';
import { createSignedDataVerifier, WEB2_FRESHNESS_MS } from '../../../../src/core/sessions/signed-data.ts';
import type { StateReader } from '../../../../src/core/replication/ports.ts';
import type { ChainHead, ChainHeads } from '../../../../src/core/web3/ports.ts';
import { addressOfPrivateKey, recoverPersonalSigner, signPersonalMessage, systemRandom } from '../../../../src/crypto/index.ts';
import { AppError } from '../../../../src/errors/index.ts';
import { openStore } from '../../../../src/store/index.ts';
import { captureLogger } from '../../../utils/log.ts';
import { cleanupStack, tempDir } from '../../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const CHAIN_ID = 8453;
const WINDOW = 300;
const MINUTE_MS = 60_000;
const wallet = systemRandom(32);
const address = addressOfPrivateKey(wallet).toLowerCase();
/** The coordinator a string is released to first, and another: the one its mark refuses. */
const HOLDER = '0x00000000000000000000000000000000000000c0';
const OTHER = '0x00000000000000000000000000000000000000c1';

/** A member's parts: its store, one chain whose head the test sets, the verifier on that head, its clock. */
async function member() {
  const store = await openStore({ location: await tempDir(stack) });
  stack.push(() => store.close());
  const head = { value: 1000, down: false };
  const chain: ChainHead = {
    chainId: CHAIN_ID,
    name: 'Base',
    freshnessWindow: WINDOW,
    async blockNumber() {
      if (head.down) throw new AppError('CHAIN_UNAVAILABLE', `Chain ${CHAIN_ID} (Base) RPC is unavailable: connection refused`, { chainId: CHAIN_ID });
      return head.value;
    },
  };
  const chains: ChainHeads = { get: (id) => (id === CHAIN_ID ? chain : undefined) };
  const clock = { now: 1_700_000_000_000 };
  const verifier = createSignedDataVerifier({ state: { get: async () => undefined } as unknown as StateReader, recoverSigner: recoverPersonalSigner, clock: () => clock.now, chains });
  const log = captureLogger();
  const prune = (withChains: ChainHeads | undefined = chains) => pruneUsedStrings({ usedStrings: store.usedStrings, chains: withChains, clock: () => clock.now, logger: log.logger });
  const dataAt = (block: number) => `${CHAIN_ID}_7_${address}_${block}`;
  /** A decrypt string at `block`, verified as a member verifies it, then marked used by `holder`. */
  const use = async (block: number, holder = HOLDER) => {
    const data = dataAt(block);
    const caller = await verifier.verify({ data, signature: signPersonalMessage(data, wallet) }, { parts: 4, web3: true });
    return store.usedStrings.use(data, holder, usedStringExpiry(caller));
  };
  /** Whether the string at `block` is still marked, fresh or not: another coordinator is refused it (a miss marks it). */
  const marked = async (block: number) => !(await store.usedStrings.use(dataAt(block), OTHER, { chainId: CHAIN_ID, block }));
  /** The error code the verifier answers the string at `block` with now, or `passes`. */
  const verdict = async (block: number) => {
    const data = dataAt(block);
    return verifier.verify({ data, signature: signPersonalMessage(data, wallet) }, { parts: 4, web3: true }).then(
      () => 'passes',
      (err: unknown) => (err as AppError).code,
    );
  };
  return { store, head, clock, prune, use, marked, verdict, log };
}

describe('used strings: Web2 by the clock, Web3 by the head', () => {
  it('a stalled head keeps a Web3 mark past 20 minutes of clock, and a year; the Web2 mark beside it goes by the clock', async () => {
    const m = await member();
    expect(await m.use(1000)).toBe(true);
    const web2 = 'w'.repeat(64);
    expect(await m.store.usedStrings.use(web2, HOLDER, usedStringExpiry({ chainId: -1, fresh: m.clock.now }))).toBe(true);

    m.clock.now += 2 * WEB2_FRESHNESS_MS; // 20 minutes: the old rule forgot the Web3 string here.
    expect(await m.prune()).toBe(1);
    m.clock.now += 365 * 24 * 60 * MINUTE_MS;
    expect(await m.prune()).toBe(0);
    // The chain did not move: the string is as fresh as when it was used, and still its holder's.
    expect(await m.verdict(1000)).toBe('passes');
    expect(await m.use(1000, OTHER)).toBe(false);
    expect(await m.use(1000)).toBe(true);
    expect(await m.store.usedStrings.use(web2, OTHER, { at: 0 })).toBe(true);
  });

  it('an advancing head forgets a Web3 mark only a full window after the string stopped passing', async () => {
    const m = await member();
    const block = 1000;
    expect(await m.use(block)).toBe(true);
    // Kept while the string passes (head ≤ block + window) and for one more window after.
    for (const [head, verdict] of [
      [block + WINDOW, 'passes'],
      [block + WINDOW + 1, 'BAD_REQUEST'],
      [block + 2 * WINDOW, 'BAD_REQUEST'],
    ] as const) {
      m.head.value = head;
      expect(await m.prune(), `head ${head}`).toBe(0);
      expect(await m.verdict(block), `head ${head}`).toBe(verdict);
      expect(await m.marked(block), `head ${head}`).toBe(true);
    }
    // One block later it goes, and could not pass again: the head never moves back.
    m.head.value = block + 2 * WINDOW + 1;
    expect(await m.prune()).toBe(1);
    expect(await m.verdict(block)).toBe('BAD_REQUEST');
    expect(await m.marked(block)).toBe(false);
    expect(m.log.lines().find((l) => l.msg === 'used strings forgotten')).toMatchObject({ forgotten: 1 });
  });

  it('only the marks the head has left behind go: a newer one on the same chain stays', async () => {
    const m = await member();
    expect(await m.use(m.head.value - WINDOW)).toBe(true);
    expect(await m.use(m.head.value + 5)).toBe(true);
    m.head.value += WINDOW + 5;
    expect(await m.prune()).toBe(1);
    expect(await m.use(m.head.value - WINDOW, OTHER)).toBe(false);
  });

  it('a head that cannot be read, or a chain no longer enabled, keeps its marks whatever the clock', async () => {
    const m = await member();
    expect(await m.use(1000)).toBe(true);
    m.head.value = 1000 + 10 * WINDOW;
    m.clock.now += 60 * MINUTE_MS;
    m.head.down = true;
    expect(await m.prune()).toBe(0);
    expect(await m.prune({ get: () => undefined })).toBe(0);
    // Once the head is read again, the mark goes.
    m.head.down = false;
    expect(await m.prune()).toBe(1);
  });
});
