// The server-rendered pages of the OAuth authorization endpoint: login, two-factor code, consent and
// the error page for requests that must not be redirected. Plain HTML with one inline stylesheet
// (allowed by its hash in the CSP), no script and no external asset. Every value is escaped by `esc`.

import { createHash } from 'node:crypto';

/** HTML-escapes text for element content and double- or single-quoted attribute values. */
export function esc(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const CSS = `
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; min-height: 100vh; display: flex; align-items: center; justify-content: center;
  background: #eef1f5; color: #1b1f24; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { width: 100%; max-width: 27rem; margin: 1.5rem; padding: 2rem; background: #fff; border-radius: 12px;
  box-shadow: 0 1px 3px rgba(0,0,0,.12), 0 8px 24px rgba(0,0,0,.08); }
.brand { margin: 0 0 1rem; font-size: .85rem; font-weight: 600; letter-spacing: .06em; text-transform: uppercase; color: #4a5563; }
h1 { margin: 0 0 .75rem; font-size: 1.5rem; line-height: 1.25; }
p { margin: 0 0 1rem; }
label { display: block; margin: 1rem 0 .3rem; font-weight: 600; }
.hint { display: block; margin: -.1rem 0 .45rem; font-size: .875rem; color: #4a5563; }
input[type=text], input[type=password] { width: 100%; padding: .6rem .7rem; font: inherit; color: inherit;
  border: 1px solid #8a94a3; border-radius: 6px; background: #fff; }
input:focus-visible, button:focus-visible { outline: 3px solid #f0b429; outline-offset: 2px; }
.actions { display: flex; gap: .75rem; margin-top: 1.5rem; }
button { flex: 1; padding: .65rem 1rem; font: inherit; font-weight: 600; border-radius: 6px; cursor: pointer;
  border: 1px solid #1f4fd1; background: #1f4fd1; color: #fff; }
button.secondary { background: #fff; color: #1f4fd1; }
.error { margin: 0 0 1rem; padding: .7rem .9rem; border-left: 4px solid #b3261e; background: #fdecea; color: #7a1712; }
ul.scope { margin: 0 0 1rem; padding-left: 1.25rem; }
ul.scope li { margin: .2rem 0; }
code { font: .9rem ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.note { font-size: .875rem; color: #4a5563; }
`;

const STYLE_HASH = createHash('sha256').update(CSS).digest('base64');

/**
 * The CSP of every page: nothing but the stylesheet above, never framed (RFC 6749 §10.13,
 * clickjacking), forms only to this server and to the client's redirect target (a form POST that
 * ends in a redirect is checked against form-action too).
 */
export function contentSecurityPolicy(formTargets: readonly string[]): string {
  return [
    "default-src 'none'",
    `style-src 'sha256-${STYLE_HASH}'`,
    `form-action 'self'${formTargets.map((t) => ` ${t}`).join('')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

function layout(product: string, title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${esc(title)} – ${esc(product)}</title>
<style>${CSS}</style>
</head>
<body>
<main aria-labelledby="title">
<p class="brand">${esc(product)}</p>
${body}
</main>
</body>
</html>
`;
}

function hidden(fields: Readonly<Record<string, string>>): string {
  return Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${esc(k)}" value="${esc(v)}">`)
    .join('\n');
}

function errorBox(error: string | undefined): string {
  return error === undefined ? '' : `<p class="error" id="form-error" role="alert">${esc(error)}</p>\n`;
}

/** What every form of the flow needs: where it is, who asks, and the fields to carry along. */
export interface PageContext {
  readonly product: string;
  readonly partition: string;
  /** client_description, or client_id when blank. */
  readonly clientName: string;
  /** The authorization request's parameters and the CSRF token, as hidden fields. */
  readonly carried: Readonly<Record<string, string>>;
}

export function loginPage(ctx: PageContext, opts: { error?: string; login?: string } = {}): string {
  const described = opts.error === undefined ? '' : ' aria-describedby="form-error"';
  // After a failed attempt the user name is kept: the focus goes to the password, to type it again.
  const again = (opts.login ?? '') !== '';
  const [userFocus, passwordFocus] = again ? ['', ' autofocus'] : [' autofocus', ''];
  return layout(
    ctx.product,
    'Sign in',
    `<h1 id="title">Sign in</h1>
<p><strong>${esc(ctx.clientName)}</strong> wants to access your account in partition <strong>${esc(ctx.partition)}</strong>.
Sign in first; you decide what it may do on the next page.</p>
${errorBox(opts.error)}<form method="post" action="authorize">
${hidden({ ...ctx.carried, step: 'login' })}
<label for="username">User name</label>
<input type="text" id="username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false" required${userFocus} value="${esc(opts.login ?? '')}"${described}>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required${passwordFocus}${described}>
<div class="actions"><button type="submit">Sign in</button></div>
</form>`,
  );
}

export function tfaPage(ctx: PageContext, pending: string, opts: { error?: string } = {}): string {
  const described =
    opts.error === undefined ? ' aria-describedby="code-hint"' : ' aria-describedby="form-error code-hint"';
  return layout(
    ctx.product,
    'Two-factor code',
    `<h1 id="title">Two-factor code</h1>
<p>Your account uses two-factor authentication.</p>
${errorBox(opts.error)}<form method="post" action="authorize">
${hidden({ ...ctx.carried, step: 'tfa', pending })}
<label for="tfa_code">Authentication code</label>
<span class="hint" id="code-hint">The six-digit code your authenticator app shows now.</span>
<input type="text" id="tfa_code" name="tfa_code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required autofocus${described}>
<div class="actions"><button type="submit">Continue</button></div>
</form>`,
  );
}

export interface ConsentScope {
  /** Null: no scope, the token acts with all of the user's permissions. */
  readonly permissions: readonly { readonly name: string; readonly held: boolean }[] | null;
}

export function consentPage(ctx: PageContext, proof: string, login: string, scope: ConsentScope): string {
  const what =
    scope.permissions === null
      ? `<p>It asks for <strong>full access</strong>: everything your account can do.</p>`
      : scope.permissions.length === 0
        ? `<p>It asks for <strong>no permission</strong>: only what every signed-in user may do.</p>`
        : `<p id="scope-intro">It asks for these permissions:</p>
<ul class="scope" aria-labelledby="scope-intro">
${scope.permissions
  .map(
    (p) =>
      `<li><code>${esc(p.name)}</code>${p.held ? '' : ' <span class="note">(you do not hold it, so it is not granted)</span>'}</li>`,
  )
  .join('\n')}
</ul>`;
  return layout(
    ctx.product,
    'Allow access?',
    `<h1 id="title">Allow access?</h1>
<p><strong>${esc(ctx.clientName)}</strong> wants to use your account <strong>${esc(login)}</strong> in partition <strong>${esc(ctx.partition)}</strong>.</p>
${what}
<p class="note">It never gets more than your own permissions.</p>
<form method="post" action="authorize">
${hidden({ ...ctx.carried, step: 'consent', proof })}
<div class="actions">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</div>
</form>`,
  );
}

/** A request that cannot be answered by a redirect: unknown client, wrong redirect URI, stale form. */
export function errorPage(product: string, title: string, message: string): string {
  return layout(
    product,
    title,
    `<h1 id="title">${esc(title)}</h1>
<p class="error" role="alert">${esc(message)}</p>
<p>Return to the application and start again. If this keeps happening, tell the application's administrator.</p>`,
  );
}
