/**
 * Teams and team membership. Reads are organization-wide (scope only); writes need an
 * administrator or superadministrator, checked after the team is found (404 before 403). Bound
 * once per service (`createTeams`); every function returns the resource in its API shape.
 */
import { and, eq, ne, sql } from 'drizzle-orm'
import { changedFields } from '../../src/audit'
import { notify, type Database, type Executor } from '../../src/db'
import { checkIfMatch, created } from '../../src/http/answer'
import { conflict, forbidden, notFound } from '../../src/http/errors'
import type { IdempotentRequest } from '../../src/http/idempotency'
import type { ListCache } from '../../src/http/list-cache'
import { listIdentity, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import type { PageRequest } from '../../src/http/pagination'
import { userOf } from '../../src/http/models'
import { isUuid } from '../../src/ids'
import { isAdministrator, type Actor } from '../../src/services/identity'
import { isoFromText, isoOf, nextUpdatedAt, selectListPage } from '../../src/sql'
import { organizationListPage } from '../../src/organization-lists'
import { organizationVersion, type Writes } from '../../src/writes'
import type { UserDirectory } from '../auth/api'
import type { TeamMembershipLoss, TeamRecord } from './api'
import type { TeamInput, TeamMemberInput, TeamPatch } from './model'
import { teamMembers, teams } from './schema'

type TeamRow = typeof teams.$inferSelect

/** The NOTIFY channel of membership losses (delivered only if their transaction commits). */
export const TEAM_MEMBERSHIP_CHANNEL = 'team_membership'

/** A team's fields: its row as Drizzle reads it, or as TEAM_COLUMNS read it (timestamps as text). */
type TeamFields = Pick<TeamRow, 'id' | 'name' | 'description'> & { createdAt: Date | string; updatedAt: Date | string }

/** A team as the API shows it: the one mapping of a team. */
const serializeTeam = (team: TeamFields) => ({
  id: team.id,
  name: team.name,
  description: team.description,
  createdAt: isoOf(team.createdAt),
  updatedAt: isoOf(team.updatedAt),
})

function requireAdministrator(actor: Actor) {
  if (!isAdministrator(actor)) throw forbidden('Only an administrator or superadministrator may change teams.')
}

/** The team `teamId` of the organization (optionally locked `for update`); undefined otherwise, also for an id that is no UUID. */
export async function organizationTeam(executor: Executor, organizationId: string, teamId: string, lock = false): Promise<TeamRecord | undefined> {
  if (!isUuid(teamId)) return undefined
  const query = executor
    .select()
    .from(teams)
    .where(and(eq(teams.id, teamId), eq(teams.organizationId, organizationId)))
  const [team] = lock ? await query.for('update') : await query
  return team
}

/** The team, if it is in the caller's organization; 404 otherwise. */
async function findTeam(executor: Executor, actor: Actor, teamId: string, lock = false): Promise<TeamRow> {
  const team = await organizationTeam(executor, actor.organizationId, teamId, lock)
  if (!team) throw notFound('No such team.')
  return team as TeamRow
}

async function requireUniqueName(executor: Executor, actor: Actor, name: string, exceptId?: string) {
  const [existing] = await executor
    .select({ id: teams.id })
    .from(teams)
    .where(and(eq(teams.organizationId, actor.organizationId), sql`lower(${teams.name}) = lower(${name})`, exceptId ? ne(teams.id, exceptId) : undefined))
  if (existing) throw conflict('A team with this name already exists.', existing.id, 'name')
}

/** The teams list of an organization, oldest first: its only order, which its cursors continue. */
const TEAM_LIST: ListShape = {
  name: 'teams',
  filters: {},
  sorts: { createdAt: { column: 't.created_at', cast: 'timestamptz' } },
  defaultOrder: ['createdAt'],
  tiebreaker: { column: 't.id', cast: 'uuid' },
}
const TEAM_COLUMNS = 't.id, t.name, t.description, t.created_at as "createdAt", t.updated_at as "updatedAt"'

/** A team's members in the order they joined. */
const MEMBER_LIST: ListShape = {
  name: 'team-members',
  filters: {},
  sorts: { createdAt: { column: 'tm.created_at', cast: 'timestamptz' } },
  defaultOrder: ['createdAt'],
  tiebreaker: { column: 'tm.user_id', cast: 'uuid' },
}
/** A member's columns, with identities from auth's user directory (MEMBERS_FROM). */
const MEMBER_COLUMNS = 'tm.user_id as "userId", tm.created_at as "createdAt", u.username, u.display_name as "displayName", u.avatar_url as "avatarUrl"'
const MEMBERS_FROM = 'team_members tm join user_directory u on u.id = tm.user_id and u.organization_id = tm.organization_id'
/** The members of the organization's team. */
const membersOf = (teamId: string, organizationId: string) => sql`tm.team_id = ${teamId} and tm.organization_id = ${organizationId}`
interface MemberRow {
  userId: string
  createdAt: string
  username: string
  displayName: string
  avatarUrl: string | null
}
const serializeMember = (row: MemberRow) => ({
  userId: row.userId,
  user: { id: row.userId, username: row.username, displayName: row.displayName, avatarUrl: row.avatarUrl },
  createdAt: isoFromText(row.createdAt),
})

export interface TeamDeps {
  db: Database
  lists: ListCache
  writes: Writes
  users: UserDirectory
}

export function createTeams({ db, lists, writes, users }: TeamDeps) {
  return {
    /** The organization's teams, oldest first, by page or cursor; a cached page of the organization's version answers without reading rows. */
    list(actor: Actor, request: PageRequest) {
      return organizationListPage(db, actor.organizationId, { shape: TEAM_LIST, from: 'teams t', columns: TEAM_COLUMNS, toItem: serializeTeam }, request, lists)
    },

    async get(actor: Actor, teamId: string) {
      return serializeTeam(await findTeam(db, actor, teamId))
    },

    async create(actor: Actor, input: TeamInput, request?: IdempotentRequest) {
      requireAdministrator(actor)
      return writes.change(actor, 'organization', async ({ tx, audit }) => {
        const [team] = await tx
          .insert(teams)
          .values({ organizationId: actor.organizationId, name: input.name, description: input.description ?? null })
          .onConflictDoNothing()
          .returning()
        if (!team) await requireUniqueName(tx, actor, input.name)
        await audit({ action: 'team.created', resourceType: 'team', resourceId: team!.id, changes: { after: { name: team!.name, description: team!.description } } })
        return created(serializeTeam(team!))
      }, request)
    },

    async update(actor: Actor, teamId: string, patch: TeamPatch, ifMatch?: string) {
      return writes.change(actor, 'organization', async ({ tx, audit }) => {
        const current = await findTeam(tx, actor, teamId, true)
        requireAdministrator(actor)
        checkIfMatch(ifMatch, current.updatedAt)
        const changes = changedFields(current, patch)
        if (!changes) return serializeTeam(current)
        if (patch.name !== undefined) await requireUniqueName(tx, actor, patch.name, current.id)
        const [team] = await tx
          .update(teams)
          .set({ ...patch, updatedAt: nextUpdatedAt(current.updatedAt) })
          .where(and(eq(teams.id, current.id), eq(teams.organizationId, actor.organizationId)))
          .returning()
        await audit({ action: 'team.updated', resourceType: 'team', resourceId: current.id, changes })
        return serializeTeam(team!)
      })
    },

    /** Deletes the team; its memberships and project links go with it. */
    async delete(actor: Actor, teamId: string, ifMatch?: string) {
      return writes.change(actor, 'organization', async ({ tx, audit }) => {
        const current = await findTeam(tx, actor, teamId, true)
        requireAdministrator(actor)
        checkIfMatch(ifMatch, current.updatedAt)
        await tx.delete(teams).where(and(eq(teams.id, current.id), eq(teams.organizationId, actor.organizationId)))
        await notify(tx, TEAM_MEMBERSHIP_CHANNEL, JSON.stringify({ teamId: current.id } satisfies TeamMembershipLoss))
        await audit({ action: 'team.deleted', resourceType: 'team', resourceId: current.id, changes: { before: { name: current.name, description: current.description } } })
        return { id: current.id }
      })
    },

    /** A team's members in the order they joined, by page or cursor (a cursor is checked before the team is looked up). */
    async members(actor: Actor, teamId: string, request: PageRequest) {
      // The team id is bound as given: the statement runs only once findTeam has found it.
      const query = parseListQuery(MEMBER_LIST, {})
      const identity = listIdentity(MEMBER_LIST, `${actor.organizationId} ${teamId}`, query)
      const after = readCursor(request, identity, query.order)
      // Side by side: both precede the rows, which is all the version needs.
      const [version, team] = await Promise.all([organizationVersion(db, actor.organizationId), findTeam(db, actor, teamId)])
      return lists.page(`team-members ${team.id} ${request.cursor ?? request.page} ${request.size}`, version, () =>
        selectListPage<MemberRow, ReturnType<typeof serializeMember>>(
          db,
          {
            columns: MEMBER_COLUMNS,
            from: MEMBERS_FROM,
            conditions: [membersOf(teamId, actor.organizationId)],
            order: query.order,
            total: sql`select count(*) from ${sql.raw(MEMBERS_FROM)} where ${membersOf(teamId, actor.organizationId)}`,
            identity,
            after,
          },
          request,
          serializeMember,
        ),
      )
    },

    /** Adds an active user of the organization (`me`: the caller) to the team. */
    async addMember(actor: Actor, teamId: string, input: TeamMemberInput, request?: IdempotentRequest) {
      const userId = userOf(actor, input.userId)
      return writes.change(actor, 'organization', async ({ tx, audit }) => {
        const team = await findTeam(tx, actor, teamId)
        requireAdministrator(actor)
        const user = await users.requireActiveUser(tx, actor.organizationId, userId, 'userId')
        const [member] = await tx.insert(teamMembers).values({ teamId: team.id, userId, organizationId: actor.organizationId }).onConflictDoNothing().returning()
        if (!member) throw conflict('The user is already a member of this team.', userId, 'userId')
        await audit({ action: 'team.member_added', resourceType: 'team', resourceId: team.id, changes: { after: { userId } } })
        return created({ userId: member.userId, user, createdAt: member.createdAt.toISOString() })
      }, request)
    },

    async removeMember(actor: Actor, teamId: string, userId: string) {
      return writes.change(actor, 'organization', async ({ tx, audit }) => {
        const team = await findTeam(tx, actor, teamId)
        const membership = and(eq(teamMembers.teamId, team.id), eq(teamMembers.userId, userId), eq(teamMembers.organizationId, actor.organizationId))
        const [member] = isUuid(userId) ? await tx.select().from(teamMembers).where(membership) : []
        if (!member) throw notFound('No such team member.')
        requireAdministrator(actor)
        await tx.delete(teamMembers).where(membership)
        await notify(tx, TEAM_MEMBERSHIP_CHANNEL, JSON.stringify({ teamId: team.id, userId } satisfies TeamMembershipLoss))
        await audit({ action: 'team.member_removed', resourceType: 'team', resourceId: team.id, changes: { before: { userId } } })
        return { id: userId }
      })
    },
  }
}

export type TeamService = ReturnType<typeof createTeams>
