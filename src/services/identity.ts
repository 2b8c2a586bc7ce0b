/**
 * Who is calling: the identity the core hands every route, service and audit record, and the one
 * service the core itself needs from a plugin (the Bearer check of API v1, provided by `auth`).
 */
import { insufficientScope } from '../http/errors'
import { serviceRef } from './registry'

export type Role = 'member' | 'administrator' | 'superadministrator'
export const ROLES: readonly Role[] = ['member', 'administrator', 'superadministrator']

/** The door a request came through; recorded in the audit log. */
export type Via = 'rest' | 'mcp' | 'account' | 'cli' | 'display' | 'system'

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

/** An authenticated user, and the API key used (null for a session). */
export interface Principal {
  user: PrincipalUser
  key: PrincipalKey | null
  scopes: ReadonlySet<string>
}

/** A principal acting through one request: what services and the audit writer receive. */
export interface Actor extends Principal {
  organizationId: string
  userId: string
  role: Role
  apiKeyId: string | null
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
    via,
    requestId,
  }
}

/** The scopes of `required` the principal's key lacks (none for a key holding them all). */
export const missingScopes = (principal: { scopes: ReadonlySet<string> }, required: readonly string[]) => required.filter((scope) => !principal.scopes.has(scope))

/** 403 INSUFFICIENT_SCOPE naming what is missing, unless the key holds every scope of `required`: the one scope check of REST and MCP. */
export function requireScopes(principal: { scopes: ReadonlySet<string> }, required: readonly string[]): void {
  const missing = missingScopes(principal, required)
  if (missing.length) throw insufficientScope(missing)
}

export const isAdministrator = (actor: { role: Role }) => actor.role === 'administrator' || actor.role === 'superadministrator'

/** The Bearer check the API v1 kit runs on every request. */
export interface Authenticator {
  /**
   * Resolves an `Authorization` header value; throws 401 for anything but a live key. When the
   * per-key rate limit is on, writes the key's X-RateLimit-* headers into `headers` (also before
   * a 429).
   */
  authenticateBearer(authorization: string | null | undefined, headers?: Record<string, unknown>): Promise<Principal>
  /**
   * A signed-in user, by either credential: a live key (whatever its scopes) or a live mobile
   * session token (no scopes); throws 401 otherwise. For the routes about the caller themselves
   * that an app signed in with a session also uses.
   */
  authenticateUser(authorization: string | null | undefined, headers?: Record<string, unknown>): Promise<Principal>
}

/** Provided by the `auth` plugin; the core's only dependency on a plugin, declared here as what it needs. */
export const AuthenticatorRef = serviceRef<Authenticator>('core.authenticator', 'auth')
