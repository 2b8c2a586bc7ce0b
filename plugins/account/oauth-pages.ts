/** The OAuth consent page and "Connected apps": plain HTML, every value escaped, no inline script. */
import { html, type Html } from '../../src/http/html'
import type { ScopeDefinition } from '../../src/plugin'
import type { AuthorizationRequest, ConnectedApp } from '../auth/api'
import { date, layout, type Frame } from './pages'

/** The authorization request's parameters the consent form carries back, checked again on its post. */
export const CARRIED = ['client_id', 'redirect_uri', 'response_type', 'code_challenge', 'code_challenge_method', 'state', 'scope', 'resource'] as const

export interface ConsentView {
  frame: Frame
  request: AuthorizationRequest
  /** The query's values of CARRIED, as sent. */
  carried: Record<string, string>
  offered: ScopeDefinition[]
  /** Asked for, but not for the user's role: shown, never granted. */
  refused: ScopeDefinition[]
}

const RESOURCES = { mcp: 'MCP (/mcp) only', api: 'API v1 (/api/v1) only' } as const

export function consentPage(view: ConsentView): Html {
  const { frame, request, carried, offered, refused } = view
  const host = new URL(request.redirectUri).host
  return layout(
    { ...frame, title: 'Connect an app' },
    html`<section class="card consent">
      <h2>“${request.client.name}” wants to act as you</h2>
      <p>It will get access tokens for your account, and you will be sent back to <strong>${host}</strong>.
        ${request.client.kind === 'document' ? html`The app is described by <code>${request.client.id}</code>.` : html`The app registered itself; its name is its own claim.`}</p>
      <p>Access: ${request.audience ? RESOURCES[request.audience] : 'MCP and API v1'}. Clear any box to grant less; you can disconnect it any time under Connected apps.</p>
      <form method="post" action="/account/authorize">
        <input type="hidden" name="csrf" value="${frame.csrf}" />
        ${Object.entries(carried).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`)}
        <fieldset>
          <legend>Scopes</legend>
          <ul class="scope-list">${offered.map(
            (scope) => html`<li><label><input type="checkbox" name="scopes" value="${scope.name}" checked /> <code>${scope.name}</code> — ${scope.description}</label></li>`,
          )}</ul>
          ${
            refused.length
              ? html`<p class="muted" data-refused>Not granted (your role cannot use them): ${refused.map((scope) => html`<code>${scope.name}</code> `)}</p>`
              : ''
          }
        </fieldset>
        <div class="actions">
          <button type="submit" name="decision" value="approve">Allow</button>
          <button type="submit" name="decision" value="deny" class="secondary">Deny</button>
        </div>
      </form>
    </section>`,
  )
}

export function appsPage(frame: Frame, apps: ConnectedApp[]): Html {
  return layout(
    { ...frame, title: 'Connected apps', active: 'apps' },
    html`<section class="card">
      <p>Apps and assistants you allowed to act as you (OAuth). Disconnecting one stops every token it holds at once.</p>
      ${
        apps.length
          ? html`<table class="apps">
        <thead><tr><th>App</th><th>Returns to</th><th>Scopes</th><th>Connected</th><th>Last used</th><th></th></tr></thead>
        <tbody>${apps.map(
          (app) => html`<tr data-grant="${app.id}">
          <td>${app.clientName}${app.audience ? html` <span class="muted">(${app.audience === 'mcp' ? 'MCP' : 'API v1'})</span>` : ''}</td>
          <td>${app.redirectHost}</td>
          <td>${app.scopes.join(', ')}</td>
          <td>${date(app.createdAt)}</td>
          <td>${date(app.lastUsedAt)}</td>
          <td><form method="post" action="/account/apps/${app.id}/revoke" data-confirm="Disconnect “${app.clientName}”? It stops working at once.">
            <input type="hidden" name="csrf" value="${frame.csrf}" />
            <button type="submit" class="danger">Disconnect</button>
          </form></td>
        </tr>`,
        )}</tbody>
      </table>`
          : html`<p class="muted">No connected apps.</p>`
      }
    </section>`,
  )
}
