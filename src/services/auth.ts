/** Who is calling: the identity every service function receives, and the authenticator ref. */
import { serviceRef } from './registry'

export type Role = 'member' | 'administrator' | 'superadministrator'
export const ROLES: readonly Role[] = ['member', 'administrator', 'superadministrator']

/** The door a request came through; recorded in the audit log. */
export type Via = 'rest' | 'mcp' | 'account' | 'cli' | 'display'

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

export const isAdministrator = (actor: { role: Role }) =>
  actor.role === 'administrator' || actor.role === 'superadministrator'

export interface Authenticator {
  /** Resolves an `Authorization` header value; throws 401 for anything but a live key. */
  authenticateBearer(authorization: string | null | undefined): Promise<Principal>
}

export const AuthenticatorRef = serviceRef<Authenticator>('auth.authenticator', 'auth')

/** A user as other plugins see it when one is created. */
export interface CreatedUser {
  id: string
  organizationId: string
  username: string
}

/**
 * Runs inside the transaction that creates a user (e.g. the display plugin creates the user's
 * display account); the fields it returns are added to the creator's result, shown once.
 */
export type UserCreatedHook = (tx: import('../db').Transaction, user: CreatedUser) => Promise<Record<string, unknown>>

export interface UserLifecycle {
  onUserCreated(hook: UserCreatedHook): void
  /** The registered hooks, in registration (dependency) order. */
  createdHooks(): readonly UserCreatedHook[]
}

export const UserLifecycleRef = serviceRef<UserLifecycle>('auth.user-lifecycle', 'auth')

export interface UserDirectory {
  /**
   * Throws 400 BAD_REQUEST naming `field` unless `userId` is an active user of the organization
   * (a body referring to someone unknown, deactivated or elsewhere).
   */
  requireActiveUser(executor: import('../db').Executor, organizationId: string, userId: string, field: string): Promise<void>
}

export const UserDirectoryRef = serviceRef<UserDirectory>('auth.user-directory', 'auth')

/** A stored API key as its owner sees it (never the secret or its hash). */
export interface ApiKeyView {
  id: string
  name: string
  prefix: string
  scopes: string[]
  ownerId: string
  createdAt: string
  lastUsedAt: string | null
  expiresAt: string | null
  revokedAt: string | null
}

type AuditActorOf = import('../audit').AuditActor

/** API keys managed by their owner (the account area). */
export interface ApiKeyManager {
  /** Validates `input` ({name, scopes, expiresAt?}); returns the key and its secret, shown once. */
  create(actor: AuditActorOf, ownerId: string, input: unknown): Promise<{ key: ApiKeyView; secret: string }>
  /** Revokes one of `ownerId`'s keys (404 for anyone else's); takes effect on every instance at once. */
  revoke(actor: AuditActorOf, ownerId: string, keyId: string): Promise<ApiKeyView>
  list(ownerId: string, request: import('../http/pagination').PageRequest): Promise<import('../http/envelope').Page<ApiKeyView>>
}

export const ApiKeyManagerRef = serviceRef<ApiKeyManager>('auth.api-keys', 'auth')

export type SessionKind = 'web' | 'mobile'

export interface StartedSession {
  id: string
  /** The secret: a cookie value or a Bearer token, shown once. */
  token: string
  expiresAt: Date
}

/** A session ended (sign-out) or a user deactivated: what streams opened by a session must react to. */
export type Revocation = { sessionId: string } | { userId: string }

export interface Sessions {
  /** Checks email and password (the same work whether or not the email exists); null if wrong. */
  verifyCredentials(email: string, password: string): Promise<PrincipalUser | null>
  /** Starts a session for `user` and audits the sign-in. */
  start(user: PrincipalUser, kind: SessionKind, requestId: string | null): Promise<StartedSession>
  /** The signed-in user of a live session token; throws 401 otherwise. Refreshes the idle clock. */
  authenticate(token: string | null | undefined, kind: SessionKind): Promise<Principal & { sessionId: string; expiresAt: Date }>
  /**
   * Of `sessionIds`, those still live (not ended, not past their absolute end, user active); an
   * open stream counts as use, so their idle clocks are refreshed. One statement.
   */
  stillLive(sessionIds: readonly string[]): Promise<Set<string>>
  /**
   * Calls `listener` after a sign-out or a deactivation commits on any instance; `onResync` runs
   * when such news may have been missed.
   */
  onRevoked(listener: (revocation: Revocation) => void, onResync?: () => void): void
  /** Ends the session of `token` (sign-out) and audits it; unknown tokens are ignored. */
  end(token: string, requestId: string | null): Promise<void>
}

export const SessionsRef = serviceRef<Sessions>('auth.sessions', 'auth')
