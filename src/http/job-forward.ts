/**
 * Any coordinator answers for any file job (docs/http.md, "Files and jobs", Any coordinator): a job's
 * result and metadata live only on the coordinator that ran it, so a coordinator that does not hold a
 * job forwards the client's request, over HTTP, to the one that does (its cluster-file `httpUrl`).
 *
 * - `GET /jobs/:jobId/status`, `POST /jobs/:jobId/download`, `POST /jobs/:jobId/delete` and
 *   `POST /decrypt-existing-file` (keyed by the body's `encryptJobId`): held here → the local route.
 *   Else the holder is looked up — every other coordinator is asked `GET /jobs/<id>/status` at once,
 *   the first `200` wins, and job id → coordinator is remembered in a small LRU — and the request
 *   (method, path and query, the JSON body re-serialised, `X-Request-Id`) is sent to it; its answer
 *   (status, `Content-Type`, `Content-Length`, `Content-Disposition`, `Retry-After`, body) is streamed
 *   back, so a 1 GiB download is never buffered. No coordinator holds it and every one answered →
 *   the local route (its `404`). Some coordinator could not be asked → `503 NOT_READY`.
 * - `POST /jobs` (list): the local answer merged with every other coordinator's, by job id, newest
 *   first; coordinators that could not list are named in `unreachableCoordinators`.
 *
 * Every request sent on carries `X-Quorumkeep-Forwarded: 1`, and a request that carries it is
 * answered locally, never forwarded again: no loops, whatever the cluster file says.
 *
 * Nothing is verified here: the holder checks the signed strings itself. A signed string is checked
 * only by the node that acts on it — a check here would judge freshness and sessions against this
 * node's replica, which may lag the holder's, and could refuse a string the holder accepts.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type Koa from 'koa';
import { z } from 'zod';
import { AppError } from '../errors/index.ts';
import { createLruCache } from '../crypto/index.ts';
import type { Logger } from '../log/index.ts';
import type { NodeMetrics } from '../metrics/index.ts';
import type { FilesService } from '../core/files/types.ts';
import type { ApiRouter, HttpContext, HttpMiddleware, HttpState } from './types.ts';
import { routeLayers } from './route-layers.ts';

/** Marks a request one coordinator sent to another: answered locally, never forwarded again. */
export const FORWARDED_HEADER = 'X-Quorumkeep-Forwarded';

/** Connect + response headers of a request to another coordinator, ms. */
export const JOB_FORWARD_TIMEOUT_MS = 5_000;
/** Job ids whose coordinator is remembered (an id is ~36 bytes, a name a few: well under 1 MiB). */
export const JOB_LOCATE_CACHE_ENTRIES = 10_000;
/** Largest JSON answer read whole from another coordinator (a status lookup, a job list), bytes. */
export const JOB_FORWARD_MAX_JSON_BYTES = 16 * 1024 * 1024;
/** Retry-After of a 503 for an unreachable job coordinator: a restart or a blip, not a lasting state. */
const UNREACHABLE_RETRY_AFTER_S = 5;

/** Another coordinator, as the cluster file names it. */
export interface JobPeer {
  /** Its node id in the cluster file (`node-1`): reported in `unreachableCoordinators`. */
  name: string;
  /** Its public HTTP base URL (cluster file `httpUrl`). */
  httpUrl: string;
}

/** Options of {@link createJobForwarding}. */
export interface JobForwardingOptions {
  /**
   * Deadline to connect to another coordinator and receive its response headers, ms; a JSON answer
   * read whole (a lookup, a list) gets as long again for its body. A download's body has none: it
   * streams for as long as it takes. @default JOB_FORWARD_TIMEOUT_MS (5000)
   */
  timeoutMs?: number;
  /** Job ids whose coordinator is remembered. @default JOB_LOCATE_CACHE_ENTRIES (10000) */
  locateCacheSize?: number;
  /** Largest JSON answer read whole from another coordinator, bytes. @default JOB_FORWARD_MAX_JSON_BYTES (16 MiB) */
  maxJsonBytes?: number;
}

