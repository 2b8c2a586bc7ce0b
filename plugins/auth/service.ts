/**
 * Organizations, users and API keys: the writes the CLI and the account area share, and
 * accountsFor, the same writes for seeding without a running service (re-exported by api.ts, so
 * nothing here imports api.ts: views.ts holds what is typed by the face's services).
 */
import { and, count, eq, isNull, sql } from 'drizzle-orm'
import type { Static } from '@sinclair/typebox'
import type { AuditActor } from '../../src/audit'
import { queryText } from '../../src/db'
import type { EventBus } from '../../src/events'
import { badRequest, conflict, notFound } from '../../src/http/errors'
import { isUuid, uuidv7 } from '../../src/ids'
import { generateSecret, hashSecret, secretPrefix } from '../../src/secrets'
import { validate } from '../../src/validate'
import type { Write, Writes } from '../../src/writes'
import { ApiKeyInput, OrganizationInput, OrganizationPatch, UserInput, type UserCreatedHook } from './model'
import { PasswordHasher } from './password'
import { apiKeys, organizations, userEmails, userInvitations, users } from './schema'

export const API_KEY_PREFIX = 'wtk'
/** The NOTIFY channel that tells every instance to drop cached keys. */
export const INVALIDATE_CHANNEL = 'auth_invalidate'

/**
 * What every instance drops: a key, everything of a user (deactivated; or, with `roleChanged`, only
 * their cached keys, which carry the old role: their sessions and streams go on), a session (signed out),
 * an OAuth grant (revoked: every token of it), or an organization's kept name (renamed).
 */
export type Invalidation = { keyId: string } | { userId: string; roleChanged?: true } | { sessionId: string } | { grantId: string } | { organizationId: string }

/** Creates an organization. */
export async function createOrganization(writes: Writes, actor: Omit<AuditActor, 'organizationId'>, input: unknown) {
  const { db } = writes
  const { name } = validate(OrganizationInput, input)
  const id = uuidv7()
  return writes.change({ ...actor, organizationId: id }, null, (write) => insertOrganization(write, id, name))
}

/**
 * Changes an organization (the CLI): its name, and whether its users may sign in with a password.
 * A new name reaches every instance's kept names when the change commits (`INVALIDATE_CHANNEL`):
 * the CLI is a process of its own.
 */
export async function updateOrganization(writes: Writes, events: EventBus, actor: Omit<AuditActor, 'organizationId'>, organizationId: string, input: unknown) {
  if (!isUuid(organizationId)) throw badRequest('Must be an organization id (a UUID).', 'id')
  const patch = validate(OrganizationPatch, input)
  return writes.change({ ...actor, organizationId }, null, async ({ tx, audit }) => {
    const [current] = await tx.select().from(organizations).where(eq(organizations.id, organizationId)).for('update')
    if (!current) throw badRequest('No such organization.', 'id')
    const keys = (Object.keys(patch) as (keyof typeof patch)[]).filter((key) => patch[key] !== undefined && patch[key] !== current[key])
    if (!keys.length) return current
    const [row] = await tx.update(organizations).set({ ...patch, updatedAt: new Date() }).where(eq(organizations.id, organizationId)).returning()
    await audit({
      action: 'organization.updated',
      resourceType: 'organization',
      resourceId: organizationId,
      changes: { before: Object.fromEntries(keys.map((key) => [key, current[key]])), after: Object.fromEntries(keys.map((key) => [key, row![key]])) },
    })
    if (keys.includes('name')) await events.publish(tx, INVALIDATE_CHANNEL, { organizationId } satisfies Invalidation)
    return row!
  })
}

async function insertOrganization({ tx, audit }: Write, id: string, name: string) {
  const [organization] = await tx.insert(organizations).values({ id, name }).returning()
  await audit({ action: 'organization.created', resourceType: 'organization', resourceId: id, changes: { after: { name } } })
  return organization!
}

