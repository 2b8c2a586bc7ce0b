/**
 * The `auth` plugin's public face: the services and types other plugins may use (sessions, the
 * user directory, the user-creation hook, the key manager), and accountsFor, which seeds accounts
 * on a database without a running service (the benchmarks). Everything else of the plugin is its own.
 */
import type { AuditActor } from '../../src/audit'
import type { Executor } from '../../src/db'
import type { Answer, Page } from '../../src/http/answer'
import type { IdempotentRequest } from '../../src/http/idempotency'
import type { PageRequest } from '../../src/http/pagination'
import type { Actor, Door, Principal, PrincipalUser, Role } from '../../src/services/identity'
import type { AuthorizationRequest, Checked, ConnectedApp } from './oauth/flow'
import type { SingleSignOn } from './oidc'
import { serviceRef } from '../../src/services/registry'
import type { Invitation, ManagedUser, UserCreatedHook, UserIdentity as UserIdentityModel, UserStatus } from './model'

/** A user as other plugins see it when one is created, and what runs in its creation's transaction (model.ts). */
export type { CreatedUser, UserCreatedHook } from './model'

/** Organizations, users and API keys made on a database as the operator CLI makes them, without a running service (seeding). */
export { accountsFor } from './service'

export interface UserLifecycle {
  onUserCreated(hook: UserCreatedHook): void
  /** The registered hooks, in registration (dependency) order. */
  createdHooks(): readonly UserCreatedHook[]
}

/** TLS options for reading client ID metadata documents (an embedder's, or a test's: the CA of a local https server). */
export const ClientDocumentAgentRef = serviceRef<{ ca?: string | Buffer | Array<string | Buffer> }>('auth.oauth-document-agent', 'auth')

/**
 * The OAuth authorization server as the account area's consent page and "Connected apps", and the
 * MCP plugin's 401, use it.
 */
export interface OAuthServer {
  /** Checks an authorization request's parameters (see oauth/flow.ts `Checked`). */
  check(params: Record<string, unknown>, origin: string): Promise<Checked>
  /** The scopes of `asked` the role may hold, and those it may not (shown as not granted). */
  scopesFor(asked: readonly string[], role: Role): { allowed: string[]; refused: string[] }
  /** Consent given: the grant and its code; answers where to send the browser. */
  approve(actor: Actor, request: AuthorizationRequest, chosen: readonly string[], origin: string): Promise<string>
  /** Consent refused: where to send the browser (`error=access_denied`). */
  deny(request: AuthorizationRequest, origin: string): string
  connectedApps(user: PrincipalUser): Promise<ConnectedApp[]>
  /** Revokes the user's grant and every token of it, on every instance; 404 for an unknown or someone else's. */
  disconnect(actor: Actor, grantId: string): Promise<void>
  /** The RFC 9728 document's URL of a protected resource, for the 401's `WWW-Authenticate`. */
  resourceMetadataUrl(origin: string, door: Door): string
}

export type { AuthorizationRequest, Checked, ConnectedApp } from './oauth/flow'
export { onlyReads } from './oauth/model'

export const OAuthServerRef = serviceRef<OAuthServer>('auth.oauth', 'auth')

/** Single sign-on with the configured OpenID Connect providers (the account area's sign-in page uses it). */
export type { SingleSignOn, SsoFlow } from './oidc'
export { callbackPath, decodeFlow, encodeFlow, SSO_COOKIE, SSO_FLOW_SECONDS } from './oidc'
export const SingleSignOnRef = serviceRef<SingleSignOn>('auth.single-sign-on', 'auth')

export const UserLifecycleRef = serviceRef<UserLifecycle>('auth.user-lifecycle', 'auth')

/** The limited identity any organization member may resolve (a TypeBox model: API shapes of other plugins embed it). */
export { UserIdentity } from './model'
export type UserIdentity = typeof UserIdentityModel.static
/** Length caps of credentials, on every door that takes them. */
export { EMAIL_MAX, KEY_NAME_MAX, PASSWORD_MAX, PEOPLE_Q_MAX } from './model'
/** The models of people: the list's items, an administrator's view, an invitation, and the inputs (TypeBox: the users plugin's routes declare them). */
export { Invitation, InviteInput, ManagedUser, Person, PersonPatch, UserStatus } from './model'

