/**
 * Work item keys (`ENG-123`): a project's key, current or old (the projects plugin's
 * project_key_directory), a dash and the work item's number. The routes and tools that name a
 * work item by itself (`/api/v1/work-items/{workItemId}`) take its id or its key, in any case; they
 * answer as the project-scoped ones do, with one 404 for whatever is missing: an unknown id or
 * key, another organization's, or a project the caller cannot see.
 */
import { sql, type SQL } from 'drizzle-orm'
import type { Database, Executor } from '../../src/db'
import { ApiError, notFound } from '../../src/http/errors'
import { isUuid } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { compileStatement, runStatement, type CompiledStatement } from '../../src/statements'
import type { ProjectAccessService } from '../projects/api'
import type { WorkItemExtension } from './api'
import { fromWorkItemText, type WorkItemPatch, type WorkItemResource, type WorkItemTextRow } from './model'
import { columnsOf, type WorkItemService } from './service'

/** `ENG-123`: a project key in any case, a dash, and a number of at most 9 digits (an int). */
const WORK_ITEM_KEY = /^([A-Za-z][A-Za-z0-9]{1,9})-([0-9]{1,9})$/

/** A work item key's project key (upper case) and number, or undefined when `text` is no key. */
export function parseWorkItemKey(text: string): { projectKey: string; number: number } | undefined {
  const match = WORK_ITEM_KEY.exec(text)
  return match ? { projectKey: match[1]!.toUpperCase(), number: Number(match[2]) } : undefined
}

const NO_SUCH = 'No such work item.'
const ORGANIZATION = sql.placeholder('organization')

/** The statements finding a work item of the organization by id, and by key (through any key its project has had), reading `columns`. */
const finders = (columns: SQL) => ({
  id: compileStatement(sql`select ${columns} from work_items w where w.id = ${sql.placeholder('id')} and w.organization_id = ${ORGANIZATION}`),
  key: compileStatement(sql`select ${columns} from work_items w
    where w.number = ${sql.placeholder('number')} and w.organization_id = ${ORGANIZATION}
      and w.project_id = (select k.project_id from project_key_directory k where k.key = ${sql.placeholder('key')} and k.organization_id = ${ORGANIZATION})`),
})
type Finders = ReturnType<typeof finders>

/** Which work item and where: what a write by reference needs before it runs as the project-scoped one. */
const LOCATE = finders(sql.raw('w.id, w.project_id as "projectId"'))

/** The organization's work item named by `ref` (an id or a key), read by `statements`; undefined when there is none. */
async function find<T>(db: Executor, statements: Finders, organizationId: string, ref: string): Promise<T | undefined> {
  if (isUuid(ref)) return (await runStatement<T>(db, statements.id, { id: ref, organization: organizationId }))[0]
  const key = parseWorkItemKey(ref)
  if (!key) return undefined
  return (await runStatement<T>(db, statements.key, { key: key.projectKey, number: key.number, organization: organizationId }))[0]
}


/** `work`, its 404s (an invisible project's included) answered as one: the reference names a work item, and never tells what was missing. */
async function asOne404<T>(work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (error) {
    throw error instanceof ApiError && error.status === 404 ? notFound(NO_SUCH) : error
  }
}

/** The face's `locate` (api.ts): the work item named by `ref` in a project the caller can view, its id and project; one 404 otherwise. */
export function visibleWorkItem(db: Executor, access: ProjectAccessService) {
  return async (actor: Actor, ref: string): Promise<{ id: string; projectId: string }> => {
    const found = await find<{ id: string; projectId: string }>(db, LOCATE, actor.organizationId, ref)
    if (!found) throw notFound(NO_SUCH)
    await asOne404(access.requireProjectAccess(actor, found.projectId, 'viewer'))
    return found
  }
}

export interface WorkItemRefDeps {
  db: Database
  access: ProjectAccessService
  workItems: WorkItemService
  /** The properties other plugins add (labels, custom fields): a read shows them. */
  extensions: readonly WorkItemExtension[]
}

/**
 * A work item by id or key: read (viewer), changed and deleted (editor, If-Match) with the same
 * checks as the project-scoped routes. `projectId` (the MCP tools' optional argument): the work
 * item must be in that project; with an id, the project-scoped path runs as it is.
 */
export function createWorkItemRefs({ db, access, workItems, extensions }: WorkItemRefDeps) {
  /** Reads with every extension's column: compiled at first use (every extension is registered by then). */
  let reads: Finders | undefined
  const read = () => (reads ??= finders(columnsOf(extensions, sql`${ORGANIZATION}`)))

  /** The work item's id and project; 404 when there is none, or it is not in `projectId`. */
  const locate = async (actor: Actor, ref: string, projectId?: string) => {
    const found = await find<{ id: string; projectId: string }>(db, LOCATE, actor.organizationId, ref)
    if (!found || (projectId !== undefined && found.projectId !== projectId.toLowerCase())) throw notFound(NO_SUCH)
    return found
  }
  /** A project and an id: the project-scoped path, as it is. */
  const direct = (ref: string, projectId?: string) => projectId !== undefined && isUuid(ref)

  return {
    /** Two statements: the work item (its project with it), then the caller's access to that project. */
    async get(actor: Actor, ref: string, projectId?: string): Promise<WorkItemResource> {
      if (direct(ref, projectId)) return workItems.get(actor, projectId!, ref)
      const row = await find<WorkItemTextRow>(db, read(), actor.organizationId, ref)
      if (!row || (projectId !== undefined && row.projectId !== projectId.toLowerCase())) throw notFound(NO_SUCH)
      await asOne404(access.requireProjectAccess(actor, row.projectId, 'viewer'))
      return fromWorkItemText(row)
    },

    async update(actor: Actor, ref: string, patch: WorkItemPatch, ifMatch?: string, projectId?: string): Promise<WorkItemResource> {
      if (direct(ref, projectId)) return workItems.update(actor, projectId!, ref, patch, ifMatch)
      const target = await locate(actor, ref, projectId)
      return asOne404(workItems.update(actor, target.projectId, target.id, patch, ifMatch))
    },

    async delete(actor: Actor, ref: string, ifMatch?: string, projectId?: string): Promise<{ id: string }> {
      if (direct(ref, projectId)) return workItems.delete(actor, projectId!, ref, ifMatch)
      const target = await locate(actor, ref, projectId)
      return asOne404(workItems.delete(actor, target.projectId, target.id, ifMatch))
    },
  }
}

export type WorkItemRefs = ReturnType<typeof createWorkItemRefs>
