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
  /**
   * Take the server down, as a mail server that stopped: from the call the port refuses connections,
   * and open ones are cut; resolves once none is left. Caught messages stay.
   */
  down(): Promise<void>;
  /** Serve again on the same port after {@link Mailbox.down}. */
  up(): Promise<void>;
  close(): Promise<void>;
}

/** Options of {@link startMailbox}. */
export interface MailboxOptions {
  /** Port on 127.0.0.1. @default a free one */
  port?: number;
  /**
   * Called with each message before the server accepts it: the sender waits for it (a test holds a
   * message in flight), and a rejection refuses the message with a temporary failure (451), uncaught.
   */
  beforeAccept?: (mail: CaughtMail) => Promise<void> | void;
}

/** How long a closing server lets open connections finish before it cuts them, ms. */
const CLOSE_GRACE_MS = 100;

/** Start a mailbox on 127.0.0.1 (random port unless given). */
export async function startMailbox(options: MailboxOptions = {}): Promise<Mailbox> {
  const messages: CaughtMail[] = [];
  const createServer = () =>
    new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      size: 10 * 1024 * 1024,
      closeTimeout: CLOSE_GRACE_MS,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks);
          simpleParser(raw)
            .then(async (parsed) => {
              const mail: CaughtMail = {
                from: parsed.from?.text ?? '',
                to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
                subject: parsed.subject ?? '',
                text: parsed.text ?? '',
                html: typeof parsed.html === 'string' ? parsed.html : '',
                raw: raw.toString('utf8'),
                receivedAt: Date.now(),
              };
              try {
                await options.beforeAccept?.(mail);
              } catch {
                return callback(Object.assign(new Error('Message refused for now'), { responseCode: 451 }));
              }
              messages.push(mail);
              callback();
            })
            .catch((err: Error) => callback(err));
        });
      },
    });
  const listen = (server: SMTPServer, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.server.off('error', reject);
        const addr = server.server.address();
        if (!addr || typeof addr === 'string') reject(new Error('mailbox did not bind'));
        else resolve(addr.port);
      });
    });
  const shut = (server: SMTPServer) => new Promise<void>((r) => server.close(() => r()));

  let server: SMTPServer | undefined = createServer();
  const port = await listen(server, options.port ?? 0);
  let closed = false;
  const down = async () => {
    const s = server;
    server = undefined;
    if (s) await shut(s);
  };
  return {
    host: '127.0.0.1',
    port,
    messages,
    to: (address) => messages.filter((m) => m.to.includes(address.toLowerCase())),
    async waitFor(predicate = () => true, opts = {}) {
      return waitFor(() => messages.find(predicate), { timeoutMs: opts.timeoutMs ?? 5000, description: 'mail to arrive' });
    },
    clear() {
      messages.length = 0;
    },
    down,
    async up() {
      if (closed || server) return;
      server = createServer();
      await listen(server, port);
    },
    async close() {
      if (closed) return;
      closed = true;
      await down();
    },
  };
}
