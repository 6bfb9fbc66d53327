/**
 * Addresses a node announces to the others — the cluster file's `multiaddrs` and `httpUrl`, a node's
 * `http.publicUrl` — must be ones another machine can dial (issue 11, "one node per host"). A wildcard
 * such as `0.0.0.0` is a fine *bind* address (every interface) but names no host to a dialler: a
 * cluster file that announces it stays degraded for ever. These rules are shared by `cluster init`,
 * `cluster set-address` and the checks a node runs before it starts.
 */
import { BlockList, isIP, isIPv4, isIPv6 } from 'node:net';

/** `0.0.0.0` and `::`: "every interface" to a listener, nothing to a dialler. */
const WILDCARDS = new BlockList();
WILDCARDS.addAddress('0.0.0.0', 'ipv4');
WILDCARDS.addAddress('::', 'ipv6');

/** Addresses no peer can dial: "this network", multicast, broadcast. */
const NEVER_DIALLABLE = new BlockList();
NEVER_DIALLABLE.addSubnet('0.0.0.0', 8, 'ipv4');
NEVER_DIALLABLE.addSubnet('224.0.0.0', 4, 'ipv4');
NEVER_DIALLABLE.addAddress('255.255.255.255', 'ipv4');
NEVER_DIALLABLE.addSubnet('ff00::', 8, 'ipv6');

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

// RFC 1123 host names: dot-separated labels of letters, digits and inner hyphens, at most 253 characters.
const HOST_NAME_RE = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

/** The host without the brackets of an IPv6 URL host (`[::1]` → `::1`). */
function bare(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function family(host: string): 'ipv4' | 'ipv6' | undefined {
  const version = isIP(host);
  return version === 4 ? 'ipv4' : version === 6 ? 'ipv6' : undefined;
}

/** True for `0.0.0.0` and `::` (any spelling of them, brackets allowed). */
export function isWildcardHost(host: string): boolean {
  const h = bare(host);
  const f = family(h);
  return f !== undefined && WILDCARDS.check(h, f);
}

/** True for 127.0.0.0/8, `::1` and `localhost` (and names under `.localhost`). */
export function isLoopbackHost(host: string): boolean {
  const h = bare(host).toLowerCase().replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  const f = family(h);
  return f !== undefined && LOOPBACK.check(h, f);
}

/** True for an IP address or a syntactically valid host name (what a bind address may be). */
export function isHostSyntax(host: string): boolean {
  const h = bare(host);
  return isIPv4(h) || isIPv6(h) || HOST_NAME_RE.test(h);
}

/**
 * Why other nodes (or clients) could not dial `host` when a node announces it, or undefined when they
 * can as far as the address alone tells: empty, a wildcard, never diallable (multicast, broadcast,
 * 0.0.0.0/8), or not a host at all. Loopback passes: a cluster on one machine announces 127.0.0.1.
 */
export function announceHostProblem(host: string): string | undefined {
  const h = bare(host);
  if (h === '') return 'must not be empty';
  if (isWildcardHost(h)) {
    return `${h} is a wildcard address (every interface, for a listener); other nodes cannot dial it: announce the node's routable address and bind to ${h} with the node config's listen, http.host and operator.host (cluster init: --listen-host)`;
  }
  const f = family(h);
  if (f !== undefined && NEVER_DIALLABLE.check(h, f)) return `${h} cannot be dialled (multicast, broadcast or "this network" address)`;
  if (f === undefined && !HOST_NAME_RE.test(h)) return `"${host}" is neither an IP address nor a host name`;
  return undefined;
}

/** A TCP multiaddr's parts: `/ip4|ip6|dns|dns4|dns6/<host>/tcp/<port>[/…]`. */
export interface TcpAddress {
  protocol: 'ip4' | 'ip6' | 'dns' | 'dns4' | 'dns6';
  host: string;
  port: number;
}

/** Parse the leading host and TCP port of a multiaddr; undefined when it has none. */
export function parseTcpMultiaddr(ma: string): TcpAddress | undefined {
  const m = /^\/(ip4|ip6|dns|dns4|dns6)\/([^/]+)\/tcp\/(\d{1,5})(?:\/.*)?$/.exec(ma);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65535) return undefined;
  return { protocol: m[1] as TcpAddress['protocol'], host: m[2] as string, port };
}

/** The TCP multiaddr of `host:port`: `/ip4/…`, `/ip6/…` or, for a name, `/dns4/…`. */
export function tcpMultiaddr(host: string, port: number): string {
  const h = bare(host);
  const protocol = isIPv4(h) ? 'ip4' : isIPv6(h) ? 'ip6' : 'dns4';
  return `/${protocol}/${h}/tcp/${port}`;
}

/** `host:port`, an IPv6 host in brackets. */
export function hostPortOf(host: string, port: number): string {
  const h = bare(host);
  return `${isIPv6(h) ? `[${h}]` : h}:${port}`;
}

/** `http://host:port`, an IPv6 host in brackets. */
export function httpUrlOf(host: string, port: number): string {
  return `http://${hostPortOf(host, port)}`;
}

/** The host of an http(s) URL without IPv6 brackets; undefined when `url` is not a URL. */
export function urlHost(url: string): string | undefined {
  try {
    return bare(new URL(url).hostname);
  } catch {
    return undefined;
  }
}

/**
 * Why a multiaddr a node announces cannot be dialled, or undefined. Only its host is judged (the
 * schema checks the rest); multiaddrs other than ip/dns + tcp are left to libp2p.
 */
export function announcedMultiaddrProblem(ma: string): string | undefined {
  const tcp = parseTcpMultiaddr(ma);
  if (!tcp) return undefined;
  const problem = announceHostProblem(tcp.host);
  return problem && `"${ma}": ${problem}`;
}

/** Why an http(s) URL a node announces cannot be reached, or undefined. */
export function announcedUrlProblem(url: string): string | undefined {
  const host = urlHost(url);
  if (host === undefined) return undefined;
  const problem = announceHostProblem(host);
  return problem && `"${url}": ${problem}`;
}

/**
 * Why a set of announced hosts cannot form one cluster, or undefined: loopback addresses mixed with
 * others (a node on another host cannot dial 127.0.0.1 — it would dial itself). A cluster wholly on
 * loopback is a local one, and fine.
 */
export function mixedLoopbackProblem(hosts: readonly string[]): string | undefined {
  const loopback = hosts.filter(isLoopbackHost);
  const other = hosts.filter((h) => !isLoopbackHost(h));
  if (loopback.length === 0 || other.length === 0) return undefined;
  return `mixes loopback addresses (${[...new Set(loopback)].join(', ')}) with others (${[...new Set(other)].join(', ')}): nodes on other hosts cannot dial a loopback address`;
}
