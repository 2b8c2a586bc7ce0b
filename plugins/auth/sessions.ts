/**
 * Sessions: a random token (`wts_…`, same format as keys) of which only the hash is stored, with
 * an idle and an absolute expiry per kind. A deactivated user's sessions stop at once (the user's
 * status is read with the session on every check).
 */
import { and, eq, isNull, sql } from 'drizzle-orm'
import { writeAudit } from '../../src/audit'
import { notify, queryText, type Database } from '../../src/db'
import { forbidden, unauthorized } from '../../src/http/errors'
import { generateSecret, hashSecret, isWellFormedSecret } from '../../src/secrets'
import type { PrincipalUser } from '../../src/services/identity'
import type { Writes } from '../../src/writes'
import type { SessionKind, Sessions } from './api'
import type { PasswordHasher } from './password'
import { organizations, sessions, userEmails, users } from './schema'
import { INVALIDATE_CHANNEL, type Invalidation } from './service'

export const SESSION_PREFIX = 'wts'
const TOUCH_EVERY_MS = 60_000
const INVALID = 'The session is invalid or has expired; sign in again.'

export interface SessionPolicy {
  idleSeconds: Record<SessionKind, number>
  absoluteSeconds: Record<SessionKind, number>
}

/** The user row as the principal's user: what a session and an API key both authenticate as. */
export function principalUser(row: typeof users.$inferSelect): PrincipalUser {
  return {
    id: row.id,
    organizationId: row.organizationId,
    email: row.email,
    username: row.username,
    displayName: row.displayName,
    avatarUrl: row.avatarUrl,
    role: row.role,
  }
}

/**
 * Replaces a verified hash made with older parameters (compare-and-swap: a password changed in
 * the meantime wins), audited without the hash.
 */
async function storeUpgradedHash(writes: Writes, user: typeof users.$inferSelect, upgraded: string): Promise<void> {
  const actor = { organizationId: user.organizationId, userId: user.id, apiKeyId: null, via: 'account' as const, requestId: null }
  await writes.change(actor, null, async ({ tx, audit }) => {
    const [row] = await tx
      .update(users)
      .set({ passwordHash: upgraded })
      .where(and(eq(users.id, user.id), eq(users.organizationId, user.organizationId), eq(users.passwordHash, user.passwordHash)))
      .returning({ id: users.id })
    if (row) await audit({ action: 'user.password_rehashed', resourceType: 'user', resourceId: user.id, changes: { after: { scheme: upgraded.split('$').slice(0, 4).join('$') } } })
  })
}

/** Stands in for the user of an unknown email, so every sign-in reads a user row alike. */
const NOBODY = '00000000-0000-0000-0000-000000000000'

