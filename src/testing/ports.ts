/** Free TCP ports on 127.0.0.1 for local clusters. */
import { createServer, type Server } from 'node:net';

/**
 * Reserve `count` distinct free ports by binding them all at once, then release them. Another process
 * could take one in between; on loopback in a test run that is rare enough to accept.
 */
export async function getFreePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const s = createServer();
      servers.push(s);
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(0, host, () => resolve());
      });
      const addr = s.address();
      if (!addr || typeof addr === 'string') throw new Error('no port');
      ports.push(addr.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}

/** True when `port` can be bound on `host` right now. */
async function canBind(port: number, host: string): Promise<boolean> {
  const s = createServer();
  return new Promise((resolve) => {
    s.once('error', () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });
}

/** Lowest port of the ranges {@link getFreePortRange} picks from. */
const RANGE_LOW = 20_000;
/**
 * Where Linux starts handing out ephemeral ports (`ip_local_port_range`, 32768 by default): a range
 * below it cannot be taken by the outgoing connections of a busy test run between the check and the
 * nodes' bind.
 */
const EPHEMERAL_LOW = 32_768;

/**
 * Find `count` consecutive free ports (for `quorumkeep cluster init --base-port`), trying random bases
 * in 20000–32767, below the ephemeral range.
 */
export async function getFreePortRange(count: number, host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = RANGE_LOW + Math.floor(Math.random() * (EPHEMERAL_LOW - RANGE_LOW - count));
    let ok = true;
    for (let p = base; p < base + count && ok; p++) ok = await canBind(p, host);
    if (ok) return base;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}
