/**
 * Single sign-on's two doors in the account area: `/account/sso/<provider>` sends the browser to
 * the identity provider with the flow kept in a short-lived cookie (SameSite=Lax: the provider's
 * redirect back is a navigation from its site), and `/account/sso/<provider>/callback` finishes
 * it: the ID token verified, the user matched, a web session started (or the refusal, said on
 * the sign-in page).
 */
import { Elysia } from 'elysia'
import { ApiError } from '../../src/http/errors'
import { htmlResponse } from '../../src/http/html'
import { requestIdOf } from '../../src/http/request-id'
import type { PluginContext } from '../../src/plugin'
import { callbackPath, decodeFlow, encodeFlow, linkOrigin, SSO_COOKIE, SSO_FLOW_SECONDS } from '../auth/api'
import { continuePage, signInPage } from './pages'
import type { AccountServices } from './service'
import { sameSitePath } from './web-kit'
import { cookie, newFormToken, readCookie, SESSION_COOKIE, SIGN_IN_COOKIE } from './web-security'

/** The flow's cookie: only for the SSO paths, Lax (sent on the provider's redirect back), gone after 10 minutes. */
const flowCookie = (value: string, secure: boolean, maxAge: number) =>
  [`${SSO_COOKIE}=${value}`, 'Path=/account/sso', 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAge}`, ...(secure ? ['Secure'] : [])].join('; ')

export function ssoPages(context: PluginContext, account: AccountServices) {
  const { singleSignOn } = account
  const origin = (request: Request) => linkOrigin(request, context.isSecureRequest(request), account.publicUrl)

  /** A refusal on the sign-in page (its form ready, as the page's own refusals are). */
  const refusal = (request: Request, message: string, status: number, next?: string, headers: Record<string, string> = {}) => {
    const formToken = newFormToken()
    const response = htmlResponse(signInPage(formToken, { error: message, next: sameSitePath(next), providers: singleSignOn.providers() }), status, headers)
    const secure = context.isSecureRequest(request)
    response.headers.append('set-cookie', cookie(SIGN_IN_COOKIE, formToken, { secure, maxAge: 3600 }))
    response.headers.append('set-cookie', flowCookie('', secure, 0))
    return response
  }

  return new Elysia({ name: 'account-sso' })
    .get(
      '/account/sso/:provider',
      async ({ request, params, query }) => {
        const next = sameSitePath(typeof query.next === 'string' ? query.next : undefined)
        try {
          const { redirect, flow } = await singleSignOn.start(params.provider, origin(request), next)
          return new Response(null, {
            status: 302,
            headers: { location: redirect, 'cache-control': 'no-store', 'set-cookie': flowCookie(encodeFlow(flow), context.isSecureRequest(request), SSO_FLOW_SECONDS) },
          })
        } catch (error) {
          if (error instanceof ApiError && (error.status < 500 || error.status === 503)) return refusal(request, error.message, error.status, next, error.headers)
          throw error
        }
      },
      { detail: { hide: true } },
    )
    .get(
      '/account/sso/:provider/callback',
      async ({ request, params, set }) => {
        const url = new URL(request.url)
        const current = new URL(origin(request) + callbackPath(params.provider) + url.search)
        const flow = decodeFlow(readCookie(request, SSO_COOKIE))
        try {
          const started = await singleSignOn.finish(params.provider, current, flow, requestIdOf(set))
          const secure = context.isSecureRequest(request)
          const response = htmlResponse(continuePage(sameSitePath(started.next) ?? '/account/keys'))
          response.headers.append('set-cookie', cookie(SESSION_COOKIE, started.token, { secure, maxAge: (started.expiresAt.getTime() - Date.now()) / 1000 }))
          response.headers.append('set-cookie', flowCookie('', secure, 0))
          return response
        } catch (error) {
          if (error instanceof ApiError && error.status < 500) return refusal(request, error.message, error.status, flow?.next)
          throw error
        }
      },
      { detail: { hide: true } },
    )
}
