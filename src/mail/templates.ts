/**
 * The messages quorumkeep sends. Pure functions: input → `{ subject, text, html }`, every message with a
 * plain-text part and an HTML part saying the same thing.
 *
 * HTML rules: every interpolated value goes through {@link escapeHtml}; inline styles only (mail clients
 * drop `<style>`); no images, fonts or other external resources; `<meta charset="utf-8">` and `lang`.
 */

/** The service name every message carries. */
export const SERVICE_NAME = 'quorumkeep';

/** A rendered message: both parts and the subject. */
export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

/** What a one-time code is for (docs/http.md, "Web2 accounts"). */
export type OtpPurpose = 'verify' | 'reset' | 'delete';

/** Input of {@link otpMail}. */
export interface OtpMailInput {
  purpose: OtpPurpose;
  /** The one-time code (6 digits). */
  code: string;
  /** Minutes until the code expires. */
  ttlMinutes: number;
  /** Public URL of the service, shown in the footer. */
  publicUrl: string;
}

/** An admin change a permit asks for (docs/permits.md). */
export type PermitAction = 'rotate' | 'transfer' | 'delegate';

/** Input of {@link permitMail}. */
export interface PermitMailInput {
  action: PermitAction;
  /** The confirmation link `<publicUrl>/web2/confirm?permitId=…&token=…`; must be http(s). */
  link: string;
  /** When the permit expires. */
  expiresAt: Date;
  /** One line naming the change, e.g. `Secret 42: new owner principal 17`. */
  summary: string;
}

/** Escape text for HTML element content and double-quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ENTITIES[c] ?? c);
}

const HTML_ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

interface OtpWording {
  subject: string;
  heading: string;
  lead: string;
  /** What to do if you did not ask for it. */
  notYou: string;
  /** Said once more before the code, when the action has consequences. */
  warning?: string;
}

const OTP_WORDING: Record<OtpPurpose, OtpWording> = {
  verify: {
    subject: `Your ${SERVICE_NAME} verification code`,
    heading: 'Verify your email address',
    lead: `Use this code to verify the email address of your ${SERVICE_NAME} account:`,
    notYou: `If you did not create a ${SERVICE_NAME} account, you can ignore this email: without the code, the address stays unverified.`,
  },
  reset: {
    subject: `Reset your ${SERVICE_NAME} password`,
    heading: 'Reset your password',
    lead: `Use this code to choose a new password for your ${SERVICE_NAME} account:`,
    notYou: 'If you did not ask to reset your password, you can ignore this email: your password stays unchanged.',
  },
  delete: {
    subject: `Confirm deletion of your ${SERVICE_NAME} account`,
    heading: 'Confirm account deletion',
    lead: `Use this code to confirm that your ${SERVICE_NAME} account should be deleted:`,
    warning: 'Once confirmed, the account is deleted for good and all its sessions end.',
    notYou:
      'If you did not ask to delete your account, do not use or share this code: your account stays as it is. ' +
      'The request was made with your password, so change your password now.',
  },
};

/** A one-time code: email verification, password reset or account deletion. */
export function otpMail(input: OtpMailInput): RenderedMail {
  const w = OTP_WORDING[input.purpose];
  const expiry = `The code expires in ${minutes(input.ttlMinutes)} and can be used only once. Never share it with anyone.`;
  const text = [
    `${SERVICE_NAME}: ${w.heading}`,
    '',
    ...(w.warning ? [w.warning, ''] : []),
    w.lead,
    '',
    `    ${input.code}`,
    '',
    expiry,
    '',
    w.notYou,
    '',
    textFooter(input.publicUrl),
  ].join('\n');
  const body = [
    heading(w.heading),
    ...(w.warning ? [paragraph(escapeHtml(w.warning), 'font-weight:bold;')] : []),
    paragraph(escapeHtml(w.lead)),
    `<p style="margin:24px 0;text-align:center;"><span style="display:inline-block;padding:12px 20px;border:1px solid #d0d7de;border-radius:6px;background-color:#f6f8fa;font-family:Menlo,Consolas,'Courier New',monospace;font-size:32px;font-weight:bold;letter-spacing:6px;color:#1f2328;">${escapeHtml(input.code)}</span></p>`,
    paragraph(escapeHtml(expiry)),
    paragraph(escapeHtml(w.notYou), 'color:#57606a;font-size:14px;'),
  ].join('\n');
  return { subject: w.subject, text, html: layout(w.subject, body, htmlFooter(input.publicUrl)) };
}

interface PermitWording {
  subject: string;
  heading: string;
  explain: string;
  button: string;
}

