/** Reading credentials from a request: the Bearer token, and cookies (for every plugin that serves pages). */

/** The web session cookie the account area sets and the live pages read. */
export const SESSION_COOKIE = 'wt_session'

/** The value of cookie `name` in `request`, if any; the first one wins when it is repeated. */
export function readCookie(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=')
    if (key !== name) continue
    try {
      return decodeURIComponent(rest.join('='))
    } catch {
      return undefined // not percent-encoding we wrote (`%ZZ`): no such cookie, not a 500
    }
  }
  return undefined
}

/** The token of `Authorization: Bearer <token>` (scheme case-insensitive), or undefined when the header is absent or another shape. */
export function bearerToken(authorization: string | null | undefined): string | undefined {
  return authorization ? /^Bearer[ ]+(\S+)[ ]*$/i.exec(authorization)?.[1] : undefined
}
