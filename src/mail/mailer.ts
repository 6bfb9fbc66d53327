/**
 * Outgoing mail (docs/mail.md). The only importer of nodemailer (CONTRIBUTING.md, "Where things live").
 *
 * Two transports:
 * - `outbox` (the default): the full RFC 5322 message is built by nodemailer's stream transport and
 *   written as one `.eml` file under the outbox dir, so a fresh node needs no mail server;
 * - `smtp`: a pooled nodemailer SMTP transport.
 *
 * Each send logs one info line naming the category and the recipient's domain only — never the local
 * part, the subject, the body or a code (CONTRIBUTING.md rule 9). See docs/mail.md.
 */
import { randomBytes } from 'node:crypto';
import type { OutgoingMail } from '../core/mail-port.ts';
import { chmod, mkdir, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createTransport, type SendMailOptions } from 'nodemailer';
import { AppError } from '../errors/index.ts';
import type { Logger } from '../log/index.ts';

/** Deadline of one SMTP send, queueing in the pool included, in ms. */
export const DEFAULT_SEND_TIMEOUT_MS = 10_000;
/** Time to open the TCP (or TLS) connection to the SMTP server. */
const SMTP_CONNECTION_TIMEOUT_MS = 10_000;
/** Time from connect to the server's 220 greeting. */
const SMTP_GREETING_TIMEOUT_MS = 10_000;
/** Inactivity on an SMTP socket before it is closed. */
const SMTP_SOCKET_TIMEOUT_MS = 30_000;
/** Concurrent connections of the SMTP pool. */
const SMTP_MAX_CONNECTIONS = 5;
/** File mode of the outbox dir and of each `.eml` file. */
const OUTBOX_DIR_MODE = 0o700;
const OUTBOX_FILE_MODE = 0o600;

/** SMTP settings, as in the config's `mail.smtp`. */
export interface SmtpOptions {
  host: string;
  port: number;
  /** TLS from the first byte (port 465); otherwise STARTTLS when the server offers it. */
  secure: boolean;
  /** Empty: no AUTH. */
  user: string;
  /** Secret: never logged. */
  pass: string;
  /** Accept self-signed certificates (local testing only). */
  allowSelfSigned: boolean;
}

/** Options of {@link createMailer}. */
export interface MailerOptions {
  /** `outbox` writes one `.eml` per message under {@link MailerOptions.outboxDir}; `smtp` sends. */
  transport: 'outbox' | 'smtp';
  /** Sender address, e.g. `quorumkeep <no-reply@example.org>`. */
  from: string;
  /** Directory of the outbox transport (created 0700). Unused by `smtp`. */
  outboxDir: string;
  /** SMTP settings. Unused by `outbox`. */
  smtp: SmtpOptions;
  /** Deadline of one SMTP send, in ms. @default 10000 */
  sendTimeoutMs?: number;
}

/** Live dependencies of {@link createMailer}. */
export interface MailerDeps {
  logger: Logger;
  /** Wall clock in ms: the Date header and the outbox file name. @default Date.now */
  clock?: () => number;
}

export type { OutgoingMail } from '../core/mail-port.ts';

/** What a send produced. */
export interface SentMail {
  /** The Message-ID header, with its angle brackets. */
  messageId: string;
  /** Outbox transport: absolute path of the `.eml` file. */
  file?: string;
}

/** Sends mail. */
export interface Mailer {
  /**
   * Send one message. Rejects with `AppError('INTERNAL', 'Mail delivery failed')` (after logging a warn
   * line) when the message could not be written or handed to the SMTP server in time.
   */
  send(message: OutgoingMail): Promise<SentMail>;
  /** Close the SMTP pool (deliveries in progress finish); later sends fail. Idempotent. */
  close(): Promise<void>;
}

/** A transport as the mailer uses it: hand over one composed message. */
interface Delivery {
  deliver(mail: SendMailOptions, category: string, now: number): Promise<SentMail>;
  close(): void;
}

/** An error the mailer raises itself, with a code for the warn line. */
function mailError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** Create the mailer for the configured transport. */
export function createMailer(options: MailerOptions, deps: MailerDeps): Mailer {
  const log = deps.logger.child({ module: 'mail' });
  const clock = deps.clock ?? Date.now;
  const transport = options.transport;
  const delivery =
    transport === 'smtp'
      ? createSmtpDelivery(options.smtp, options.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS, log)
      : createOutboxDelivery(options.outboxDir);
  let closed = false;

  return {
    async send(message) {
      const category = safeCategory(message.category);
      const toDomain = domainOf(message.to);
      let sent: SentMail;
      try {
        if (closed) throw mailError('CLOSED', 'mailer is closed');
        if (toDomain === undefined) throw mailError('INVALID_RECIPIENT', 'recipient is not one bare address');
        const now = clock();
        sent = await delivery.deliver(
          { from: options.from, to: message.to, subject: message.subject, text: message.text, html: message.html, date: new Date(now) },
          category,
          now,
        );
      } catch (err) {
        // Only codes: an SMTP reply or an error message may echo the recipient's address.
        log.warn({ category, toDomain, transport, ...failureFields(err) }, 'mail delivery failed');
        throw new AppError('INTERNAL', 'Mail delivery failed', undefined, { cause: err });
      }
      log.info({ category, toDomain, messageId: sent.messageId, transport, ...(sent.file !== undefined && { file: sent.file }) }, 'mail sent');
      return sent;
    },
    async close() {
      if (closed) return;
      closed = true;
      delivery.close();
    },
  };
}

