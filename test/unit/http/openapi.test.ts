/**
 * docs/openapi.yaml against the app: every route the app serves (operator endpoints enabled) is
 * documented under its method, and every documented operation is served. Read with a line scan of
 * the `paths:` section — the last top-level key; two-space path keys, four-space method keys — not a
 * YAML library.
 *
 * And against the OpenAPI 3.1 specification: Redocly's `recommended` ruleset finds no error and no warning.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createConfig, lint } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import { useTestServers } from './helpers.ts';
import type { HttpApp } from '../../../src/http/index.ts';

const start = useTestServers();

const OPENAPI_URL = new URL('../../../docs/openapi.yaml', import.meta.url);
const METHOD_RE = /^ {4}(get|put|post|delete|options|head|patch|trace):$/;
const PATH_RE = /^ {2}(\/\S*):$/;

/** `METHOD /path/{param}` of every documented operation. */
function documentedOperations(): string[] {
  const text = readFileSync(OPENAPI_URL, 'utf8');
  const paths = text.slice(text.indexOf('\npaths:\n'));
  const operations: string[] = [];
  let current: string | undefined;
  for (const line of paths.split('\n')) {
    current = PATH_RE.exec(line)?.[1] ?? current;
    const method = METHOD_RE.exec(line)?.[1];
    if (method !== undefined && current !== undefined) operations.push(`${method.toUpperCase()} ${current}`);
  }
  return operations.sort();
}

/** `METHOD /path/{param}` of every route the app dispatches to (HEAD is implied by GET). */
function servedOperations(app: HttpApp): string[] {
  const operations = new Set<string>();
  for (const middleware of app.middleware) {
    const router = (middleware as { router?: { stack: Array<{ path: string | RegExp; methods: string[] }> } }).router;
    for (const layer of router?.stack ?? []) {
      const path = String(layer.path).replace(/:(\w+)/g, '{$1}');
      for (const method of layer.methods) if (method !== 'HEAD') operations.add(`${method} ${path}`);
    }
  }
  return [...operations].sort();
}

describe('docs/openapi.yaml', () => {
  it('documents exactly the operations the app serves', async () => {
    const { app } = await start();
    const served = servedOperations(app);
    expect(served).toContain('POST /web2/secret-failures/{secretId}/retry');
    expect(documentedOperations()).toEqual(served);
  });

  it("lints clean under Redocly's recommended ruleset", async () => {
    const config = await createConfig({
      extends: ['recommended'],
      rules: {
        // The package is UNLICENSED (proprietary): SPDX has no identifier for that and there is no
        // licence text to link, so `info.license` carries only its name.
        'info-license-strict': 'off',
      },
    });
    const problems = await lint({ ref: fileURLToPath(OPENAPI_URL), config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`)).toEqual([]);
  });
});
