/**
 * An install that is not a dev checkout (docs/deployment.md, step 2): `npm pack` builds the package
 * (compiled JavaScript, the commit stamped), `npm install <tarball> --omit=dev` puts it in an empty
 * folder with production dependencies only, and there `quorumkeep --version` answers and
 * `quorumkeep local` runs a healthy cluster that names its commit. Under a Node older than the
 * package needs, `bin/` says so in one line.
 */
import { execFile as execFileCb, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getFreePortRange, waitFor } from 'quorumkeep/testing';
import { gitHeadCommit } from '../../src/build-info.ts';
import { getJson } from '../utils/http.ts';
import { startLocal } from '../utils/local-process.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';

const execFile = promisify(execFileCb);
const REPO = join(import.meta.dirname, '../..');
const VERSION = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
/** What `npm pack` reads: the files the package ships and what builds them. */
const PACK_INPUTS = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md', 'bin', 'config', 'docs', 'src', 'scripts/prepack.ts', 'scripts/postpack.ts'];
/** tsc, npm install and a cluster start on a busy 2-core machine. */
const TIMEOUT_MS = 420_000;

const stack = cleanupStack();
afterAll(() => stack.run());

/** npm, run by the Node that runs the tests (npm scripts then find it first on PATH). */
function npm(args: string[], cwd: string, env: Record<string, string> = {}) {
  return execFile('npm', args, { cwd, env: { ...process.env, ...env, PATH: `${join(process.execPath, '..')}:${process.env.PATH ?? ''}` }, maxBuffer: 64 * 1024 * 1024 });
}

describe('the packed package, installed without dev dependencies', () => {
  let installed: string;
  let bin: string;
  const commit = gitHeadCommit(REPO);

  beforeAll(async () => {
    const root = await tempDir(stack, 'qk-pack-');
    // Packed from a copy: the build it makes (dist/) never lands in this checkout, and the copy
    // uses this checkout's dev dependencies (tsc) through a link.
    const source = join(root, 'source');
    for (const input of PACK_INPUTS) cpSync(join(REPO, input), join(source, input), { recursive: true });
    symlinkSync(join(REPO, 'node_modules'), join(source, 'node_modules'));
    // The copy has no .git: the commit comes from the environment, as in a CI that packs an export.
    await npm(['pack', '--pack-destination', root], source, commit ? { QK_COMMIT: commit } : {});
    const tarball = readdirSync(root).find((name) => name.endsWith('.tgz'));
    expect(tarball).toBe(`quorumkeep-${VERSION}.tgz`);
    expect(existsSync(join(source, 'dist')), 'postpack removes the build').toBe(false);

    installed = join(root, 'install');
    mkdirSync(installed);
    writeFileSync(join(installed, 'package.json'), JSON.stringify({ name: 'quorumkeep-install-test', private: true }));
    await npm(['install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', join(root, tarball!)], installed);
    bin = join(installed, 'node_modules', 'quorumkeep', 'bin', 'quorumkeep.js');
  }, TIMEOUT_MS);

  it('holds the built JavaScript and no dev dependency', () => {
    const pkg = join(installed, 'node_modules', 'quorumkeep');
    expect(existsSync(join(pkg, 'dist', 'main.js'))).toBe(true);
    expect(existsSync(join(pkg, 'src')), 'sources do not ship').toBe(false);
    expect(existsSync(join(pkg, 'config', 'quorumkeep.service')), 'the systemd unit ships').toBe(true);
    for (const dev of ['typescript', 'vitest', 'solc', 'playwright-core', '@foundry-rs/anvil-linux-amd64']) {
      expect(existsSync(join(installed, 'node_modules', dev)), dev).toBe(false);
    }
  });

  it('answers --version', async () => {
    const { stdout } = await execFile(process.execPath, [bin, '--version']);
    expect(stdout.trim()).toBe(VERSION);
  });

  it(
    'runs `quorumkeep local` to a healthy cluster that names its version and commit and serves its OpenAPI document, and stops on Ctrl-C',
    async () => {
      const dir = join(installed, 'data');
      const base = await getFreePortRange(15);
      const ports = ['--base-port', String(base), '--operator-base-port', String(base + 5), '--http-base-port', String(base + 10)];
      const local = await startLocal(stack, dir, ports, {}, { entry: bin, cwd: installed, timeoutMs: 120_000 });
      let gone = false;
      void local.exited.then(() => (gone = true));
      const out = local.output;
      const url = `http://127.0.0.1:${base + 10}`;
      const health = await waitFor(
        async () => {
          if (gone) throw new Error(`quorumkeep local exited:\n${out()}`);
          const res = await getJson<{ status: string; version: string; commit: string }>(`${url}/healthz`).catch(() => undefined);
          return res?.status === 200 && res.body.status === 'ok' ? res.body : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 250, description: `the installed cluster to be healthy:\n${out()}` },
      );
      expect(health.version).toBe(VERSION);
      if (commit) expect(health.commit).toBe(commit);
      // The OpenAPI document ships and is converted with production dependencies only.
      const openapi = await getJson<{ openapi: string }>(`${url}/openapi.json`);
      expect(openapi.status).toBe(200);
      expect(openapi.body.openapi).toMatch(/^3\.1\./);
      local.child.kill('SIGINT');
      expect(await local.exited, out()).toBe(0);
    },
    TIMEOUT_MS,
  );

  // The one-line refusal needs an older Node; the machines have the system's Node 20 next to the
  // project's (CI's too), so this is skipped only where no older one is installed.
  const older = ['/usr/bin/node', '/usr/local/bin/node']
    .map((path) => ({ path, version: existsSync(path) ? spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout.trim() : '' }))
    .find(({ version }) => /^v(1\d|2[0-3])\./.test(version));
  it.skipIf(!older)(`under an older Node (${older?.version ?? 'none installed'}) says which Node it needs in one line, exit 2`, () => {
    const run = spawnSync(older!.path, [bin, '--version'], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('24.7');
  });
});
