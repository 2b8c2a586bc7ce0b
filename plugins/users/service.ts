/** Resolving users to their limited identity, within the caller's organization only. */
import { and, eq } from 'drizzle-orm'
import type { Database } from '../../src/db'
import { notFound } from '../../src/http/errors'
import { isUuid } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { identityColumns, users } from '../auth/schema'

/** The key owner and the key, straight from the authenticated actor (no query). */
export function me(actor: Actor) {
  const { user, key } = actor
  return {
    user: {
      id: user.id,
      username: user.username,
      displayName: user.displayName,
      avatarUrl: user.avatarUrl,
      email: user.email,
      role: user.role,
    },
    key: key ? { id: key.id, name: key.name, prefix: key.prefix, scopes: key.scopes, expiresAt: key.expiresAt } : null,
  }
}

/** An active user of the caller's organization; anyone else is 404. */
export async function getUser(db: Database, actor: Actor, userId: string) {
  if (!isUuid(userId)) throw notFound('No such user.')
  const [user] = await db
    .select(identityColumns)
    .from(users)
    .where(and(eq(users.id, userId), eq(users.organizationId, actor.organizationId), eq(users.status, 'active')))
  if (!user) throw notFound('No such user.')
  return user
}
