/**
 * Message templates: subjects, the code or link in both parts, expiry wording, and HTML that escapes
 * every interpolated value and loads nothing from outside.
 */
import { describe, expect, it } from 'vitest';
import { escapeHtml, otpMail, permitMail, type OtpPurpose, type PermitAction, type RenderedMail } from '../../../src/mail/index.ts';

const PUBLIC_URL = 'https://keep.example.org';
const LINK = 'https://keep.example.org/web2/confirm?permitId=42&token=tok_AbC-123';
const EXPIRES = new Date(Date.UTC(2030, 0, 2, 3, 4, 59));
const XSS = '<script>alert("x")</script>';

/** Structural rules every HTML part follows. */
function expectWellFormedHtml(mail: RenderedMail): void {
  expect(mail.text.length).toBeGreaterThan(0);
  expect(mail.html).toMatch(/^<!DOCTYPE html>\n<html lang="en">/);
  expect(mail.html).toContain('<meta charset="utf-8">');
  expect(mail.html).not.toMatch(/<(style|script|img|link|iframe|object)\b/i);
  expect(mail.html).not.toMatch(/\b(src|srcset|background)=/i);
  expect(mail.html).not.toMatch(/url\(/i);
  expect(mail.html).toContain('quorumkeep');
  expect(mail.text).toContain('quorumkeep');
}

describe('otpMail', () => {
  const cases: Array<[OtpPurpose, string]> = [
    ['verify', 'Your quorumkeep verification code'],
    ['reset', 'Reset your quorumkeep password'],
    ['delete', 'Confirm deletion of your quorumkeep account'],
  ];

  it.each(cases)('%s: subject, code in both parts, expiry, single use, what if not you', (purpose, subject) => {
    const mail = otpMail({ purpose, code: '012345', ttlMinutes: 10, publicUrl: PUBLIC_URL });
    expect(mail.subject).toBe(subject);
    expectWellFormedHtml(mail);
    for (const part of [mail.text, mail.html]) {
      expect(part).toContain('012345');
      expect(part).toContain('expires in 10 minutes');
      expect(part).toContain('used only once');
      expect(part).toMatch(/If you did not/);
      expect(part).toContain(PUBLIC_URL);
    }
    expect(mail.text).toMatch(/^ {4}012345$/m); // the code on a line of its own
    expect(mail.html).toContain(`href="${PUBLIC_URL}"`);
  });

  it('warns that deletion is final, and says a password change is due if it was not you', () => {
    const mail = otpMail({ purpose: 'delete', code: '111111', ttlMinutes: 10, publicUrl: PUBLIC_URL });
    for (const part of [mail.text, mail.html]) {
      expect(part).toContain('deleted for good');
      expect(part).toContain('change your password');
    }
  });

  it('says "1 minute", not "1 minutes"', () => {
    expect(otpMail({ purpose: 'verify', code: '1', ttlMinutes: 1, publicUrl: PUBLIC_URL }).text).toContain('expires in 1 minute ');
  });

  it('escapes interpolated values in the HTML and keeps them as is in the text', () => {
    const mail = otpMail({ purpose: 'verify', code: XSS, ttlMinutes: 10, publicUrl: `https://x.example/"><script>` });
    expect(mail.html).not.toContain('<script>');
    expect(mail.html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(mail.text).toContain(XSS);
  });

  it('shows a public URL that is not http(s) as text, never as a link', () => {
    const mail = otpMail({ purpose: 'verify', code: '123456', ttlMinutes: 10, publicUrl: 'javascript:alert(1)' });
    expect(mail.html).not.toContain('href="javascript:');
    expect(mail.html).toContain('javascript:alert(1)');
  });
});

describe('permitMail', () => {
  const cases: Array<[PermitAction, RegExp]> = [
    ['rotate', /key rotation/],
    ['transfer', /ownership transfer/],
    ['delegate', /delegate change/],
  ];

  it.each(cases)('%s: subject, summary, link in both parts, expiry in UTC', (action, subject) => {
    const mail = permitMail({ action, link: LINK, expiresAt: EXPIRES, summary: 'Secret 42: new owner principal 17' });
    expect(mail.subject).toMatch(subject);
    expect(mail.subject).toContain('quorumkeep');
    expectWellFormedHtml(mail);
    expect(mail.text).toContain(`\n${LINK}\n`); // the plain link on a line of its own
    const escapedLink = LINK.replace('&', '&amp;');
    expect(mail.html).toContain(`href="${escapedLink}"`);
    expect(mail.html).not.toContain(LINK); // the raw `&` never appears in the HTML
    for (const part of [mail.text, mail.html]) {
      expect(part).toContain('Secret 42: new owner principal 17');
      expect(part).toContain('2030-01-02 03:04 UTC');
      expect(part).toContain('works only once');
      expect(part).toMatch(/If you did not ask for this change/);
    }
  });

  it('renders the link as a button-like anchor', () => {
    const mail = permitMail({ action: 'rotate', link: LINK, expiresAt: EXPIRES, summary: 'new key' });
    expect(mail.html).toMatch(/<a href="[^"]+" style="display:inline-block;[^"]*background-color:[^"]*">Confirm key rotation<\/a>/);
    expect(mail.html).toContain('every session of the account ends');
  });

  it('escapes the summary and the link in the HTML', () => {
    const link = 'https://keep.example.org/web2/confirm?permitId=1&token="><script>x</script>';
    const mail = permitMail({ action: 'delegate', link, expiresAt: EXPIRES, summary: XSS });
    expect(mail.html).not.toContain('<script>');
    expect(mail.html).not.toMatch(/href="[^"]*"[^ >]/); // no attribute broken out of
    expect(mail.html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(mail.text).toContain(XSS);
  });

  it('refuses a link that is not http(s), and an invalid expiry', () => {
    expect(() => permitMail({ action: 'rotate', link: 'javascript:alert(1)', expiresAt: EXPIRES, summary: 's' })).toThrow(TypeError);
    expect(() => permitMail({ action: 'rotate', link: 'not a url', expiresAt: EXPIRES, summary: 's' })).toThrow(TypeError);
    expect(() => permitMail({ action: 'rotate', link: LINK, expiresAt: new Date(Number.NaN), summary: 's' })).toThrow(RangeError);
  });
});

describe('escapeHtml', () => {
  it('escapes the five HTML-significant characters and nothing else', () => {
    expect(escapeHtml(`<a href="x" title='y'>&amp;</a> é ✓`)).toBe('&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt; é ✓');
  });
});
