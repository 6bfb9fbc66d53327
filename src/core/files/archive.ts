/**
 * The `.cifer` ZIP writer and the result files on disk (API.md, Files and jobs): the only importer of
 * yazl. Entries are produced lazily, one at a time, when yazl reaches them, so only the chunk being
 * written is in memory whatever the file's size; entries are stored, not compressed (ciphertext does
 * not compress).
 */
import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ZipFile } from 'yazl';

/** One entry of an archive: its name and the function that produces its bytes when its turn comes. */
export interface ZipEntrySource {
  name: string;
  produce(): Promise<Uint8Array>;
}

/**
 * Write `entries`, in order, to a new ZIP at `path` (mode 0600). The archive is written under a
 * temporary name, fsync'd and renamed, so `path` exists only complete. Rejects (and leaves nothing
 * behind) when an entry's producer fails. Resolves to the archive's size, bytes.
 */
export async function writeZipFile(path: string, entries: readonly ZipEntrySource[], mtime: Date): Promise<number> {
  const partial = `${path}.partial`;
  try {
    const zip = new ZipFile();
    const output = zip.outputStream as unknown as Readable;
    // A producer's failure reaches yazl as an 'error' event: end the output with it.
    zip.on('error', (err: Error) => output.destroy(err));
    for (const entry of entries) {
      zip.addReadStreamLazy(entry.name, { compress: false, mtime }, (callback) => {
        entry.produce().then(
          (bytes) => callback(null, Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)], { objectMode: false })),
          (err: unknown) => callback(err, undefined as unknown as NodeJS.ReadableStream),
        );
      });
    }
    zip.end();
    await pipeline(output, createWriteStream(partial, { flags: 'wx', mode: 0o600 }));
    // Durable before it is announced complete.
    const handle = await open(partial, 'r+');
    let size: number;
    try {
      await handle.sync();
      size = (await handle.stat()).size;
    } finally {
      await handle.close();
    }
    await rename(partial, path);
    return size;
  } catch (err) {
    await removeFile(partial);
    throw err;
  }
}

/** Create `dir` (0700) when missing. */
export async function ensureDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

/** Remove a file; a missing one is not an error. */
export async function removeFile(path: string): Promise<void> {
  await unlink(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

/** Size of every file in `dir` by name (the result files at start: the disk budget's baseline). */
export async function fileSizes(dir: string): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  for (const name of await readdir(dir)) {
    try {
      sizes.set(name, (await stat(join(dir, name))).size);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return sizes;
}

/** Size and read stream of a result file, or undefined when it is gone. */
export async function openResultFile(path: string): Promise<{ size: number; stream: Readable } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  // Opened first: a sweep that removes the file now cannot cut the download short.
  try {
    const { size } = await handle.stat();
    return { size, stream: handle.createReadStream() };
  } catch (err) {
    await handle.close();
    throw err;
  }
}
