/**
 * The account pages: sign-in (double-submit CSRF cookie), API keys and the display account (and,
 * in people-web.ts, the People page and invitation links), all
 * behind a web session cookie; every form carries the session's CSRF token.
 */
import { Elysia } from 'elysia'
import { ApiError } from '../../src/http/errors'
import { htmlResponse } from '../../src/http/html'
import { requestIdOf } from '../../src/http/request-id'
import type { PluginContext } from '../../src/plugin'
import { actorOf } from '../../src/services/identity'
import { ACCOUNT_CSS, ACCOUNT_JS } from './assets'
import { displayPage, groupScopes, keysPage, messagePage, signInPage } from './pages'
import { EMAIL_MAX } from '../auth/api'
import type { AccountServices } from './service'
import { cookie, newFormToken, readCookie, SESSION_COOKIE, SIGN_IN_COOKIE, sameToken } from './web-security'
import { field, fields, redirect, sameSitePath, webSessions, type WebSession } from './web-kit'

export { sameSitePath } from './web-kit'
import { invitePages, peoplePages } from './people-web'
import { oauthPages } from './oauth-web'
import { ssoPages } from './sso-web'

export function accountPages(context: PluginContext, account: AccountServices) {
  const { sessions, keys, display } = account
  // A disabled plugin's scopes are not offered (keys may still hold them, for when it returns).
  const scopeGroups = groupScopes(context.enabledScopes)

  const { session, frame, signedIn } = webSessions(sessions, Boolean(display))

  async function renderKeys(current: WebSession, extra: Partial<Parameters<typeof keysPage>[0]> = {}, status = 200) {
    const page = await keys.list(current.principal.user, { page: 0, size: 100 })
    return htmlResponse(keysPage({ frame: frame(current), keys: page.items, scopes: scopeGroups, ...extra }), status)
  }

  return new Elysia({ name: 'account-pages' })
    .get('/account', async ({ request }) => redirect((await session(request)) ? '/account/keys' : '/account/sign-in'), { detail: { hide: true } })
    .get(
      '/account/sign-in',
      async ({ request, query }) => {
        const next = sameSitePath(typeof query.next === 'string' ? query.next : undefined)
        if (await session(request)) return redirect(next ?? '/account/keys')
        const formToken = newFormToken()
        return htmlResponse(signInPage(formToken, { next, providers: account.singleSignOn.providers() }), 200, {
          'set-cookie': cookie(SIGN_IN_COOKIE, formToken, { secure: context.isSecureRequest(request), maxAge: 3600 }),
        })
      },
      { detail: { hide: true } },
    )
    .post(
      '/account/sign-in',
      async ({ request, body, set }) => {
        const secure = context.isSecureRequest(request)
        const retry = (error: string, status: number, headers: Record<string, string> = {}) => {
          const formToken = newFormToken()
          const email = field(body, 'email')
          return htmlResponse(signInPage(formToken, { error, email: email && email.length <= EMAIL_MAX ? email : undefined, next: sameSitePath(field(body, 'next')), providers: account.singleSignOn.providers() }), status, {
            ...headers,
            'set-cookie': cookie(SIGN_IN_COOKIE, formToken, { secure, maxAge: 3600 }),
          })
        }
        if (!sameToken(field(body, 'csrf'), readCookie(request, SIGN_IN_COOKIE))) return retry('The form expired; please sign in again.', 403)
        try {
          const started = await account.signIn({
            email: field(body, 'email') ?? '',
            password: field(body, 'password') ?? '',
            address: context.clientAddress(request),
            kind: 'web',
            requestId: requestIdOf(set),
          })
          const maxAge = (started.expiresAt.getTime() - Date.now()) / 1000
          const response = redirect(sameSitePath(field(body, 'next')) ?? '/account/keys')
          response.headers.append('set-cookie', cookie(SESSION_COOKIE, started.token, { secure, maxAge }))
          response.headers.append('set-cookie', cookie(SIGN_IN_COOKIE, '', { secure, maxAge: 0 }))
          return response
        } catch (error) {
          // The form answers its own refusals as the page, with the reason: too long (400), wrong
          // (401), password sign-in turned off for the organization (403), throttled (429), or no
          // hashing slot free right now (503).
          if (error instanceof ApiError && [400, 401, 403, 429, 503].includes(error.status)) return retry(error.message, error.status, error.headers)
          throw error
        }
      },
      { detail: { hide: true } },
    )
    .post(
      '/account/sign-out',
      signedIn(async (current, { request, set }) => {
        await sessions.end(current.token, requestIdOf(set))
        return redirect('/account/sign-in', { 'set-cookie': cookie(SESSION_COOKIE, '', { secure: context.isSecureRequest(request), maxAge: 0 }) })
      }, true),
      { detail: { hide: true } },
    )
    .get('/account/keys', signedIn(async (current) => renderKeys(current)), { detail: { hide: true } })
    .post(
      '/account/keys',
      signedIn(async (current, { body, set }) => {
        const expires = field(body, 'expires')
        try {
          const created = await keys.create(actorOf(current.principal, 'account', requestIdOf(set)), current.principal.user.id, {
            name: field(body, 'name') ?? '',
            scopes: fields(body, 'scopes'),
            ...(expires ? { expiresAt: `${expires}T23:59:59Z` } : {}),
          })
          return renderKeys(current, { created }, 201)
        } catch (error) {
          if (error instanceof ApiError && (error.status === 400 || error.status === 409)) return renderKeys(current, { error: error.message }, error.status)
          throw error
        }
      }, true),
      { detail: { hide: true } },
    )
    .post(
      '/account/keys/:keyId/revoke',
      signedIn(async (current, { params, set }) => {
        try {
          await keys.revoke(actorOf(current.principal, 'account', requestIdOf(set)), current.principal.user.id, params.keyId)
        } catch (error) {
          // A page answers a page: an unknown (or someone else's) key is the HTML 404, not the API's JSON.
          if (error instanceof ApiError && error.status === 404) return htmlResponse(messagePage('Not found', error.message), 404)
          throw error
        }
        return redirect('/account/keys')
      }, true),
      { detail: { hide: true } },
    )
    .get(
      '/account/display',
      signedIn(async (current) => {
        if (!display) return htmlResponse(messagePage('Not found', 'There is no display account here.'), 404)
        return htmlResponse(displayPage(frame(current), await display.summary(current.principal.user)))
      }),
      { detail: { hide: true } },
    )
    .post(
      '/account/display/rotate',
      signedIn(async (current, { set }) => {
        if (!display) return htmlResponse(messagePage('Not found', 'There is no display account here.'), 404)
        const rotated = await display.rotate(actorOf(current.principal, 'account', requestIdOf(set)), current.principal.user.id)
        return htmlResponse(displayPage(frame(current), await display.summary(current.principal.user), rotated))
      }, true),
      { detail: { hide: true } },
    )
    .use(peoplePages(context, account, { frame, signedIn }))
    .use(invitePages(context, account))
    .use(oauthPages(context, account, account.oauth, { frame, session, signedIn }))
    .use(ssoPages(context, account))
    .get('/account/assets/account.css', () => new Response(ACCOUNT_CSS, { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600' } }), {
      detail: { hide: true },
    })
    .get('/account/assets/account.js', () => new Response(ACCOUNT_JS, { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=3600' } }), {
      detail: { hide: true },
    })
}
