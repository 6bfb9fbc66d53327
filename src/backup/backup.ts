/**
 * `quorumkeep backup` and `quorumkeep verify-backup` (docs/operations.md, "Back up and restore a node").
 *
 * A running node holds its LevelDB's lock, so its snapshot comes from the node itself: the operator
 * port's `GET /admin/backup`, with the config's admin token. A stopped node's store is read directly.
 * Either way the archive is decoded and checked as it arrives (a stream cut short or altered is
 * refused), re-encoded — with the keys directory only when asked — into a temporary file (mode 0600)
 * next to the output, fsync'd, and renamed over it; on any failure the temporary file is removed.
 */
import { constants, createReadStream } from 'node:fs';
import { access, open, rename, unlink } from 'node:fs/promises';
import { createHash, randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import type { NodeConfig } from '../config/schema.ts';
import type { ClusterDescriptor, ClusterNodeEntry } from '../core/replication/ports.ts';
import { zeroize } from '../crypto/bytes.ts';
import { isStoreLocked, openStore, storeExists, sublevelOf } from '../store/index.ts';
import { decodeArchive, encodeArchive, type BackupHeader, type BackupSummary } from './archive.ts';
import { nodeKeysProblem, readKeysDir, storageKeyCheckIn, type KeyFile } from './keys.ts';
import { snapshotArchive } from './snapshot.ts';

/** Why a backup or restore was refused, where a caller tells one refusal from another: `NODE_RUNNING`, a restore over a running node. */
export type BackupErrorCode = 'NODE_RUNNING';

/** A backup or restore that cannot be done; the message says why and what to do. */
export class BackupError extends Error {
  /** Set for the refusals a caller may tell apart. */
  readonly code: BackupErrorCode | undefined;

  constructor(message: string, options?: ErrorOptions & { code?: BackupErrorCode }) {
    super(message, options);
    this.name = 'BackupError';
    this.code = options?.code;
  }
}

/** Deadline for the node to start answering `GET /admin/backup`, ms (the body then streams without one). */
const CONNECT_TIMEOUT_MS = 10_000;
/** Bytes gathered before one write to the archive file. */
const WRITE_CHUNK_BYTES = 1024 * 1024;

/** Options of {@link runBackup}. */
export interface BackupOptions {
  config: NodeConfig;
  descriptor: ClusterDescriptor;
  /** Archive path; replaced atomically when it exists. */
  out: string;
  /** Add the keys directory (the archive is then as sensitive as the node). @default false */
  includeKeys?: boolean;
  /** Operator base URL of the node. @default from `operator.host` and `operator.port` */
  url?: string;
}

/** Dependencies of {@link runBackup}. */
export interface BackupDeps {
  /** Unix ms, for an offline snapshot's `createdAt`. @default Date.now */
  clock?: () => number;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
}

/** What a backup wrote. */
export interface BackupReport {
  out: string;
  /** `node`: streamed by the running node; `offline`: read from its stopped store. */
  source: BackupHeader['source'];
  header: BackupHeader;
  summary: BackupSummary;
  /** Size of the archive file. */
  bytes: number;
  /** SHA-256 of the archive file, hex (also its last 32 bytes). */
  sha256: string;
}

/** The node's entry in the cluster file. */
export function selfEntry(config: NodeConfig, descriptor: ClusterDescriptor): ClusterNodeEntry {
  const self = descriptor.nodes.find((n) => n.id === config.nodeId);
  if (!self) throw new BackupError(`nodeId "${config.nodeId}" is not in the cluster file`);
  return self;
}

/** The node's keys directory. */
export function keysDirOf(config: NodeConfig): string {
  return config.keysDir || join(config.dataDir, 'keys');
}

/** The operator port's base URL from the config (a wildcard bind is reached on loopback). */
export function operatorUrlOf(config: NodeConfig): string {
  let host = config.operator.host;
  if (host === '0.0.0.0' || host === '') host = '127.0.0.1';
  else if (host === '::') host = '::1';
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.operator.port}`;
}

/** Coalesce small chunks into writes of about `size` bytes. */
async function* coalesce(chunks: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Uint8Array> {
  let parts: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of chunks) {
    parts.push(chunk);
    length += chunk.length;
    if (length >= size) {
      yield Buffer.concat(parts);
      parts = [];
      length = 0;
    }
  }
  if (length > 0) yield Buffer.concat(parts);
}

/**
 * Write `chunks` to `path` atomically: a temporary file (0600, created exclusively) in the same
 * folder, fsync'd, renamed over `path`. Removed on any failure. Returns size and SHA-256.
 */
export async function writeFileAtomically(path: string, chunks: AsyncIterable<Uint8Array>): Promise<{ bytes: number; sha256: string }> {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const file = await open(temp, 'wx', 0o600);
  const hash = createHash('sha256');
  let bytes = 0;
  let closed = false;
  try {
    for await (const chunk of coalesce(chunks, WRITE_CHUNK_BYTES)) {
      await file.write(chunk);
      hash.update(chunk);
      bytes += chunk.length;
    }
    await file.sync();
    await file.close();
    closed = true;
    await rename(temp, path);
  } catch (err) {
    if (!closed) await file.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  // The rename is durable once the folder is.
  const folder = await open(dirname(path), 'r').catch(() => undefined);
  await folder?.sync().catch(() => undefined);
  await folder?.close();
  return { bytes, sha256: hash.digest('hex') };
}

/** The innermost cause's code or message (fetch says `fetch failed`, the reason is its cause). */
function causeOf(err: unknown): string {
  let current = err;
  while (current instanceof Error && current.cause !== undefined) current = current.cause;
  return (current as NodeJS.ErrnoException | undefined)?.code ?? (current instanceof Error ? current.message : String(current));
}

/** The archive stream of the running node, or undefined when nothing listens at `url`. */
async function fromNode(url: string, token: string, fetchFn: typeof fetch): Promise<AsyncIterable<Uint8Array> | undefined> {
  const endpoint = `${url.replace(/\/+$/, '')}/admin/backup`;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
  let response: Response;
  try {
    response = await fetchFn(endpoint, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  } catch (err) {
    const reason = causeOf(err);
    if (reason === 'ECONNREFUSED') return undefined;
    throw new BackupError(`cannot reach the node's operator port at ${url} (${reason})`);
  } finally {
    clearTimeout(timer);
  }
  if (response.status === 200 && response.body) return response.body;
  await response.body?.cancel().catch(() => undefined);
  if (response.status === 401) throw new BackupError(`the node at ${url} refused the admin token of this config`);
  if (response.status === 404) throw new BackupError(`the node at ${url} serves no /admin/backup (it started without admin.token, or is an older build); stop it for an offline backup, or set admin.token and restart it`);
  throw new BackupError(`the node at ${url} answered HTTP ${response.status} to /admin/backup`);
}

