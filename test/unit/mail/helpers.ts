/** Shared pieces of the mail tests: a logger whose lines the test reads, and mailer options. */
export { captureLogger } from '../../utils/log.ts';
import type { MailerOptions } from '../../../src/mail/index.ts';

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