export interface UserDirectory {
  /**
   * Throws 400 BAD_REQUEST naming `field` unless `userId` is an active user of the organization
   * (a body referring to someone unknown, deactivated or elsewhere).
   */
  requireActiveUser(executor: Executor, organizationId: string, userId: string, field: string): Promise<UserIdentity>
  /** The identity of an active user of the organization, or undefined (also for an id that is no UUID). */
  activeUser(executor: Executor, organizationId: string, userId: string): Promise<UserIdentity | undefined>
  /**
   * Of `refs` (user ids, emails or usernames, any case), those naming an active user of the
   * organization, each to that user's id (keyed by the ref as given). One statement (an import's
   * assignees and authors).
   */
  activeUsersNamed(executor: Executor, organizationId: string, refs: readonly string[]): Promise<Map<string, string>>
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

/** API keys managed by their owner (the account area). */
export interface ApiKeyManager {
  /** Validates `input` ({name, scopes, expiresAt?}); returns the key and its secret, shown once. */
  create(actor: AuditActor, ownerId: string, input: unknown): Promise<{ key: ApiKeyView; secret: string }>
  /** Revokes one of `ownerId`'s keys (404 for anyone else's); takes effect on every instance at once. */
  revoke(actor: AuditActor, ownerId: string, keyId: string): Promise<ApiKeyView>
  /** One page of the keys of `owner` (a user of the organization), newest first. */
  list(owner: { id: string; organizationId: string }, request: PageRequest): Promise<Page<ApiKeyView>>
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

/** What a people list asks for: a status (default active; others are for administrators) and a prefix of a name. */
export interface PeopleQuery {
  status?: UserStatus
  /** Matches the start of a username or display name (and, for administrators, an email), case-insensitive. */
  q?: string
}

/** A live invitation as its link's page shows it. */
export interface PendingInvitation {
  organizationName: string
  email: string
  username: string
  displayName: string
}

/**
 * The people of the caller's organization, as API v1, MCP and the account area's People page use
 * them; the users:write rules (administrators; a superadministrator for superadministrators; the
 * last active superadministrator kept) hold on every door. `userId` may be `me`; `origin` is where
 * an invitation link points (`https://host`, or '' for a path of this service).
 */
export interface People {
  list(actor: Actor, query: PeopleQuery, request: PageRequest): Promise<Page<Record<string, unknown>>>
  /** Validates `input` (InviteInput); 201 with the invited user and their link, shown once. */
  invite(actor: Actor, input: unknown, origin: string, request?: IdempotentRequest): Promise<Answer<Invitation>>
  /** A new link for an invited user (409 for anyone else); the old one stops working. */
  reissue(actor: Actor, userId: string, origin: string, request?: IdempotentRequest): Promise<Answer<Invitation>>
  /** A user of the caller's organization whatever their status, as an administrator sees them (undefined: unknown, or elsewhere). */
  find(actor: Actor, userId: string): Promise<ManagedUser | undefined>
  /** Validates `patch` (PersonPatch): a new role and/or status. */
  update(actor: Actor, userId: string, patch: unknown): Promise<ManagedUser>
  /** The organization `{id, name}`. */
  organization(organizationId: string): Promise<{ id: string; name: string }>
  /** The live invitation of a link's token, or undefined (unknown, used, expired: never said which). */
  invitation(token: string): Promise<PendingInvitation | undefined>
  /**
   * Spends the link: the invitee is active with `password` (400 outside 8..PASSWORD_MAX characters);
   * the user to start a session for, or undefined when the link is not valid.
   */
  accept(token: string, password: string, requestId: string | null): Promise<PrincipalUser | undefined>
}

export const PeopleRef = serviceRef<People>('auth.people', 'auth')

/**
 * The origin an absolute link of this service starts with: `publicUrl` when configured (without a
 * trailing `/`), else the request's own scheme (`secure`: HTTPS, directly or at a trusted proxy) and host.
 */
export function linkOrigin(request: Request, secure: boolean, publicUrl?: string): string {
  if (publicUrl) return publicUrl.replace(/\/+$/, '')
  return `${secure ? 'https' : 'http'}://${new URL(request.url).host}`
}
