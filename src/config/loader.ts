/**
 * Config loading (CONTRIBUTING.md rule 8; docs/configuration.md, "How the config is assembled"): defaults ← file ← env (`QK_*`) ←
 * flags, validated in one pass by {@link nodeConfigSchema}, paths made absolute, then deep-frozen.
 *
 * Every failure is a {@link ConfigError} whose message is one line naming the bad key and where its
 * value came from, e.g. `config: http.port: expected a number (from env QK_HTTP_PORT)`, so an operator
 * can fix it without reading a stack trace.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { nodeConfigSchema, type NodeConfig } from './schema.ts';
import { COMMIT_ENV } from '../build-info.ts';

/** A configuration problem, worded as one line that names the key at fault and its origin. */
export class ConfigError extends Error {
  /** Dotted key at fault (e.g. `http.port`), when the problem is about one key. */
  readonly key: string | undefined;

  constructor(message: string, key?: string, options?: ErrorOptions) {
    super(oneLine(message), options);
    this.name = 'ConfigError';
    this.key = key;
  }
}

/** How a leaf's value is written in an environment variable or a string flag. */
export type ConfigLeafKind = 'string' | 'number' | 'boolean' | 'list' | 'json';

/** One settable key of the node config, with the environment variable that sets it. */
export interface ConfigLeaf {
  /** Dotted path, e.g. `replication.applyTimeoutMs`. */
  readonly path: string;
  /** e.g. `QK_REPLICATION_APPLY_TIMEOUT_MS`. */
  readonly envName: string;
  /** `list`: an array of strings (JSON or comma-separated); `json`: anything else structured. */
  readonly kind: ConfigLeafKind;
}

/** Prefix of every config environment variable. */
export const CONFIG_ENV_PREFIX = 'QK_';

/** Names an anvil binary for `quorumkeep local`'s chain and the tests, instead of the npm package's (docs/web3.md, "Where anvil comes from"). */
export const ANVIL_BIN_ENV = 'QK_ANVIL_BIN';
/** The private key `quorumkeep chain deploy-controller` deploys with, when `--private-key` is not given (docs/web3.md, "Deploying a controller"). */
export const DEPLOYER_KEY_ENV = 'QK_DEPLOYER_KEY';

/**
 * `QK_*` variables that are not config keys, and so not refused: `QK_COMMIT` names the build's commit
 * (src/build-info.ts); {@link ANVIL_BIN_ENV} and {@link DEPLOYER_KEY_ENV} belong to CLI commands.
 */
const NOT_CONFIG_ENV: ReadonlySet<string> = new Set([COMMIT_ENV, ANVIL_BIN_ENV, DEPLOYER_KEY_ENV]);

/** Environment variable name of a dotted config path: camelCase → UPPER_SNAKE, segments joined by `_`. */
export function configEnvName(path: string): string {
  const segments = path.split('.').map((s) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase());
  return CONFIG_ENV_PREFIX + segments.join('_');
}

function unwrapSchema(schema: z.ZodType): z.ZodType {
  let current = schema;
  while (current instanceof z.ZodDefault || current instanceof z.ZodOptional || current instanceof z.ZodNullable) {
    current = current.unwrap() as z.ZodType;
  }
  return current;
}

function leavesOf(schema: z.ZodType, prefix: string[]): ConfigLeaf[] {
  const inner = unwrapSchema(schema);
  // Nested config sections are walked into; arrays of objects (chains) stay one JSON-valued leaf.
  if (inner instanceof z.ZodObject) {
    return Object.entries(inner.shape as Record<string, z.ZodType>).flatMap(([key, child]) => leavesOf(child, [...prefix, key]));
  }
  let kind: ConfigLeafKind = 'json';
  if (inner instanceof z.ZodString || inner instanceof z.ZodEnum) kind = 'string';
  else if (inner instanceof z.ZodNumber) kind = 'number';
  else if (inner instanceof z.ZodBoolean) kind = 'boolean';
  else if (inner instanceof z.ZodArray && unwrapSchema(inner.element as z.ZodType) instanceof z.ZodString) kind = 'list';
  const path = prefix.join('.');
  return [{ path, envName: configEnvName(path), kind }];
}

