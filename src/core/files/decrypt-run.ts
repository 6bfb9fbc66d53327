/**
 * A decrypt job's work (docs/http.md, Files and jobs), once ./decrypt.ts has accepted it: each chunk
 * of the archive is read, opened by its GCM tag with the key imported once for the job, and written
 * into the result; the whole is checked against `originalHash`. The plaintext result is sealed on
 * disk (./spool.ts format) under a random key kept sealed by the node's storage key in the job record.
 */
import { rename } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { AES_GCM_TAG_BYTES, SPOOL_CHUNK_OVERHEAD_BYTES, createSpoolCipher, openChunkPayload, toBase64, toHex, zeroize, type ChunkCrypto, type PayloadOpener } from '../../crypto/index.ts';
import type { NodeKeyring } from '../secrets/ports.ts';
import type { UsageReservation } from '../usage/types.ts';
import type { CiferArchive } from './cifer-archive.ts';
import type { JobRegistry, JobRun } from './registry.ts';
import { chunkCountOf, expectedChunkBytes, progressOf, resultKeyAad } from './rules.ts';
import { createSealedSpool, type SealedSpool } from './spool.ts';
import type { JobRecord } from './types.ts';

/**
 * Archive chunks of a decrypt job in flight (each a sealed and a plaintext buffer): read ahead,
 * being opened, being written into the result. With one or two the engine's thread waited on the
 * event loop between chunks (see src/core/files/spool.ts, SPOOL_READ_AHEAD_RECORDS).
 */
const DECRYPT_CHUNK_SLOTS = 4;
/** Of those, chunks whose open is queued on the engine at once (the rest are being read). */
const DECRYPT_OPENS_IN_FLIGHT = 2;

/** Options of {@link createDecryptRunner}. */
export interface DecryptRunnerOptions {
  /** Plaintext bytes per chunk of the sealed result (`files.chunkBytes`). */
  chunkBytes: number;
}

/** Dependencies of {@link createDecryptRunner}. */
export interface DecryptRunnerDeps {
  /** Seals the result's key under the node's storage key. */
  keyring: Pick<NodeKeyring, 'encryptAtRest'>;
  /** This coordinator's jobs (./registry.ts). */
  registry: JobRegistry;
  /** The chunk crypto of every job. */
  engine: ChunkCrypto;
  /** The files module's logger. */
  logger: Logger;
  /** Aborted when the service stops: a running job stops at its next chunk. */
  stopping: AbortSignal;
}

/** An accepted decrypt job: the opened archive, the secret's key, and what the job holds until it ends. */
export interface DecryptWork {
  archive: CiferArchive;
  opener: PayloadOpener;
  /** Frees what the archive was read from (a spool, a result's file handle). */
  release: () => Promise<void>;
  /** Plan usage admitted for the job: committed when it completes, released otherwise. */
  usage: UsageReservation | undefined;
}

/** Decrypt the archive chunk by chunk into the job's sealed result (a job of the registry, see `launch`). */
export type DecryptRunner = (job: JobRecord, work: DecryptWork, lifecycle: JobRun) => Promise<void>;

/** Write `data` and resolve once the stream has taken it (back-pressure, and the caller may zero it). */
function writeTo(stream: Writable, data: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(data, (err) => (err ? reject(err) : resolve()));
  });
}

