/**
 * Who may open a project: direct members and linked teams, each with a level. Reads need viewer
 * access, changes need owner access, and a project always keeps an owner grant (a direct owner
 * or a team linked as owner): removing or demoting the last one is 409.
 */
import { and, asc, count, eq, sql } from 'drizzle-orm'
import { mutate, type Audit } from '../../src/audit'
import { queryRows, type Database, type Transaction } from '../../src/db'
import { badRequest, conflict, notFound } from '../../src/http/errors'
import { pageWithTotal, totalOver, window, type PageRequest } from '../../src/http/pagination'
import { isoFromText, selectPage } from '../../src/sql'
import { isUuid } from '../../src/ids'
import type { AccessLevel, ProjectAccessService } from '../../src/services/access'
import type { Actor, UserDirectory } from '../../src/services/auth'
import { identityColumns, users } from '../auth/schema'
import { organizationTeam, teams } from '../teams/schema'
import type { ProjectMemberInput, ProjectTeamInput } from './model'
import { projectMembers, projectTeams } from './schema'
import { lockProject } from './service'

const iso = (date: Date) => date.toISOString()

/**
 * Checks owner access and locks the project row, so grant changes on one project queue up; 404
 * when the project was deleted between the check and the lock.
 */
async function lockAsOwner(tx: Transaction, access: ProjectAccessService, actor: Actor, projectId: string) {
  await access.requireProjectAccess(actor, projectId, 'owner', tx)
  await lockProject(tx, projectId)
}

/** Throws 409 when the grant being removed or demoted is the project's last owner grant. */
async function keepAnOwner(tx: Transaction, projectId: string, losing: AccessLevel, becoming: AccessLevel | null) {
  if (losing !== 'owner' || becoming === 'owner') return
  const [row] = await queryRows<{ owners: number }>(
    tx,
    sql`select
      (select count(*) from ${projectMembers} where ${projectMembers.projectId} = ${projectId} and ${projectMembers.accessLevel} = 'owner')
    + (select count(*) from ${projectTeams} where ${projectTeams.projectId} = ${projectId} and ${projectTeams.accessLevel} = 'owner') as owners`,
  )
  if (Number(row!.owners) <= 1) throw conflict('A project must keep at least one owner; add another owner first.')
}

// ---- members -------------------------------------------------------------------------------

const memberColumns = {
  userId: projectMembers.userId,
  accessLevel: projectMembers.accessLevel,
  createdAt: projectMembers.createdAt,
  user: identityColumns,
}
type MemberRow = { userId: string; accessLevel: AccessLevel; createdAt: Date; user: { id: string; username: string; displayName: string; avatarUrl: string | null } }
const serializeMember = (row: MemberRow) => ({ userId: row.userId, accessLevel: row.accessLevel, user: row.user, createdAt: iso(row.createdAt) })

/** $1 project; the page's LIMIT and OFFSET are appended. Exported for the benchmarks. */
export const MEMBERS_PAGE = `select pm.user_id as "userId", pm.access_level as "accessLevel", pm.created_at as "createdAt",
    u.username, u.display_name as "displayName", u.avatar_url as "avatarUrl", count(*) over () as total
  from project_members pm join users u on u.id = pm.user_id
  where pm.project_id = $1
  order by pm.created_at, pm.user_id`

/**
 * Members of a project (viewer), a hot read: two statements (the access check, then the page
 * with its total), both plain SQL text.
 */
export async function listMembers(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, request: PageRequest) {
  await access.requireProjectAccess(actor, projectId, 'viewer')
  return selectPage<MemberListRow, ReturnType<typeof serializeMember>>(
    db,
    MEMBERS_PAGE,
    `select count(*) as total from project_members where project_id = $1`,
    [projectId],
    request,
    (row) => ({
      userId: row.userId,
      accessLevel: row.accessLevel,
      user: { id: row.userId, username: row.username, displayName: row.displayName, avatarUrl: row.avatarUrl },
      createdAt: isoFromText(row.createdAt),
    }),
  )
}

interface MemberListRow {
  userId: string
  accessLevel: AccessLevel
  createdAt: string
  username: string
  displayName: string
  avatarUrl: string | null
  total: string
}

async function memberRow(tx: Transaction, projectId: string, userId: string): Promise<MemberRow | undefined> {
  if (!isUuid(userId)) return undefined
  const [row] = await tx
    .select(memberColumns)
    .from(projectMembers)
    .innerJoin(users, eq(users.id, projectMembers.userId))
    .where(and(eq(projectMembers.projectId, projectId), eq(projectMembers.userId, userId)))
  return row
}

export async function addMember(db: Database, access: ProjectAccessService, directory: UserDirectory, actor: Actor, projectId: string, input: ProjectMemberInput) {
  return mutate(db, actor, async (tx, audit) => {
    await lockAsOwner(tx, access, actor, projectId)
    await directory.requireActiveUser(tx, actor.organizationId, input.userId, 'userId')
    const [inserted] = await tx
      .insert(projectMembers)
      .values({ projectId, userId: input.userId, organizationId: actor.organizationId, accessLevel: input.accessLevel })
      .onConflictDoNothing()
      .returning()
    if (!inserted) throw conflict('The user is already a member of this project.', input.userId, 'userId')
    await grantAudit(audit, 'project.member_added', projectId, input.userId, undefined, { userId: input.userId, accessLevel: input.accessLevel })
    return serializeMember((await memberRow(tx, projectId, input.userId))!)
  })
}

