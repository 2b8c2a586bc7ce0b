/**
 * The people of an organization (`GET`/`PATCH /api/v1/users…`, the account area's People page, the
 * CLI's `user list`): the list, by status and a prefix of a name, and the changes of role and
 * status an administrator makes, with the last active superadministrator kept race-free.
 */
import { and, asc, eq, sql, type SQL } from 'drizzle-orm'
import type { Database, Executor } from '../../src/db'
import type { Page } from '../../src/http/answer'
import { badRequest, conflict, forbidden, notFound } from '../../src/http/errors'
import { listIdentity, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid } from '../../src/ids'
import { isAdministrator, type Actor } from '../../src/services/identity'
import { selectListPage } from '../../src/sql'
import { validate } from '../../src/validate'
import type { EventBus } from '../../src/events'
import type { Write, Writes } from '../../src/writes'
import { PEOPLE_Q_MAX, PersonPatch, type ManagedUser, type UserStatus } from './model'
import { organizations, users } from './schema'
import { emitDeactivated, INVALIDATE_CHANNEL, markDeactivated, type Invalidation } from './service'

/** The password hash of a user who never chose one (invited): no password matches it (password.ts refuses its form). */
export const NO_PASSWORD = 'invited'

export const USER_STATUSES: readonly UserStatus[] = ['active', 'deactivated', 'invited']

type UserRow = typeof users.$inferSelect

/** A user as an administrator sees them. */
export const managedUser = (row: Pick<UserRow, 'id' | 'username' | 'displayName' | 'avatarUrl' | 'email' | 'role' | 'status'>): ManagedUser => ({
  id: row.id,
  username: row.username,
  displayName: row.displayName,
  avatarUrl: row.avatarUrl,
  email: row.email,
  role: row.role,
  status: row.status,
})

/** The people list: by username, then id (the index users (organization_id, status, username, id) in order). */
const PEOPLE_LIST: ListShape = {
  name: 'people',
  filters: {},
  sorts: { username: { column: 'u.username', cast: 'text' } },
  defaultOrder: ['username'],
  tiebreaker: { column: 'u.id', cast: 'uuid' },
}
const IDENTITY_COLUMNS = 'u.id, u.username, u.display_name as "displayName", u.avatar_url as "avatarUrl"'
const ADMINISTRATOR_COLUMNS = `${IDENTITY_COLUMNS}, u.email, u.role, u.status`

/** `q` as a LIKE pattern matching what starts with it: its own `\`, `%` and `_` match only themselves. */
export const prefixPattern = (q: string) => `${q.replace(/[\\%_]/g, (character) => `\\${character}`)}%`

export interface PeopleQuery {
  status?: UserStatus
  q?: string
}

export type PersonItem = Record<string, unknown> & { id: string; username: string }

/**
 * One page of the organization's people with `status` (default active): limited identity, and
 * for an administrator email, role and status too. Only an administrator may ask for another
 * status (403 otherwise). `q` matches the start of a username or display name (for an
 * administrator, of an email too), case-insensitive. One statement: rows, next cursor and total.
 */
export async function listPeople(db: Database, actor: Actor, query: PeopleQuery, request: PageRequest): Promise<Page<PersonItem>> {
  const administrator = isAdministrator(actor)
  const status = query.status ?? 'active'
  if (status !== 'active' && !administrator) throw forbidden('Only an administrator or superadministrator may list deactivated or invited users.')
  const q = query.q === undefined || query.q === '' ? undefined : query.q
  if (q !== undefined && q.length > PEOPLE_Q_MAX) throw badRequest(`At most ${PEOPLE_Q_MAX} characters.`, 'q')
  // PostgreSQL text holds no NUL: such a search could match nothing, and the statement would fail (22021).
  if (q?.includes('\0')) throw badRequest('A search cannot hold a NUL character.', 'q')
  const order = parseListQuery(PEOPLE_LIST, {})
  // The list's identity holds all that decides its rows, so a cursor continues only its own list.
  const identity = listIdentity(PEOPLE_LIST, `${actor.organizationId}\n${status}\n${administrator ? 'administrator' : 'member'}\n${q ?? ''}`, order)
  const after = readCursor(request, identity, order.order)
  const conditions: SQL[] = [sql`u.organization_id = ${actor.organizationId}`, sql`u.status = ${status}`]
  if (q !== undefined) {
    const pattern = prefixPattern(q)
    const named = [sql`u.username ilike ${pattern} escape '\\'`, sql`u.display_name ilike ${pattern} escape '\\'`]
    if (administrator) named.push(sql`u.email ilike ${pattern} escape '\\'`)
    conditions.push(sql`(${sql.join(named, sql` or `)})`)
  }
  return selectListPage<PersonItem, PersonItem>(
    db,
    {
      columns: administrator ? ADMINISTRATOR_COLUMNS : IDENTITY_COLUMNS,
      from: 'users u',
      conditions,
      order: order.order,
      total: sql`select count(*) from users u where ${sql.join(conditions, sql` and `)}`,
      identity,
      after,
    },
    request,
    (row) => row,
  )
}

