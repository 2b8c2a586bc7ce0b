/** Resolving users to their limited identity, within the caller's organization only. */
import type { Database } from '../../src/db'
import { notFound } from '../../src/http/errors'
import type { Actor } from '../../src/services/identity'
import type { UserDirectory } from '../auth/api'

/** The key owner and the key, straight from the authenticated actor (no query). */
export function me(actor: Actor) {
  const { user, key } = actor
  return {
    user: { id: user.id, username: user.username, displayName: user.displayName, avatarUrl: user.avatarUrl, email: user.email, role: user.role },
    key: key ? { id: key.id, name: key.name, prefix: key.prefix, scopes: key.scopes, expiresAt: key.expiresAt } : null,
  }
}

export function createUsers({ db, directory }: { db: Database; directory: UserDirectory }) {
  return {
    me,
    /** An active user of the caller's organization; anyone else is 404. */
    async get(actor: Actor, userId: string) {
      const user = await directory.activeUser(db, actor.organizationId, userId)
      if (!user) throw notFound('No such user.')
      return user
    },
  }
}

export type UserService = ReturnType<typeof createUsers>
