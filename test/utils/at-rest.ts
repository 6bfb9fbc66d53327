/**
 * Helpers of the "nothing secret at rest" tests: capture every log line a cluster writes, list the
 * raw files under a data dir, and POST with a required status so a broken flow fails where it breaks.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { LocalClusterOptions } from 'quorumkeep/testing';
import { postJson } from './http.ts';

/** `lines` is every log line of every node, as written; pass `destination` as the cluster's `logDestination`. */
export function captureClusterLogs(): { lines: string[]; destination: NonNullable<LocalClusterOptions['logDestination']> } {
  const lines: string[] = [];
  return {
    lines,
    destination: {
      write(line: string) {
        lines.push(line);
      },
    },
  };
}

/** Every regular file below `root`, recursively. */
export async function filesUnder(root: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(root, { withFileTypes: true })) {
    const path = join(root, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/**
 * POST a JSON body to `base + path` and require the status, so a broken flow fails here rather than
 * as a vacuous pass later; the error names `path`. Returns the parsed body.
 */
export async function postExpecting<T = Record<string, unknown>>(base: string, path: string, body: unknown, status = 200): Promise<T> {
  const res = await postJson<T>(`${base}${path}`, body);
  if (res.status !== status) throw new Error(`${path}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}
