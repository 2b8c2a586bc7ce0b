/**
 * Users as API v1 and MCP show them: the caller (`me`), limited identity of active users, and the
 * people of the organization (list, invite, role and status), all within the caller's organization.
 */
import type { Database } from '../../src/db'
import { EncodedResource } from '../../src/http/answer'
import { notFound } from '../../src/http/errors'
import type { IdempotentRequest } from '../../src/http/idempotency'
import type { PageRequest } from '../../src/http/pagination'
import { isAdministrator, type Actor } from '../../src/services/identity'
import type { People, PeopleQuery, UserDirectory } from '../auth/api'

/** The key owner, their organization and the key (or the OAuth grant of the token in use). */
export async function me(actor: Actor, people: People) {
  const { user, key, grant } = actor
  return {
    user: { id: user.id, username: user.username, displayName: user.displayName, avatarUrl: user.avatarUrl, email: user.email, role: user.role },
    organization: await people.organization(actor.organizationId),
    key: key ? { id: key.id, name: key.name, prefix: key.prefix, scopes: key.scopes, expiresAt: key.expiresAt } : null,
    ...(grant ? { grant: { id: grant.id, clientName: grant.clientName, scopes: [...actor.scopes] } } : {}),
  }
}

export interface UserDeps {
  db: Database
  directory: UserDirectory
  people: People
  /** `server.publicUrl` when configured: invitation links start with it (else with the request's origin). */
  publicUrl?: string
}

/** What `meAnswer` wrote for one credential, and what it was written from. */
interface WrittenMe {
  key: Actor['key']
  grant: Actor['grant']
  scopes: Actor['scopes']
  organization: string
  answer: EncodedResource
}

export function createUsers({ db, directory, people, publicUrl }: UserDeps) {
  /**
   * `GET /users/me` as written JSON and ETag, kept per user object of the credential check's cache
   * (a new check, after any change to the user or the key, is a new object) and written again when
   * the key, grant, scopes or organization it was written from are no longer those of the request.
   */
  const written = new WeakMap<object, WrittenMe>()
  return {
    publicUrl,
    me: (actor: Actor) => me(actor, people),
    async meAnswer(actor: Actor): Promise<EncodedResource> {
      const organization = await people.organization(actor.organizationId)
      const known = written.get(actor.user)
      if (known && known.key === actor.key && known.grant === actor.grant && known.scopes === actor.scopes && known.organization === organization.name) return known.answer
      const answer = EncodedResource.of(await me(actor, people))
      written.set(actor.user, { key: actor.key, grant: actor.grant, scopes: actor.scopes, organization: organization.name, answer })
      return answer
    },
    /**
     * An active user of the caller's organization, limited identity (`me`: the caller); anyone else
     * is 404. An administrator sees any user of the organization (invited and deactivated too) with
     * email, role and status, as in the list.
     */
    async get(actor: Actor, userId: string) {
      const user = isAdministrator(actor) ? await people.find(actor, userId) : await directory.activeUser(db, actor.organizationId, userId === 'me' ? actor.userId : userId)
      if (!user) throw notFound('No such user.')
      return user
    },
    list: (actor: Actor, query: PeopleQuery, request: PageRequest) => people.list(actor, query, request),
    /** `origin`: where the link points; '' (MCP without `server.publicUrl`): a path of this service. */
    invite: (actor: Actor, input: unknown, origin: string, request?: IdempotentRequest) => people.invite(actor, input, origin, request),
    reissue: (actor: Actor, userId: string, origin: string, request?: IdempotentRequest) => people.reissue(actor, userId, origin, request),
    update: (actor: Actor, userId: string, patch: unknown) => people.update(actor, userId, patch),
  }
}

export type UserService = ReturnType<typeof createUsers>