/** The archive stream of the stopped node's store, read directly. */
async function fromStore(config: NodeConfig, self: ClusterNodeEntry, descriptor: ClusterDescriptor, now: number, running: string): Promise<AsyncIterable<Uint8Array>> {
  const location = join(config.dataDir, 'db');
  if (!(await storeExists(location))) throw new BackupError(`no store at ${location}`);
  const keysDir = keysDirOf(config);
  const storageKeyCheck = await storageKeyCheckIn(keysDir);
  if (storageKeyCheck === undefined) throw new BackupError(`no keys in ${keysDir}: an offline backup reads the node's keys directory to record which storage key its shares need`);
  let store;
  try {
    store = await openStore({ location });
  } catch (err) {
    if (isStoreLocked(err)) throw new BackupError(`the store at ${location} is in use by a running node; ${running}`);
    throw err;
  }
  const identity = { clusterId: descriptor.clusterId, nodeId: self.id, nodeAddress: self.nodeAddress, slot: self.slot, storageKeyCheck };
  const chunks = snapshotArchive(store, identity, { source: 'offline', now });
  return (async function* () {
    try {
      yield* chunks;
    } finally {
      await store.close();
    }
  })();
}

/** Take a backup of the node `config` describes; see the module comment. */
export async function runBackup(options: BackupOptions, deps: BackupDeps = {}): Promise<BackupReport> {
  const { config, descriptor } = options;
  const self = selfEntry(config, descriptor);
  const clock = deps.clock ?? Date.now;
  const token = config.admin.token;
  const url = options.url ?? (config.operator.enabled ? operatorUrlOf(config) : undefined);
  let source: AsyncIterable<Uint8Array> | undefined;
  if (url !== undefined && token !== '') source = await fromNode(url, token, deps.fetch ?? fetch);
  const running =
    url === undefined
      ? 'a running node streams its backup from its operator port: set operator.enabled and admin.token, and restart it'
      : token === ''
        ? 'its backup endpoint needs admin.token in this config (and in the node\'s when it started)'
        : `its operator port ${url} did not answer`;
  source ??= await fromStore(config, self, descriptor, clock(), running);

  const keysDir = keysDirOf(config);
  let keyFiles: KeyFile[] | undefined;
  let header: BackupHeader | undefined;
  let summary: BackupSummary | undefined;
  const decoded = decodeArchive(source);
  try {
    const first = await decoded.next();
    if (first.done || first.value.type !== 'header') throw new BackupError('the node sent no archive header');
    const nodeHeader = first.value.header;
    if (nodeHeader.clusterId !== descriptor.clusterId || nodeHeader.nodeId !== self.id || nodeHeader.nodeAddress !== self.nodeAddress) {
      throw new BackupError(`the node that answered is ${nodeHeader.nodeId} of cluster ${nodeHeader.clusterId}, not ${self.id} of ${descriptor.clusterId}`);
    }
    if (options.includeKeys) {
      const problem = await nodeKeysProblem(keysDir, self, nodeHeader.storageKeyCheck);
      if (problem) throw new BackupError(`--include-keys: ${problem}`);
      keyFiles = await readKeysDir(keysDir);
    }
    header = { ...nodeHeader, includesKeys: keyFiles !== undefined };
    const entries = async function* () {
      for await (const item of decoded) {
        if (item.type === 'entry') yield item;
        else if (item.type === 'summary') summary = item.summary;
        else throw new BackupError(`unexpected ${item.type} in the node's archive`);
      }
    };
    const written = await writeFileAtomically(
      options.out,
      encodeArchive({
        header,
        entries: entries(),
        files: keyFiles ?? [],
        groupOf: (key) => sublevelOf(key) ?? '(root)',
        facts: () => {
          // Asked once the node's archive has been read whole, its digest checked.
          if (!summary) throw new BackupError('the archive ended without a summary');
          return summary.facts;
        },
      }),
    );
    return { out: options.out, source: header.source, header, summary: { ...summary!, files: keyFiles?.length ?? 0 }, ...written };
  } finally {
    for (const f of keyFiles ?? []) zeroize(f.content);
    await decoded.return(undefined).catch(() => undefined);
  }
}

/** Read a whole archive file and check it; its header and summary. Throws ArchiveError when it is damaged. */
export async function verifyArchiveFile(path: string): Promise<{ header: BackupHeader; summary: BackupSummary }> {
  await access(path, constants.R_OK).catch((err: NodeJS.ErrnoException) => {
    throw new BackupError(`cannot read ${path} (${err.code ?? err.message})`);
  });
  let header: BackupHeader | undefined;
  let summary: BackupSummary | undefined;
  for await (const item of decodeArchive(createReadStream(path))) {
    if (item.type === 'header') header = item.header;
    else if (item.type === 'summary') summary = item.summary;
    else if (item.type === 'file') zeroize(item.content);
  }
  if (!header || !summary) throw new BackupError(`${path}: incomplete archive`);
  return { header, summary };
}