/** Dependencies of {@link createJobForwarding}. */
export interface JobForwardingDeps {
  /** Whether this coordinator holds a job. */
  files: Pick<FilesService, 'holds'>;
  /** The other coordinators (never this one); read per request. */
  peers: () => readonly JobPeer[];
  /** The API router: only requests it would dispatch to a job route are considered. */
  router: ApiRouter;
  /** Root logger; a `{ module: "job-forward" }` child is taken. */
  logger: Logger;
  /** `quorumkeep_job_forwards_total`; none when absent. */
  metrics?: Pick<NodeMetrics, 'jobForwards'>;
}

/** Metric label of a forwarded route (a fixed set). */
type JobRoute = 'status' | 'download' | 'delete' | 'decrypt_existing' | 'list';

/** Metric outcome (a fixed set): see `NodeMetrics.jobForwards`. */
type Outcome = 'forwarded' | 'not_found' | 'unreachable' | 'aborted' | 'merged' | 'partial';

/** The API router's route patterns this module handles. */
const JOB_ROUTES: ReadonlyMap<string, JobRoute> = new Map<string, JobRoute>([
  ['/jobs/:jobId/status', 'status'],
  ['/jobs/:jobId/download', 'download'],
  ['/jobs/:jobId/delete', 'delete'],
  ['/decrypt-existing-file', 'decrypt_existing'],
  ['/jobs', 'list'],
]);

/** Response headers relayed from the holder (the rest — security, CORS, request id — are this node's own). */
const RELAYED_HEADERS = ['content-type', 'content-length', 'content-disposition', 'retry-after'] as const;

/** Rows of another coordinator's list: the fields the merge reads, the rest passed through as they are. */
const peerListSchema = z.object({
  jobs: z.array(z.looseObject({ id: z.string(), createdAt: z.number() })),
});

type PeerRow = z.infer<typeof peerListSchema>['jobs'][number];

type HttpCtx = Koa.ParameterizedContext<HttpState, HttpContext>;

/** A request to another coordinator. */
interface Outgoing {
  method: string;
  /** Path and query, e.g. `/jobs?includeExpired=true`. */
  path: string;
  reqId: string;
  /** JSON body, when the request has one. */
  body?: Buffer;
  signal?: AbortSignal;
}

/** An answer read whole. */
interface BufferedReply {
  status: number;
  contentType: string | undefined;
  body: Buffer;
}

/** What one coordinator said about a job. */
type Probe = { kind: 'holds'; reply: BufferedReply } | { kind: 'absent' } | { kind: 'unreachable' };

/** Where a job is. */
type Location = { kind: 'holds'; peer: JobPeer; reply: BufferedReply } | { kind: 'absent' } | { kind: 'unreachable'; peers: string[] };

/**
 * The forwarding middleware. Mount it after the JSON body parser (a forwarded body is the parsed one,
 * re-serialised) and before the API router.
 */