/** Every settable key of the node config, in schema order (derived from {@link nodeConfigSchema}). */
export const CONFIG_LEAVES: readonly ConfigLeaf[] = Object.freeze(leavesOf(nodeConfigSchema, []));

const LEAF_BY_PATH = new Map(CONFIG_LEAVES.map((leaf) => [leaf.path, leaf]));
const LEAF_BY_ENV = new Map(CONFIG_LEAVES.map((leaf) => [leaf.envName, leaf]));

/** Where the config comes from. */
export interface LoadConfigOptions {
  /** JSON config file; relative paths in it resolve against its folder. @default none (defaults, env and flags only) */
  file?: string;
  /** Environment; only `QK_*` variables are read, and every one must name a config key. */
  env: Readonly<Record<string, string | undefined>>;
  /** Flat map of dotted config paths to values (strings are converted by the key's type). @default {} */
  flags?: Readonly<Record<string, unknown>>;
  /** Folder that relative paths from env and flags (and the file name itself) resolve against. @default process.cwd() */
  cwd?: string;
}

/** A validated node config: every path absolute, the whole object deep-frozen. */
export type LoadedConfig = NodeConfig;

/** Config keys holding filesystem paths, made absolute after validation. */
const PATH_KEYS = ['clusterFile', 'dataDir', 'keysDir'] as const;

/**
 * Load a node's config: defaults ← file ← env ← flags, validated once, paths made absolute, frozen.
 * Relative paths from the file resolve against the file's folder; those from env or flags against `cwd`.
 * Throws {@link ConfigError} naming the bad key and its origin.
 */
export function loadConfig(options: LoadConfigOptions): LoadedConfig {
  const cwd = options.cwd ?? process.cwd();
  const file = options.file === undefined ? undefined : resolve(cwd, options.file);
  const raw = file === undefined ? {} : readConfigFile(file);
  // Origin of each value set by env or flags (dotted leaf path → "from env QK_…"); the rest came from the file.
  const overrides = new Map<string, string>();

  for (const [name, text] of Object.entries(options.env)) {
    if (!name.startsWith(CONFIG_ENV_PREFIX) || text === undefined || NOT_CONFIG_ENV.has(name)) continue;
    const leaf = LEAF_BY_ENV.get(name);
    if (!leaf) throw new ConfigError(`config: unknown environment variable ${name} (it names no config key)`);
    const source = `from env ${name}`;
    setPath(raw, leaf.path, convertText(leaf, text, source));
    overrides.set(leaf.path, source);
  }
  for (const [path, value] of Object.entries(options.flags ?? {})) {
    if (value === undefined) continue;
    const source = `from flag ${path}`;
    const leaf = LEAF_BY_PATH.get(path);
    if (!leaf) throw new ConfigError(`config: unknown key "${path}" (${source})`, path);
    setPath(raw, path, typeof value === 'string' ? convertText(leaf, value, source) : value);
    overrides.set(path, source);
  }

  const result = nodeConfigSchema.safeParse(raw, { error: configIssueMessage });
  if (!result.success) {
    throw configErrorFromIssues('config', result.error.issues, (path) => {
      for (let n = path.length; n > 0; n--) {
        const source = overrides.get(path.slice(0, n).join('.'));
        if (source) return source;
      }
      if (getPath(raw, path) === undefined) {
        const envName = LEAF_BY_PATH.get(path.join('.'))?.envName;
        return `set it in ${file ?? 'a config file'}${envName ? ` or ${envName}` : ''}`;
      }
      return file ? `in ${file}` : 'default';
    });
  }

  const config = result.data;
  const fileDir = file === undefined ? cwd : dirname(file);
  for (const key of PATH_KEYS) {
    if (config[key] !== '') config[key] = resolve(overrides.has(key) ? cwd : fileDir, config[key]);
  }
  if (config.keysDir === '') config.keysDir = join(config.dataDir, 'keys');
  if (config.files.dir !== '') config.files.dir = resolve(overrides.has('files.dir') ? cwd : fileDir, config.files.dir);
  else config.files.dir = join(config.dataDir, 'files');
  return deepFreeze(config);
}

