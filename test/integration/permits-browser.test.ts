/**
 * Permits V2 in a real browser (docs/http.md, "Permits (V2) — confirmation": a browser gets an HTML
 * page for every outcome; docs/permits.md, "GET /web2/confirm — consumption"): headless Chromium opens the emailed link
 * on a 3-member cluster in each `permits.confirmMode` — `link` consumes on GET, `button` only on the
 * page's Confirm button — and checks what a person would see: the outcome, the page's headers, its
 * style applied under its own CSP, no console errors. Screenshots go to `test-artifacts/`.
 *
 * Needs Debian's Chromium on PATH (package `chromium`: `/usr/bin/chromium`; `.ci/run` installs it);
 * no browser is downloaded. Without it, the test skips unless `CI` is set (test/utils/tools.ts).
 */
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page, type Response } from 'playwright-core';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { postJson } from '../utils/http.ts';
import { newPrincipal, principalWithSession, type Principal } from '../utils/session.ts';
import { appliedOnMembers, onEveryMember, ownerBody, requestPermit, secretOnEveryMember, type ConfirmLink } from '../utils/permits.ts';
import { findOnPath, onPath, requireTool } from '../utils/tools.ts';

const ARTIFACTS_DIR = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
/** Playwright's own waits, kept under vitest's test timeout so a stuck page fails with Playwright's message. */
const BROWSER_TIMEOUT_MS = 10_000;

/**
 * Top border colour of the page's card by tone (confirm-page.ts, light scheme): proves the inline
 * style was applied, since the browser default is no border at all.
 */
const ACCENT_RGB = { info: 'rgb(9, 105, 218)', ok: 'rgb(26, 127, 55)', error: 'rgb(207, 34, 46)' } as const;

type ConfirmMode = 'link' | 'button';

/** The few browser globals the page functions use (the project compiles without the DOM lib). */
interface BrowserWindow {
  document: { body: unknown; querySelector(selector: string): unknown };
  getComputedStyle(element: unknown): { display: string; borderTopWidth: string; borderTopColor: string };
}

/** Debian's Chromium (package `chromium`), the only browser this test drives. */
const chromiumNeed = requireTool('permits-browser', "Debian's chromium", onPath('chromium'));

let browser: Browser;
beforeAll(async () => {
  if (chromiumNeed.skip) return;
  chromiumNeed.assertPresent();
  await mkdir(ARTIFACTS_DIR, { recursive: true });
  browser = await chromium.launch({ executablePath: findOnPath('chromium')!, args: ['--no-sandbox'] });
});
afterAll(() => browser?.close());

