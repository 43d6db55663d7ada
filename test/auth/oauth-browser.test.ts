// The OAuth login and consent pages in a real headless browser (Debian's Chromium driven by
// playwright-core): a person's path from the authorization URL to the client's redirect URI, served
// here by a tiny local HTTP server that captures `code` and `state`. Screenshots go to /tmp.
// Without Chromium (see ../helpers/chromium.ts; `npm test`'s pretest installs it where it can) the
// suite is skipped with one line — except under CI=true, where a skip would hide it, so it fails.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oauth from 'oauth4webapi';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { generate, generateSecret } from 'otplib';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { findChromium, NO_CHROMIUM } from '../helpers/chromium.ts';

const CHROMIUM = findChromium();
const IN_CI = process.env.CI === 'true';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The id of the focused element (the DOM is not in this project's TypeScript lib). */
const focusedId = (page: Page): Promise<string | undefined> =>
  page.evaluate(() => (globalThis as any).document.activeElement?.id as string | undefined);

describe('OAuth pages in Chromium', { skip: CHROMIUM === undefined && !IN_CI ? NO_CHROMIUM : false }, () => {
  let h: Harness;
  let callbackServer: Server;
  let redirectUri: string;
  let profile: string;
  let browser: BrowserContext;
  const received: URL[] = [];
  const consoleErrors: string[] = [];

  before(async () => {
    if (CHROMIUM === undefined) throw new Error(`CI=true and the browser suite cannot run. ${NO_CHROMIUM}`);
    callbackServer = createServer((req, res) => {
      received.push(new URL(req.url ?? '/', redirectUri));
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        '<!doctype html><html lang="en"><title>Callback</title><h1>Back in the application</h1></html>',
      );
    });
    callbackServer.listen(0, '127.0.0.1');
    await once(callbackServer, 'listening');
    const address = callbackServer.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    redirectUri = `http://127.0.0.1:${address.port}/callback`;
    h = await startHarness({
      env: {
        OAUTH_CONFIGURATION: JSON.stringify({
          knownClients: {
            'browser-app': {
              redirect_uri: redirectUri,
              client_description: 'Price Sync for Spreadsheets',
              defaultScope: 'PRODUCT_EDIT,PRODUCTEXTENSION_FETCH',
            },
          },
        }),
      },
    });
    profile = mkdtempSync(join(tmpdir(), 'ratecard-chromium-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: { width: 900, height: 760 },
    });
    browser.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
  });

  after(async () => {
    await browser?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    callbackServer?.close();
    await h?.close();
  });

  const authorizeUrl = (params: Record<string, string>): string =>
    `${h.url}/service/${h.partition}/oauth/authorize?${new URLSearchParams(params).toString()}`;

  async function openLogin(
    state: string,
    extra: Record<string, string> = {},
  ): Promise<{ page: Page; verifier: string }> {
    const verifier = oauth.generateRandomCodeVerifier();
    const page = await browser.newPage();
    const response = await page.goto(
      authorizeUrl({
        response_type: 'code',
        client_id: 'browser-app',
        redirect_uri: redirectUri,
        state,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        ...extra,
      }),
    );
    assert.equal(response?.status(), 200);
    return { page, verifier };
  }

  async function signIn(page: Page, user: string, password: string): Promise<void> {
    await page.getByLabel('User name').fill(user);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  test('login, consent, allow: the redirect URI gets code and state, and the code gives tokens', async () => {
    const { page, verifier } = await openLogin('state-allow');
    assert.equal(await page.getAttribute('html', 'lang'), 'en');
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Sign in');
    assert.equal(await page.title(), 'Sign in – Ratecard');
    // Focus order: the user name first (autofocus), then the password, then the button.
    assert.equal(await focusedId(page), 'username');
    await page.keyboard.press('Tab');
    assert.equal(await focusedId(page), 'password');
    await page.keyboard.press('Tab');
    assert.equal(
      await page.evaluate(() => (globalThis as any).document.activeElement?.textContent as string),
      'Sign in',
    );
    // The inline stylesheet is allowed by its CSP hash: the button is styled.
    assert.equal(
      await page
        .getByRole('button', { name: 'Sign in' })
        .evaluate((b) => (globalThis as any).getComputedStyle(b).backgroundColor as string),
      'rgb(31, 79, 209)',
    );
    await page.screenshot({ path: '/tmp/oauth-login.png', fullPage: true });

    await signIn(page, ADMIN, ADMIN_PASSWORD);
    await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
    assert.match(await page.locator('main').innerText(), /Price Sync for Spreadsheets/);
    const scope = await page.getByRole('listitem').allInnerTexts();
    assert.deepEqual(scope, ['PRODUCT_EDIT', 'PRODUCTEXTENSION_FETCH']);
    await page.screenshot({ path: '/tmp/oauth-consent.png', fullPage: true });

    const before = received.length;
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Back in the application');
    const callback = received[before]!;
    assert.equal(callback.searchParams.get('state'), 'state-allow');
    const code = callback.searchParams.get('code');
    assert.ok(code);
    await page.close();

    const token = await fetch(`${h.url}/service/${h.partition}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        client_id: 'browser-app',
        code_verifier: verifier,
      }),
    });
    assert.equal(token.status, 200);
    const t = (await token.json()) as any;
    assert.equal(t.token_type, 'bearer');
    assert.equal(t.scope, 'PRODUCT_EDIT PRODUCTEXTENSION_FETCH');
  });

  test('deny: the redirect URI gets error=access_denied and the state', async () => {
    const { page } = await openLogin('state-deny');
    await signIn(page, ADMIN, ADMIN_PASSWORD);
    await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
    const before = received.length;
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    const callback = received[before]!;
    assert.equal(callback.searchParams.get('error'), 'access_denied');
    assert.equal(callback.searchParams.get('state'), 'state-deny');
    assert.equal(callback.searchParams.get('code'), null);
    await page.close();
  });

  test('a wrong password shows the error on the login page', async () => {
    const { page } = await openLogin('state-wrong');
    await signIn(page, ADMIN, 'not-the-password');
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.equal(await alert.textContent(), 'The user name or password is wrong.');
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Sign in');
    assert.equal(await page.getByLabel('User name').inputValue(), ADMIN);
    assert.equal(await page.getByLabel('Password').inputValue(), '');
    assert.equal(await focusedId(page), 'password', 'focus on what to retype');
    await page.screenshot({ path: '/tmp/oauth-login-error.png', fullPage: true });
    // Still usable: the right password now leads on to the consent page.
    await page.getByLabel('Password').fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
    await page.close();
  });

  test('two-factor authentication: the code page comes between login and consent', async () => {
    await h.newUser('tfa-browser', 'tfa-browser-password', ['ADMIN']);
    const secret = generateSecret();
    await h.db.query(
      `UPDATE users SET tfa_secret = $2, tfa_enabled = true WHERE partition_id = $1 AND login_name = 'tfa-browser'`,
      [h.partitionId, secret],
    );
    const { page } = await openLogin('state-tfa');
    await signIn(page, 'tfa-browser', 'tfa-browser-password');
    await page.getByRole('heading', { name: 'Two-factor code' }).waitFor();
    assert.equal(await focusedId(page), 'tfa_code');
    await page.screenshot({ path: '/tmp/oauth-tfa.png', fullPage: true });
    await page.getByLabel('Authentication code', { exact: true }).fill(await generate({ secret }));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
    await page.close();
  });

  test('an unknown client gets the error envelope and no redirect', async () => {
    const page = await browser.newPage();
    const before = received.length;
    const response = await page.goto(
      authorizeUrl({ response_type: 'code', client_id: 'stranger', redirect_uri: redirectUri, state: 's' }),
    );
    assert.equal(response?.status(), 400);
    const body = (await response.json()) as { response: { status: number; errors: object } };
    assert.equal(body.response.status, -4);
    assert.deepEqual(Object.keys(body.response.errors), ['client_id']);
    assert.equal(received.length, before);
    await page.screenshot({ path: '/tmp/oauth-error.png', fullPage: true });
    await page.close();
  });

  test('no CSP violation on any page', () => {
    // The 422 and 400 answers above are logged as failed loads, and so is the 404 of the icon
    // Chromium asks for beside the JSON error (which, unlike our pages, declares none); anything
    // else would be a fault.
    assert.deepEqual(
      consoleErrors.filter(
        (e) => !/^Failed to load resource: the server responded with a status of (422|400|404)\b/.test(e),
      ),
      [],
    );
  });
});
