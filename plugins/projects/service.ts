/**
 * Projects: visible lists, creation (the creator becomes owner), updates and deletion by owners,
 * and the organization-wide team → projects directory. Bound once (`createProjects`); every
 * function returns the resource in its API shape.
 */
import { and, eq, sql } from 'drizzle-orm'
import { changedFields } from '../../src/audit'
import type { Database, Transaction } from '../../src/db'
import { checkIfMatch, created } from '../../src/http/answer'
import { notFound } from '../../src/http/errors'
import type { IdempotentRequest } from '../../src/http/idempotency'
import type { PageRequest } from '../../src/http/pagination'
import type { Actor } from '../../src/services/identity'
import { selectPage, withIsoTimestamps, nextUpdatedAt } from '../../src/sql'
import type { Writes } from '../../src/writes'
import type { TeamDirectory } from '../teams/api'
import { visibleProjects } from './access'
import type { AccessLevel, ProjectAccessService } from './api'
import type { ProjectInput, ProjectPatch } from './model'
import { projectMembers, projects } from './schema'
import { bind, compileStatement, type CompiledStatement } from './statements'

type ProjectRow = typeof projects.$inferSelect

const serializeProject = (project: ProjectRow) => ({
  id: project.id,
  name: project.name,
  description: project.description,
  createdBy: project.createdBy,
  createdAt: project.createdAt.toISOString(),
  updatedAt: project.updatedAt.toISOString(),
})

/** A project's columns as the API shows them, for SQL-text reads (alias `p`). */
const PROJECT_COLUMNS = `p.id, p.name, p.description, p.created_by as "createdBy", p.created_at as "createdAt", p.updated_at as "updatedAt"`
type ProjectTextRow = Omit<ReturnType<typeof serializeProject>, never>

/** The list of the projects a caller sees (a page of rows, and the count for a page past the end), per kind of caller. */
function listStatements(superadministrator: boolean): { rows: CompiledStatement; count: CompiledStatement } {
  const rows = compileStatement(sql`select ${sql.raw(PROJECT_COLUMNS)}, count(*) over () as total from projects p where ${visibleProjects(superadministrator)} order by p.created_at, p.id`)
  const count = compileStatement(sql`select count(*) as total from projects p where ${visibleProjects(superadministrator)}`)
  // selectPage runs both on one list of values.
  if (rows.parameters.join() !== count.parameters.join()) throw new Error('the project list and its count bind different parameters')
  return { rows, count }
}
const MEMBER_LIST = listStatements(false)
const SUPERADMINISTRATOR_LIST = listStatements(true)

/** The organization's project `projectId`, as a condition (its primary key). */
const theProject = (organizationId: string, projectId: string) => and(eq(projects.id, projectId), eq(projects.organizationId, organizationId))

/** Locks the project row `for update` and returns it; 404 when it is gone (deleted meanwhile). */
export async function lockProject(tx: Transaction, organizationId: string, projectId: string): Promise<ProjectRow> {
  const [project] = await tx.select().from(projects).where(theProject(organizationId, projectId)).for('update')
  if (!project) throw notFound('No such project.')
  return project
}

export interface ProjectDeps {
  db: Database
  writes: Writes
  access: ProjectAccessService
  teams: TeamDirectory
}

export function createProjects({ db, writes, access, teams }: ProjectDeps) {
  return {
    /** Projects the caller can see, oldest first: a hot read, one statement. */
    list(actor: Actor, request: PageRequest) {
      const statements = actor.role === 'superadministrator' ? SUPERADMINISTRATOR_LIST : MEMBER_LIST
      return selectPage<ProjectTextRow & { total: string }, ProjectTextRow>(
        db,
        statements.rows.text,
        statements.count.text,
        bind(statements.rows, { organization: actor.organizationId, user: actor.userId }),
        request,
        ({ total: _total, ...row }) => withIsoTimestamps(row),
      )
    },

    /** A project the caller can see (viewer). */
    async get(actor: Actor, projectId: string) {
      await access.requireProjectAccess(actor, projectId, 'viewer')
      const [project] = await db.select().from(projects).where(theProject(actor.organizationId, projectId))
      if (!project) throw notFound('No such project.')
      return serializeProject(project)
    },

    /** Creates a project; the creator becomes its owner. */
    create(actor: Actor, input: ProjectInput, request?: IdempotentRequest) {
      return writes.change(actor, 'project', async ({ tx, audit, emit }) => {
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
        const project_ = serializeProject(project!)
        await emit({ type: 'project.created', projectId: project!.id, data: project_ })
        return created(project_)
      }, request)
    },

    update(actor: Actor, projectId: string, patch: ProjectPatch, ifMatch?: string) {
      return writes.change(actor, 'project', async ({ tx, audit, emit }) => {
        await access.requireProjectAccess(actor, projectId, 'owner', tx)
        const current = await lockProject(tx, actor.organizationId, projectId)
        checkIfMatch(ifMatch, current.updatedAt)
        const changes = changedFields(current, patch)
        if (!changes) return serializeProject(current)
        const [project] = await tx
          .update(projects)
          .set({ ...patch, updatedAt: nextUpdatedAt(current.updatedAt) })
          .where(theProject(actor.organizationId, projectId))
          .returning()
        await audit({ action: 'project.updated', resourceType: 'project', resourceId: projectId, projectId, changes })
        const updated = serializeProject(project!)
        await emit({ type: 'project.updated', projectId, data: updated })
        return updated
      })
    },

    /** Deletes the project and everything in it (members, team links, and the content plugins' rows). */
    delete(actor: Actor, projectId: string, ifMatch?: string) {
      return writes.change(actor, 'project', async ({ tx, audit, emit }) => {
        await access.requireProjectAccess(actor, projectId, 'owner', tx)
        const current = await lockProject(tx, actor.organizationId, projectId)
        checkIfMatch(ifMatch, current.updatedAt)
        // Recorded before the rows go: observers may still read who could see the project.
        await emit({ type: 'project.deleted', projectId, data: serializeProject(current) })
        await tx.delete(projects).where(theProject(actor.organizationId, projectId))
        await audit({ action: 'project.deleted', resourceType: 'project', resourceId: projectId, projectId, changes: { before: { name: current.name, description: current.description } } })
        return { id: projectId }
      })
    },

    /**
     * The organization-wide directory of projects linked to a team (scope only, as the seed says):
     * every linked project with the team's level, whether or not the caller can open it.
     */
    async teamProjects(actor: Actor, teamId: string, request: PageRequest) {
      const team = await teams.find(db, actor.organizationId, teamId)
      if (!team) throw notFound('No such team.')
      return selectPage<{ id: string; name: string; accessLevel: AccessLevel; total: string }, { id: string; name: string; accessLevel: AccessLevel }>(
        db,
        `select p.id, p.name, pt.access_level as "accessLevel", count(*) over () as total
          from project_teams pt join projects p on p.id = pt.project_id and p.organization_id = pt.organization_id
          where pt.team_id = $1 and pt.organization_id = $2 order by pt.created_at, pt.project_id`,
        'select count(*) as total from project_teams where team_id = $1 and organization_id = $2',
        [team.id, actor.organizationId],
        request,
        ({ total: _total, ...row }) => row,
      )
    },
  }
}

export type ProjectService = ReturnType<typeof createProjects>