/** Create the decrypt runner of a files service. */
export function createDecryptRunner(options: DecryptRunnerOptions, deps: DecryptRunnerDeps): DecryptRunner {
  const { registry, engine, stopping, logger: log } = deps;

  return async function runDecrypt(job, { archive, opener, release, usage }, lifecycle) {
    let outcome: 'completed' | 'failed' = 'failed';
    const cipher = createSpoolCipher();
    let writer: SealedSpool | undefined;
    // Chunk `i` is read from the archive into `slots[i % slots.length].sealed` and opened into its
    // `output`: buffers for the whole job. Reads and opens in flight, by slot (settled before the
    // buffers are zeroed and the archive closed).
    let slots: Array<{ sealed: Buffer; output: Buffer }> = [];
    const reads: Array<Promise<number>> = [];
    const opens: Array<Promise<number | undefined>> = [];
    const hash = engine.startHash();
    try {
      const key = cipher.exportKey();
      try {
        job.result = { key: toBase64(deps.keyring.encryptAtRest(key, resultKeyAad(job.id))), id: toHex(cipher.spoolId), chunkBytes: options.chunkBytes };
      } finally {
        zeroize(key);
      }
      await lifecycle.processing();
      // Not hashed by the spool: the job hashes the plaintext itself, below.
      writer = await createSealedSpool(registry.paths.spoolDir, { chunkBytes: options.chunkBytes, maxBytes: job.originalSize, fsync: true, sha256: false }, { cipher, engine });
      const { metadata } = archive;
      const count = metadata.chunkCount;
      const result = writer;
      slots = Array.from({ length: Math.min(count, DECRYPT_CHUNK_SLOTS) }, () => ({
        sealed: engine.borrow(metadata.chunkSize + AES_GCM_TAG_BYTES),
        output: engine.borrow(metadata.chunkSize),
      }));
      let lastRead: Promise<unknown> = Promise.resolve();
      const startRead = (i: number): void => {
        // One after another, in order: an uploaded archive is read through its spool's one reader,
        // which reads ahead for a sequential reader and starts over for any other.
        const reading = lastRead.then(() => archive.chunkInto(i, slots[i % slots.length]!.sealed));
        lastRead = reading.catch(() => undefined);
        // Its failure is reported where it is awaited; a job that stops first never asks.
        reading.catch(() => undefined);
        reads[i % slots.length] = reading;
      };
      /** Chunk `i` opened: checked, copied into the result spool, zeroed; its slot reads the chunk `slots.length` on. */
      const writeChunk = async (i: number): Promise<void> => {
        const { output } = slots[i % slots.length]!;
        const opened = await opens[i % slots.length];
        if (opened === undefined) throw new AppError('DECRYPTION_FAILED', `Decryption failed: chunk_${i}.enc does not open with its cifer`);
        const expected = expectedChunkBytes(i, metadata);
        if (opened !== expected) throw new AppError('DECRYPTION_FAILED', `Decryption failed: chunk_${i}.enc has ${opened} bytes, not ${expected}`);
        // Copied into the result spool's own chunk buffer before this resolves.
        await writeTo(result, output.subarray(0, opened));
        zeroize(output.subarray(0, opened));
        job.progress = progressOf(i + 1, count);
        if (i + slots.length < count) startRead(i + slots.length);
      };
      for (let i = 0; i < slots.length; i++) startRead(i);
      for (let i = 0; i < count; i++) {
        stopping.throwIfAborted();
        const sealedBytes = await reads[i % slots.length]!;
        const slot = slots[i % slots.length]!;
        // Requested now, in chunk order: hashed (where it is opened, once its tag holds) in order.
        const opening = openChunkPayload(engine, opener, archive.cifer(i), slot.sealed.subarray(0, sealedBytes), slot.output, hash);
        opening.catch(() => undefined);
        opens[i % slots.length] = opening;
        // The engine opens chunk `i` while the one before is written.
        if (i >= DECRYPT_OPENS_IN_FLIGHT - 1) await writeChunk(i - DECRYPT_OPENS_IN_FLIGHT + 1);
      }
      for (let i = Math.max(0, count - DECRYPT_OPENS_IN_FLIGHT + 1); i < count; i++) {
        stopping.throwIfAborted();
        await writeChunk(i);
      }
      writer.end();
      await finished(writer);
      if (toHex(await engine.digest(hash)) !== metadata.originalHash) throw new AppError('DECRYPTION_FAILED', 'Integrity check failed: the decrypted file does not match originalHash');
      // Complete and durable (fsync'd) before it is announced.
      await rename(writer.path, registry.paths.sealedResultPath(job.id));
      registry.resultWritten(job.id, job.originalSize + chunkCountOf(job.originalSize, options.chunkBytes) * SPOOL_CHUNK_OVERHEAD_BYTES, job.originalSize);
      await registry.complete(job);
      outcome = 'completed';
      usage?.commit();
      log.info({ jobId: job.id, chunkCount: metadata.chunkCount, bytes: job.originalSize }, 'decrypt job completed');
    } catch (err) {
      // No key for a result that is not there.
      delete job.result;
      await registry.abandon(job, err);
    } finally {
      // A job that did not complete counts nothing (a second settle is a no-op).
      usage?.release();
      // Reads and opens still in flight finish before their buffers are zeroed and the archive closes.
      await Promise.allSettled([...reads, ...opens]);
      for (const slot of slots) engine.giveBack(slot.sealed, slot.output);
      engine.dropHash(hash);
      lifecycle.end(outcome);
      archive.close();
      // Removes the sealed file unless it was renamed into place; zeroes the key.
      await writer?.dispose().catch((err: unknown) => log.error({ jobId: job.id, err }, 'could not remove a partial result'));
      cipher.dispose();
      await release().catch((err: unknown) => log.error({ jobId: job.id, err }, 'could not remove a spool'));
    }
  };
}