function readConfigFile(file: string): Record<string, unknown> {
  const value = readJsonFile(file, `config: file ${file}`);
  if (!isPlainObject(value)) throw new ConfigError(`config: file ${file}: expected a JSON object`);
  return value;
}

/**
 * Read and parse a JSON file; failures become a {@link ConfigError} `<what>: cannot read (ENOENT)` or
 * `<what>: invalid JSON at position N`.
 * @param what how the message names the file, e.g. `config: file /etc/qk/node-0.json`
 * @param key the config key the file belongs to, if any (e.g. `clusterFile`)
 */
export function readJsonFile(path: string, what: string, key?: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ConfigError(`${what}: cannot read (${reason})`, key, { cause: err });
  }
  return parseJsonText(text.replace(/^\uFEFF/, ''), what, key);
}

/** Parse JSON text; a syntax error becomes a {@link ConfigError} `<what>: invalid JSON at position N`. */
export function parseJsonText(text: string, what: string, key?: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${what}: invalid JSON at position ${jsonErrorOffset(text)}`, key, { cause: err });
  }
}

class JsonSyntaxError {
  readonly offset: number;
  constructor(offset: number) {
    this.offset = offset;
  }
}

const JSON_NUMBER_RE = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const JSON_ESCAPE_RE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y;

/**
 * Offset of the first syntax error in `text` (its length when the input ends too early). Only called
 * once JSON.parse has failed: V8's messages carry an offset for some errors but not for others
 * ("Unexpected token '}', ... is not valid JSON"), and an operator needs to know where to look.
 */
function jsonErrorOffset(text: string): number {
  let i = 0;
  const fail = (): never => {
    throw new JsonSyntaxError(i);
  };
  const skipSpace = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text.charAt(i))) i++;
  };
  const expectChar = (c: string): void => {
    if (text.charAt(i) !== c) fail();
    i++;
  };
  const matchAt = (re: RegExp): boolean => {
    re.lastIndex = i;
    const m = re.exec(text);
    if (m) i += m[0].length;
    return m !== null;
  };
  const string = (): void => {
    expectChar('"');
    while (i < text.length) {
      const c = text.charAt(i);
      if (c === '"') {
        i++;
        return;
      }
      if (c === '\\') {
        if (!matchAt(JSON_ESCAPE_RE)) fail();
      } else if (c < ' ') {
        fail();
      } else {
        i++;
      }
    }
    fail();
  };
  const list = (close: string, item: () => void): void => {
    i++;
    skipSpace();
    if (text.charAt(i) === close) {
      i++;
      return;
    }
    for (;;) {
      item();
      skipSpace();
      if (text.charAt(i) !== ',') return expectChar(close);
      i++;
    }
  };
  const member = (): void => {
    skipSpace();
    string();
    skipSpace();
    expectChar(':');
    value();
  };
  const value = (): void => {
    skipSpace();
    const c = text.charAt(i);
    if (c === '{') return list('}', member);
    if (c === '[') return list(']', value);
    if (c === '"') return string();
    const word = ['true', 'false', 'null'].find((w) => text.startsWith(w, i));
    if (word) i += word.length;
    else if (!matchAt(JSON_NUMBER_RE)) fail();
  };
  try {
    value();
    skipSpace();
    if (i < text.length) fail();
    return text.length;
  } catch (err) {
    if (err instanceof JsonSyntaxError) return err.offset;
    throw err;
  }
}

/** Convert an env or flag string to the leaf's type; throws a {@link ConfigError} naming the key. */
function convertText(leaf: ConfigLeaf, text: string, source: string): unknown {
  const fail = (problem: string): never => {
    throw new ConfigError(`config: ${leaf.path}: ${problem} (${source})`, leaf.path);
  };
  switch (leaf.kind) {
    case 'string':
      return text;
    case 'number': {
      const n = Number(text);
      return text.trim() !== '' && Number.isFinite(n) ? n : fail('expected a number');
    }
    case 'boolean': {
      const lower = text.trim().toLowerCase();
      if (lower === 'true' || lower === '1') return true;
      if (lower === 'false' || lower === '0') return false;
      return fail('expected true, false, 1 or 0');
    }
    case 'list':
      if (text.trim().startsWith('[')) return parseJsonValue(text, fail);
      return text.split(',').map((s) => s.trim()).filter((s) => s !== '');
    case 'json':
      return parseJsonValue(text, fail);
  }
}

function parseJsonValue(text: string, fail: (problem: string) => never): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return fail(`expected JSON (invalid at position ${jsonErrorOffset(text)})`);
  }
}

/**
 * Per-parse zod error map: short, lowercase problems ("expected a number, got string", "is required")
 * instead of zod's defaults. Messages a schema sets itself take precedence.
 */
export const configIssueMessage: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      return `expected ${withArticle(issue.expected === 'int' ? 'integer' : issue.expected)}, got ${describeValue(issue.input)}`;
    case 'too_small':
    case 'too_big': {
      const bound = issue.code === 'too_small' ? issue.minimum : issue.maximum;
      const relation = issue.code === 'too_small' ? (issue.inclusive ? 'at least' : 'greater than') : issue.inclusive ? 'at most' : 'less than';
      if (issue.origin === 'string') return issue.code === 'too_small' && bound === 1 ? 'must not be empty' : `must be ${relation} ${String(bound)} characters`;
      if (issue.origin === 'array') return `must have ${relation} ${String(bound)} items`;
      return `must be ${relation} ${String(bound)}`;
    }
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    default:
      return undefined;
  }
};

function withArticle(noun: string): string {
  return (/^[aeiou]/.test(noun) ? 'an ' : 'a ') + noun;
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}

/**
 * The first issue of a failed parse as one {@link ConfigError}: `<prefix>: <key>: <problem> (<source>)`,
 * or `<prefix>: unknown key "<key>" (<source>)`. Unknown keys are reported first: a misspelt key
 * usually also explains a "required" issue elsewhere.
 * @param sourceOf where the value at `path` came from, e.g. `in /x.json` or `from env QK_HTTP_PORT`
 */
export function configErrorFromIssues(
  prefix: string,
  issues: readonly z.core.$ZodIssue[],
  sourceOf: (path: PropertyKey[]) => string,
): ConfigError {
  const issue = issues.find((i) => i.code === 'unrecognized_keys') ?? issues[0];
  if (!issue) return new ConfigError(`${prefix}: invalid`);
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => [...issue.path, k].map(String).join('.'));
    const names = keys.map((k) => `"${k}"`).join(', ');
    return new ConfigError(`${prefix}: unknown key${keys.length > 1 ? 's' : ''} ${names} (${sourceOf(issue.path)})`, keys[0]);
  }
  const key = issue.path.map(String).join('.');
  return new ConfigError(`${prefix}: ${key || '(root)'}: ${issue.message} (${sourceOf(issue.path)})`, key || undefined);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function getPath(target: unknown, path: readonly PropertyKey[]): unknown {
  let node = target;
  for (const segment of path) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<PropertyKey, unknown>)[segment];
  }
  return node;
}

/** Set a dotted path, replacing anything that is not an object on the way (the override wins). */
function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const segments = path.split('.');
  const last = segments.pop() as string;
  let node = target;
  for (const segment of segments) {
    const next = node[segment];
    if (isPlainObject(next)) {
      node = next;
    } else {
      const created: Record<string, unknown> = {};
      node[segment] = created;
      node = created;
    }
  }
  node[last] = value;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ');
}