export async function updateMember(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, userId: string, accessLevel: AccessLevel) {
  return mutate(db, actor, async (tx, audit) => {
    await lockAsOwner(tx, access, actor, projectId)
    const current = await memberRow(tx, projectId, userId)
    if (!current) throw notFound('No such project member.')
    if (current.accessLevel === accessLevel) return serializeMember(current)
    await keepAnOwner(tx, projectId, current.accessLevel, accessLevel)
    await tx
      .update(projectMembers)
      .set({ accessLevel, updatedAt: new Date() })
      .where(and(eq(projectMembers.projectId, projectId), eq(projectMembers.userId, userId)))
    await grantAudit(audit, 'project.member_updated', projectId, userId, { userId, accessLevel: current.accessLevel }, { userId, accessLevel })
    return serializeMember({ ...current, accessLevel })
  })
}

export async function removeMember(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, userId: string) {
  return mutate(db, actor, async (tx, audit) => {
    await lockAsOwner(tx, access, actor, projectId)
    const current = await memberRow(tx, projectId, userId)
    if (!current) throw notFound('No such project member.')
    await keepAnOwner(tx, projectId, current.accessLevel, null)
    await tx.delete(projectMembers).where(and(eq(projectMembers.projectId, projectId), eq(projectMembers.userId, userId)))
    await grantAudit(audit, 'project.member_removed', projectId, userId, { userId, accessLevel: current.accessLevel }, undefined)
    return { id: userId }
  })
}

// ---- team links ----------------------------------------------------------------------------

const linkColumns = {
  teamId: projectTeams.teamId,
  accessLevel: projectTeams.accessLevel,
  createdAt: projectTeams.createdAt,
  team: { id: teams.id, name: teams.name },
}
type LinkRow = { teamId: string; accessLevel: AccessLevel; createdAt: Date; team: { id: string; name: string } }
const serializeLink = (row: LinkRow) => ({ teamId: row.teamId, accessLevel: row.accessLevel, team: row.team, createdAt: iso(row.createdAt) })

export async function listTeamLinks(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, request: PageRequest) {
  await access.requireProjectAccess(actor, projectId, 'viewer')
  const where = eq(projectTeams.projectId, projectId)
  const rows = await db
    .select({ ...linkColumns, total: totalOver() })
    .from(projectTeams)
    .innerJoin(teams, eq(teams.id, projectTeams.teamId))
    .where(where)
    .orderBy(asc(projectTeams.createdAt), asc(projectTeams.teamId))
    .limit(window(request).limit)
    .offset(window(request).offset)
  return pageWithTotal(rows, request, serializeLink, async () => {
    const [total] = await db.select({ value: count() }).from(projectTeams).where(where)
    return total!.value
  })
}

async function linkRow(tx: Transaction, projectId: string, teamId: string): Promise<LinkRow | undefined> {
  if (!isUuid(teamId)) return undefined
  const [row] = await tx
    .select(linkColumns)
    .from(projectTeams)
    .innerJoin(teams, eq(teams.id, projectTeams.teamId))
    .where(and(eq(projectTeams.projectId, projectId), eq(projectTeams.teamId, teamId)))
  return row
}

export async function linkTeam(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, input: ProjectTeamInput) {
  return mutate(db, actor, async (tx, audit) => {
    await lockAsOwner(tx, access, actor, projectId)
    const team = await organizationTeam(tx, actor.organizationId, input.teamId)
    if (!team) throw badRequest('No team with this id in your organization.', 'teamId')
    const [inserted] = await tx
      .insert(projectTeams)
      .values({ projectId, teamId: input.teamId, organizationId: actor.organizationId, accessLevel: input.accessLevel })
      .onConflictDoNothing()
      .returning()
    if (!inserted) throw conflict('The team is already linked to this project.', input.teamId, 'teamId')
    await grantAudit(audit, 'project.team_linked', projectId, input.teamId, undefined, { teamId: input.teamId, accessLevel: input.accessLevel })
    return serializeLink((await linkRow(tx, projectId, input.teamId))!)
  })
}

export async function updateTeamLink(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, teamId: string, accessLevel: AccessLevel) {
  return mutate(db, actor, async (tx, audit) => {
    await lockAsOwner(tx, access, actor, projectId)
    const current = await linkRow(tx, projectId, teamId)
    if (!current) throw notFound('No such team link.')
    if (current.accessLevel === accessLevel) return serializeLink(current)
    await keepAnOwner(tx, projectId, current.accessLevel, accessLevel)
    await tx
      .update(projectTeams)
      .set({ accessLevel, updatedAt: new Date() })
      .where(and(eq(projectTeams.projectId, projectId), eq(projectTeams.teamId, teamId)))
    await grantAudit(audit, 'project.team_updated', projectId, teamId, { teamId, accessLevel: current.accessLevel }, { teamId, accessLevel })
    return serializeLink({ ...current, accessLevel })
  })
}

export async function unlinkTeam(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, teamId: string) {
  return mutate(db, actor, async (tx, audit) => {
    await lockAsOwner(tx, access, actor, projectId)
    const current = await linkRow(tx, projectId, teamId)
    if (!current) throw notFound('No such team link.')
    await keepAnOwner(tx, projectId, current.accessLevel, null)
    await tx.delete(projectTeams).where(and(eq(projectTeams.projectId, projectId), eq(projectTeams.teamId, teamId)))
    await grantAudit(audit, 'project.team_unlinked', projectId, teamId, { teamId, accessLevel: current.accessLevel }, undefined)
    return { id: teamId }
  })
}

/** Records a grant change: resource `project_member` (a user id) or `project_team` (a team id). */
function grantAudit(
  audit: Audit,
  action: `project.${'member' | 'team'}_${string}`,
  projectId: string,
  resourceId: string,
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown> | undefined,
) {
  const resourceType = action.startsWith('project.member') ? 'project_member' : 'project_team'
  return audit({ action, resourceType, resourceId, projectId, changes: { before, after } })
}