/** Browser contexts of the running test, closed after it. */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A fresh page in its own context (no shared cookies or cache), light scheme, watched for console errors. */
async function openPage(): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ colorScheme: 'light' });
  cleanups.push(() => context.close());
  context.setDefaultTimeout(BROWSER_TIMEOUT_MS);
  const page = await context.newPage();
  // CSP violations ("Refused to apply inline style …") are console errors in Chromium.
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`console.${msg.type()}: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  return { page, problems };
}

/**
 * The page arrived as a confirm page (status, headers) and rendered with its style: the body is the
 * stylesheet's flex layout and the card carries the tone's accent border.
 */
async function expectConfirmPage(page: Page, response: Response | null, status: number, tone: keyof typeof ACCENT_RGB): Promise<void> {
  expect(response, 'navigation response').not.toBeNull();
  expect(response!.status()).toBe(status);
  const headers = response!.headers();
  expect(headers['content-type']).toMatch(/^text\/html/);
  expect(headers['cache-control']).toBe('no-store');
  expect(headers['referrer-policy']).toBe('no-referrer');
  expect(headers['content-security-policy']).toMatch(/default-src 'none'.*style-src 'sha256-[A-Za-z0-9+/]+=*'/);
  const style = await page.evaluate(() => {
    const win = globalThis as unknown as BrowserWindow;
    const card = win.getComputedStyle(win.document.querySelector('main'));
    return { bodyDisplay: win.getComputedStyle(win.document.body).display, borderTopWidth: card.borderTopWidth, borderTopColor: card.borderTopColor };
  });
  expect(style).toEqual({ bodyDisplay: 'flex', borderTopWidth: '4px', borderTopColor: ACCENT_RGB[tone] });
}

/** Chromium reports a document answered with an error status as a console error; that one is expected. */
const unexpected = (problems: string[], status?: number) => problems.filter((p) => status === undefined || !p.includes(`status of ${status}`));

const screenshot = (page: Page, mode: ConfirmMode, step: string) => page.screenshot({ path: `${ARTIFACTS_DIR}confirm-${mode}-${step}.png`, fullPage: true });


/** One cluster per mode, with an owner (alice, in session) and a delegate-to-be (bob). */
function clusterIn(mode: ConfirmMode) {
  const env = {} as { cluster: LocalCluster; A: string; alice: Principal; bob: Principal };
  beforeAll(async () => {
    env.cluster = await startLocalCluster({ size: 3, threshold: 2, nodeConfig: { permits: { confirmMode: mode } } });
    env.A = env.cluster.coordinators[0]!;
    [env.alice, env.bob] = await Promise.all([principalWithSession(env.cluster, env.A, 'alice'), newPrincipal(env.cluster, env.A, 'bob')]);
  }, 60_000);
  afterAll(() => env.cluster?.stop());
  return env;
}

/** A new secret of alice's and a pending permit making bob its delegate, replicated to every member. */
async function delegatePermit(env: ReturnType<typeof clusterIn>): Promise<{ secretId: number; link: ConfirmLink }> {
  const created = await postJson<{ secretId: number }>(`${env.A}/web2/secret`, env.alice.signed(0));
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const secretId = created.body.secretId;
  const link = await requestPermit(env.cluster, env.A, ownerBody(env.alice, secretId, 'delegate', env.bob.principalId));
  await onEveryMember(env.cluster, 'permit', link.permitId, (b) => b.status === 'pending');
  return { secretId, link };
}

/** Each member's current status of a permit, read once (no waiting). */
const permitStatuses = (cluster: LocalCluster, permitId: string) =>
  Promise.all(cluster.members.map(async (m) => ((await m.state.get('permit', permitId))?.body as { status?: string } | undefined)?.status));

/** The consumed page of a delegate permit: heading, what changed, the permit id; never the token. */
async function expectConsumedPage(page: Page, link: ConfirmLink, secretId: number, delegate: string): Promise<void> {
  expect(await page.getByRole('heading', { name: 'Change confirmed' }).isVisible()).toBe(true);
  expect(await page.getByText(`Principal ${delegate} is now the delegate of secret ${secretId}.`).isVisible()).toBe(true);
  expect(await page.getByText(link.permitId, { exact: true }).isVisible()).toBe(true);
  expect(await page.content()).not.toContain(link.token);
}

/** A wrong token (same length, last characters changed) gets the 403 page and consumes nothing. */
async function expectWrongTokenRefused(env: ReturnType<typeof clusterIn>, mode: ConfirmMode): Promise<void> {
  const { link } = await delegatePermit(env);
  const wrong = link.token.slice(0, -2) + (link.token.endsWith('AA') ? 'BB' : 'AA');
  const { page, problems } = await openPage();
  const response = await page.goto(`${env.A}/web2/confirm?permitId=${link.permitId}&token=${wrong}`);
  await expectConfirmPage(page, response, 403, 'error');
  expect(await page.getByRole('heading', { name: 'This link is not valid' }).isVisible()).toBe(true);
  expect(await page.content()).not.toContain(wrong);
  await screenshot(page, mode, 'forbidden');
  expect(unexpected(problems, 403)).toEqual([]);
  expect(await permitStatuses(env.cluster, link.permitId)).toEqual(['pending', 'pending', 'pending']);
}

describe.skipIf(chromiumNeed.skip)('confirmMode "link": opening the emailed link in Chromium', () => {
  const env = clusterIn('link');

  it('consumes the permit and shows the outcome, applied on every member; a reload shows the same result', async () => {
    const { secretId, link } = await delegatePermit(env);
    const before = await appliedOnMembers(env.cluster);
    const { page, problems } = await openPage();

    const response = await page.goto(`${env.A}${link.pathAndQuery}`);
    await expectConfirmPage(page, response, 200, 'ok');
    await expectConsumedPage(page, link, secretId, env.bob.principalId);
    await screenshot(page, 'link', 'consumed');
    await onEveryMember(env.cluster, 'permit', link.permitId, (b) => b.status === 'consumed');
    await secretOnEveryMember(env.cluster, secretId, (b) => b.delegatePrincipalId === env.bob.principalId);

    const reloaded = await page.reload();
    await expectConfirmPage(page, reloaded, 200, 'ok');
    await expectConsumedPage(page, link, secretId, env.bob.principalId);
    await screenshot(page, 'link', 'reloaded');
    // Applied once: the reload answered the recorded result.
    expect(await appliedOnMembers(env.cluster)).toEqual(before.map((n) => n + 1));
    expect(problems).toEqual([]);
  });

  it('a wrong token shows the 403 page', () => expectWrongTokenRefused(env, 'link'));
});

describe.skipIf(chromiumNeed.skip)('confirmMode "button": opening the emailed link, then pressing Confirm', () => {
  const env = clusterIn('button');

  it('the link shows a Confirm button and consumes nothing; the button consumes, applied on every member', async () => {
    const { secretId, link } = await delegatePermit(env);
    const before = await appliedOnMembers(env.cluster);
    const { page, problems } = await openPage();

    const response = await page.goto(`${env.A}${link.pathAndQuery}`);
    await expectConfirmPage(page, response, 200, 'info');
    expect(await page.getByRole('heading', { name: 'Confirm this change' }).isVisible()).toBe(true);
    expect(await page.getByText(link.permitId, { exact: true }).isVisible()).toBe(true);
    const button = page.getByRole('button', { name: 'Confirm' });
    expect(await button.isVisible()).toBe(true);
    await screenshot(page, 'button', 'page');
    // The page is loaded and nothing was consumed anywhere.
    expect(await permitStatuses(env.cluster, link.permitId)).toEqual(['pending', 'pending', 'pending']);
    expect(await appliedOnMembers(env.cluster)).toEqual(before);

    const [posted] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/web2/confirm'), button.click()]);
    await page.getByRole('heading', { name: 'Change confirmed' }).waitFor();
    await expectConfirmPage(page, posted, 200, 'ok');
    await expectConsumedPage(page, link, secretId, env.bob.principalId);
    // The token travelled in the form body, not in the outcome page's address.
    expect(page.url()).toBe(`${env.A}/web2/confirm`);
    await screenshot(page, 'button', 'consumed');
    await onEveryMember(env.cluster, 'permit', link.permitId, (b) => b.status === 'consumed');
    await secretOnEveryMember(env.cluster, secretId, (b) => b.delegatePrincipalId === env.bob.principalId);
    expect(await appliedOnMembers(env.cluster)).toEqual(before.map((n) => n + 1));
    expect(problems).toEqual([]);
  });

  it('a wrong token shows the 403 page', () => expectWrongTokenRefused(env, 'button'));
});
