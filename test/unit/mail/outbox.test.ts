/**
 * The outbox transport: one complete .eml per message (0600, in a 0700 dir, written atomically), read
 * back with mailparser as a mail client would, and one log line that names the domain only.
 */
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { afterEach, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.ts';
import { createMailer, otpMail } from '../../../src/mail/index.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';
import { captureLogger, mailerOptions } from './helpers.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const NOW = Date.UTC(2030, 0, 2, 3, 4, 5, 678);
const TO = 'alice.private@example.org';
const CODE = '493817';

async function setup() {
  const outboxDir = join(await tempDir(stack, 'qk-mail-'), 'data', 'outbox');
  const log = captureLogger();
  const mailer = createMailer(mailerOptions({ transport: 'outbox', outboxDir }), { logger: log.logger, clock: () => NOW });
  stack.push(() => mailer.close());
  return { outboxDir, log, mailer };
}

const verifyMail = () => ({ to: TO, category: 'otp-verify', ...otpMail({ purpose: 'verify', code: CODE, ttlMinutes: 10, publicUrl: 'https://keep.example.org' }) });

describe('outbox transport', () => {
  it('writes exactly one .eml, 0600 in a 0700 dir, named <time>-<category>-<hex>.eml', async () => {
    const { outboxDir, mailer } = await setup();
    const sent = await mailer.send(verifyMail());

    const entries = await readdir(outboxDir);
    expect(entries).toHaveLength(1); // no temp file left behind either
    const name = entries[0]!;
    expect(name).toMatch(/^2030-01-02T03-04-05\.678Z-otp-verify-[0-9a-f]{16}\.eml$/);
    expect(sent.file).toBe(join(outboxDir, name));
    expect((await stat(join(outboxDir, name))).mode & 0o777).toBe(0o600);
    expect((await stat(outboxDir)).mode & 0o777).toBe(0o700);
  });

  it('writes a complete RFC 5322 message that mailparser reads back with both parts', async () => {
    const { mailer } = await setup();
    const message = verifyMail();
    const sent = await mailer.send(message);

    const raw = await readFile(sent.file!);
    expect(raw.toString('latin1')).toContain('\r\n'); // CRLF line ends
    const parsed = await simpleParser(raw);
    expect(parsed.from?.value).toEqual([{ address: 'no-reply@quorumkeep.test', name: 'quorumkeep' }]);
    expect(parsed.to && !Array.isArray(parsed.to) ? parsed.to.value.map((a) => a.address) : []).toEqual([TO]);
    expect(parsed.subject).toBe('Your quorumkeep verification code');
    expect(parsed.messageId).toBe(sent.messageId);
    expect(parsed.date?.getTime()).toBe(Math.floor(NOW / 1000) * 1000);
    expect(parsed.text).toContain(CODE);
    expect(parsed.text?.trim()).toBe(message.text.trim());
    expect(parsed.html).toContain(CODE);
    expect(parsed.html).toContain('<meta charset="utf-8">');
  });

  it('logs one info line with the domain, never the local part, subject or code', async () => {
    const { log, mailer } = await setup();
    const sent = await mailer.send(verifyMail());

    const lines = log.lines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'mail sent',
      module: 'mail',
      category: 'otp-verify',
      toDomain: 'example.org',
      messageId: sent.messageId,
      transport: 'outbox',
      file: sent.file,
    });
    const raw = log.raw();
    expect(raw).not.toContain('alice.private');
    expect(raw).not.toContain(CODE);
    expect(raw).not.toContain('verification code');
  });

  it('gives every message its own file', async () => {
    const { outboxDir, mailer } = await setup();
    const a = await mailer.send(verifyMail());
    const b = await mailer.send({ ...verifyMail(), category: 'otp-reset' });
    expect(a.file).not.toBe(b.file);
    expect(a.messageId).not.toBe(b.messageId);
    expect((await readdir(outboxDir)).sort()).toEqual([a.file, b.file].map((f) => f!.slice(outboxDir.length + 1)).sort());
  });

  it('keeps an odd category to [a-z0-9-] in the file name and the log', async () => {
    const { log, mailer } = await setup();
    const sent = await mailer.send({ ...verifyMail(), category: '../Permit Rotate/' });
    expect(sent.file).toMatch(/-permit-rotate-[0-9a-f]{16}\.eml$/);
    expect(log.lines()[0]).toMatchObject({ category: 'permit-rotate' });
  });

  it('fails with AppError INTERNAL and a warn line when the file cannot be written', async () => {
    const base = await tempDir(stack, 'qk-mail-');
    await writeFile(join(base, 'not-a-dir'), '');
    const log = captureLogger();
    const mailer = createMailer(mailerOptions({ outboxDir: join(base, 'not-a-dir', 'outbox') }), { logger: log.logger });

    const err = await mailer.send(verifyMail()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'INTERNAL', message: 'Mail delivery failed' });
    expect(log.lines()).toEqual([
      expect.objectContaining({ level: 40, msg: 'mail delivery failed', module: 'mail', category: 'otp-verify', toDomain: 'example.org', transport: 'outbox', errorCode: 'ENOTDIR' }),
    ]);
    expect(log.raw()).not.toContain('alice.private');
    expect(log.raw()).not.toContain(CODE);
  });

  it('refuses anything but one bare recipient address, writing nothing', async () => {
    const { outboxDir, log, mailer } = await setup();
    for (const to of ['a@example.org, b@example.org', 'Alice <a@example.org>', 'a@example.org\r\nBcc: b@example.org', 'no-at-sign', '']) {
      await expect(mailer.send({ ...verifyMail(), to })).rejects.toMatchObject({ code: 'INTERNAL' });
    }
    await expect(readdir(outboxDir)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(log.lines().map((l) => l.errorCode)).toEqual(Array(5).fill('INVALID_RECIPIENT'));
  });

  it('fails sends after close', async () => {
    const { log, mailer } = await setup();
    await mailer.close();
    await mailer.close();
    await expect(mailer.send(verifyMail())).rejects.toMatchObject({ code: 'INTERNAL' });
    expect(log.lines()).toEqual([expect.objectContaining({ level: 40, errorCode: 'CLOSED' })]);
  });
});