const PERMIT_WORDING: Record<PermitAction, PermitWording> = {
  rotate: {
    subject: `Confirm the key rotation of your ${SERVICE_NAME} account`,
    heading: 'Confirm key rotation',
    explain: `A request was made to replace the key of your ${SERVICE_NAME} account. Once you confirm, the new key takes effect and every session of the account ends.`,
    button: 'Confirm key rotation',
  },
  transfer: {
    subject: `Confirm the ownership transfer of a ${SERVICE_NAME} secret`,
    heading: 'Confirm ownership transfer',
    explain: `A request was made to transfer one of your ${SERVICE_NAME} secrets to another account. Once you confirm, that account owns the secret and you no longer do.`,
    button: 'Confirm transfer',
  },
  delegate: {
    subject: `Confirm the delegate change of a ${SERVICE_NAME} secret`,
    heading: 'Confirm delegate change',
    explain: `A request was made to change the delegate of one of your ${SERVICE_NAME} secrets: the account that may use the secret besides you. Once you confirm, the change takes effect.`,
    button: 'Confirm delegate change',
  },
};

/**
 * A permit confirmation link for an admin change (docs/permits.md). Throws a `TypeError` when `link` is not
 * an http(s) URL, and a `RangeError` when `expiresAt` is not a valid date.
 */
export function permitMail(input: PermitMailInput): RenderedMail {
  const w = PERMIT_WORDING[input.action];
  if (!isHttpUrl(input.link)) throw new TypeError('permit link must be an http(s) URL');
  const expires = `This link expires at ${utcMinute(input.expiresAt)} and works only once.`;
  const notYou =
    'If you did not ask for this change, do not open the link: nothing changes, and the request expires on its own. ' +
    'Whoever made it had access to your account, so secure it now.';
  const text = [
    `${SERVICE_NAME}: ${w.heading}`,
    '',
    w.explain,
    '',
    `Requested change: ${input.summary}`,
    '',
    'To confirm, open this link:',
    '',
    input.link,
    '',
    expires,
    '',
    notYou,
    '',
    textFooter(new URL(input.link).origin),
  ].join('\n');
  const link = escapeHtml(input.link);
  const body = [
    heading(w.heading),
    paragraph(escapeHtml(w.explain)),
    `<p style="margin:16px 0;padding:12px 16px;border-left:4px solid #d0d7de;background-color:#f6f8fa;">Requested change: <strong>${escapeHtml(input.summary)}</strong></p>`,
    `<p style="margin:24px 0;text-align:center;"><a href="${link}" style="display:inline-block;padding:12px 24px;border-radius:6px;background-color:#1f6feb;color:#ffffff;font-weight:bold;text-decoration:none;">${escapeHtml(w.button)}</a></p>`,
    paragraph(escapeHtml(expires)),
    paragraph(`If the button does not work, copy this link into your browser:<br><a href="${link}" style="color:#1f6feb;word-break:break-all;">${link}</a>`, 'font-size:14px;'),
    paragraph(escapeHtml(notYou), 'color:#57606a;font-size:14px;'),
  ].join('\n');
  return { subject: w.subject, text, html: layout(w.subject, body, htmlFooter(new URL(input.link).origin)) };
}

function minutes(n: number): string {
  return `${n} minute${n === 1 ? '' : 's'}`;
}

/** `2030-01-02 03:04 UTC`. */
function utcMinute(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

/** The public URL without a trailing slash, for display. */
function displayUrl(publicUrl: string): string {
  return publicUrl.replace(/\/+$/, '');
}

function textFooter(publicUrl: string): string {
  return publicUrl ? `-- \nSent by ${SERVICE_NAME} · ${displayUrl(publicUrl)}` : `-- \nSent by ${SERVICE_NAME}`;
}

function htmlFooter(publicUrl: string): string {
  if (!publicUrl) return `Sent by ${SERVICE_NAME}`;
  const shown = escapeHtml(displayUrl(publicUrl));
  // Only an http(s) URL becomes a link; anything else is shown as text.
  const where = isHttpUrl(publicUrl) ? `<a href="${escapeHtml(publicUrl)}" style="color:#57606a;">${shown}</a>` : shown;
  return `Sent by ${SERVICE_NAME} · ${where}`;
}

function heading(text: string): string {
  return `<h1 style="margin:0 0 16px 0;font-size:20px;line-height:1.3;color:#1f2328;">${escapeHtml(text)}</h1>`;
}

/** A paragraph of already-escaped HTML. */
function paragraph(html: string, style = ''): string {
  return `<p style="margin:0 0 16px 0;${style}">${html}</p>`;
}

/** The document around a message body; `body` and `footer` are already-escaped HTML. */
function layout(title: string, body: string, footer: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
</head>
<body style="margin:0;padding:0;background-color:#f4f5f7;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background-color:#f4f5f7;">
<tr><td align="center" style="padding:24px 12px;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="max-width:560px;background-color:#ffffff;border:1px solid #d0d7de;border-radius:8px;font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;font-size:15px;line-height:1.5;color:#1f2328;">
<tr><td style="padding:20px 32px 0 32px;font-size:16px;font-weight:bold;letter-spacing:0.5px;color:#57606a;">${SERVICE_NAME}</td></tr>
<tr><td style="padding:16px 32px 8px 32px;">
${body}
</td></tr>
</table>
<p style="margin:16px 0 0 0;font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;font-size:12px;color:#57606a;">${footer}</p>
</td></tr>
</table>
</body>
</html>
`;
}
