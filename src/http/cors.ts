/**
 * CORS for the APIs a browser app on another origin calls: API v1, the display API,
 * MCP and OAuth's token, registration, revocation and metadata, for the origins of `server.cors.origins`, without credentials (API keys travel in
 * Authorization, never in cookies). The account area and the dashboard pages never get CORS
 * headers: they are this service's own pages, signed in by cookie.
 */

/** The paths a cross-origin browser app may call. */
const COVERED = /^\/(?:api\/v1(?:\/|$)|api\/component$|api\/message$|mcp(?:\/|$)|oauth\/(?:token|register|revoke)$|\.well-known\/oauth-)/

const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS'
const ALLOWED_HEADERS = 'Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, X-Request-Id, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID'
const EXPOSED_HEADERS =
  'ETag, Link, Location, Retry-After, X-Request-Id, Idempotent-Replayed, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Mcp-Session-Id'
/** How long a browser may reuse a preflight's answer, in seconds. */
export const PREFLIGHT_MAX_AGE = 600

export interface Cors {
  /**
   * For a request to a covered path: the preflight's 204 when it is one from an allowed origin;
   * otherwise writes the CORS headers of an allowed origin (and `Vary: Origin`) into `headers`.
   */
  apply(request: Request, headers: Record<string, unknown>): Response | undefined
}

/** The path of a request URL, without parsing the whole URL (this runs on every request). */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start < 0) return '/'
  const end = url.indexOf('?', start)
  return end < 0 ? url.slice(start) : url.slice(start, end)
}

/** The CORS policy of `origins` (scheme://host[:port], compared exactly, case-insensitively); undefined when empty. */
export function createCors(origins: readonly string[]): Cors | undefined {
  if (origins.length === 0) return undefined
  const allowed = new Set(origins.map((origin) => origin.toLowerCase()))
  return {
    apply(request, headers) {
      if (!COVERED.test(pathOf(request.url))) return undefined
      // The answer depends on Origin whether or not this one is allowed: caches must keep them apart.
      headers.vary = 'Origin'
      const origin = request.headers.get('origin')
      if (origin === null || !allowed.has(origin.toLowerCase())) return undefined
      if (request.method === 'OPTIONS' && request.headers.has('access-control-request-method'))
        return new Response(null, {
          status: 204,
          headers: {
            ...(headers as Record<string, string>),
            'access-control-allow-origin': origin,
            'access-control-allow-methods': ALLOWED_METHODS,
            'access-control-allow-headers': ALLOWED_HEADERS,
            'access-control-max-age': String(PREFLIGHT_MAX_AGE),
          },
        })
      headers['access-control-allow-origin'] = origin
      headers['access-control-expose-headers'] = EXPOSED_HEADERS
      return undefined
    },
  }
}
