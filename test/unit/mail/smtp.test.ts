/**
 * The SMTP transport against real servers on 127.0.0.1: the test mailbox (delivery, both parts, the log
 * line), a closed port and a silent server (AppError + warn line), AUTH only with a user, and TLS
 * certificate checking switched by `allowSelfSigned`.
 */
import { createServer, type Socket } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.ts';
import { createMailer, otpMail, permitMail, type SmtpOptions } from '../../../src/mail/index.ts';
import { startMailbox } from '../../../src/testing/mailbox.ts';
import { getFreePorts } from '../../../src/testing/ports.ts';
import { cleanupStack } from '../../utils/temp.ts';
import { captureLogger, mailerOptions } from './helpers.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const TO = 'bob.private@example.net';
const CODE = '271828';

function smtpMailer(smtp: Partial<SmtpOptions>, sendTimeoutMs?: number) {
  const log = captureLogger();
  const mailer = createMailer(
    mailerOptions({
      transport: 'smtp',
      smtp: { host: '127.0.0.1', port: 25, secure: false, user: '', pass: '', allowSelfSigned: false, ...smtp },
      ...(sendTimeoutMs !== undefined && { sendTimeoutMs }),
    }),
    { logger: log.logger },
  );
  stack.push(() => mailer.close());
  return { log, mailer };
}

const resetMail = () => ({ to: TO, category: 'otp-reset', ...otpMail({ purpose: 'reset', code: CODE, ttlMinutes: 10, publicUrl: 'https://keep.example.net' }) });

/** An SMTP server of our own, for what the test mailbox does not do (AUTH, TLS); counts accepted messages. */
async function startServer(options: SMTPServerOptions) {
  const accepted: string[] = [];
  const server = new SMTPServer({
    logger: false,
    disabledCommands: ['STARTTLS'],
    ...options,
    onData(stream, session, callback) {
      stream.resume();
      stream.on('end', () => {
        accepted.push(session.envelope.rcptTo.map((r) => r.address).join(','));
        callback();
      });
    },
  });
  // A refused TLS handshake is reported as a server 'error' event; the client side is what we test.
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  stack.push(() => new Promise<void>((r) => server.close(() => r())));
  const addr = server.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no port');
  return { port: addr.port, accepted };
}

describe('smtp transport', () => {
  it('delivers a message with a text and an HTML part to a real SMTP server', async () => {
    const mailbox = await startMailbox();
    stack.push(() => mailbox.close());
    const { log, mailer } = smtpMailer({ host: mailbox.host, port: mailbox.port });

    const message = resetMail();
    const sent = await mailer.send(message);
    const mail = await mailbox.waitFor((m) => m.to.includes(TO));

    expect(mail.from).toMatch(/^"?quorumkeep"? <no-reply@quorumkeep\.test>$/);
    expect(mail.subject).toBe('Reset your quorumkeep password');
    expect(mail.text).toContain(CODE);
    expect(mail.html).toContain(CODE);
    expect(mail.html).toContain('<html lang="en">');
    expect(mail.raw).toMatch(/Content-Type: multipart\/alternative/);
    expect(mail.raw).toContain(`Message-ID: ${sent.messageId}`);
    expect(sent.file).toBeUndefined();

    expect(log.lines()).toEqual([
      { level: 30, time: expect.any(String), module: 'mail', category: 'otp-reset', toDomain: 'example.net', messageId: sent.messageId, transport: 'smtp', msg: 'mail sent' },
    ]);
    expect(log.raw()).not.toContain('bob.private');
    expect(log.raw()).not.toContain(CODE);
  });

  it('sends several messages over the pool', async () => {
    const mailbox = await startMailbox();
    stack.push(() => mailbox.close());
    const { mailer } = smtpMailer({ host: mailbox.host, port: mailbox.port });
    const link = 'https://keep.example.net/web2/confirm?permitId=7&token=abc';
    await Promise.all([
      mailer.send(resetMail()),
      mailer.send({ to: 'carol@example.net', category: 'permit-transfer', ...permitMail({ action: 'transfer', link, expiresAt: new Date(), summary: 'Secret 42' }) }),
      mailer.send({ ...resetMail(), to: 'dave@example.net' }),
    ]);
    await mailbox.waitFor(() => mailbox.messages.length === 3);
    expect(mailbox.to('carol@example.net')[0]?.text).toContain(link);
  });

  it('fails with AppError INTERNAL and a warn line when nothing listens on the port', async () => {
    const [port] = await getFreePorts(1);
    const { log, mailer } = smtpMailer({ port: port! });

    const err = await mailer.send(resetMail()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'INTERNAL', message: 'Mail delivery failed', status: 500 });
    expect(log.lines()).toEqual([
      expect.objectContaining({ level: 40, msg: 'mail delivery failed', module: 'mail', category: 'otp-reset', toDomain: 'example.net', transport: 'smtp', originalCode: 'ECONNREFUSED' }),
    ]);
    expect(log.raw()).not.toContain('bob.private');
    expect(log.raw()).not.toContain(CODE);
  });

  it('gives up after sendTimeoutMs on a server that never greets', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((s) => sockets.add(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    stack.push(() => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      silent.close(() => r());
    }));
    const addr = silent.address();
    if (!addr || typeof addr === 'string') throw new Error('no port');
    const { log, mailer } = smtpMailer({ port: addr.port }, 300);

    const started = performance.now();
    await expect(mailer.send(resetMail())).rejects.toMatchObject({ code: 'INTERNAL' });
    expect(performance.now() - started).toBeLessThan(5000);
    expect(log.lines()).toEqual([expect.objectContaining({ level: 40, msg: 'mail delivery failed', errorCode: 'EABORT' })]);
  });

  it('authenticates only when a user is configured, and never logs the password', async () => {
    const logins: Array<{ username: string | undefined; password: string | undefined }> = [];
    const server = await startServer({
      authOptional: true,
      allowInsecureAuth: true,
      onAuth(auth, _session, callback) {
        logins.push({ username: auth.username ?? undefined, password: auth.password ?? undefined });
        callback(null, { user: auth.username });
      },
    });

    const anonymous = smtpMailer({ port: server.port });
    await anonymous.mailer.send(resetMail());
    expect(logins).toEqual([]);

    const withUser = smtpMailer({ port: server.port, user: 'mailer', pass: 'smtp-pass-123' });
    await withUser.mailer.send(resetMail());
    expect(logins).toEqual([{ username: 'mailer', password: 'smtp-pass-123' }]);
    expect(server.accepted).toEqual([TO, TO]);
    expect(withUser.log.raw()).not.toContain('smtp-pass-123');
  });

  it('checks the TLS certificate unless allowSelfSigned', async () => {
    // smtp-server's built-in certificate is one no client trusts (self-signed).
    const server = await startServer({ secure: true, authOptional: true });

    const strict = smtpMailer({ port: server.port, secure: true });
    await expect(strict.mailer.send(resetMail())).rejects.toMatchObject({ code: 'INTERNAL' });
    expect(strict.log.lines()).toEqual([expect.objectContaining({ level: 40, msg: 'mail delivery failed', originalCode: expect.any(String) })]);
    expect(server.accepted).toEqual([]);

    const lenient = smtpMailer({ port: server.port, secure: true, allowSelfSigned: true });
    await lenient.mailer.send(resetMail());
    expect(server.accepted).toEqual([TO]);
  });
});
