/**
 * Every coordinator serves its API's description (docs/http.md, "Discovery"): `GET /openapi.json` and
 * `GET /openapi.yaml` over the real koa server, the shipped docs/openapi.yaml in both forms, cacheable
 * and revalidated by ETag. A member that serves no API has no such route on its operator port.
 */
import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startLocalCluster } from 'quorumkeep/testing';
import { cleanupStack } from '../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

interface OpenApi {
  openapi: string;
  paths: Record<string, unknown>;
}

describe('OpenAPI document', () => {
  it('each coordinator answers /openapi.json and /openapi.yaml with the shipped document', async () => {
    const cluster = await startLocalCluster({ size: 3, threshold: 2, coordinators: 2, operator: true, mailbox: false });
    stack.push(() => cluster.stop());
    const shipped = await readFile(new URL('../../docs/openapi.yaml', import.meta.url), 'utf8');
    expect(cluster.coordinators).toHaveLength(2);

    for (const url of cluster.coordinators) {
      const json = await fetch(`${url}/openapi.json`);
      expect(json.status).toBe(200);
      expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(json.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
      const document = (await json.json()) as OpenApi;
      expect(document.openapi).toMatch(/^3\.1\.\d+$/);
      expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/encrypt-payload', '/openapi.json', '/openapi.yaml']));

      const yaml = await fetch(`${url}/openapi.yaml`);
      expect(yaml.status).toBe(200);
      expect(yaml.headers.get('content-type')).toBe('application/yaml; charset=utf-8');
      const text = await yaml.text();
      expect(text).toBe(shipped);
      expect(parse(text)).toEqual(document);

      // A client holding the current ETag is told it has the document. (fetch would add `Cache-Control:
      // no-cache` to a conditional request, which asks for the whole answer: a revalidating cache sends max-age=0.)
      const etag = json.headers.get('etag');
      expect(etag).toMatch(/^"[^"]+"$/);
      const again = await fetch(`${url}/openapi.json`, { headers: { 'if-none-match': etag!, 'cache-control': 'max-age=0' } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe('');
    }

    // Only coordinators serve HTTP: the member without the API has just its operator port, which does not describe the API.
    expect(cluster.members[2]!.httpUrl).toBeUndefined();
    expect((await fetch(`${cluster.operatorUrls[2]}/openapi.json`)).status).toBe(404);
  });
});