export interface CreateUserOptions {
  hasher: PasswordHasher
  hooks: readonly UserCreatedHook[]
}

/** Creates a user (and, through the hooks, what other plugins attach to a new user). */
export async function createUser(writes: Writes, actor: Omit<AuditActor, 'organizationId'>, input: unknown, options: CreateUserOptions) {
  const { db } = writes
  const data = validate(UserInput, input)
  const [organization] = await db.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, data.organizationId))
  if (!organization) throw badRequest('No such organization.', 'organizationId')
  const passwordHash = await options.hasher.hash(data.password)
  return writes.change({ ...actor, organizationId: data.organizationId }, null, (write) => insertUser(write, data, passwordHash, options.hooks))
}

/** A new user's fields (validated): a created user's (UserInput), or an invited one's. */
export type NewUser = Pick<Static<typeof UserInput>, 'organizationId' | 'email' | 'username' | 'displayName' | 'role' | 'avatarUrl'>

/**
 * The user's rows and audit record in `write`'s transaction, then the created-user hooks. An
 * `invited` user is audited as `user.invited`. A taken email's 409 names the existing user only
 * when they are of `revealIn` (the CLI's operator sees every organization: no `revealIn`, all).
 */
export async function insertUser(
  { tx, audit }: Pick<Write, 'tx' | 'audit'>,
  data: NewUser,
  passwordHash: string,
  hooks: readonly UserCreatedHook[],
  options: { status?: 'active' | 'invited'; revealIn?: string } = {},
) {
  const email = data.email.toLowerCase()
  const status = options.status ?? 'active'
  // The email is claimed first, across organizations (user_emails): a concurrent claim waits and then finds it taken.
  const id = uuidv7()
  const [claimed] = await tx.insert(userEmails).values({ email, organizationId: data.organizationId, userId: id }).onConflictDoNothing().returning()
  if (!claimed) {
    const [byEmail] = await tx.select({ id: userEmails.userId, organizationId: userEmails.organizationId }).from(userEmails).where(eq(userEmails.email, email))
    const revealed = byEmail && (options.revealIn === undefined || options.revealIn === byEmail.organizationId) ? byEmail.id : undefined
    throw conflict('A user with this email already exists.', revealed, 'email')
  }
  const [byUsername] = await tx
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.organizationId, data.organizationId), eq(users.username, data.username)))
  if (byUsername) throw conflict('A user with this username already exists in the organization.', byUsername.id, 'username')
  const [user] = await tx
    .insert(users)
    .values({
      id,
      organizationId: data.organizationId,
      email,
      username: data.username,
      displayName: data.displayName,
      avatarUrl: data.avatarUrl ?? null,
      role: data.role,
      status,
      passwordHash,
    })
    .returning()
  const after = { email, username: user!.username, displayName: user!.displayName, role: user!.role }
  await audit({
    action: status === 'invited' ? 'user.invited' : 'user.created',
    resourceType: 'user',
    resourceId: user!.id,
    changes: { after: status === 'invited' ? { ...after, status } : after },
  })
  let extra: Record<string, unknown> = {}
  for (const hook of hooks) extra = { ...extra, ...(await hook(tx, { id: user!.id, organizationId: user!.organizationId, username: user!.username })) }
  return { user: user!, extra }
}

/**
 * Marks `current` (read, and locked, in `write`'s transaction) deactivated with its audit record, and
 * publishes the invalidation that stops their keys and sessions on every instance when the
 * transaction commits; the caller emits it locally after the commit (`emitDeactivated`). An invited
 * user's invitation is voided with it.
 */