/** The caller's organization: `{id, name}` (a read of the organizations reference table). */
export async function organizationOf(db: Executor, organizationId: string): Promise<{ id: string; name: string }> {
  const [organization] = await db.select({ id: organizations.id, name: organizations.name }).from(organizations).where(eq(organizations.id, organizationId))
  if (!organization) throw notFound('No such organization.')
  return organization
}

/**
 * Organization names kept by this process, so `GET /users/me` with a cached key reads nothing. A
 * rename (the CLI's `org update --name`, in a process of its own) reaches every instance through
 * the invalidation channel, which calls `forget`; a lost notification (`clear`) drops them all, and
 * an evicted or unknown one is read again. At most `max` are kept, the least recently used go.
 */
export function organizationNames(db: Executor, max = 10_000) {
  const names = new Map<string, string>()
  const read = async (organizationId: string): Promise<{ id: string; name: string }> => {
    const known = names.get(organizationId)
    if (known !== undefined) {
      names.delete(organizationId)
      names.set(organizationId, known)
      return { id: organizationId, name: known }
    }
    const organization = await organizationOf(db, organizationId)
    names.set(organizationId, organization.name)
    if (names.size > max) names.delete(names.keys().next().value!)
    return organization
  }
  return { read, forget: (organizationId: string) => void names.delete(organizationId), clear: () => names.clear() }
}

/** `me` stands for the caller wherever a user id is taken. */
export const userIdOf = (actor: Actor, userId: string) => (userId === 'me' ? actor.userId : userId)

/** A user of the caller's organization, whatever their status, as an administrator sees them; undefined for anyone else. */
export async function findPerson(db: Executor, actor: Actor, userId: string): Promise<ManagedUser | undefined> {
  const id = userIdOf(actor, userId)
  if (!isUuid(id)) return undefined
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.id, id), eq(users.organizationId, actor.organizationId)))
  return row && managedUser(row)
}

/**
 * The user `userId` of the caller's organization, locked (404 for anyone else, also for an id
 * that is no UUID); then 403 unless the caller is an administrator: the routes of users:write.
 */
export async function lockedTarget(tx: Executor, actor: Actor, userId: string): Promise<UserRow> {
  const id = userIdOf(actor, userId)
  const [target] = isUuid(id)
    ? await tx
        .select()
        .from(users)
        .where(and(eq(users.id, id), eq(users.organizationId, actor.organizationId)))
        .for('update')
    : []
  if (!target) throw notFound('No such user.')
  if (!isAdministrator(actor)) throw forbidden('Only an administrator or superadministrator may manage users.')
  return target
}

/**
 * Changes the role and/or status of a user of the caller's organization (see docs/api.md,
 * "People"). The organization's active superadministrators are locked first, in id order, by every
 * change, so two changes that would each leave one of the last two cannot both pass: the second
 * reads the first's result once it commits.
 */
