/**
 * The budget of uploads whose sender is not verified yet (docs/http.md, Files and jobs, "Unverified
 * uploads"). The deployed client sends the file before the signed fields, so its bytes reach the
 * spool before anyone knows who sent them: they are held here — at most `perAddressBytes` per source
 * address, `totalBytes` in all — and not in the disk budget of verified uploads and results
 * (./registry.ts), so forged uploads can fill this budget and no more. Once the signature checks out
 * the upload's hold is released and its spool joins the disk budget.
 *
 * Pure accounting (no I/O): a spool asks its hold before each write reaches disk (./spool.ts,
 * `admit`), and a refused write fails the upload with a JSON error (./rules.ts, unverifiedRefusal).
 */
import type { Logger } from '../../log/index.ts';
import { unverifiedRefusal, type UnverifiedAllowances } from './rules.ts';
import type { FileJobMetrics, UnverifiedLimit } from './types.ts';

/**
 * Addresses kept while they hold nothing, before every idle one is forgotten at once: an address that
 * uploads again finds its entry, and the table does not gain and lose an entry with every upload
 * (CONTRIBUTING.md, Anti-patterns).
 */
export const IDLE_ADDRESSES_KEPT = 1024;

/** Options of {@link createUploadBudget}: the allowances (`files.maxUnverifiedBytesPerAddress`, `files.maxUnverifiedBytes`, defaults applied). */
export type UploadBudgetOptions = UnverifiedAllowances;

/** Dependencies of {@link createUploadBudget}. */
export interface UploadBudgetDeps {
  /** The files module's logger: a refusal is one line. */
  logger: Logger;
  /** The budget in use and its refusals; none when absent. */
  metrics?: Pick<FileJobMetrics, 'unverifiedBytes' | 'unverifiedRefusals'> | undefined;
}

/** One upload's hold on the budget, from its file part's start until its sender is verified or it ends. */
export interface UnverifiedHold {
  /** Bytes held: what the upload wrote, or its declared length while that is more. 0 once released. */
  readonly heldBytes: number;
  /**
   * Count `bytes` more written, before they reach disk. Throws the refusal (413, 429 or 503 AppError)
   * and takes nothing when an allowance cannot hold them. Free once released.
   */
  take(bytes: number): void;
  /** Give every byte back: the sender was verified (its spool joins the disk budget), or the upload ended. Idempotent. */
  release(): void;
}

/** The unverified budget of one coordinator. */
export interface UploadBudget {
  /**
   * A hold for an upload from `address` (keyed as the HTTP layer keys it) that declared
   * `expectedBytes` (its Content-Length): that much, up to the per-address allowance, is reserved at
   * once, so a started upload is not cut by uploads that begin after it. Throws the refusal when the
   * reservation does not fit, or when nothing at all is left to the address or in all.
   */
  hold(address: string, expectedBytes?: number): UnverifiedHold;
  /** Bytes held in all. */
  heldBytes(): number;
  /** Bytes held by `address`'s uploads. */
  heldBytesOf(address: string): number;
}

interface AddressEntry {
  /** Bytes its holds hold. */
  held: number;
  /** Holds not yet released. */
  holds: number;
}

/** Create the unverified budget of a files service. */
export function createUploadBudget(options: UploadBudgetOptions, deps: UploadBudgetDeps): UploadBudget {
  const { perAddressBytes, totalBytes } = options;
  if (!Number.isSafeInteger(perAddressBytes) || perAddressBytes < 1 || !Number.isSafeInteger(totalBytes) || totalBytes < 1) {
    throw new RangeError('upload budget: perAddressBytes and totalBytes must be positive integers');
  }
  const { logger: log, metrics } = deps;
  const byAddress = new Map<string, AddressEntry>();
  let total = 0;

  function entryOf(address: string): AddressEntry {
    let entry = byAddress.get(address);
    if (entry === undefined) {
      if (byAddress.size >= IDLE_ADDRESSES_KEPT) {
        for (const [key, idle] of byAddress) if (idle.holds === 0) byAddress.delete(key);
      }
      entry = { held: 0, holds: 0 };
      byAddress.set(address, entry);
    }
    return entry;
  }

  /** The allowance that `more` bytes on top of an upload's `own`, from `entry`'s address, would overflow. */
  function overflow(entry: AddressEntry, own: number, more: number): UnverifiedLimit | undefined {
    if (own + more > perAddressBytes) return 'upload';
    if (entry.held + more > perAddressBytes) return 'address';
    if (total + more > totalBytes) return 'total';
    return undefined;
  }

  function refuse(limit: UnverifiedLimit, address: string, entry: AddressEntry, own: number): never {
    metrics?.unverifiedRefusals.inc({ limit });
    const limitBytes = limit === 'total' ? totalBytes : perAddressBytes;
    log.info({ limit, address, uploadBytes: own, addressBytes: entry.held, totalBytes: total, limitBytes }, 'unverified upload refused');
    throw unverifiedRefusal(limit, limitBytes);
  }

  function add(entry: AddressEntry, bytes: number): void {
    entry.held += bytes;
    total += bytes;
    metrics?.unverifiedBytes.set(total);
  }

  return {
    hold(address, expectedBytes = 0) {
      const entry = entryOf(address);
      const reserved = Math.min(Math.max(0, expectedBytes), perAddressBytes);
      // An upload without a length still needs a byte of room: with none left it is refused now.
      const limit = overflow(entry, 0, Math.max(1, reserved));
      if (limit !== undefined) refuse(limit, address, entry, 0);
      entry.holds += 1;
      add(entry, reserved);
      let held = reserved;
      let written = 0;
      let released = false;
      return {
        get heldBytes() {
          return released ? 0 : held;
        },
        take(bytes) {
          if (released) return;
          const more = written + bytes - held;
          if (more > 0) {
            const over = overflow(entry, held, more);
            if (over !== undefined) refuse(over, address, entry, held);
            add(entry, more);
            held += more;
          }
          written += bytes;
        },
        release() {
          if (released) return;
          released = true;
          entry.holds -= 1;
          add(entry, -held);
        },
      };
    },
    heldBytes: () => total,
    heldBytesOf: (address) => byAddress.get(address)?.held ?? 0,
  };
}
