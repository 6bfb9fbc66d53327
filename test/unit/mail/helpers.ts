/** Shared pieces of the mail tests: a logger whose lines the test reads, and mailer options. */
import { createLogger, type Logger } from '../../../src/log/index.ts';
import type { MailerOptions } from '../../../src/mail/index.ts';

/** A pino logger writing into memory: `raw()` is everything written, `lines()` the parsed lines. */
export function captureLogger(): { logger: Logger; raw(): string; lines(): Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const logger = createLogger({ level: 'info', destination: { write: (line: string) => void chunks.push(line) } });
  return {
    logger,
    raw: () => chunks.join(''),
    lines: () => chunks.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** Mailer options with SMTP defaults that no test relies on. */
export function mailerOptions(overrides: Partial<MailerOptions>): MailerOptions {
  return {
    transport: 'outbox',
    from: 'quorumkeep <no-reply@quorumkeep.test>',
    outboxDir: '/nonexistent',
    smtp: { host: '127.0.0.1', port: 587, secure: false, user: '', pass: '', allowSelfSigned: false },
    ...overrides,
  };
}
