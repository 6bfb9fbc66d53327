/**
 * The printable view of a config (STYLE.md rule 8): secrets replaced, everything else as loaded.
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
  return copy;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
