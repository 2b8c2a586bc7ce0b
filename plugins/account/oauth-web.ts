/**
 * The OAuth consent page (`/account/authorize`, where `/oauth/authorize` sends a checked request)
 * and "Connected apps" (`/account/apps`). Signed in by the web session; every form carries its
 * CSRF token. The consent form carries the request back and it is checked again on its post.
 */
import { Elysia } from 'elysia'
import { ApiError } from '../../src/http/errors'
import { htmlResponse, PAGE_HEADERS } from '../../src/http/html'
import { requestIdOf } from '../../src/http/request-id'
import type { PluginContext } from '../../src/plugin'
import { actorOf } from '../../src/services/identity'
import { linkOrigin, type AuthorizationRequest, type OAuthServer } from '../auth/api'
import { appsPage, CARRIED, consentPage } from './oauth-pages'
import { continuePage, messagePage } from './pages'
import { readCookie, SESSION_COOKIE } from './web-security'
import type { AccountServices } from './service'
import { field, fields, redirect, sameSitePath, type PageContext, type WebSession } from './web-kit'

interface Kit {
  frame(current: WebSession): { title: string; user: WebSession['principal']['user']; csrf: string; showDisplay: boolean }
  session(request: Request): Promise<WebSession | null>
  signedIn(handler: (current: WebSession, context: PageContext) => Promise<Response>, form?: boolean): (context: PageContext) => Promise<Response>
}

const carriedOf = (source: Record<string, unknown>) => {
  const carried: Record<string, string> = {}
  for (const name of CARRIED) {
    const value = field(source, name)
    if (value !== undefined) carried[name] = value
  }
  return carried
}

/**
 * A page whose form may end in a redirect to the app: Chrome holds a form's redirects to its
 * `form-action` sources, so the app's redirect origin is added to them.
 */
const consentHeaders = (request: AuthorizationRequest) => ({
  'content-security-policy': PAGE_HEADERS['content-security-policy']!.replace("form-action 'self'", `form-action 'self' ${new URL(request.redirectUri).origin}`),
})

export function oauthPages(context: PluginContext, account: AccountServices, oauth: OAuthServer, kit: Kit) {
  const origin = (request: Request) => linkOrigin(request, context.isSecureRequest(request), account.publicUrl)
  const scopes = new Map(context.enabledScopes.map((scope) => [scope.name, scope]))
  const failed = (message: string) => htmlResponse(messagePage('Cannot connect this app', message), 400)

  return new Elysia({ name: 'account-oauth' })
    .get(
      '/account/authorize',
      async ({ request, query }) => {
        const current = await kit.session(request)
        if (!current) {
          const url = new URL(request.url)
          // Sent here by a link on the app's site, a browser leaves out the session cookie
          // (SameSite=Strict) along that chain: this page then reloads itself, a navigation of
          // this site, which carries it (a signed-in user goes straight to consent).
          if (request.headers.get('sec-fetch-site') === 'cross-site' && readCookie(request, SESSION_COOKIE) === undefined && url.pathname + url.search === sameSitePath(url.pathname + url.search))
            return htmlResponse(continuePage(url.pathname + url.search))
          const next = sameSitePath(url.pathname + url.search)
          return redirect(next ? `/account/sign-in?next=${encodeURIComponent(next)}` : '/account/sign-in')
        }
        const checked = await oauth.check(query, origin(request))
        if (!checked.ok) return 'fatal' in checked ? failed(checked.fatal) : redirect(checked.redirect)
        const { allowed, refused } = oauth.scopesFor(checked.request.scopes, current.principal.user.role)
        return htmlResponse(
          consentPage({
            frame: kit.frame(current),
            request: checked.request,
            carried: carriedOf(query),
            offered: allowed.map((name) => scopes.get(name)!),
            refused: refused.map((name) => scopes.get(name)!),
          }),
          200,
          consentHeaders(checked.request),
        )
      },
      { detail: { hide: true } },
    )
    .post(
      '/account/authorize',
      kit.signedIn(async (current, { request, body, set }) => {
        const checked = await oauth.check(carriedOf(body as Record<string, unknown>), origin(request))
        if (!checked.ok) return 'fatal' in checked ? failed(checked.fatal) : redirect(checked.redirect)
        if (field(body, 'decision') !== 'approve') return redirect(oauth.deny(checked.request, origin(request)))
        const actor = actorOf(current.principal, 'account', requestIdOf(set))
        return redirect(await oauth.approve(actor, checked.request, fields(body, 'scopes'), origin(request)))
      }, true),
      { detail: { hide: true } },
    )
    .get('/account/apps', kit.signedIn(async (current) => htmlResponse(appsPage({ ...kit.frame(current) }, await oauth.connectedApps(current.principal.user)))), { detail: { hide: true } })
    .post(
      '/account/apps/:grantId/revoke',
      kit.signedIn(async (current, { params, set }) => {
        try {
          await oauth.disconnect(actorOf(current.principal, 'account', requestIdOf(set)), params.grantId)
        } catch (error) {
          if (error instanceof ApiError && error.status === 404) return htmlResponse(messagePage('Not found', error.message), 404)
          throw error
        }
        return redirect('/account/apps')
      }, true),
      { detail: { hide: true } },
    )
}
