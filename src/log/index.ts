/**
 * Logging (pino). One root logger per node; modules take a child with `{ module }`. Messages are
 * constant strings with context objects. Known secret-bearing keys are redacted as a second line of
 * defence — the first is never passing them (CONTRIBUTING.md rule 9).
 */
import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger } from 'pino';

/** Keys whose values are never written to a log line. */
export const REDACTED_LOG_PATHS = [
  'password', 'newPassword', 'otp', 'token', 'sessionToken', 'signature', 'share', 'shares', 'seed',
  'secretKey', 'privateKey', 'plainText', 'authorization', 'adminToken',
  '*.password', '*.newPassword', '*.otp', '*.token', '*.sessionToken', '*.share', '*.seed', '*.secretKey',
  '*.privateKey', '*.plainText', 'req.headers.authorization', 'headers.authorization',
];

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  /** pino level, or `silent`. @default "info" */
  level?: string;
  /** Base fields on every line (e.g. `{ node: "node-0" }`). @default {} */
  base?: Record<string, unknown>;
  /** Where lines go. @default stdout */
  destination?: DestinationStream;
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
    options.destination,
  );
}