export async function markDeactivated({ tx, audit }: Pick<Write, 'tx' | 'audit'>, events: EventBus, current: typeof users.$inferSelect) {
  const [user] = await tx
    .update(users)
    .set({ status: 'deactivated', updatedAt: new Date() })
    .where(and(eq(users.id, current.id), eq(users.organizationId, current.organizationId)))
    .returning()
  if (current.status === 'invited') await tx.delete(userInvitations).where(and(eq(userInvitations.userId, current.id), eq(userInvitations.organizationId, current.organizationId)))
  await audit({
    action: 'user.deactivated',
    resourceType: 'user',
    resourceId: current.id,
    changes: { before: { status: current.status }, after: { status: 'deactivated' } },
  })
  await events.publish(tx, INVALIDATE_CHANNEL, { userId: current.id } satisfies Invalidation)
  return user!
}

/** After the deactivation's commit: this instance drops the user's keys and sessions now (the NOTIFY reaches the others). */
export const emitDeactivated = (events: EventBus, userId: string) => events.emitLocally(INVALIDATE_CHANNEL, { userId } satisfies Invalidation)

/** Deactivates a user; their keys and sessions stop working on every instance at once. */
export async function deactivateUser(writes: Writes, events: EventBus, actor: Omit<AuditActor, 'organizationId'>, userId: string) {
  const { db } = writes
  if (!isUuid(userId)) throw notFound('No such user.')
  const [current] = await db.select().from(users).where(eq(users.id, userId))
  if (!current) throw notFound('No such user.')
  if (current.status === 'deactivated') return current
  const user = await writes.change({ ...actor, organizationId: current.organizationId }, 'organization', async (write) => markDeactivated(write, events, current))
  emitDeactivated(events, userId)
  return user
}

/**
 * Creates an API key for `ownerId` with `scopes` (each must be known); returns the stored key
 * and the secret, which is never seen again.
 */
export async function createApiKey(
  writes: Writes,
  /** With an organization (a user acting in the account area), the owner is looked up in it alone. */
  actor: Omit<AuditActor, 'organizationId'> & { organizationId?: string },
  ownerId: string,
  input: unknown,
  knownScopes: ReadonlySet<string>,
  /** Active (unrevoked, unexpired) keys one user may hold. */
  maxKeys = Number.POSITIVE_INFINITY,
) {
  const { db } = writes
  const data = validate(ApiKeyInput, input)
  data.scopes.forEach((scope, index) => {
    if (!knownScopes.has(scope)) throw badRequest(`Unknown scope "${scope}".`, `scopes[${index}]`)
  })
  const expiresAt = data.expiresAt ? new Date(data.expiresAt) : null
  if (expiresAt && expiresAt.getTime() <= Date.now()) throw badRequest('The expiry must be in the future.', 'expiresAt')
  if (!isUuid(ownerId)) throw badRequest('No such user.', 'userId')
  const [owner] = await db
    .select()
    .from(users)
    .where(and(eq(users.id, ownerId), actor.organizationId ? eq(users.organizationId, actor.organizationId) : undefined))
  if (!owner || owner.status !== 'active') throw badRequest('No such active user.', 'userId')
  const secret = generateSecret(API_KEY_PREFIX)
  return writes.change({ ...actor, organizationId: owner.organizationId }, null, async ({ tx, audit }) => {
    if (Number.isFinite(maxKeys)) {
      // The owner's row is locked, so concurrent creations count one after another (by id and
      // organization: on Citus a row lock must name the shard).
      await tx
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.id, ownerId), eq(users.organizationId, owner.organizationId)))
        .for('update')
      const [active] = await tx
        .select({ n: count() })
        .from(apiKeys)
        .where(
          and(
            eq(apiKeys.ownerId, ownerId),
            eq(apiKeys.organizationId, owner.organizationId),
            isNull(apiKeys.revokedAt),
            sql`(${apiKeys.expiresAt} is null or ${apiKeys.expiresAt} > now())`,
          ),
        )
      if (active!.n >= maxKeys) throw conflict(`You hold ${active!.n} active API keys, the most allowed (auth.maxKeysPerUser); revoke one first.`)
    }
    return insertApiKey({ tx, audit }, owner, data, expiresAt, secret)
  })
}

