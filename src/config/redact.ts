/**
 * The printable view of a config (CONTRIBUTING.md rule 8): secrets replaced, everything else as loaded.
 */
import { SECRET_CONFIG_PATHS, type NodeConfig } from './schema.ts';

/** What a redacted secret shows instead of its value. */
export const REDACTED = '[redacted]';

/**
 * A deep copy of `config` with every non-empty value at {@link SECRET_CONFIG_PATHS} replaced by
 * {@link REDACTED}. Empty secrets stay empty, so the view still shows that a feature is off
 * (e.g. an empty `admin.token` disables the operator endpoints).
 */
export function redactConfig(config: NodeConfig): NodeConfig {
  const copy = structuredClone(config);
  for (const path of SECRET_CONFIG_PATHS) {
    const segments = path.split('.');
    const last = segments.pop() ?? '';
    let parent: unknown = copy;
    for (const segment of segments) parent = isRecord(parent) ? parent[segment] : undefined;
    if (isRecord(parent) && typeof parent[last] === 'string' && parent[last] !== '') parent[last] = REDACTED;
  }
  // RPC providers put API keys in the URL's path or query.
  for (const chain of copy.chains) {
    chain.rpcUrl = redactUrl(chain.rpcUrl);
    if (chain.wsRpcUrl !== undefined) chain.wsRpcUrl = redactUrl(chain.wsRpcUrl);
  }
  return copy;
}

/**
 * `url` without what may hold a credential: user info, path, query and fragment are replaced by
 * `/[redacted]` (e.g. `https://base-mainnet.g.alchemy.com/v2/<key>` → `https://base-mainnet.g.alchemy.com/[redacted]`).
 * A URL with none of them (`https://mainnet.base.org`) is returned as is; a string that is not a URL
 * becomes {@link REDACTED}.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return REDACTED;
  }
  const bare = parsed.username === '' && parsed.password === '' && (parsed.pathname === '/' || parsed.pathname === '') && parsed.search === '' && parsed.hash === '';
  return bare ? url : `${parsed.protocol}//${parsed.host}/${REDACTED}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
