/** A pino logger writing into memory, for tests that read what was logged. */
import { createLogger, type Logger } from '../../src/log/index.ts';

/** `raw()` is everything written, `lines()` the parsed lines. */
export function captureLogger(): { logger: Logger; raw(): string; lines(): Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const logger = createLogger({ level: 'info', destination: { write: (line: string) => void chunks.push(line) } });
  return {
    logger,
    raw: () => chunks.join(''),
    lines: () => chunks.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
