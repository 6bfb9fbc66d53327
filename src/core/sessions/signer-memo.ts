/**
 * EIP-191 signers recovered lately on this node, by signature and string: what a recovery
 * (`recoverPersonalSigner`, inline or on the request crypto thread) gave, so the same string
 * recovered again on this node costs nothing — a decrypt's string is verified by its coordinator and
 * again as a member releasing its own share; a create's string by the coordinator that took it and
 * again when it checks the record's evidence (slot 0 before writing it, another coordinator as it
 * takes the record slot 0 wrote). Only the recovery is remembered, the result of a pure function of
 * the two strings, which are its key: freshness, the session and single use are checked every time.
 * Filled only with this node's own recoveries; public data.
 */
import { createAgeOrderedMap, setWithin } from '../../crypto/index.ts';

/** Strings longer than this are not remembered (a memo entry holds its string). */
export const SIGNER_MEMO_MAX_DATA_CHARS = 8192;
/** Entries remembered; the oldest goes first. Room for two sync pages' strings being checked while HTTP goes on. */
export const SIGNER_MEMO_ENTRIES = 4096;
/** Most strings one {@link signerPrefetch} recovers (the first ones): a larger batch would push its own first strings out before they are checked. */
export const SIGNER_PREFETCH_MAX = SIGNER_MEMO_ENTRIES / 4;

/** A memo of recovered signers. */
export interface SignerMemo {
  /** The signer recovered from `signature` over `data` (undefined: it recovers none), or `null` when not remembered. */
  get(data: string, signature: string): string | undefined | null;
  /** Remember what recovering `signature` over `data` gave. */
  set(data: string, signature: string, signer: string | undefined): void;
}

/** Create a memo of at most `entries` signers. */
export function createSignerMemo(entries = SIGNER_MEMO_ENTRIES): SignerMemo {
  const signers = createAgeOrderedMap<string, { data: string; signer: string | undefined }>();
  return {
    get(data, signature) {
      const hit = signers.get(signature);
      return hit && hit.data === data ? hit.signer : null;
    },
    set(data, signature, signer) {
      if (data.length > SIGNER_MEMO_MAX_DATA_CHARS || entries === 0) return;
      setWithin(signers, signature, { data, signer }, entries);
    },
  };
}

/**
 * Recover, all at once, the signers of those `strings` the memo does not hold, and remember them:
 * what a node's evidence checks then find (src/core/replication/ingest.ts asks before it checks a
 * batch's bodies). `recover` is the request crypto pool's (src/crypto/request-pool.ts): recoveries
 * asked in one turn of the event loop go to its thread as one message under load, and run inline at
 * light load, so a member taking many creates at once does not recover each client's string on its
 * event loop. Strings the memo would not keep, and those past the first {@link SIGNER_PREFETCH_MAX}, are left to the check.
 */
export function signerPrefetch(memo: SignerMemo, recover: (data: string, signature: string) => Promise<string | undefined>): (strings: ReadonlyArray<{ data: string; signature: string }>) => Promise<void> {
  return async (strings) => {
    await Promise.all(
      strings.slice(0, SIGNER_PREFETCH_MAX).map(async ({ data, signature }) => {
        if (data.length > SIGNER_MEMO_MAX_DATA_CHARS || memo.get(data, signature) !== null) return;
        try {
          memo.set(data, signature, await recover(data, signature));
        } catch {
          // A hint: a recovery that fails is the check's to make.
        }
      }),
    );
  };
}
