/**
 * The systemd unit ships as a file (config/quorumkeep.service, in the package) and docs/deployment.md
 * step 5 shows it: the two are the same text, so following the docs installs what ships.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '../../..');

describe('config/quorumkeep.service', () => {
  it('is the unit docs/deployment.md shows, and runs the installed package with the deployed node flags', () => {
    const shipped = readFileSync(join(REPO, 'config/quorumkeep.service'), 'utf8');
    const docs = readFileSync(join(REPO, 'docs/deployment.md'), 'utf8');
    const shown = /```ini\n(\[Unit\][\s\S]*?)```/.exec(docs)?.[1];
    expect(shown).toBe(shipped);
    const execStart = /^ExecStart=(.*)$/m.exec(shipped)?.[1] ?? '';
    expect(execStart).toContain('--max-semi-space-size=8');
    expect(execStart).toContain('/node_modules/quorumkeep/bin/quorumkeep.js start --config');
    expect(shipped).toMatch(/^Environment=MALLOC_ARENA_MAX=2$/m);
  });
});
