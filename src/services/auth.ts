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