export function createJobForwarding(options: JobForwardingOptions, deps: JobForwardingDeps): HttpMiddleware {
  const timeoutMs = options.timeoutMs ?? JOB_FORWARD_TIMEOUT_MS;
  const maxJsonBytes = options.maxJsonBytes ?? JOB_FORWARD_MAX_JSON_BYTES;
  const located = createLruCache<string>(options.locateCacheSize ?? JOB_LOCATE_CACHE_ENTRIES);
  const log = deps.logger.child({ module: 'job-forward' });
  // One connection per request: no idle keep-alive socket the peer may close as we reuse it (a
  // spurious 503), and nothing left open when the node stops. The cost is a handshake on a LAN.
  const agents = { http: new HttpAgent({ keepAlive: false }), https: new HttpsAgent({ keepAlive: false }) };
  const count = (route: JobRoute, outcome: Outcome): void => deps.metrics?.jobForwards.inc({ route, outcome });

  const jobLayers = routeLayers(deps.router, (layer) => JOB_ROUTES.has(String(layer.path)));

  /** Which job route the API router would dispatch `ctx` to, and its path parameters. */
  function jobRouteOf(ctx: HttpCtx): { route: JobRoute; params: Record<string, string> } | undefined {
    for (const layer of jobLayers(ctx.path, ctx.method)) {
      const route = JOB_ROUTES.get(String(layer.path));
      if (route !== undefined) return { route, params: layer.params(ctx.path, layer.captures(ctx.path), {}) };
    }
    return undefined;
  }

  /** Send `out` to `peer`; resolves with the response once its headers are in (the body is the caller's to read). */
  function send(peer: JobPeer, out: Outgoing): Promise<IncomingMessage> {
    const url = new URL(peer.httpUrl.replace(/\/+$/, '') + out.path);
    const https = url.protocol === 'https:';
    const headers: OutgoingHttpHeaders = { [FORWARDED_HEADER]: '1', 'X-Request-Id': out.reqId, Accept: 'application/json' };
    if (out.body) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = out.body.length;
    }
    return new Promise((resolve, reject) => {
      const req = (https ? httpsRequest : httpRequest)(url, { method: out.method, headers, agent: https ? agents.https : agents.http, signal: out.signal }, (res) => {
        clearTimeout(timer);
        resolve(res);
      });
      const timer = setTimeout(() => req.destroy(Object.assign(new Error('coordinator did not answer in time'), { code: 'ETIMEDOUT' })), timeoutMs);
      // `on`, not `once`: a socket error after the response would otherwise be unhandled. Errors
      // after the response reach its stream too; rejecting a settled promise does nothing.
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.end(out.body);
    });
  }

  /** Send `out` and read the whole answer (at most `maxJsonBytes`, within the deadline). */
  async function fetchBuffered(peer: JobPeer, out: Outgoing): Promise<BufferedReply> {
    const res = await send(peer, out);
    const timer = setTimeout(() => res.destroy(Object.assign(new Error('coordinator answer too slow'), { code: 'ETIMEDOUT' })), timeoutMs);
    try {
      const chunks: Buffer[] = [];
      let bytes = 0;
      for await (const chunk of res as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        if (bytes > maxJsonBytes) {
          res.destroy();
          throw Object.assign(new Error('coordinator answer too large'), { code: 'ETOOLARGE' });
        }
        chunks.push(chunk);
      }
      return { status: res.statusCode ?? 0, contentType: res.headers['content-type'], body: Buffer.concat(chunks, bytes) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Ask `peer` whether it holds `jobId`: its status answer (200 holds, 404 does not, anything else: unknown). */
  async function probe(peer: JobPeer, jobId: string, reqId: string, signal: AbortSignal): Promise<Probe> {
    try {
      const reply = await fetchBuffered(peer, { method: 'GET', path: `/jobs/${encodeURIComponent(jobId)}/status`, reqId, signal });
      if (reply.status === 200) return { kind: 'holds', reply };
      if (reply.status === 404) return { kind: 'absent' };
      log.warn({ reqId, peer: peer.name, status: reply.status }, 'job lookup: coordinator answered an error');
      return { kind: 'unreachable' };
    } catch (err) {
      if (!signal.aborted) log.warn({ reqId, peer: peer.name, err: errorFields(err) }, 'job lookup: coordinator unreachable');
      return { kind: 'unreachable' };
    }
  }

  /** Ask every peer at once; the first that holds the job wins (the others' requests are abandoned). */
  function locate(jobId: string, peers: readonly JobPeer[], reqId: string): Promise<Location> {
    const abandon = new AbortController();
    return new Promise((resolve) => {
      let pending = peers.length;
      let settled = false;
      const unreachable: string[] = [];
      for (const peer of peers) {
        void probe(peer, jobId, reqId, abandon.signal).then((found) => {
          if (settled) return;
          if (found.kind === 'holds') {
            settled = true;
            abandon.abort();
            resolve({ kind: 'holds', peer, reply: found.reply });
            return;
          }
          if (found.kind === 'unreachable') unreachable.push(peer.name);
          if (--pending === 0) resolve(unreachable.length > 0 ? { kind: 'unreachable', peers: unreachable } : { kind: 'absent' });
        });
      }
    });
  }

  /** A job route for a job this coordinator does not hold. */
  async function forwardJob(ctx: HttpCtx, next: Koa.Next, route: JobRoute, jobId: string, peers: readonly JobPeer[]): Promise<void> {
    const reqId = ctx.state.reqId;
    const cachedName = located.get(jobId);
    let holder = cachedName === undefined ? undefined : peers.find((p) => p.name === cachedName);
    if (!holder) {
      const where = await locate(jobId, peers, reqId);
      if (where.kind === 'absent') {
        count(route, 'not_found');
        return next();
      }
      if (where.kind === 'unreachable') {
        count(route, 'unreachable');
        throw unreachableError(where.peers);
      }
      holder = where.peer;
      located.set(jobId, holder.name);
      if (route === 'status' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
        // The lookup was this very request: its answer is the answer.
        log.debug({ reqId, route, peer: holder.name }, 'job held by another coordinator: answered from its lookup');
        count(route, 'forwarded');
        ctx.status = where.reply.status;
        if (where.reply.contentType !== undefined) ctx.set('Content-Type', where.reply.contentType);
        ctx.body = where.reply.body;
        return;
      }
    }
    const body = ctx.method === 'GET' || ctx.method === 'HEAD' ? undefined : Buffer.from(JSON.stringify(ctx.state.body ?? {}));
    let res: IncomingMessage;
    try {
      res = await send(holder, { method: ctx.method, path: pathOf(ctx), reqId, ...(body ? { body } : {}) });
    } catch (err) {
      // Looked up afresh next time (the cluster file may have moved it).
      located.delete(jobId);
      log.warn({ reqId, route, peer: holder.name, err: errorFields(err) }, 'job coordinator unreachable');
      count(route, 'unreachable');
      throw unreachableError([holder.name]);
    }
    log.debug({ reqId, route, peer: holder.name, status: res.statusCode }, 'job held by another coordinator: forwarded');
    relay(ctx, res, route, holder);
  }

  /** Stream the holder's answer back; a break mid-stream destroys the client's response (koa's pipeline). */
  function relay(ctx: HttpCtx, res: IncomingMessage, route: JobRoute, holder: JobPeer): void {
    ctx.status = res.statusCode ?? 502;
    const contentLength = res.headers['content-length'];
    for (const name of RELAYED_HEADERS) {
      const value = res.headers[name];
      if (typeof value === 'string' && name !== 'content-length') ctx.set(name, value);
    }
    ctx.body = res;
    // After the body: koa drops Content-Length when a stream replaces a body.
    if (contentLength !== undefined) ctx.set('Content-Length', contentLength);
    // An `error` is the holder's side breaking off (koa's pipeline then destroys the client's
    // response); a stream closed incomplete without one is this side letting go (the client left).
    let broke: unknown;
    res.once('error', (err) => (broke = err));
    res.once('close', () => {
      if (broke !== undefined) log.warn({ reqId: ctx.state.reqId, route, peer: holder.name, err: errorFields(broke) }, 'forwarded job answer broke mid-stream');
      count(route, res.complete && broke === undefined ? 'forwarded' : 'aborted');
    });
  }

  /** `POST /jobs`: the local list, merged with every other coordinator's. */
  async function mergeLists(ctx: HttpCtx, next: Koa.Next, peers: readonly JobPeer[]): Promise<void> {
    await next();
    // The local answer decides: an error (bad signature, bad query) goes back unchanged, and the
    // others are not asked.
    const local = ctx.body as { jobs?: unknown } | undefined;
    if (ctx.status !== 200 || typeof local !== 'object' || local === null || !Array.isArray(local.jobs)) return;
    const reqId = ctx.state.reqId;
    const body = Buffer.from(JSON.stringify(ctx.state.body ?? {}));
    const answers = await Promise.all(
      peers.map(async (peer): Promise<{ peer: JobPeer; rows: PeerRow[] | undefined }> => {
        try {
          const reply = await fetchBuffered(peer, { method: 'POST', path: pathOf(ctx), reqId, body });
          if (reply.status === 200) {
            const parsed = peerListSchema.safeParse(JSON.parse(reply.body.toString('utf8')));
            if (parsed.success) return { peer, rows: parsed.data.jobs };
            log.warn({ reqId, peer: peer.name }, 'job list: coordinator answered a malformed list');
          } else {
            log.warn({ reqId, peer: peer.name, status: reply.status }, 'job list: coordinator answered an error');
          }
        } catch (err) {
          log.warn({ reqId, peer: peer.name, err: errorFields(err) }, 'job list: coordinator unreachable');
        }
        return { peer, rows: undefined };
      }),
    );
    const byId = new Map<string, PeerRow>();
    // Local rows first: a job listed twice keeps this coordinator's view (ids are UUIDs: it cannot be
    // two jobs).
    for (const row of local.jobs as PeerRow[]) byId.set(row.id, row);
    const unreachable: string[] = [];
    for (const { peer, rows } of answers) {
      if (rows === undefined) unreachable.push(peer.name);
      else for (const row of rows) if (!byId.has(row.id)) byId.set(row.id, row);
    }
    // The service's order: newest first, then id.
    const jobs = [...byId.values()].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : 1));
    ctx.body = { ...local, jobs, count: jobs.length, ...(unreachable.length > 0 ? { unreachableCoordinators: unreachable } : {}) };
    count('list', unreachable.length > 0 ? 'partial' : 'merged');
  }

  return async (ctx, next) => {
    if (ctx.get(FORWARDED_HEADER) !== '') return next();
    const matched = jobRouteOf(ctx);
    if (!matched) return next();
    const peers = deps.peers();
    if (peers.length === 0) return next();
    if (matched.route === 'list') return mergeLists(ctx, next, peers);
    const jobId = matched.route === 'decrypt_existing' ? encryptJobIdOf(ctx.state.body) : matched.params.jobId;
    // No id (a malformed body): the local route answers the 400.
    if (!jobId || (await deps.files.holds(jobId))) return next();
    return forwardJob(ctx, next, matched.route, jobId, peers);
  };
}

/** The request's path and query as the client sent them (never an absolute-form target's host). */
function pathOf(ctx: HttpCtx): string {
  return ctx.path + (ctx.querystring === '' ? '' : `?${ctx.querystring}`);
}

/** `encryptJobId` of a `/decrypt-existing-file` body, when it is a string. */
function encryptJobIdOf(body: unknown): string | undefined {
  const id = typeof body === 'object' && body !== null ? (body as { encryptJobId?: unknown }).encryptJobId : undefined;
  return typeof id === 'string' ? id : undefined;
}

/** 503: the job may be on a coordinator this one cannot reach now. */
function unreachableError(coordinators: string[]): AppError {
  return new AppError(
    'NOT_READY',
    "This job's coordinator could not be reached: it may be down or unreachable from here. Retrying is safe.",
    { retryAfterSeconds: UNREACHABLE_RETRY_AFTER_S, unreachableCoordinators: coordinators },
  );
}

/** What a log line says of a network error: its code and message, nothing of the request. */
function errorFields(err: unknown): { code?: string; message: string } {
  const e = err as NodeJS.ErrnoException;
  return { ...(typeof e?.code === 'string' ? { code: e.code } : {}), message: e instanceof Error ? e.message : String(err) };
}
