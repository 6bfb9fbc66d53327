/**
 * `GET /admin/backup` on the operator port, behind the admin bearer token: a consistent snapshot of
 * this node's store as a backup archive (docs/operations.md, "Back up and restore a node"), streamed
 * as it is read. `quorumkeep backup` calls it; the archive checks itself (a SHA-256 at its end), so a
 * stream cut short — the node stopping, the connection dropping — is refused, never half-used.
 * Mounted only when a token is configured.
 */
import { Readable } from 'node:stream';
import { Router } from '@koa/router';
import type { Logger } from '../../log/index.ts';
import type { ApiRouter } from '../types.ts';
import { requireBearer } from './admin.ts';

/** Media type of a backup archive. */
export const BACKUP_MEDIA_TYPE = 'application/vnd.quorumkeep.backup';

/** The node's side of a backup: a fresh snapshot as archive chunks, taken when called. */
export interface BackupSource {
  /** Take a snapshot now; its chunks, read lazily. `nodeId` names the file. */
  snapshot(): { nodeId: string; createdAt: number; chunks: AsyncIterable<Uint8Array> };
}

/** Options of {@link createBackupRouter}. */
export interface BackupRouterOptions {
  /** Admin bearer token; must be non-empty. */
  token: string;
}

/** Dependencies of {@link createBackupRouter}. */
export interface BackupRouterDeps {
  backup: BackupSource;
  /** Where each snapshot is noted (who and when, never content). */
  logger: Logger;
}

/** `GET /admin/backup`. */
export function createBackupRouter(options: BackupRouterOptions, deps: BackupRouterDeps): ApiRouter {
  if (options.token === '') throw new Error('createBackupRouter: an empty admin token would disable auth');
  const log = deps.logger.child({ module: 'backup' });
  const router: ApiRouter = new Router();
  router.get('/admin/backup', requireBearer(options.token), (ctx) => {
    const { nodeId, createdAt, chunks } = deps.backup.snapshot();
    log.info({ nodeId, createdAt }, 'backup snapshot started');
    ctx.res.once('close', () => {
      if (!ctx.res.writableFinished) log.warn({ nodeId, createdAt }, 'backup stream ended before the archive was complete');
    });
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Content-Disposition', `attachment; filename="${nodeId.replace(/[^\w.-]/g, '_')}-${createdAt}.qkbackup"`);
    ctx.type = BACKUP_MEDIA_TYPE;
    ctx.body = Readable.from(chunks, { objectMode: false });
  });
  return router;
}
