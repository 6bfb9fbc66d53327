/**
 * The pages a browser gets from `/web2/confirm` (docs/permits.md, "GET /web2/confirm — consumption": "A browser (Accept:
 * text/html) gets a small readable page instead"): the outcome of a confirmation, the button page of
 * `permits.confirmMode: "button"`, and errors.
 *
 * Each page is one self-contained document — no scripts, no external resources, one inline
 * `<style>` allowed by its hash in {@link CONFIRM_PAGE_HEADERS} — and every interpolated value is
 * HTML-escaped. The confirmation token appears only in the button page's hidden form field.
 */
import type { PermitConfirmation, PermitPreview, PermitResult } from '../core/permits/types.ts';
import { sha256, toBase64 } from '../crypto/index.ts';

/** The one stylesheet of every page; its hash is the only style the CSP allows. */
const STYLE = [
  ':root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--bg:#f6f8fa;--card:#fff;--line:#d1d9e0;--accent:#0969da}',
  '@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--card:#151b23;--line:#3d444d;--accent:#4493f8}}',
  '*{box-sizing:border-box}',
  'body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;padding:1rem;',
  'background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}',
  'main{width:100%;max-width:32rem;background:var(--card);border:1px solid var(--line);border-top:4px solid var(--accent);',
  'border-radius:8px;padding:1.5rem 1.75rem}',
  'main.ok{--accent:#1a7f37}main.wait{--accent:#9a6700}main.error{--accent:#cf222e}',
  'h1{font-size:1.375rem;line-height:1.3;margin:0 0 .75rem}',
  'p{margin:0 0 .75rem}',
  'dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:1rem 0 0;font-size:.875rem;color:var(--muted)}',
  'dd{margin:0;overflow-wrap:anywhere;color:var(--fg)}',
  'code{font:.8125rem ui-monospace,SFMono-Regular,Menlo,monospace}',
  'form{margin:1.25rem 0 0}',
  'button{font:inherit;font-weight:600;color:#fff;background:var(--accent);border:0;border-radius:6px;padding:.625rem 1.5rem;cursor:pointer;width:100%}',
  'button:focus-visible{outline:3px solid var(--fg);outline-offset:2px}',
].join('');

/** `sha256-<base64>` of {@link STYLE}, as CSP's `style-src` names an inline style. */
const STYLE_HASH = `sha256-${toBase64(sha256(STYLE))}`;

/**
 * Response headers of every page. They replace the app's JSON-only CSP (`default-src 'none'`, which
 * would block the inline style): still nothing loads, nothing runs, no framing, and the button
 * page's form may post only to this origin.
 */
export const CONFIRM_PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': 'text/html; charset=utf-8',
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'Content-Security-Policy': `default-src 'none'; style-src '${STYLE_HASH}'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`,
};

/** Path the button page's form posts to. */
const CONFIRM_PATH = '/web2/confirm';

/** What each action changes, for the pages' "Action" line (unknown actions are shown as sent). */
const ACTION_LABELS: Readonly<Record<string, string>> = {
  rotate: 'Replace the account key (rotate)',
  transfer: 'Transfer a secret (transfer)',
  delegate: 'Set or remove a delegate (delegate)',
};

/**
 * Headings of error pages by status. A 409's heading is the error's own message ("This permit has
 * expired", or why the change no longer applies); other statuses get {@link DEFAULT_ERROR_TITLE}.
 */
const ERROR_TITLES: Readonly<Record<number, string>> = {
  400: 'This link is malformed',
  403: 'This link is not valid',
  404: 'Unknown permit',
  413: 'Request too large',
  415: 'Unsupported request',
  429: 'Too many attempts',
  503: 'The cluster is unavailable',
};
const DEFAULT_ERROR_TITLE = 'This request could not be completed';

/** The closing hint of error pages by status. */
const ERROR_HINTS: Readonly<Record<number, string>> = {
  400: 'Open the link exactly as it appears in the email.',
  403: 'Open the link exactly as it appears in the most recent email.',
  404: 'The permit may have been requested on another cluster, or the link is incomplete.',
  409: 'Nothing was changed. Request the change again to receive a new link.',
  503: 'Nothing was lost: open the link again in a moment.',
};

