/**
 * Teams and team membership. Reads are organization-wide (scope only); writes need an
 * administrator or superadministrator, checked after the team is found (404 before 403).
 */
import { and, asc, count, eq, ne, sql } from 'drizzle-orm'
import { changedFields, mutate } from '../../src/audit'
import { notify, type Database, type Executor } from '../../src/db'
import { checkIfMatch } from '../../src/http/etag'
import { conflict, forbidden, notFound } from '../../src/http/errors'
import { pageWithTotal, totalOver, window, type PageRequest } from '../../src/http/pagination'
import { isUuid } from '../../src/ids'
import { isAdministrator, type Actor, type UserDirectory } from '../../src/services/auth'
import type { TeamMembershipLoss } from '../../src/services/teams'
import { identityColumns, users } from '../auth/schema'
import type { TeamInput, TeamMemberInput, TeamPatch } from './model'
import { organizationTeam, teamMembers, teams } from './schema'

type Team = typeof teams.$inferSelect

export function serializeTeam(team: Team) {
  return {
    id: team.id,
    name: team.name,
    description: team.description,
    createdAt: team.createdAt.toISOString(),
    updatedAt: team.updatedAt.toISOString(),
  }
}

function requireAdministrator(actor: Actor) {
  if (!isAdministrator(actor)) throw forbidden('Only an administrator or superadministrator may change teams.')
}

/** The team, if it is in the caller's organization; 404 otherwise. */
export async function findTeam(executor: Executor, actor: Actor, teamId: string, lock = false): Promise<Team> {
  const team = await organizationTeam(executor, actor.organizationId, teamId, lock)
  if (!team) throw notFound('No such team.')
  return team
}

async function requireUniqueName(executor: Executor, actor: Actor, name: string, exceptId?: string) {
  const [existing] = await executor
    .select({ id: teams.id })
    .from(teams)
    .where(
      and(
        eq(teams.organizationId, actor.organizationId),
        sql`lower(${teams.name}) = lower(${name})`,
        exceptId ? ne(teams.id, exceptId) : undefined,
      ),
    )
  if (existing) throw conflict('A team with this name already exists.', existing.id, 'name')
}

export async function listTeams(db: Database, actor: Actor, request: PageRequest) {
  const where = eq(teams.organizationId, actor.organizationId)
  const rows = await db
    .select({ team: teams, total: totalOver() })
    .from(teams)
    .where(where)
    .orderBy(asc(teams.createdAt), asc(teams.id))
    .limit(window(request).limit)
    .offset(window(request).offset)
  return pageWithTotal(rows, request, (row) => serializeTeam(row.team), async () => {
    const [total] = await db.select({ value: count() }).from(teams).where(where)
    return total!.value
  })
}

export async function createTeam(db: Database, actor: Actor, input: TeamInput) {
  requireAdministrator(actor)
  return mutate(db, actor, async (tx, audit) => {
    const [team] = await tx
      .insert(teams)
      .values({ organizationId: actor.organizationId, name: input.name, description: input.description ?? null })
      .onConflictDoNothing()
      .returning()
    if (!team) await requireUniqueName(tx, actor, input.name)
    await audit({
      action: 'team.created',
      resourceType: 'team',
      resourceId: team!.id,
      changes: { after: { name: team!.name, description: team!.description } },
    })
    return serializeTeam(team!)
  })
}

export async function updateTeam(db: Database, actor: Actor, teamId: string, patch: TeamPatch, ifMatch?: string) {
  return mutate(db, actor, async (tx, audit) => {
    const current = await findTeam(tx, actor, teamId, true)
    requireAdministrator(actor)
    checkIfMatch(ifMatch, current.updatedAt)
    const changes = changedFields(current, patch)
    if (!changes) return current
    if (patch.name !== undefined) await requireUniqueName(tx, actor, patch.name, current.id)
    const [team] = await tx
      .update(teams)
      .set({ ...patch, updatedAt: new Date() })
      .where(eq(teams.id, current.id))
      .returning()
    await audit({ action: 'team.updated', resourceType: 'team', resourceId: current.id, changes })
    return team!
  })
}

