/**
 * What a node process carries (docs/operations.md, "Memory"): a node without chains never loads viem,
 * and the crypto threads never load the JavaScript fallbacks of what runs natively (@noble/curves'
 * secp256k1, @noble/post-quantum's ML-KEM) — every isolate pays for the code it loads. Each case runs
 * in a process of its own (test/fixtures/modules-loaded.ts), so what the test runner loaded is not
 * counted.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../fixtures/modules-loaded.ts', import.meta.url));

async function packagesLoaded(which: string): Promise<string[]> {
  const { stdout } = await run(process.execPath, ['--conditions=source', SCRIPT, which], { timeout: 60_000 });
  return JSON.parse(stdout.trim()) as string[];
}

describe('modules a node process loads', () => {
  it('a node without chains loads libp2p and LevelDB but not viem', async () => {
    const loaded = await packagesLoaded('node-without-chains');
    // The probe works: the node's own libraries are seen.
    expect(loaded).toEqual(expect.arrayContaining(['koa', 'level', 'libp2p']));
    expect(loaded.filter((p) => p === 'viem' || p === 'ox' || p === 'abitype')).toEqual([]);
  });

  it("the crypto threads' operations run on the native binding and node:crypto, without the JavaScript fallbacks", async () => {
    const loaded = await packagesLoaded('crypto-thread');
    expect(loaded).toEqual(expect.arrayContaining(['secp256k1', 'hash-wasm']));
    expect(loaded.filter((p) => p.startsWith('@noble/'))).toEqual([]);
  });
});
