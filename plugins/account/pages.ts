/** The account area's pages: plain HTML, every value escaped, no inline script. */
import { html, type Html } from '../../src/http/html'
import type { ScopeDefinition } from '../../src/plugin'
import type { ApiKeyView } from '../auth/api'
import type { PrincipalUser } from '../../src/services/identity'
import type { DisplayAccountSummary } from '../display/api'
import { KEY_NAME_MAX } from '../auth/api'

export interface Frame {
  title: string
  user?: PrincipalUser
  csrf?: string
  active?: 'keys' | 'apps' | 'display' | 'people'
  showDisplay?: boolean
}

export function layout(frame: Frame, body: Html): Html {
  return html`<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>${frame.title} · Worktrack account</title>
  <link rel="stylesheet" href="/account/assets/account.css" />
  <script src="/account/assets/account.js" defer></script>
</head>
<body>
  <header>
    <strong>Worktrack account</strong>
    ${
      frame.user
        ? html`<nav>
        <a href="/account/keys" class="${frame.active === 'keys' ? 'active' : ''}">API keys</a>
        <a href="/account/apps" class="${frame.active === 'apps' ? 'active' : ''}">Connected apps</a>
        ${frame.showDisplay ? html`<a href="/account/display" class="${frame.active === 'display' ? 'active' : ''}">Display account</a> <a href="/pages">Dashboards</a>` : ''}
        ${frame.user.role === 'administrator' || frame.user.role === 'superadministrator' ? html`<a href="/account/people" class="${frame.active === 'people' ? 'active' : ''}">People</a>` : ''}
      </nav>
      <form method="post" action="/account/sign-out" class="sign-out">
        <span>${frame.user.displayName} (${frame.user.email})</span>
        <input type="hidden" name="csrf" value="${frame.csrf}" />
        <button type="submit">Sign out</button>
      </form>`
        : ''
    }
  </header>
  <main>
    <h1>${frame.title}</h1>
    ${body}
  </main>
</body>
</html>`
}

export function signInPage(formToken: string, options: { error?: string; email?: string; next?: string; providers?: readonly { id: string; name: string }[] } = {}): Html {
  const providers = options.providers ?? []
  return layout(
    { title: 'Sign in' },
    html`${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ''}
    ${
      providers.length
        ? html`<section class="card sso">${providers.map(
            (provider) => html`<p><a class="button" href="/account/sso/${provider.id}${options.next ? `?next=${encodeURIComponent(options.next)}` : ''}">Sign in with ${provider.name}</a></p>`,
          )}</section>`
        : ''
    }
    <form method="post" action="/account/sign-in" class="card">
      <input type="hidden" name="csrf" value="${formToken}" />
      ${options.next ? html`<input type="hidden" name="next" value="${options.next}" />` : ''}
      <label>Email <input type="email" name="email" autocomplete="username" required value="${options.email ?? ''}" /></label>
      <label>Password <input type="password" name="password" autocomplete="current-password" required /></label>
      <button type="submit">Sign in</button>
    </form>`,
  )
}

/**
 * Where single sign-on lands: a page that moves on by itself. A redirect would not do: the
 * sign-in came from the provider's site, and a browser sends no SameSite=Strict cookie (the
 * session's) along a chain that another site began; this page's own navigation is same-site.
 */
export function continuePage(next: string): Html {
  return html`<html lang="en"><head><meta charset="utf-8" /><meta http-equiv="refresh" content="0;url=${next}" /><title>Signed in · Worktrack account</title>
<link rel="stylesheet" href="/account/assets/account.css" /></head><body><main><p>Signed in. <a href="${next}">Continue</a></p></main></body></html>`
}

export interface ScopeGroup {
  resource: string
  label: string
  read?: ScopeDefinition
  write?: ScopeDefinition
}

/** Scopes grouped by resource (`teams:read` and `teams:write` side by side). */
export function groupScopes(scopes: readonly ScopeDefinition[]): ScopeGroup[] {
  const groups = new Map<string, ScopeGroup>()
  for (const scope of scopes) {
    const [resource, access] = scope.name.split(':') as [string, string]
    const group = groups.get(resource) ?? { resource, label: resource.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase()) }
    if (access === 'read') group.read = scope
    else if (access === 'write') group.write = scope
    groups.set(resource, group)
  }
  return [...groups.values()]
}