/** The key's row (only the secret's hash) and its audit record in `write`'s transaction. */
async function insertApiKey({ tx, audit }: Pick<Write, 'tx' | 'audit'>, owner: { id: string; organizationId: string }, data: { name: string; scopes: string[] }, expiresAt: Date | null, secret: string) {
  const [key] = await tx
    .insert(apiKeys)
    .values({
      organizationId: owner.organizationId,
      ownerId: owner.id,
      name: data.name,
      prefix: secretPrefix(secret),
      secretHash: hashSecret(secret),
      scopes: data.scopes,
      expiresAt,
    })
    .returning()
  await audit({
    action: 'api_key.created',
    resourceType: 'api_key',
    resourceId: key!.id,
    changes: { after: { name: key!.name, prefix: key!.prefix, scopes: key!.scopes, ownerId: owner.id, expiresAt: key!.expiresAt?.toISOString() ?? null } },
  })
  return { key: key!, secret }
}

/** What `setup` makes: an organization, its first (super)administrator and a key of every scope. */
export interface SetUp {
  organization: typeof organizations.$inferSelect
  user: typeof users.$inferSelect
  extra: Record<string, unknown>
  key: typeof apiKeys.$inferSelect
  secret: string
}

/**
 * A first organization, its superadministrator and a key with `scopes`, in one transaction: all
 * three or nothing. Refused (409) once any user exists: it is a first run's command, and the
 * CLI's `org create`, `user create` and `key create` (or the account area) make the rest.
 */
export async function setUp(
  writes: Writes,
  actor: Omit<AuditActor, 'organizationId'>,
  input: { organization: unknown; user: Record<string, unknown>; key: unknown },
  options: CreateUserOptions & { knownScopes: ReadonlySet<string> },
): Promise<SetUp> {
  const { name } = validate(OrganizationInput, input.organization)
  const organizationId = uuidv7()
  const user = validate(UserInput, { ...input.user, organizationId })
  const key = validate(ApiKeyInput, input.key)
  key.scopes.forEach((scope, index) => {
    if (!options.knownScopes.has(scope)) throw badRequest(`Unknown scope "${scope}".`, `scopes[${index}]`)
  })
  const passwordHash = await options.hasher.hash(user.password)
  return writes.change({ ...actor, organizationId }, null, async (write) => {
    // Two set-ups at once: the second waits for the first's lock and then finds its user. Every
    // user claims an email in user_emails, a reference table on Citus: a read of `users` here
    // would span every shard, after which Citus refuses the transaction's writes.
    await queryText(write.tx, 'select pg_advisory_xact_lock(7210331116)', [])
    const [anyone] = await write.tx.select({ id: userEmails.userId }).from(userEmails).limit(1)
    if (anyone) throw conflict('This service is already set up (it has users): create more with org create, user create and key create, or in the account area.')
    const organization = await insertOrganization(write, organizationId, name)
    const made = await insertUser(write, user, passwordHash, options.hooks)
    const { key: stored, secret } = await insertApiKey(write, made.user, key, null, generateSecret(API_KEY_PREFIX))
    return { organization, user: made.user, extra: made.extra, key: stored, secret }
  })
}

/**
 * Revokes a key (when `ownerId` is given, only that user's key); revoking again is a no-op
 * that returns the first revocation time. Every instance drops the key from its cache.
 */
