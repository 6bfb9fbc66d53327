/**
 * How long a member remembers the decrypt strings it released its share for (docs/security.md, Share
 * release): until the string can no longer pass the freshness check of `src/core/sessions/signed-data.ts`,
 * with one window of margin — a Web2 string by the clock, a Web3 string by its chain's head.
 *
 * - Web2: a timestamp `t` passes while |now − t| ≤ W (W = {@link WEB2_FRESHNESS_MS}), so never once
 *   now > t + W. Kept until t + 2W: the second window is for a clock stepped back.
 * - Web3: a block `b` passes at head `c` while c − w ≤ b ≤ c + 5 (w = the chain's `freshnessWindow`;
 *   the future side may re-read the head, which only raises it). A member's head never moves back
 *   (the chain client keeps the highest it read) and the prune reads it through the same client as
 *   the verifier, so once the prune has read H, every later check sees c ≥ H: `b` can never pass again
 *   once b < H − w. Forgotten once b < H − 2w: the second window is for what the in-memory head does
 *   not cover — a restart (the head is read afresh, and an RPC behind a load balancer may answer from
 *   a node a few blocks back) and a window widened by a lower `blockTimeMs`. Never by the clock: a
 *   chain that stalls, or a head this member cannot read, keeps every mark until the head moves.
 */
import type { Logger } from '../../log/index.ts';
import { WEB2_CHAIN_ID, WEB2_FRESHNESS_MS } from '../sessions/signed-data.ts';
import type { VerifiedCaller } from '../sessions/types.ts';
import type { ChainHeads } from '../web3/ports.ts';
import type { UsedStringExpiry, UsedStringStore } from './ports.ts';

/** When a member may forget a verified release string (see the module's header). */
export function usedStringExpiry(caller: Pick<VerifiedCaller, 'chainId' | 'fresh'>): UsedStringExpiry {
  return caller.chainId === WEB2_CHAIN_ID ? { at: caller.fresh + 2 * WEB2_FRESHNESS_MS } : { chainId: caller.chainId, block: caller.fresh };
}

/** The lowest block a Web3 mark of a chain must keep at head `head`: below it, a string could not pass twice over. */
export function web3KeepFromBlock(head: number, freshnessWindow: number): number {
  return head - 2 * freshnessWindow;
}

/** Dependencies of {@link pruneUsedStrings}. */
export interface UsedStringPruneDeps {
  usedStrings: UsedStringStore;
  /** The enabled chains: their heads (a mark of a chain not listed stays). @default none */
  chains?: ChainHeads;
  clock: () => number;
  logger: Logger;
}

/**
 * Forget the used strings past their horizon: Web2 marks by the clock, each chain's Web3 marks by that
 * chain's head (one cached head read per chain holding marks). A chain that is not enabled, or whose
 * head cannot be read, keeps its marks for this pass. Returns how many were forgotten.
 */
export async function pruneUsedStrings(deps: UsedStringPruneDeps): Promise<number> {
  const { usedStrings, logger: log } = deps;
  const blocksBelow = new Map<number, number>();
  for (const chainId of await usedStrings.chains()) {
    const chain = deps.chains?.get(chainId);
    if (!chain) continue;
    try {
      blocksBelow.set(chainId, web3KeepFromBlock(await chain.blockNumber(), chain.freshnessWindow));
    } catch (err) {
      // The chain client logs its outages; its marks wait for a head.
      log.debug({ chainId, err: (err as Error).message }, 'used strings of a chain kept: its head cannot be read');
    }
  }
  const forgotten = await usedStrings.prune({ now: deps.clock(), blocksBelow });
  if (forgotten > 0) log.info({ forgotten }, 'used strings forgotten');
  return forgotten;
}
