/**
 * Logging (pino). One root logger per node; modules take a child with `{ module }`. Messages are
 * constant strings with context objects. Known secret-bearing keys are redacted as a second line of
 * defence — the first is never passing them (CONTRIBUTING.md rule 9).
 *
 * Two formats (`log.format`, docs/configuration.md): `json`, one object a line, for machines (journald,
 * a collector); `pretty`, for people at a terminal, formatted by pino-pretty in pino's transport worker
 * thread so that the thread serving requests only writes the JSON it always writes.
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import type { PrettyOptions } from 'pino-pretty';

export type { Logger } from 'pino';

/** Keys whose values are never written to a log line. */
export const REDACTED_LOG_PATHS = [
  'password', 'newPassword', 'otp', 'token', 'sessionToken', 'signature', 'share', 'shares', 'seed',
  'secretKey', 'privateKey', 'plainText', 'authorization', 'adminToken',
  '*.password', '*.newPassword', '*.otp', '*.token', '*.sessionToken', '*.share', '*.seed', '*.secretKey',
  '*.privateKey', '*.plainText', 'req.headers.authorization', 'headers.authorization',
];

/** How log lines are written: `json` for machines, `pretty` for people. */
export type LogFormat = 'pretty' | 'json';

/** `log.format` as configured: `auto` is pretty on a terminal, JSON otherwise. */
export type LogFormatSetting = LogFormat | 'auto';

/** The format `setting` means for a process whose stdout is (`stdoutIsTTY`) or is not a terminal. */
export function resolveLogFormat(setting: LogFormatSetting, stdoutIsTTY: boolean): LogFormat {
  if (setting !== 'auto') return setting;
  return stdoutIsTTY ? 'pretty' : 'json';
}

/**
 * pino-pretty's settings: one line an event — time, level, node, module, message, then the context
 * as JSON — so that a cluster's lines stay one under the other. Colours are pino-pretty's choice:
 * on a terminal, unless `NO_COLOR` is set.
 */
const PRETTY_OPTIONS: PrettyOptions = {
  destination: 1,
  singleLine: true,
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname,node,module',
  messageFormat: '{if node}{node} {end}{if module}{module}: {end}{msg}',
};

/**
 * Where lines in `format` go, on stdout: JSON written as is; pretty through pino's transport (a
 * worker thread running pino-pretty). A process makes one and hands it to every logger it creates:
 * one worker however many nodes it runs.
 */
export function createLogDestination(format: LogFormat): DestinationStream {
  if (format === 'json') return pino.destination({ dest: 1, sync: true });
  return pino.transport({ target: 'pino-pretty', options: PRETTY_OPTIONS });
}

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  /** pino level, or `silent`. @default "info" */
  level?: string;
  /** Base fields on every line (e.g. `{ node: "node-0" }`). @default {} */
  base?: Record<string, unknown>;
  /** Where lines go. @default stdout, in {@link LoggerOptions.format} */
  destination?: DestinationStream;
  /** The format on stdout, when no destination is given. @default "json" */
  format?: LogFormat;
}

/** Create a node's root logger. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { ...options.base },
      redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination ?? (options.format === 'pretty' ? createLogDestination('pretty') : undefined),
  );
}

/** Lines held back by {@link holdLines} at most; past this they are written, so that none is lost. */
export const HELD_LINES_MAX = 10_000;

/** A destination that holds its lines until {@link HeldDestination.release}. */
export interface HeldDestination extends DestinationStream {
  /** Write the held lines in order; later lines go straight through. Idempotent. */
  release(): void;
}

/**
 * Hold the lines written to `target` until released: `quorumkeep local` prints where everything
 * listens before the nodes' start-up lines (src/node/local.ts).
 */
export function holdLines(target: DestinationStream, maxLines = HELD_LINES_MAX): HeldDestination {
  let held: string[] | undefined = [];
  const release = () => {
    const lines = held;
    held = undefined;
    for (const line of lines ?? []) target.write(line);
  };
  return {
    write(line: string) {
      if (held === undefined) return target.write(line);
      held.push(line);
      if (held.length >= maxLines) release();
    },
    release,
  };
}

/** What emits a process's warnings (the CLI passes `process`). */
export interface WarningSource {
  on(event: 'warning', listener: (warning: Error) => void): unknown;
  removeAllListeners(event: 'warning'): unknown;
}

/**
 * Send the process's warnings (Node's own, such as an ExperimentalWarning or a DeprecationWarning,
 * and `process.emitWarning`'s) to `logger` at `warn`, instead of Node's plain text on stderr, so
 * that the log stays in one format. Node prints them through a listener of its own: it is removed.
 */
export function logProcessWarnings(source: WarningSource, logger: Logger): void {
  source.removeAllListeners('warning');
  source.on('warning', (warning) => {
    const { code } = warning as Error & { code?: string };
    logger.warn({ warning: warning.name, ...(code !== undefined ? { code } : {}), detail: warning.message }, 'process warning');
  });
}
