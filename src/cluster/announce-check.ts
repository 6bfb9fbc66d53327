/**
 * Does a node listen where the cluster file says it does? Other nodes dial the announced multiaddrs
 * (the cluster file's); a node listening elsewhere — `listen` set to another port, a typo in the
 * cluster file — is unreachable while everything looks fine on its side (issue 11). Checked once at
 * start, by host and TCP port.
 */
import { multiaddr } from '@multiformats/multiaddr';

interface HostPort {
  host: string;
  port: number;
  /** The host is a DNS name (only the port can be compared without resolving it). */
  named: boolean;
}

function hostPortOf(ma: string): HostPort | undefined {
  try {
    const options = multiaddr(ma).toOptions();
    if (options.transport !== 'tcp') return undefined;
    const named = /^\/dns(?:4|6|addr)?\//.test(ma);
    return { host: options.host, port: options.port, named };
  } catch {
    return undefined;
  }
}

const isWildcard = (host: string): boolean => host === '0.0.0.0' || host === '::';

/**
 * True when no announced TCP address matches a listening one: same port, and the same host, or a
 * wildcard listener (`0.0.0.0`, `::`), or an announced DNS name (not resolved here). False when
 * nothing announced is a TCP address this check understands.
 * @param announced this node's `multiaddrs` in the cluster file
 * @param listening the configured listen multiaddrs and the bound ones
 */
export function announcedAddressUnbound(announced: readonly string[], listening: readonly string[]): boolean {
  const wanted = announced.map(hostPortOf).filter((a): a is HostPort => a !== undefined);
  if (wanted.length === 0) return false;
  const bound = listening.map(hostPortOf).filter((a): a is HostPort => a !== undefined);
  return !wanted.some((a) => bound.some((b) => b.port === a.port && (a.named || b.named || isWildcard(b.host) || b.host === a.host)));
}
