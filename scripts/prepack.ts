/**
 * `npm pack` / `npm publish` (docs/deployment.md, "Install from a package"): build the JavaScript the
 * package's `bin` runs into dist/, and stamp the commit it was built from into dist/build.json — an
 * installed package has no `.git` to read it from (src/build-info.ts). `postpack` removes dist/
 * again, so a source checkout never runs a stale build (bin/quorumkeep.js prefers dist/ when present).
 */
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMMIT_ENV, gitHeadCommit } from '../src/build-info.ts';

const root = join(import.meta.dirname, '..');
const dist = join(root, 'dist');
rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
// Without a .git (packing an export), QK_COMMIT names it, as it does for a running node.
const commit = gitHeadCommit(root) ?? (process.env[COMMIT_ENV]?.trim() || 'unknown');
writeFileSync(join(dist, 'build.json'), `${JSON.stringify({ commit })}\n`);
