/**
 * The OpenAPI document every coordinator serves (`GET /openapi.json`, `GET /openapi.yaml`; docs/http.md,
 * "Discovery"): docs/openapi.yaml as the package ships it, and its JSON form.
 *
 * The file is found from this module, never from the working directory: src/ and dist/ both sit
 * directly in the package folder, and package.json `files` ships docs/ beside them. Like the package's
 * version (src/build-info.ts) it is part of the release, so it is read and converted once per process,
 * however many apps the process creates (a local cluster, a test suite).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

/** docs/openapi.yaml of this package. */
export const OPENAPI_FILE = new URL('../../docs/openapi.yaml', import.meta.url);

/** One form of the document, ready to send. */
export interface OpenApiBody {
  /** The bytes to send. */
  body: Buffer;
  /** Strong ETag of `body` (quoted). */
  etag: string;
}

/** The document in the two forms it is served in. */
export interface OpenApiDocument {
  /** The YAML file, byte for byte. */
  yaml: OpenApiBody;
  /** The same document as JSON. */
  json: OpenApiBody;
}

let shipped: OpenApiDocument | undefined;

/**
 * The shipped document (read and converted on the first call, then the same object). Throws when the
 * file is missing or is not YAML: a package without it is broken, and a node says so at start.
 */
export function shippedOpenApiDocument(): OpenApiDocument {
  shipped ??= openApiDocumentOf(readFileSync(OPENAPI_FILE));
  return shipped;
}

/** Both forms of the document whose YAML text is `yaml`. */
export function openApiDocumentOf(yaml: Buffer): OpenApiDocument {
  // `prettyErrors`: a broken document fails with the line and column of its first error.
  const json = Buffer.from(JSON.stringify(parse(yaml.toString('utf8'), { prettyErrors: true })), 'utf8');
  return { yaml: withEtag(yaml), json: withEtag(json) };
}

function withEtag(body: Buffer): OpenApiBody {
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url')}"` };
}
