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
import { listIdentity, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import type { PageRequest } from '../../src/http/pagination'
import type { Actor } from '../../src/services/identity'
import { isoOf, nextUpdatedAt, selectListPage } from '../../src/sql'
import type { Writes } from '../../src/writes'
import type { TeamDirectory } from '../teams/api'
import { visibleProjects } from './access'
import type { AccessLevel, ProjectAccessService } from './api'
import { changeKey, insertProject } from './keys'
import type { ProjectInput, ProjectPatch } from './model'
import { projectMembers, projects } from './schema'

type ProjectRow = typeof projects.$inferSelect

/** A project's fields: a row as Drizzle reads it, or as PROJECT_COLUMNS read it (timestamps as text). */
export type ProjectFields = Pick<ProjectRow, 'id' | 'key' | 'name' | 'description' | 'createdBy'> & { createdAt: Date | string; updatedAt: Date | string }

/** A project as the API shows it. */
export const serializeProject = (project: ProjectFields) => ({
  id: project.id,
  key: project.key,
  name: project.name,
  description: project.description,
  createdBy: project.createdBy,
  createdAt: isoOf(project.createdAt),
  updatedAt: isoOf(project.updatedAt),
})

/** A project's columns as the API shows them, for SQL-text reads (alias `p`). */
export const PROJECT_COLUMNS = `p.id, p.key, p.name, p.description, p.created_by as "createdBy", p.created_at as "createdAt", p.updated_at as "updatedAt"`

/** The projects a caller sees, oldest first: its only order, which its cursors continue. */
const PROJECT_LIST: ListShape = {
  name: 'projects',
  filters: {},
  sorts: { createdAt: { column: 'p.created_at', cast: 'timestamptz' } },
  defaultOrder: ['createdAt'],
  tiebreaker: { column: 'p.id', cast: 'uuid' },
}

/** The team → projects directory, in the order the links were made. */
const TEAM_PROJECT_LIST: ListShape = {
  name: 'team-projects',
  filters: {},
  sorts: { createdAt: { column: 'pt.created_at', cast: 'timestamptz' } },
  defaultOrder: ['createdAt'],
  tiebreaker: { column: 'pt.project_id', cast: 'uuid' },
}
const TEAM_PROJECTS_FROM = 'project_teams pt join projects p on p.id = pt.project_id and p.organization_id = pt.organization_id'
/** The links of the organization's team. */
const teamProjectsOf = (teamId: string, organizationId: string) => sql`pt.team_id = ${teamId} and pt.organization_id = ${organizationId}`

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
    /** Projects the caller can see, oldest first, by page or cursor: a hot read, one statement. */
    list(actor: Actor, request: PageRequest) {
      const visible = visibleProjects(actor)
      const query = parseListQuery(PROJECT_LIST, {})
      // What a caller sees is their own list: a cursor is the caller's.
      const identity = listIdentity(PROJECT_LIST, `${actor.organizationId} ${actor.userId}`, query)
      const after = readCursor(request, identity, query.order)
      return selectListPage(
        db,
        { columns: PROJECT_COLUMNS, from: 'projects p', conditions: [visible], order: query.order, total: sql`select count(*) from projects p where ${visible}`, identity, after },
        request,
        serializeProject,
      )
    },

    /** A project the caller can see (viewer). */
    async get(actor: Actor, projectId: string) {
      await access.requireProjectAccess(actor, projectId, 'viewer')
      const [project] = await db.select().from(projects).where(theProject(actor.organizationId, projectId))
      if (!project) throw notFound('No such project.')
      return serializeProject(project)
    },

    /** Creates a project with the key given or derived from its name (keys.ts); the creator becomes its owner. */
    create(actor: Actor, input: ProjectInput, request?: IdempotentRequest) {
      return writes.change(actor, 'project', async ({ tx, audit, emit }) => {
        const project = await insertProject(tx, { organizationId: actor.organizationId, name: input.name, description: input.description ?? null, createdBy: actor.userId }, input.key)
        await tx.insert(projectMembers).values({ projectId: project!.id, userId: actor.userId, organizationId: actor.organizationId, accessLevel: 'owner' })
        await audit({
          action: 'project.created',
          resourceType: 'project',
          resourceId: project!.id,
          projectId: project!.id,
          changes: { after: { key: project!.key, name: project!.name, description: project!.description, ownerId: actor.userId } },
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
        const next = patch.key === undefined ? patch : { ...patch, key: patch.key.toUpperCase() }
        const changes = changedFields(current, next)
        if (!changes) return serializeProject(current)
        const write = () => tx.update(projects).set({ ...next, updatedAt: nextUpdatedAt(current.updatedAt) }).where(theProject(actor.organizationId, projectId)).returning()
        // A new key is recorded with the project's others (keys.ts): the old one keeps resolving.
        const [project] = next.key !== undefined && next.key !== current.key ? await changeKey(tx, actor.organizationId, projectId, next.key, write) : await write()
        await audit({ action: 'project.updated', resourceType: 'project', resourceId: projectId, projectId, changes })
        const updated = serializeProject(project!)
        await emit({ type: 'project.updated', projectId, data: updated, previous: changes.before })
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
        await audit({ action: 'project.deleted', resourceType: 'project', resourceId: projectId, projectId, changes: { before: { key: current.key, name: current.name, description: current.description } } })
        return { id: projectId }
      })
    },

    /**
     * The organization-wide directory of projects linked to a team (scope only, as documented):
     * every linked project with the team's level, whether or not the caller can open it.
     */
    async teamProjects(actor: Actor, teamId: string, request: PageRequest) {
      // The team id is bound as given: the statement runs only once the team is found.
      const query = parseListQuery(TEAM_PROJECT_LIST, {})
      const identity = listIdentity(TEAM_PROJECT_LIST, `${actor.organizationId} ${teamId}`, query)
      const after = readCursor(request, identity, query.order)
      const team = await teams.find(db, actor.organizationId, teamId)
      if (!team) throw notFound('No such team.')
      return selectListPage<{ id: string; name: string; accessLevel: AccessLevel }, { id: string; name: string; accessLevel: AccessLevel }>(
        db,
        {
          columns: 'p.id, p.name, pt.access_level as "accessLevel"',
          from: TEAM_PROJECTS_FROM,
          conditions: [teamProjectsOf(teamId, actor.organizationId)],
          order: query.order,
          total: sql`select count(*) from ${sql.raw(TEAM_PROJECTS_FROM)} where ${teamProjectsOf(teamId, actor.organizationId)}`,
          identity,
          after,
        },
        request,
        (row) => row,
      )
    },
  }
}

export type ProjectService = ReturnType<typeof createProjects>
