/**
 * A real SMTP server on 127.0.0.1 that catches every message the cluster sends (smtp-server), parsed
 * with mailparser, so tests read mail exactly as a user's mail client would receive it.
 */
import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';
import { waitFor } from './wait.ts';

/** One caught message. */
export interface CaughtMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  /** The raw RFC 5322 source. */
  raw: string;
  receivedAt: number;
}

/** The mailbox of a local cluster. */
export interface Mailbox {
  /** SMTP host and port the nodes send to. */
  readonly host: string;
  readonly port: number;
  /** Every message caught so far, oldest first. */
  readonly messages: readonly CaughtMail[];
  /** Messages to an address (case-insensitive). */
  to(address: string): CaughtMail[];
  /** Wait for a message matching `predicate` (default: any) to arrive after `since` messages. */
  waitFor(predicate?: (m: CaughtMail) => boolean, options?: { timeoutMs?: number }): Promise<CaughtMail>;
  /** Forget caught messages. */
  clear(): void;
  close(): Promise<void>;
}

/** Start a mailbox on 127.0.0.1 (random port unless given). */
export async function startMailbox(options: { port?: number } = {}): Promise<Mailbox> {
  const messages: CaughtMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    size: 10 * 1024 * 1024,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        simpleParser(raw)
          .then((parsed) => {
            const rcpt = session.envelope.rcptTo.map((r) => r.address.toLowerCase());
            messages.push({
              from: parsed.from?.text ?? '',
              to: rcpt,
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              html: typeof parsed.html === 'string' ? parsed.html : '',
              raw: raw.toString('utf8'),
              receivedAt: Date.now(),
            });
            callback();
          })
          .catch((err: Error) => callback(err));
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const addr = server.server.address();
  if (!addr || typeof addr === 'string') throw new Error('mailbox did not bind');
  let closed = false;
  return {
    host: '127.0.0.1',
    port: addr.port,
    messages,
    to: (address) => messages.filter((m) => m.to.includes(address.toLowerCase())),
    async waitFor(predicate = () => true, opts = {}) {
      return waitFor(() => messages.find(predicate), { timeoutMs: opts.timeoutMs ?? 5000, description: 'mail to arrive' });
    },
    clear() {
      messages.length = 0;
    },
    async close() {
      if (closed) return;
      closed = true;
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
