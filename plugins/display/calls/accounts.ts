/** Display accounts: one per user, created with the user; the key is stored only as a hash. */
import { and, eq } from 'drizzle-orm'
import { writeAudit, type AuditActor } from '../../../src/audit'
import type { Database, Executor } from '../../../src/db'
import { nextUtcMidnight } from '../../../src/http/display-api'
import { badRequest, notFound } from '../../../src/http/errors'
import { isUuid } from '../../../src/ids'
import { generateSecret, hashSecret, secretPrefix } from '../../../src/secrets'
import type { Writes } from '../../../src/writes'
import type { UserDirectory } from '../../auth/api'
import { DISPLAY_KEY_PREFIX } from '../model'
import { displayAccounts, displayUsage } from '../schema'
import { TODAY } from './decision'

// These two are the face's (api.ts re-exports them); they live here so that the face can also
// re-export createDisplayAccount without an import circle between the two files.
export interface DisplayAccountSummary {
  /** The first 8 characters of the `dpk_…` key; null for a user who has no display account yet. */
  prefix: string | null
  dailyLimit: number
  usedToday: number
  /** Next UTC midnight, when the count starts again. */
  resetsAt: string
}

/** The display account of a user (shown and rotated by the account area). */
export interface DisplayAccounts {
  summary(user: { id: string; organizationId: string }): Promise<DisplayAccountSummary>
  /** Replaces the key (creating the account if needed): the new secret is returned once and the old one stops at once. */
  rotate(actor: AuditActor, userId: string): Promise<{ apiKey: string; prefix: string }>
}

/**
 * Creates the display account of a new user, in the user's transaction (or on any executor, as
 * the benchmarks' seeding does); returns the key once.
 */
export async function createDisplayAccount(tx: Executor, user: { id: string; organizationId: string }, dailyLimit: number): Promise<string> {
  const apiKey = generateSecret(DISPLAY_KEY_PREFIX)
  await tx.insert(displayAccounts).values({ userId: user.id, organizationId: user.organizationId, keyHash: hashSecret(apiKey), keyPrefix: secretPrefix(apiKey), dailyLimit })
  return apiKey
}

/** Sets an account's daily limit (operator CLI). */
export async function setDailyLimit(db: Database, userId: string, dailyLimit: number): Promise<{ userId: string; dailyLimit: number }> {
  if (!Number.isInteger(dailyLimit) || dailyLimit < 0 || dailyLimit > 1_000_000_000) throw badRequest('The limit must be a whole number from 0 to 1000000000.', 'limit')
  if (!isUuid(userId)) throw notFound('No display account for this user.')
  return db.transaction(async (tx) => {
    const [row] = await tx.update(displayAccounts).set({ dailyLimit }).where(eq(displayAccounts.userId, userId)).returning()
    if (!row) throw notFound('No display account for this user.')
    await writeAudit(tx, { organizationId: row.organizationId, userId: null, apiKeyId: null, via: 'cli', requestId: null }, {
      action: 'display_account.limit_set',
      resourceType: 'display_account',
      resourceId: userId,
      changes: { after: { dailyLimit } },
    })
    return { userId, dailyLimit: row.dailyLimit }
  })
}

export function createDisplayAccounts(writes: Writes, defaultLimit: number, users: UserDirectory): DisplayAccounts {
  const { db } = writes
  return {
    async summary({ id: userId, organizationId }) {
      const [row] = await db
        .select({ prefix: displayAccounts.keyPrefix, dailyLimit: displayAccounts.dailyLimit, usedToday: displayUsage.calls })
        .from(displayAccounts)
        .leftJoin(displayUsage, and(eq(displayUsage.userId, displayAccounts.userId), eq(displayUsage.organizationId, displayAccounts.organizationId), eq(displayUsage.day, TODAY)))
        .where(and(eq(displayAccounts.userId, userId), eq(displayAccounts.organizationId, organizationId)))
      if (!row) return { prefix: null, dailyLimit: defaultLimit, usedToday: 0, resetsAt: new Date(nextUtcMidnight() * 1000).toISOString() }
      return { prefix: row.prefix, dailyLimit: row.dailyLimit, usedToday: row.usedToday ?? 0, resetsAt: new Date(nextUtcMidnight() * 1000).toISOString() }
    },

    /** Replaces the key (or creates the account, for a user who had none). */
    async rotate(actor: AuditActor, userId) {
      const apiKey = generateSecret(DISPLAY_KEY_PREFIX)
      const prefix = secretPrefix(apiKey)
      await writes.change(actor, null, async ({ tx, audit }) => {
        // A user of the actor's organization (the account area rotates its user's own key).
        if (!(await users.activeUser(tx, actor.organizationId, userId))) throw notFound('No such user.')
        const user = { organizationId: actor.organizationId }
        // Locked by user and organization: on Citus a row lock must name the shard.
        const [previous] = await tx
          .select({ prefix: displayAccounts.keyPrefix })
          .from(displayAccounts)
          .where(and(eq(displayAccounts.userId, userId), eq(displayAccounts.organizationId, user.organizationId)))
          .for('update')
        await tx
          .insert(displayAccounts)
          .values({ userId, organizationId: user.organizationId, keyHash: hashSecret(apiKey), keyPrefix: prefix, dailyLimit: defaultLimit })
          .onConflictDoUpdate({ target: [displayAccounts.userId, displayAccounts.organizationId], set: { keyHash: hashSecret(apiKey), keyPrefix: prefix, rotatedAt: new Date() } })
        await audit({
          action: previous ? 'display_account.rotated' : 'display_account.created',
          resourceType: 'display_account',
          resourceId: userId,
          changes: { before: previous ? { prefix: previous.prefix } : undefined, after: { prefix } },
        })
      })
      return { apiKey, prefix }
    },
  }
}
