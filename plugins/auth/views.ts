/**
 * What the face's services read (api.ts types them): active users of the directory, and API keys
 * as their owner sees them, one at a time or a page of them.
 */
import { and, count, desc, eq } from 'drizzle-orm'
import { queryText, type Database } from '../../src/db'
import { badRequest } from '../../src/http/errors'
import { pageWithTotal, totalOver, window, type PageRequest } from '../../src/http/pagination'
import { isUuid } from '../../src/ids'
import type { ApiKeyView, UserDirectory, UserIdentity } from './api'
import { apiKeys } from './schema'

/** What the stored key looks like to its owner; never the secret or its hash. */
export function serializeKey(row: typeof apiKeys.$inferSelect): ApiKeyView {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: row.scopes,
    ownerId: row.ownerId,
    createdAt: row.createdAt.toISOString(),
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    revokedAt: row.revokedAt?.toISOString() ?? null,
  }
}

/** Active users of an organization, as other plugins may resolve them (the auth plugin's UserDirectory). */
export const userDirectory: UserDirectory = {
  async activeUser(executor, organizationId, userId) {
    if (!isUuid(userId)) return undefined
    const [user] = await queryText<UserIdentity>(
      executor,
      `select id, username, display_name as "displayName", avatar_url as "avatarUrl" from users where id = $1 and organization_id = $2 and status = 'active'`,
      [userId, organizationId],
    )
    return user
  },
  async activeUsersNamed(executor, organizationId, refs) {
    const found = new Map<string, string>()
    if (!refs.length) return found
    const rows = await queryText<{ ref: string; id: string }>(
      executor,
      `select r.ref, u.id from unnest($2::text[]) as r(ref)
         join users u on u.organization_id = $1 and u.status = 'active'
          and (u.id::text = lower(r.ref) or lower(u.email) = lower(r.ref) or lower(u.username) = lower(r.ref))`,
      [organizationId, [...new Set(refs)]],
    )
    for (const row of rows) found.set(row.ref, row.id)
    return found
  },
  async requireActiveUser(executor, organizationId, userId, field) {
    const user = await userDirectory.activeUser(executor, organizationId, userId)
    if (!user) throw badRequest('No active user with this id in your organization.', field)
    return user
  },
}

/** One page of a user's keys, newest first. */
export async function listApiKeys(db: Database, owner: { id: string; organizationId: string }, request: PageRequest) {
  const ownedBy = and(eq(apiKeys.ownerId, owner.id), eq(apiKeys.organizationId, owner.organizationId))
  const rows = await db
    .select({ key: apiKeys, total: totalOver() })
    .from(apiKeys)
    .where(ownedBy)
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
    .limit(window(request).limit)
    .offset(window(request).offset)
  return pageWithTotal(rows, request, (row) => serializeKey(row.key), async () => {
    const [total] = await db.select({ value: count() }).from(apiKeys).where(ownedBy)
    return total!.value
  })
}