function createOutboxDelivery(outboxDir: string): Delivery {
  // Builds the message and hands it back as a Buffer; nothing leaves the process.
  const transporter = createTransport({ streamTransport: true, buffer: true, newline: 'windows', disableFileAccess: true, disableUrlAccess: true });
  return {
    async deliver(mail, category, now) {
      const info = await transporter.sendMail(mail);
      if (!Buffer.isBuffer(info.message)) throw mailError('ESTREAM', 'stream transport returned no buffer');
      const stamp = new Date(now).toISOString().replaceAll(':', '-');
      const name = `${stamp}-${category}-${randomBytes(8).toString('hex')}.eml`;
      const file = await writeAtomically(outboxDir, name, info.message);
      return { messageId: info.messageId, file };
    },
    close() {},
  };
}

/**
 * Write `data` as `dir/name` (mode 0600) so a reader of the outbox sees either nothing or the whole
 * message: a dot-named temp file, fsync'd, then renamed into place.
 */
async function writeAtomically(dir: string, name: string, data: Buffer): Promise<string> {
  const created = await mkdir(dir, { recursive: true, mode: OUTBOX_DIR_MODE });
  if (created !== undefined) await chmod(dir, OUTBOX_DIR_MODE); // the umask may have narrowed it
  const file = join(dir, name);
  const temp = join(dir, `.${name}.tmp`);
  try {
    const handle = await open(temp, 'wx', OUTBOX_FILE_MODE);
    try {
      await handle.chmod(OUTBOX_FILE_MODE);
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  return file;
}

function createSmtpDelivery(smtp: SmtpOptions, sendTimeoutMs: number, log: Logger): Delivery {
  const transporter = createTransport({
    pool: true,
    host: smtp.host,
    port: smtp.port,
    secure: smtp.secure,
    auth: smtp.user !== '' ? { user: smtp.user, pass: smtp.pass } : undefined,
    tls: { rejectUnauthorized: !smtp.allowSelfSigned },
    connectionTimeout: SMTP_CONNECTION_TIMEOUT_MS,
    greetingTimeout: SMTP_GREETING_TIMEOUT_MS,
    socketTimeout: SMTP_SOCKET_TIMEOUT_MS,
    maxConnections: SMTP_MAX_CONNECTIONS,
    disableFileAccess: true,
    disableUrlAccess: true,
    logger: false,
  });
  // A transport-level error with no listener would crash the process; sends report their own.
  transporter.on('error', (err: unknown) => log.warn({ transport: 'smtp', ...failureFields(err) }, 'mail transport error'));
  return {
    async deliver(mail) {
      // The deadline covers the whole send (queue, connect, SMTP dialogue): a server that trickles its
      // replies never trips a socket timeout, the abort closes its connection.
      const info = await transporter.sendMail({ ...mail, signal: AbortSignal.timeout(sendTimeoutMs) });
      return { messageId: info.messageId };
    },
    close() {
      transporter.close();
    },
  };
}

/** The category as it may appear in a file name and a log line. */
function safeCategory(category: string): string {
  const safe = category.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40);
  return safe === '' ? 'mail' : safe;
}

/** One bare address: no display name, no list, no whitespace, no quoting. */
const BARE_ADDRESS = /^[^\s@<>,;:"()[\]\\]+@[^\s@<>,;:"()[\]\\]+$/;

/** The lowercased domain of a bare address; `undefined` for anything else. */
function domainOf(to: string): string | undefined {
  return BARE_ADDRESS.test(to) ? to.slice(to.indexOf('@') + 1).toLowerCase() : undefined;
}

/** The loggable facts of a failure: codes only. */
function failureFields(err: unknown): { errorCode: string; originalCode?: string; responseCode?: number } {
  const e = (typeof err === 'object' && err !== null ? err : {}) as { code?: unknown; originalCode?: unknown; responseCode?: unknown };
  return {
    errorCode: typeof e.code === 'string' ? e.code : 'UNKNOWN',
    ...(typeof e.originalCode === 'string' && { originalCode: e.originalCode }),
    ...(typeof e.responseCode === 'number' && { responseCode: e.responseCode }),
  };
}
