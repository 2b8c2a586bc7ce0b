/** Projects: visible lists, creation (the creator becomes owner), updates and deletion by owners. */
import { asc, count, eq } from 'drizzle-orm'
import { changedFields, mutate } from '../../src/audit'
import type { Database, Transaction } from '../../src/db'
import { checkIfMatch } from '../../src/http/etag'
import { notFound } from '../../src/http/errors'
import { pageWithTotal, totalOver, window, type PageRequest } from '../../src/http/pagination'
import type { ProjectAccessService } from '../../src/services/access'
import { isoFromText, selectPage } from '../../src/sql'
import type { Actor } from '../../src/services/auth'
import { organizationTeam } from '../teams/schema'
import { visibleProjectsCondition } from './access'
import type { ProjectInput, ProjectPatch } from './model'
import { projectMembers, projects, projectTeams } from './schema'

type Project = typeof projects.$inferSelect

export function serializeProject(project: Project) {
  return {
    id: project.id,
    name: project.name,
    description: project.description,
    createdBy: project.createdBy,
    createdAt: project.createdAt.toISOString(),
    updatedAt: project.updatedAt.toISOString(),
  }
}

/** Projects the caller can see, oldest first: a hot read, one statement. */
export async function listProjects(db: Database, actor: Actor, request: PageRequest) {
  const { where, parameters } = visibleProjectsCondition(actor)
  return selectPage<ProjectRow & { total: string }, ReturnType<typeof serializeProjectRow>>(
    db,
    `select p.id, p.name, p.description, p.created_by as "createdBy", p.created_at as "createdAt", p.updated_at as "updatedAt",
        count(*) over () as total
      from projects p where ${where}
      order by p.created_at, p.id`,
    `select count(*) as total from projects p where ${where}`,
    parameters,
    request,
    serializeProjectRow,
  )
}

interface ProjectRow {
  id: string
  name: string
  description: string | null
  createdBy: string | null
  createdAt: string
  updatedAt: string
}

function serializeProjectRow(row: ProjectRow) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    createdBy: row.createdBy,
    createdAt: isoFromText(row.createdAt),
    updatedAt: isoFromText(row.updatedAt),
  }
}

/** A project the caller can see (viewer). */
export async function getProject(db: Database, access: ProjectAccessService, actor: Actor, projectId: string) {
  await access.requireProjectAccess(actor, projectId, 'viewer')
  const [project] = await db.select().from(projects).where(eq(projects.id, projectId))
  if (!project) throw notFound('No such project.')
  return project
}

/** Creates a project; the creator becomes its owner. */
export async function createProject(db: Database, actor: Actor, input: ProjectInput) {
  return mutate(db, actor, async (tx, audit) => {
    const [project] = await tx
      .insert(projects)
      .values({ organizationId: actor.organizationId, name: input.name, description: input.description ?? null, createdBy: actor.userId })
      .returning()
    await tx.insert(projectMembers).values({ projectId: project!.id, userId: actor.userId, organizationId: actor.organizationId, accessLevel: 'owner' })
    await audit({
      action: 'project.created',
      resourceType: 'project',
      resourceId: project!.id,
      projectId: project!.id,
      changes: { after: { name: project!.name, description: project!.description, ownerId: actor.userId } },
    })
    return serializeProject(project!)
  })
}

/** Locks the project row `for update` and returns it; 404 when it is gone (deleted meanwhile). */
export async function lockProject(tx: Transaction, projectId: string): Promise<Project> {
  const [project] = await tx.select().from(projects).where(eq(projects.id, projectId)).for('update')
  if (!project) throw notFound('No such project.')
  return project
}

export async function updateProject(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, patch: ProjectPatch, ifMatch?: string) {
  return mutate(db, actor, async (tx, audit) => {
    await access.requireProjectAccess(actor, projectId, 'owner', tx)
    const current = await lockProject(tx, projectId)
    checkIfMatch(ifMatch, current.updatedAt)
    const changes = changedFields(current, patch)
    if (!changes) return current
    const [project] = await tx
      .update(projects)
      .set({ ...patch, updatedAt: new Date() })
      .where(eq(projects.id, projectId))
      .returning()
    await audit({ action: 'project.updated', resourceType: 'project', resourceId: projectId, projectId, changes })
    return project!
  })
}

/** Deletes the project and everything in it (members, team links, and the content plugins' rows). */
export async function deleteProject(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, ifMatch?: string) {
  return mutate(db, actor, async (tx, audit) => {
    await access.requireProjectAccess(actor, projectId, 'owner', tx)
    const current = await lockProject(tx, projectId)
    checkIfMatch(ifMatch, current.updatedAt)
    await tx.delete(projects).where(eq(projects.id, projectId))
    await audit({
      action: 'project.deleted',
      resourceType: 'project',
      resourceId: projectId,
      projectId,
      changes: { before: { name: current.name, description: current.description } },
    })
    return { id: projectId }
  })
}

/**
 * The organization-wide directory of projects linked to a team (scope only, as the seed says):
 * every linked project with the team's level, whether or not the caller can open it.
 */
export async function listTeamProjects(db: Database, actor: Actor, teamId: string, request: PageRequest) {
  const team = await organizationTeam(db, actor.organizationId, teamId)
  if (!team) throw notFound('No such team.')
  const where = eq(projectTeams.teamId, team.id)
  const rows = await db
    .select({ id: projects.id, name: projects.name, accessLevel: projectTeams.accessLevel, total: totalOver() })
    .from(projectTeams)
    .innerJoin(projects, eq(projects.id, projectTeams.projectId))
    .where(where)
    .orderBy(asc(projectTeams.createdAt), asc(projectTeams.projectId))
    .limit(window(request).limit)
    .offset(window(request).offset)
  return pageWithTotal(rows, request, (row) => row, async () => {
    const [total] = await db.select({ value: count() }).from(projectTeams).where(where)
    return total!.value
  })
}
