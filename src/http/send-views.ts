/**
 * A response body sent from buffers the producer reuses (docs/http.md, Files and jobs: a decrypt
 * download's plaintext chunks, zeroed once sent): see {@link sendViews}.
 */
import type Koa from 'koa';
import type { HttpContext, HttpState } from './types.ts';

/**
 * Answer 200 with `views` as the body (the headers already set on `ctx`), written one at a time: each
 * is handed to the socket, and its write finished, before the next is asked for, so the producer may
 * reuse or zero it then (a decrypt result's plaintext, ../core/files/types.ts `JobDownload`). The
 * first view is read before anything is sent: a result that fails at once is still a JSON error.
 * A failure later, or a client that goes away, ends the connection and stops the producer.
 */
export async function sendViews(ctx: Koa.ParameterizedContext<HttpState, HttpContext>, views: AsyncIterableIterator<Uint8Array>): Promise<void> {
  const res = ctx.res;
  let next: IteratorResult<Uint8Array>;
  try {
    next = await views.next();
  } catch (err) {
    await views.return?.(undefined);
    // Answered as a JSON error: not an attachment.
    ctx.remove('Content-Disposition');
    throw err;
  }
  ctx.status = 200;
  // Koa sends nothing more: the body goes out below.
  ctx.respond = false;
  const gone = new Promise<void>((resolve) => res.once('close', resolve));
  try {
    res.writeHead(200);
    while (!next.done) {
      const view = next.value;
      const written = new Promise<void>((resolve, reject) => res.write(view, (err) => (err ? reject(err) : resolve())));
      written.catch(() => undefined);
      // Settles when the write does (a failed one throws), or when the client is gone.
      await Promise.race([written, gone]);
      if (res.destroyed) return;
      next = await views.next();
    }
    // `end`'s callback never comes for a connection that is gone: that ends the wait too.
    await Promise.race([new Promise<void>((resolve) => res.end(resolve)), gone]);
  } catch (err) {
    res.destroy(err instanceof Error ? err : new Error(String(err)));
  } finally {
    await views.return?.(undefined);
  }
}
