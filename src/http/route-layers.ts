/**
 * Match a request against a chosen few of the API router's layers. Middleware that must know which
 * route a request is for before the router runs (the JSON body parser's raw-body opt-out, file-job
 * forwarding) asks only the layers it cares about, not all of them: a full `router.match` per
 * middleware per request cost as much as the router's own dispatch (docs/http.md, "Request path cost").
 */
import type { ApiRouter } from './types.ts';

/** One layer of the router (a route, with its path pattern, methods and middleware stack). */
export type RouteLayer = ApiRouter['stack'][number];

/**
 * A matcher over the layers of `router` that `select` picks. The selection is made on first use,
 * once every route is registered; then each call tests only those layers, in the router's order,
 * and returns the ones whose path and method match `path` and `method`.
 */
export function routeLayers(router: ApiRouter, select: (layer: RouteLayer) => boolean): (path: string, method: string) => RouteLayer[] {
  let chosen: RouteLayer[] | undefined;
  return (path, method) => {
    chosen ??= router.stack.filter(select);
    const out: RouteLayer[] = [];
    for (const layer of chosen) if (layer.methods.includes(method) && layer.match(path)) out.push(layer);
    return out;
  };
}
