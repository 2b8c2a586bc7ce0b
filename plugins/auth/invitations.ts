/**
 * Invitations: an administrator makes an `invited` user, who gets a one-time link
 * `/account/invite/<token>` (valid 7 days; only the SHA-256 of the token is stored, and a user has
 * at most one live link: issuing a new one voids the old). Opening it, the invitee chooses a
 * password and becomes active. An invited user cannot sign in and is in no one's directory.
 */
import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Database, Executor } from '../../src/db'
import { created, type Answer } from '../../src/http/answer'
import { badRequest, conflict, forbidden } from '../../src/http/errors'
import type { IdempotentRequest } from '../../src/http/idempotency'
import { generateSecret, hashSecret, isWellFormedSecret } from '../../src/secrets'
import { isAdministrator, type Actor, type PrincipalUser } from '../../src/services/identity'
import { validate } from '../../src/validate'
import type { Write, Writes } from '../../src/writes'
import { InviteInput, PASSWORD_MAX, USERNAME_MAX, type Invitation, type UserCreatedHook } from './model'
import type { PasswordHasher } from './password'
import { lockedTarget, managedUser, NO_PASSWORD } from './people'
import { organizations, userInvitations, users } from './schema'
import { insertUser } from './service'
import { principalUser } from './sessions'

export const INVITE_PREFIX = 'wti'
export const INVITE_DAYS = 7
export const PASSWORD_MIN = 8

export interface InvitationDeps {
  writes: Writes
  hasher: PasswordHasher
  /** What other plugins attach to a new user (display accounts), in dependency order. */
  hooks: readonly UserCreatedHook[]
}

/** The link of a token: on `origin` (`https://host`), or a path of this service when the origin is not known (''). */
export const invitePath = (token: string) => `/account/invite/${token}`

/** A new link for `user` in `write`'s transaction, voiding any earlier one; audited without the token. */
async function issue({ tx, audit }: Pick<Write, 'tx' | 'audit'>, actor: Actor, user: typeof users.$inferSelect, origin: string): Promise<Invitation> {
  const token = generateSecret(INVITE_PREFIX)
  const expiresAt = new Date(Date.now() + INVITE_DAYS * 86_400_000)
  const voided = await tx
    .delete(userInvitations)
    .where(and(eq(userInvitations.userId, user.id), eq(userInvitations.organizationId, user.organizationId)))
    .returning({ id: userInvitations.id })
  await tx.insert(userInvitations).values({ organizationId: user.organizationId, userId: user.id, tokenHash: hashSecret(token), createdBy: actor.userId, expiresAt })
  await audit({
    action: 'user.invitation_issued',
    resourceType: 'user',
    resourceId: user.id,
    changes: { after: { expiresAt: expiresAt.toISOString(), voidedEarlier: voided.length > 0 } },
  })
  return { ...managedUser(user), inviteUrl: `${origin}${invitePath(token)}`, inviteExpiresAt: expiresAt.toISOString() }
}

/**
 * A free username from an email's local part: its letters, digits, `.`, `_` and `-` (starting with
 * a letter or digit), then the first of `name`, `name2`, `name3`… that no one of the organization has.
 */
async function freeUsername(tx: Executor, organizationId: string, email: string): Promise<string> {
  const base = email.split('@')[0]!.replace(/[^A-Za-z0-9_.-]/g, '').replace(/^[^A-Za-z0-9]+/, '').slice(0, USERNAME_MAX - 8) || 'user'
  const candidates = [base, ...Array.from({ length: 99 }, (_, index) => `${base}${index + 2}`)]
  const taken = new Set(
    (
      await tx
        .select({ username: users.username })
        .from(users)
        .where(and(eq(users.organizationId, organizationId), inArray(users.username, candidates)))
    ).map((row) => row.username),
  )
  return candidates.find((candidate) => !taken.has(candidate)) ?? `${base}-${Math.random().toString(36).slice(2, 8)}`
}

/** `POST /api/v1/users`: an invited user of the caller's organization and their link (administrators). */
export async function inviteUser(deps: InvitationDeps, actor: Actor, input: unknown, origin: string, request?: IdempotentRequest): Promise<Answer<Invitation>> {
  const data = validate(InviteInput, input)
  if (!isAdministrator(actor)) throw forbidden('Only an administrator or superadministrator may invite users.')
  return deps.writes.change(
    actor,
    null,
    async (write) => {
      const email = data.email.toLowerCase()
      const username = data.username ?? (await freeUsername(write.tx, actor.organizationId, email))
      const { user } = await insertUser(
        write,
        { organizationId: actor.organizationId, email, username, displayName: data.displayName ?? username, role: data.role ?? 'member', avatarUrl: null },
        NO_PASSWORD,
        deps.hooks,
        { status: 'invited', revealIn: actor.organizationId },
      )
      return created(await issue(write, actor, user, origin), `/api/v1/users/${user.id}`)
    },
    request,
  )
}