export async function revokeApiKey(
  writes: Writes,
  events: EventBus,
  /** With an organization (a user acting in the account area), the key is looked up in it alone. */
  actor: Omit<AuditActor, 'organizationId'> & { organizationId?: string },
  keyId: string,
  ownerId?: string,
) {
  const { db } = writes
  if (!isUuid(keyId)) throw notFound('No such API key.')
  const [current] = await db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.id, keyId), actor.organizationId ? eq(apiKeys.organizationId, actor.organizationId) : undefined))
  if (!current || (ownerId !== undefined && current.ownerId !== ownerId)) throw notFound('No such API key.')
  if (current.revokedAt) return current
  const revoked = await writes.change({ ...actor, organizationId: current.organizationId }, null, async ({ tx, audit }) => {
    const [key] = await tx
      .update(apiKeys)
      .set({ revokedAt: sql`now()` })
      .where(and(eq(apiKeys.id, keyId), eq(apiKeys.organizationId, current.organizationId), isNull(apiKeys.revokedAt)))
      .returning()
    if (!key) return (await tx.select().from(apiKeys).where(and(eq(apiKeys.id, keyId), eq(apiKeys.organizationId, current.organizationId))))[0]!
    await audit({
      action: 'api_key.revoked',
      resourceType: 'api_key',
      resourceId: keyId,
      changes: { before: { revokedAt: null }, after: { revokedAt: key.revokedAt!.toISOString() } },
    })
    await events.publish(tx, INVALIDATE_CHANNEL, { keyId } satisfies Invalidation)
    return key
  })
  events.emitLocally(INVALIDATE_CHANNEL, { keyId } satisfies Invalidation)
  return revoked
}

export interface AccountDeps {
  writes: Writes
  events: EventBus
  hasher: PasswordHasher
  /** What other plugins attach to a new user (display accounts), in dependency order. */
  hooks: readonly UserCreatedHook[]
  knownScopes: ReadonlySet<string>
  maxKeysPerUser: number
}

/** The CLI's actor has no organization; a user's in the account area has one (and their lookups are made in it). */
type OperatorActor = Omit<AuditActor, 'organizationId'> & { organizationId?: string }

/** Organizations, users and API keys bound to their dependencies (the CLI and the account area). */
export function createAccounts(deps: AccountDeps) {
  const { writes, events } = deps
  return {
    createOrganization: (actor: OperatorActor, input: unknown) => createOrganization(writes, actor, input),
    updateOrganization: (actor: OperatorActor, organizationId: string, input: unknown) => updateOrganization(writes, events, actor, organizationId, input),
    createUser: (actor: OperatorActor, input: unknown) => createUser(writes, actor, input, { hasher: deps.hasher, hooks: deps.hooks }),
    deactivateUser: (actor: OperatorActor, userId: string) => deactivateUser(writes, events, actor, userId),
    createApiKey: (actor: OperatorActor, ownerId: string, input: unknown) => createApiKey(writes, actor, ownerId, input, deps.knownScopes, deps.maxKeysPerUser),
    revokeApiKey: (actor: OperatorActor, keyId: string, ownerId?: string) => revokeApiKey(writes, events, actor, keyId, ownerId),
    setUp: (actor: OperatorActor, input: Parameters<typeof setUp>[2]) => setUp(writes, actor, input, { hasher: deps.hasher, hooks: deps.hooks, knownScopes: deps.knownScopes }),
  }
}

/**
 * Organizations, users and API keys made on `writes`' database as the operator CLI makes them
 * (validated, audited as the actor), for seeding a database without a running service (the
 * benchmarks). No other plugin's created-user hooks run (a user gets no display account); passwords
 * are hashed with scrypt cost `passwordHashLogN` (default: the service's default; the stored format
 * is the real one, and a sign-in under other settings upgrades it); a key may have any of `knownScopes`.
 */
export function accountsFor(writes: Writes, options: { knownScopes: Iterable<string>; passwordHashLogN?: number }) {
  const hasher = new PasswordHasher(options.passwordHashLogN === undefined ? {} : { logN: options.passwordHashLogN })
  const knownScopes = new Set(options.knownScopes)
  return {
    createOrganization: (actor: OperatorActor, input: unknown) => createOrganization(writes, actor, input),
    createUser: (actor: OperatorActor, input: unknown) => createUser(writes, actor, input, { hasher, hooks: [] }),
    createApiKey: (actor: OperatorActor, ownerId: string, input: unknown) => createApiKey(writes, actor, ownerId, input, knownScopes),
  }
}