/** Escape text for HTML element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** The page for a confirmation: consumed (200) or still reaching members (202). */
export function renderConfirmationPage(confirmation: PermitConfirmation): string {
  if (confirmation.status === 'consumed') return renderConsumedPage(confirmation.permitId, confirmation.action, confirmation.result);
  const remaining = Math.max(confirmation.threshold - confirmation.successCount, 1);
  return page({
    tone: 'wait',
    title: 'Confirmation recorded',
    lines: [
      'Your confirmation was accepted and is being delivered to the cluster.',
      `Waiting for ${remaining} of ${confirmation.threshold} members; it will complete automatically.`,
    ],
    details: permitDetails(confirmation.permitId, confirmation.action),
  });
}

/** The page for a permit consumed before (or now): the change that was applied. */
export function renderConsumedPage(permitId: string, action: string, result: PermitResult | undefined): string {
  return page({
    tone: 'ok',
    title: 'Change confirmed',
    lines: [result === undefined ? 'This permit has been applied.' : describeResult(result), 'You can close this page.'],
    details: permitDetails(permitId, action),
  });
}

/**
 * The button page (`permits.confirmMode: "button"`): what the permit will change, and one button that
 * POSTs `permitId` and `token` back. Opening the link applies nothing.
 */
export function renderButtonPage(preview: PermitPreview, token: string): string {
  return page({
    tone: 'info',
    title: 'Confirm this change',
    lines: [preview.summary, 'Nothing changes until you press Confirm.'],
    details: [...permitDetails(preview.permitId, preview.action), ['Expires', formatTime(preview.expiresAt)]],
    form:
      `<form method="post" action="${CONFIRM_PATH}">` +
      `<input type="hidden" name="permitId" value="${escapeHtml(preview.permitId)}">` +
      `<input type="hidden" name="token" value="${escapeHtml(token)}">` +
      '<button type="submit">Confirm</button></form>',
  });
}

/** An error page. `message` is the AppError's client-safe message (the heading of a 409, see {@link ERROR_TITLES}). */
export function renderErrorPage(status: number, message: string): string {
  const title = ERROR_TITLES[status] ?? (status === 409 ? message : DEFAULT_ERROR_TITLE);
  const lines = title === message ? [] : [message];
  const hint = ERROR_HINTS[status];
  if (hint !== undefined) lines.push(hint);
  return page({ tone: 'error', title, lines });
}

/** One human line for an applied change (no secret material: ids and a public key only). */
function describeResult(result: PermitResult): string {
  if ('newPublicKey' in result) return 'Your Ed25519 key was replaced; all sessions were ended.';
  if ('newOwnerPrincipalId' in result) return `Secret ${result.secretId} now belongs to principal ${result.newOwnerPrincipalId}.`;
  if (result.delegatePrincipalId === null) return `Delegate removed from secret ${result.secretId}.`;
  return `Principal ${result.delegatePrincipalId} is now the delegate of secret ${result.secretId}.`;
}

function permitDetails(permitId: string, action: string): Array<[string, string]> {
  return [
    ['Permit', permitId],
    ['Action', ACTION_LABELS[action] ?? action],
  ];
}

/** `2026-01-01T00:15:00.000Z` → `2026-01-01 00:15 UTC`; anything else as given. */
function formatTime(iso: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso);
  return match ? `${match[1]} ${match[2]} UTC` : iso;
}

interface PageContent {
  /** Accent colour: info (blue), ok (green), wait (amber), error (red). */
  tone: 'info' | 'ok' | 'wait' | 'error';
  title: string;
  /** Paragraphs, plain text. */
  lines: string[];
  /** Label → value rows, plain text. */
  details?: Array<[string, string]>;
  /** Already-escaped form markup. */
  form?: string;
}

function page(content: PageContent): string {
  const title = escapeHtml(content.title);
  const lines = content.lines.map((line) => `<p>${escapeHtml(line)}</p>`).join('');
  const details = content.details?.length
    ? `<dl>${content.details.map(([label, value]) => `<dt>${escapeHtml(label)}</dt><dd><code>${escapeHtml(value)}</code></dd>`).join('')}</dl>`
    : '';
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="robots" content="noindex, nofollow">',
    `<title>${title} · quorumkeep</title>`,
    `<style>${STYLE}</style>`,
    '</head>',
    '<body>',
    `<main class="${content.tone}">`,
    `<h1>${title}</h1>`,
    lines,
    details,
    content.form ?? '',
    '</main>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