/** Deletes the team; its memberships and project links go with it. */
/** The NOTIFY channel of membership losses (delivered only if their transaction commits). */
export const TEAM_MEMBERSHIP_CHANNEL = 'team_membership'

export async function deleteTeam(db: Database, actor: Actor, teamId: string, ifMatch?: string) {
  return mutate(db, actor, async (tx, audit) => {
    const current = await findTeam(tx, actor, teamId, true)
    requireAdministrator(actor)
    checkIfMatch(ifMatch, current.updatedAt)
    await tx.delete(teams).where(eq(teams.id, current.id))
    await notify(tx, TEAM_MEMBERSHIP_CHANNEL, JSON.stringify({ teamId: current.id } satisfies TeamMembershipLoss))
    await audit({
      action: 'team.deleted',
      resourceType: 'team',
      resourceId: current.id,
      changes: { before: { name: current.name, description: current.description } },
    })
    return { id: current.id }
  })
}

function serializeMember(row: { userId: string; createdAt: Date; user: { id: string; username: string; displayName: string; avatarUrl: string | null } }) {
  return { userId: row.userId, user: row.user, createdAt: row.createdAt.toISOString() }
}

export async function listTeamMembers(db: Database, actor: Actor, teamId: string, request: PageRequest) {
  const team = await findTeam(db, actor, teamId)
  const where = eq(teamMembers.teamId, team.id)
  const rows = await db
    .select({ userId: teamMembers.userId, createdAt: teamMembers.createdAt, user: identityColumns, total: totalOver() })
    .from(teamMembers)
    .innerJoin(users, eq(users.id, teamMembers.userId))
    .where(where)
    .orderBy(asc(teamMembers.createdAt), asc(teamMembers.userId))
    .limit(window(request).limit)
    .offset(window(request).offset)
  return pageWithTotal(rows, request, serializeMember, async () => {
    const [total] = await db.select({ value: count() }).from(teamMembers).where(where)
    return total!.value
  })
}

export async function addTeamMember(db: Database, directory: UserDirectory, actor: Actor, teamId: string, input: TeamMemberInput) {
  return mutate(db, actor, async (tx, audit) => {
    const team = await findTeam(tx, actor, teamId)
    requireAdministrator(actor)
    await directory.requireActiveUser(tx, actor.organizationId, input.userId, 'userId')
    const [member] = await tx
      .insert(teamMembers)
      .values({ teamId: team.id, userId: input.userId, organizationId: actor.organizationId })
      .onConflictDoNothing()
      .returning()
    if (!member) throw conflict('The user is already a member of this team.', input.userId, 'userId')
    await audit({ action: 'team.member_added', resourceType: 'team', resourceId: team.id, changes: { after: { userId: input.userId } } })
    const [user] = await tx.select(identityColumns).from(users).where(eq(users.id, input.userId))
    return serializeMember({ userId: member.userId, createdAt: member.createdAt, user: user! })
  })
}

export async function removeTeamMember(db: Database, actor: Actor, teamId: string, userId: string) {
  return mutate(db, actor, async (tx, audit) => {
    const team = await findTeam(tx, actor, teamId)
    const membership = and(eq(teamMembers.teamId, team.id), eq(teamMembers.userId, userId))
    const [member] = isUuid(userId) ? await tx.select().from(teamMembers).where(membership) : []
    if (!member) throw notFound('No such team member.')
    requireAdministrator(actor)
    await tx.delete(teamMembers).where(membership)
    await notify(tx, TEAM_MEMBERSHIP_CHANNEL, JSON.stringify({ teamId: team.id, userId } satisfies TeamMembershipLoss))
    await audit({ action: 'team.member_removed', resourceType: 'team', resourceId: team.id, changes: { before: { userId } } })
    return { id: userId }
  })
}