export const date = (iso: string | null) => (iso ? html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>` : html`<span class="muted">—</span>`)

function scopeBox(scope: ScopeDefinition | undefined): Html {
  if (!scope) return html`<td></td>`
  return html`<td><label title="${scope.description}"><input type="checkbox" name="scopes" value="${scope.name}" /> ${scope.name.split(':')[1]}</label></td>`
}

export interface KeysView {
  frame: Frame
  keys: ApiKeyView[]
  scopes: ScopeGroup[]
  created?: { key: ApiKeyView; secret: string }
  error?: string
}

export function keysPage(view: KeysView): Html {
  const { frame, keys, scopes, created, error } = view
  return layout(
    { ...frame, title: 'API keys', active: 'keys' },
    html`${
      created
        ? html`<section class="secret card" aria-live="polite">
      <h2>Key “${created.key.name}” created</h2>
      <p class="warning">Copy the secret now: it is shown this once and cannot be recovered. Store it like a password.</p>
      <div class="copy-row"><code id="new-secret">${created.secret}</code> <button type="button" data-copy="#new-secret">Copy</button></div>
      <p>Scopes: ${created.key.scopes.join(', ') || 'none'}</p>
    </section>`
        : ''
    }
    ${error ? html`<p class="error" role="alert">${error}</p>` : ''}
    <section class="card">
      <h2>Create a key</h2>
      <form method="post" action="/account/keys">
        <input type="hidden" name="csrf" value="${frame.csrf}" />
        <label>Name <input type="text" name="name" required maxlength="${KEY_NAME_MAX}" placeholder="laptop, CI, dashboard…" /></label>
        <fieldset>
          <legend>Scopes — give the key only what it needs</legend>
          <table class="scopes">
            <thead><tr><th>Resource</th><th>Read</th><th>Write</th></tr></thead>
            <tbody>${scopes.map((group) => html`<tr><th scope="row">${group.label}</th>${scopeBox(group.read)}${scopeBox(group.write)}</tr>`)}</tbody>
          </table>
        </fieldset>
        <label>Expires (optional) <input type="date" name="expires" /></label>
        <button type="submit">Create key</button>
      </form>
    </section>
    <section class="card">
      <h2>Your keys</h2>
      ${
        keys.length
          ? html`<table class="keys">
        <thead><tr><th>Name</th><th>Prefix</th><th>Scopes</th><th>Created</th><th>Last used</th><th>Expires</th><th></th></tr></thead>
        <tbody>${keys.map(
          (key) => html`<tr data-key="${key.id}">
          <td>${key.name}</td>
          <td><code>${key.prefix}…</code></td>
          <td>${key.scopes.join(', ') || html`<span class="muted">none</span>`}</td>
          <td>${date(key.createdAt)}</td>
          <td>${date(key.lastUsedAt)}</td>
          <td>${date(key.expiresAt)}</td>
          <td>${
            key.revokedAt
              ? html`<span class="muted">Revoked ${date(key.revokedAt)}</span>`
              : html`<form method="post" action="/account/keys/${key.id}/revoke" data-confirm="Revoke “${key.name}”? Anything using it stops working at once.">
              <input type="hidden" name="csrf" value="${frame.csrf}" />
              <button type="submit" class="danger">Revoke</button>
            </form>`
          }</td>
        </tr>`,
        )}</tbody>
      </table>`
          : html`<p class="muted">No keys yet.</p>`
      }
    </section>`,
  )
}

export function displayPage(frame: Frame, summary: DisplayAccountSummary, rotated?: { apiKey: string }): Html {
  return layout(
    { ...frame, title: 'Display account', active: 'display' },
    html`${
      rotated
        ? html`<section class="secret card" aria-live="polite">
      <h2>New display key</h2>
      <p class="warning">Copy it now: it is shown this once. The previous key has stopped working.</p>
      <div class="copy-row"><code id="new-secret">${rotated.apiKey}</code> <button type="button" data-copy="#new-secret">Copy</button></div>
    </section>`
        : ''
    }
    <section class="card">
      <dl>
        <dt>Key</dt><dd>${summary.prefix ? html`<code>${summary.prefix}…</code>` : html`<span class="muted">none yet</span>`}</dd>
        <dt>Used today</dt><dd><span data-usage>${summary.usedToday}</span> of ${summary.dailyLimit} calls</dd>
        <dt>Resets</dt><dd>${date(summary.resetsAt)}</dd>
      </dl>
      <form method="post" action="/account/display/rotate" data-confirm="Replace the display key? The current one stops working at once.">
        <input type="hidden" name="csrf" value="${frame.csrf}" />
        <button type="submit" class="danger">${summary.prefix ? 'Rotate key' : 'Create key'}</button>
      </form>
    </section>`,
  )
}

export function messagePage(title: string, message: string): Html {
  return layout({ title }, html`<p class="error" role="alert">${message}</p><p><a href="/account">Back to the account area</a></p>`)
}