export async function updatePerson(deps: { writes: Writes; events: EventBus }, actor: Actor, userId: string, input: unknown): Promise<ManagedUser> {
  const patch = validate(PersonPatch, input)
  let deactivated: string | undefined
  let roleChanged = false
  const user = await deps.writes.change(actor, 'organization', async (write) => {
    const superadministrators = await write.tx
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.organizationId, actor.organizationId), eq(users.role, 'superadministrator'), eq(users.status, 'active')))
      .orderBy(asc(users.id))
      .for('update')
    const target = await lockedTarget(write.tx, actor, userId)
    const role = patch.role ?? target.role
    if ((target.role === 'superadministrator' || role === 'superadministrator') && role !== target.role && actor.role !== 'superadministrator')
      throw forbidden('Only a superadministrator may grant or remove the superadministrator role.')
    if (target.role === 'superadministrator' && actor.role !== 'superadministrator' && patch.status !== undefined && patch.status !== target.status)
      throw forbidden('Only a superadministrator may deactivate or reactivate a superadministrator.')
    if (patch.status === 'active' && target.status === 'invited') throw conflict('An invited user becomes active by accepting their invitation (POST /api/v1/users/{userId}/invite issues a new link).', undefined, 'status')
    const leaves = target.role === 'superadministrator' && target.status === 'active' && (role !== 'superadministrator' || patch.status === 'deactivated')
    if (leaves && !superadministrators.some((each) => each.id !== target.id))
      throw conflict('This is the last active superadministrator of the organization: promote another user first.', undefined, patch.status === 'deactivated' ? 'status' : 'role')
    let current = target
    if (role !== target.role) {
      current = await changeRole(write, deps.events, target, role)
      roleChanged = true
    }
    if (patch.status === 'deactivated' && target.status !== 'deactivated') {
      current = await markDeactivated(write, deps.events, current)
      deactivated = current.id
    } else if (patch.status === 'active' && target.status === 'deactivated') current = await reactivate(write, current)
    return current
  })
  if (deactivated) emitDeactivated(deps.events, deactivated)
  else if (roleChanged) deps.events.emitLocally(INVALIDATE_CHANNEL, { userId: user.id, roleChanged: true } satisfies Invalidation)
  return managedUser(user)
}

async function changeRole({ tx, audit }: Write, events: EventBus, target: UserRow, role: UserRow['role']): Promise<UserRow> {
  const [row] = await tx
    .update(users)
    .set({ role, updatedAt: new Date() })
    .where(and(eq(users.id, target.id), eq(users.organizationId, target.organizationId)))
    .returning()
  await audit({ action: 'user.role_changed', resourceType: 'user', resourceId: target.id, changes: { before: { role: target.role }, after: { role } } })
  // Cached keys carry the role: every instance reads them again (sessions read it on every request).
  await events.publish(tx, INVALIDATE_CHANNEL, { userId: target.id, roleChanged: true } satisfies Invalidation)
  return row!
}

/** Active again; one who never accepted their invitation is invited again (an administrator issues a new link). */
async function reactivate({ tx, audit }: Write, target: UserRow): Promise<UserRow> {
  const status = target.passwordHash === NO_PASSWORD ? 'invited' : 'active'
  const [row] = await tx
    .update(users)
    .set({ status, updatedAt: new Date() })
    .where(and(eq(users.id, target.id), eq(users.organizationId, target.organizationId)))
    .returning()
  await audit({ action: 'user.reactivated', resourceType: 'user', resourceId: target.id, changes: { before: { status: target.status }, after: { status } } })
  return row!
}

/** The CLI's `user list`: every user of an organization (the only one when none is named), by username. */
export async function operatorList(db: Database, organizationId: string | undefined, status: string | undefined) {
  let organization: { id: string; name: string }
  if (organizationId === undefined) {
    const found = await db.select({ id: organizations.id, name: organizations.name }).from(organizations).orderBy(asc(organizations.createdAt)).limit(2)
    if (found.length !== 1) throw badRequest(found.length ? 'There are several organizations: name one.' : 'There is no organization yet: run setup, or org create.', 'org')
    organization = found[0]!
  } else {
    if (!isUuid(organizationId)) throw badRequest('Must be an organization id (a UUID).', 'org')
    organization = await organizationOf(db, organizationId).catch(() => {
      throw badRequest('No such organization.', 'org')
    })
  }
  if (status !== undefined && !USER_STATUSES.includes(status as UserStatus)) throw badRequest(`Must be one of ${USER_STATUSES.join(', ')}.`, 'status')
  const rows = await db
    .select({ id: users.id, email: users.email, username: users.username, role: users.role, status: users.status })
    .from(users)
    .where(and(eq(users.organizationId, organization.id), status === undefined ? undefined : eq(users.status, status as UserStatus)))
    .orderBy(asc(users.username), asc(users.id))
  return { organization, users: rows }
}
