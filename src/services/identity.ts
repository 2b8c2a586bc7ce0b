/**
 * Who is calling: the identity the core hands every route, service and audit record, and the one
 * service the core itself needs from a plugin (the Bearer check of API v1, provided by `auth`).
 */
import { insufficientScope } from '../http/errors'
import { serviceRef } from './registry'

export type Role = 'member' | 'administrator' | 'superadministrator'
export const ROLES: readonly Role[] = ['member', 'administrator', 'superadministrator']

/**
 * The door a request came through; recorded in the audit log. `oauth`: API v1 called with an OAuth
 * access token (through `/mcp` a token's calls say `mcp`, with the grant).
 */
export type Via = 'rest' | 'oauth' | 'mcp' | 'account' | 'cli' | 'display' | 'system'

export interface PrincipalUser {
  id: string
  organizationId: string
  email: string
  username: string
  displayName: string
  avatarUrl: string | null
  role: Role
}

export interface PrincipalKey {
  id: string
  name: string
  prefix: string
  scopes: string[]
  expiresAt: string | null
}

/** The OAuth grant an access token belongs to: an app a user connected (the account area's "Connected apps"). */
export interface PrincipalGrant {
  id: string
  clientId: string
  clientName: string
  /** The resource the token was issued for (`mcp`, `api`), or null for both. */
  audience: Door | null
}

/** The protected resources a Bearer credential is presented to. */
export type Door = 'api' | 'mcp'

/**
 * An authenticated user, and the API key used, or the OAuth grant whose access token was used
 * (both null for a session, which holds no scopes and is never scope-checked).
 */
export interface Principal {
  user: PrincipalUser
  key: PrincipalKey | null
  grant?: PrincipalGrant | null
  scopes: ReadonlySet<string>
}

/** Whether the credential carries scopes to check (an API key or an OAuth token; a session does not). */
export const isScoped = (principal: Principal) => principal.key !== null || Boolean(principal.grant)

/** A principal acting through one request: what services and the audit writer receive. */
export interface Actor extends Principal {
  organizationId: string
  userId: string
  role: Role
  apiKeyId: string | null
  /** The OAuth grant of the access token used, else null. */
  grantId: string | null
  via: Via
  requestId: string
}

/** Builds the actor of one request. */
export function actorOf(principal: Principal, via: Via, requestId: string): Actor {
  return {
    ...principal,
    organizationId: principal.user.organizationId,
    userId: principal.user.id,
    role: principal.user.role,
    apiKeyId: principal.key?.id ?? null,
    grantId: principal.grant?.id ?? null,
    // API v1 called with an OAuth token says so; MCP keeps `mcp` (the grant id tells the rest).
    via: via === 'rest' && principal.grant ? 'oauth' : via,
    requestId,
  }
}

/** The scopes of `required` the principal's key lacks (none for a key holding them all). */
export const missingScopes = (principal: { scopes: ReadonlySet<string> }, required: readonly string[]) => required.filter((scope) => !principal.scopes.has(scope))

/** 403 INSUFFICIENT_SCOPE naming what is missing, unless the key holds every scope of `required`: the one scope check of REST and MCP. */
export function requireScopes(principal: { scopes: ReadonlySet<string>; grant?: PrincipalGrant | null }, required: readonly string[]): void {
  const missing = missingScopes(principal, required)
  if (missing.length) throw insufficientScope(missing, principal.grant ? 'access token' : 'API key')
}

export const isAdministrator = (actor: { role: Role }) => actor.role === 'administrator' || actor.role === 'superadministrator'

/** The Bearer check the API v1 kit runs on every request. */
export interface Authenticator {
  /**
   * Resolves an `Authorization` header value; throws 401 for anything but a live key. When the
   * per-key rate limit is on, writes the key's X-RateLimit-* headers into `headers` (also before
   * a 429).
   */
  authenticateBearer(authorization: string | null | undefined, headers?: Record<string, unknown>, door?: Door): Promise<Principal>
  /**
   * A signed-in user, by either credential: a live key (whatever its scopes) or a live mobile
   * session token (no scopes); throws 401 otherwise. For the routes about the caller themselves
   * that an app signed in with a session also uses.
   */
  authenticateUser(authorization: string | null | undefined, headers?: Record<string, unknown>, door?: Door): Promise<Principal>
}

/** Provided by the `auth` plugin; the core's only dependency on a plugin, declared here as what it needs. */
export const AuthenticatorRef = serviceRef<Authenticator>('core.authenticator', 'auth')
