/**
 * The OAuth 2.1 authorization server's vocabulary: secret prefixes, settings, the errors of RFC
 * 6749 §5.2 / RFC 7591 §3.2.2 (a JSON body `{error, error_description}`), and the resources a
 * token may be bound to.
 */
import type { Door } from '../../../src/services/identity'

/** Access tokens, refresh tokens and authorization codes: routed secrets (src/secrets.ts), each naming its organization. */
export const ACCESS_PREFIX = 'wto'
export const REFRESH_PREFIX = 'wtr'
export const CODE_PREFIX = 'wtc'

/** An authorization code lives this long (at most 10 minutes), once. */
export const CODE_SECONDS = 300

export interface OAuthSettings {
  accessTokenSeconds: number
  refreshTokenDays: number
  registrationsPerHour: number
  maxClients: number
  /** Client ID metadata documents: how long one read is trusted, its size and time bounds, and whether a private address may serve one (tests). */
  documentCacheSeconds: number
  documentMaxBytes: number
  documentTimeoutMs: number
  allowPrivateDocuments: boolean
}

/** The resources (RFC 8707) of this service, by door, under the origin. */
export const RESOURCE_PATHS: Record<Door, string> = { mcp: '/mcp', api: '/api/v1' }

/** The protected-resource metadata document of a door (RFC 9728: the well-known prefix before the resource's path). */
export const resourceMetadataUrl = (origin: string, door: Door) => `${origin}/.well-known/oauth-protected-resource${RESOURCE_PATHS[door]}`

/** The door a `resource` parameter names (`<origin>/mcp`, `<origin>/api/v1`, a trailing slash allowed), or undefined. */
export function doorOfResource(origin: string, resource: string): Door | undefined {
  const trimmed = resource.endsWith('/') ? resource.slice(0, -1) : resource
  for (const [door, path] of Object.entries(RESOURCE_PATHS) as [Door, string][]) if (trimmed === origin + path) return door
  return undefined
}

/** An OAuth error answer: `status` with `{error, error_description}` (never cached). */
export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description)
  }
}

export const invalidRequest = (description: string) => new OAuthError(400, 'invalid_request', description)
export const invalidGrant = (description: string) => new OAuthError(400, 'invalid_grant', description)

/** The answer of an OAuth endpoint: JSON, never stored by a cache (RFC 6749 §5.1). */
export function oauthJson(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', pragma: 'no-cache', ...headers } })
}

export const oauthErrorResponse = (error: OAuthError) => oauthJson({ error: error.code, error_description: error.message }, error.status, error.headers)

/** Whether every scope is a read scope (`…:read`): such a grant's MCP connection is read only. */
export const onlyReads = (scopes: readonly string[]) => scopes.every((scope) => scope.endsWith(':read'))
