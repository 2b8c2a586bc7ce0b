/**
 * What every account page route shares: answers (redirect, form fields), the signed-in web session
 * of a request, and the wrapper that runs a page only for a signed-in user (and a form post only
 * with the session's CSRF token).
 */
import { htmlResponse } from '../../src/http/html'
import type { Principal } from '../../src/services/identity'
import type { Sessions } from '../auth/api'
import { messagePage } from './pages'
import { csrfFor, readCookie, SESSION_COOKIE, sameToken } from './web-security'

export const redirect = (location: string, headers: Record<string, string> = {}) => new Response(null, { status: 303, headers: { location, 'cache-control': 'no-store', ...headers } })

export const field = (body: unknown, name: string): string | undefined => {
  const value = (body as Record<string, unknown> | undefined)?.[name]
  // A form repeats a field as an array; a JSON body may hold anything there (`{"csrf": [1]}`).
  const first = Array.isArray(value) ? value[0] : value
  return typeof first === 'string' ? first : undefined
}

export const fields = (body: unknown, name: string): string[] => {
  const value = (body as Record<string, unknown> | undefined)?.[name]
  return typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((item) => typeof item === 'string') : []
}

export interface WebSession {
  principal: Principal
  token: string
  csrf: string
}

/** What a page handler is given of the request. */
export interface PageContext {
  request: Request
  body: unknown
  set: any
  params: any
  query: Record<string, unknown>
}

export const csrfRefused = () => htmlResponse(messagePage('Refused', 'This form expired or did not come from this site. Reload the page and try again.'), 403)

export function webSessions(sessions: Sessions, showDisplay: boolean) {
  /** The signed-in session of the request's cookie, or null. */
  async function session(request: Request): Promise<WebSession | null> {
    const token = readCookie(request, SESSION_COOKIE)
    if (!token) return null
    try {
      return { principal: await sessions.authenticate(token, 'web'), token, csrf: csrfFor(token) }
    } catch {
      return null
    }
  }

  const frame = (current: WebSession) => ({ title: '', user: current.principal.user, csrf: current.csrf, showDisplay })

  /** Runs a page that needs a signed-in user; a form post must also carry the CSRF token. */
  const signedIn =
    (handler: (current: WebSession, context: PageContext) => Promise<Response>, form = false) =>
    async (context: PageContext) => {
      const current = await session(context.request)
      if (!current) return redirect('/account/sign-in')
      if (form && !sameToken(field(context.body, 'csrf'), current.csrf)) return csrfRefused()
      return handler(current, context)
    }

  return { session, frame, signedIn }
}

/** The longest `next` path sign-in follows. */
const NEXT_MAX = 2048

/** The origin `next` is resolved against: no real site has it. */
const SAME_SITE_BASE = 'http://same.invalid'

/**
 * Where sign-in continues: `next` when it is a path of this site (`/pages/ops?kiosk=1`), never
 * another origin nor a control character. The path is resolved first (dot segments, `\` as `/`,
 * `%2e` as `.`) and the resolved form is judged and returned: `/.//evil.example` resolves to
 * `//evil.example`, which a browser reads as another host, so it is refused.
 */
export function sameSitePath(next: string | undefined): string | undefined {
  if (!next || next.length > NEXT_MAX || !next.startsWith('/') || /[\u0000-\u001f\u007f]/.test(next)) return undefined
  let url: URL
  try {
    url = new URL(next, SAME_SITE_BASE)
  } catch {
    return undefined
  }
  if (url.origin !== SAME_SITE_BASE || url.username || url.password) return undefined
  const path = url.pathname + url.search + url.hash
  return path.length <= NEXT_MAX && path.startsWith('/') && !/^\/[/\\]/.test(path) ? path : undefined
}
