/**
 * A lab of Linux network namespaces, one per node, joined by a bridge (issue 11: test one node per
 * host, and partitions that drop packets rather than hang up). Each host gets its own address on a
 * private /24 the lab makes itself; partitions are iptables DROP rules inside the namespaces, so TCP
 * connections stay open and go silent, as on a real network. Needs root, `ip` and `iptables` (CI
 * runs as root; `.ci/run` installs iptables). Traffic stays inside the namespaces this lab created.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { promisify } from 'node:util';

const run = promisify(execFile);

async function sh(cmd: string, args: string[]): Promise<string> {
  const { stdout } = await run(cmd, args, { timeout: 10_000 });
  return stdout;
}

export interface NetnsLab {
  /** Each host's address (host i is namespace i). */
  readonly hosts: string[];
  /** Start `args` inside host i's namespace. */
  spawn(i: number, command: string, args: string[], options?: { env?: NodeJS.ProcessEnv; cwd?: string }): ChildProcess;
  /** Drop every packet between the hosts of `a` and those of `b` (both directions, silently). */
  cut(a: number[], b: number[]): Promise<void>;
  /** Remove every rule. */
  heal(): Promise<void>;
  /** Delete the namespaces, the bridge and the veths. Idempotent. */
  destroy(): Promise<void>;
}

/** Create `n` hosts on a fresh bridge. */
export async function createNetnsLab(n: number): Promise<NetnsLab> {
  const tag = randomInt(1000, 9999).toString();
  const subnet = `10.231.${randomInt(1, 250)}`;
  const bridge = `qkb${tag}`;
  const namespaces = Array.from({ length: n }, (_, i) => `qk${tag}n${i}`);
  const hosts = namespaces.map((_, i) => `${subnet}.${11 + i}`);
  const inNs = (i: number, ...args: string[]) => sh('ip', ['netns', 'exec', namespaces[i]!, ...args]);
  let destroyed = false;

  const lab: NetnsLab = {
    hosts,
    spawn(i, command, args, options = {}) {
      return spawn('ip', ['netns', 'exec', namespaces[i]!, command, ...args], { env: options.env ?? process.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    },
    async cut(a, b) {
      for (const x of a) {
        for (const y of b) {
          for (const [from, to] of [
            [x, y],
            [y, x],
          ] as const) {
            await inNs(from, 'iptables', '-A', 'INPUT', '-s', hosts[to]!, '-j', 'DROP');
            await inNs(from, 'iptables', '-A', 'OUTPUT', '-d', hosts[to]!, '-j', 'DROP');
          }
        }
      }
    },
    async heal() {
      for (let i = 0; i < n; i++) await inNs(i, 'iptables', '-F');
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      for (const ns of namespaces) await sh('ip', ['netns', 'del', ns]).catch(() => undefined);
      await sh('ip', ['link', 'del', bridge]).catch(() => undefined);
    },
  };

  try {
    await sh('ip', ['link', 'add', 'name', bridge, 'type', 'bridge']);
    await sh('ip', ['addr', 'add', `${subnet}.1/24`, 'dev', bridge]);
    await sh('ip', ['link', 'set', bridge, 'up']);
    for (let i = 0; i < n; i++) {
      const ns = namespaces[i]!;
      const veth = `qkv${tag}${i}`;
      await sh('ip', ['netns', 'add', ns]);
      await sh('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
      await sh('ip', ['link', 'set', veth, 'master', bridge]);
      await sh('ip', ['link', 'set', veth, 'up']);
      await inNs(i, 'ip', 'addr', 'add', `${hosts[i]}/24`, 'dev', 'eth0');
      await inNs(i, 'ip', 'link', 'set', 'eth0', 'up');
      await inNs(i, 'ip', 'link', 'set', 'lo', 'up');
    }
  } catch (err) {
    await lab.destroy();
    throw err;
  }
  return lab;
}