export function createSessions(writes: Writes, policy: SessionPolicy, hasher: PasswordHasher): Omit<Sessions, 'onRevoked'> {
  const { db } = writes
  // Unknown emails are checked against this hash, so they cost what a wrong password costs. It
  // is made on the first sign-in (not at start-up), and every sign-in waits for it alike.
  let decoy: Promise<string> | undefined

  return {
    async verifyCredentials(email, password) {
      decoy ??= hasher.hash('no such user, no such password').catch((error) => {
        decoy = undefined
        throw error
      })
      const decoyHash = await decoy
      // The email names the organization (user_emails, a reference table), then the user is read
      // on that organization's shard; an unknown email reads no one, the same way.
      const [claim] = await db.select({ userId: userEmails.userId, organizationId: userEmails.organizationId }).from(userEmails).where(eq(userEmails.email, email.trim().toLowerCase()))
      const [user] = await db
        .select()
        .from(users)
        .where(and(eq(users.id, claim?.userId ?? NOBODY), eq(users.organizationId, claim?.organizationId ?? NOBODY)))
      const { matches, upgraded } = await hasher.verify(password, user?.passwordHash ?? decoyHash)
      if (!user || !matches || user.status !== 'active') return null
      // Said only to whoever knows the password: the refusal tells no one else the email exists.
      const [organization] = await db.select({ passwordSignIn: organizations.passwordSignIn }).from(organizations).where(eq(organizations.id, user.organizationId))
      if (!organization?.passwordSignIn) throw forbidden('Password sign-in is turned off for your organization: sign in through its identity provider.')
      if (upgraded) await storeUpgradedHash(writes, user, upgraded)
      return principalUser(user)
    },

    async start(user, kind, requestId) {
      const token = generateSecret(SESSION_PREFIX)
      const expiresAt = new Date(Date.now() + policy.absoluteSeconds[kind] * 1000)
      const actor = { organizationId: user.organizationId, userId: user.id, apiKeyId: null, via: 'account' as const, requestId }
      const session = await writes.change(actor, null, async ({ tx, audit }) => {
        const [row] = await tx
          .insert(sessions)
          .values({ organizationId: user.organizationId, userId: user.id, tokenHash: hashSecret(token), kind, expiresAt })
          .returning()
        await audit({ action: 'session.created', resourceType: 'session', resourceId: row!.id, changes: { after: { kind, expiresAt: expiresAt.toISOString() } } })
        return row!
      })
      return { id: session.id, token, expiresAt }
    },

    async authenticate(token, kind) {
      if (!token) throw unauthorized('Sign in first.')
      if (!isWellFormedSecret(SESSION_PREFIX, token)) throw unauthorized(INVALID, true)
      const [row] = await db
        .select({ session: sessions, user: users })
        .from(sessions)
        // Joined on the organization too: a co-located join (by id alone Citus would need to repartition).
        .innerJoin(users, and(eq(users.id, sessions.userId), eq(users.organizationId, sessions.organizationId)))
        .where(and(eq(sessions.tokenHash, hashSecret(token)), eq(sessions.kind, kind), isNull(sessions.revokedAt)))
      const now = Date.now()
      if (
        !row ||
        row.user.status !== 'active' ||
        row.session.expiresAt.getTime() <= now ||
        row.session.lastSeenAt.getTime() + policy.idleSeconds[kind] * 1000 <= now
      )
        throw unauthorized(INVALID, true)
      if (now - row.session.lastSeenAt.getTime() > TOUCH_EVERY_MS)
        await db
          .update(sessions)
          .set({ lastSeenAt: sql`now()` })
          .where(and(eq(sessions.id, row.session.id), eq(sessions.organizationId, row.session.organizationId)))
      return { user: principalUser(row.user), key: null, scopes: new Set<string>(), sessionId: row.session.id, expiresAt: row.session.expiresAt }
    },

    async stillLive(sessionIds) {
      if (!sessionIds.length) return new Set()
      const rows = await queryText<{ id: string }>(
        db,
        `update sessions s set last_seen_at = now()
          from users u where s.id = any($1::uuid[]) and u.id = s.user_id and u.organization_id = s.organization_id
            and s.revoked_at is null and s.expires_at > now() and u.status = 'active'
          returning s.id`,
        [sessionIds],
      )
      return new Set(rows.map((row) => row.id))
    },

    async end(token, requestId) {
      if (!isWellFormedSecret(SESSION_PREFIX, token)) return
      await db.transaction(async (tx) => {
        // Found by its hash (the token names no organization), then ended on its organization's shard.
        const [found] = await tx
          .select({ id: sessions.id, organizationId: sessions.organizationId })
          .from(sessions)
          .where(and(eq(sessions.tokenHash, hashSecret(token)), isNull(sessions.revokedAt)))
        if (!found) return
        const [row] = await tx
          .update(sessions)
          .set({ revokedAt: sql`now()` })
          .where(and(eq(sessions.id, found.id), eq(sessions.organizationId, found.organizationId), isNull(sessions.revokedAt)))
          .returning()
        if (!row) return
        await notify(tx, INVALIDATE_CHANNEL, JSON.stringify({ sessionId: row.id } satisfies Invalidation))
        await writeAudit(tx, { organizationId: row.organizationId, userId: row.userId, apiKeyId: null, via: 'account', requestId }, {
          action: 'session.revoked',
          resourceType: 'session',
          resourceId: row.id,
          changes: { after: { kind: row.kind } },
        })
      })
    },
  }
}

/** Deletes sessions that ended (signed out, or past their absolute end) more than a day ago. */
export async function purgeSessions(db: Database): Promise<number> {
  const rows = await queryText(db, `delete from sessions where expires_at < now() - interval '1 day' or revoked_at < now() - interval '1 day' returning 1`, [])
  return rows.length
}