/** `POST /api/v1/users/{userId}/invite`: a new link for an invited user; the old one stops working. */
export async function reissueInvitation(deps: InvitationDeps, actor: Actor, userId: string, origin: string, request?: IdempotentRequest): Promise<Answer<Invitation>> {
  return deps.writes.change(
    actor,
    null,
    async (write) => {
      const target = await lockedTarget(write.tx, actor, userId)
      if (target.status !== 'invited') throw conflict(`This user is ${target.status}: only an invited user (who has not accepted yet) gets a new link.`)
      return created(await issue(write, actor, target, origin), `/api/v1/users/${target.id}`)
    },
    request,
  )
}

/** A live invitation as its link's page shows it. */
export interface PendingInvitation {
  id: string
  organizationId: string
  organizationName: string
  userId: string
  email: string
  username: string
  displayName: string
}

/**
 * The live invitation of a token: unused, unexpired, its user still invited; undefined otherwise
 * (which of these is never said). Found by the token's hash (the token names no organization),
 * then read on its organization's shard.
 */
export async function findInvitation(db: Executor, token: string): Promise<PendingInvitation | undefined> {
  if (!isWellFormedSecret(INVITE_PREFIX, token)) return undefined
  const [found] = await db
    .select({ id: userInvitations.id, organizationId: userInvitations.organizationId, userId: userInvitations.userId })
    .from(userInvitations)
    .where(and(eq(userInvitations.tokenHash, hashSecret(token)), sql`${userInvitations.expiresAt} > now()`))
  if (!found) return undefined
  const [user] = await db
    .select({ email: users.email, username: users.username, displayName: users.displayName, status: users.status, organizationName: organizations.name })
    .from(users)
    .innerJoin(organizations, eq(organizations.id, users.organizationId))
    .where(and(eq(users.id, found.userId), eq(users.organizationId, found.organizationId)))
  if (!user || user.status !== 'invited') return undefined
  return { ...found, organizationName: user.organizationName, email: user.email, username: user.username, displayName: user.displayName }
}

/** The invitation was used, expired or voided while the password was being hashed. */
class Spent extends Error {}

/** 400 for a password outside the account area's rules (8..PASSWORD_MAX characters). */
export function checkNewPassword(password: string): void {
  if (password.length < PASSWORD_MIN) throw badRequest(`The password must be at least ${PASSWORD_MIN} characters.`, 'password')
  if (password.length > PASSWORD_MAX) throw badRequest(`The password must be at most ${PASSWORD_MAX} characters.`, 'password')
}

/**
 * Accepts the invitation of `token` with the invitee's new password: the link is spent, the user
 * active with that password, in one transaction (two submits at once: one wins); the user, to sign
 * in. Undefined when the link is not (or no longer) valid.
 */
export async function acceptInvitation(deps: InvitationDeps & { db: Database }, token: string, password: string, requestId: string | null): Promise<PrincipalUser | undefined> {
  const pending = await findInvitation(deps.db, token)
  if (!pending) return undefined
  checkNewPassword(password)
  const passwordHash = await deps.hasher.hash(password)
  const actor = { organizationId: pending.organizationId, userId: pending.userId, apiKeyId: null, via: 'account' as const, requestId }
  try {
    return await deps.writes.change(actor, 'organization', async ({ tx, audit }) => {
      const [spent] = await tx
        .delete(userInvitations)
        .where(and(eq(userInvitations.id, pending.id), eq(userInvitations.organizationId, pending.organizationId), sql`${userInvitations.expiresAt} > now()`))
        .returning({ id: userInvitations.id })
      if (!spent) throw new Spent()
      const [user] = await tx
        .update(users)
        .set({ status: 'active', passwordHash, updatedAt: new Date() })
        .where(and(eq(users.id, pending.userId), eq(users.organizationId, pending.organizationId), eq(users.status, 'invited')))
        .returning()
      if (!user) throw new Spent()
      await audit({ action: 'user.invitation_accepted', resourceType: 'user', resourceId: user.id, changes: { before: { status: 'invited' }, after: { status: 'active' } } })
      return principalUser(user)
    })
  } catch (error) {
    if (error instanceof Spent) return undefined
    throw error
  }
}
