/**
 * The work-item lists: a project's (hot: its access check reads the project's version, and a
 * cached page of that version answers without reading rows) and the list across every project
 * the caller can view (across.ts). Filters and sorts are model.ts WORK_ITEM_LIST's, the
 * extensions' (labels, custom fields) and the organization's dynamic ones a request names.
 */
import { sql, type SQL } from 'drizzle-orm'
import { listTotal, type CountTable } from '../../src/counts'
import type { Database, Executor } from '../../src/db'
import type { ListCache } from '../../src/http/list-cache'
import { andListQueries, listIdentity, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import { Page } from '../../src/http/answer'
import { pageMeta, type PageRequest } from '../../src/http/pagination'
import type { Actor } from '../../src/services/identity'
import { listPageQuery, listPageTextQuery, selectListPage, selectListPageText, type ListStatement } from '../../src/sql'
import { param, toQuery } from '../../src/statements'
import type { ProjectAccessService } from '../projects/api'
import type { WorkItemExtension } from './api'
import { acrossRequest, acrossStatement } from './across'
import { fromWorkItemText, WORK_ITEM_ACROSS_LIST, WORK_ITEM_LIST, workItemColumns, workItemJson, type WorkItemQuery, type WorkItemResource, type WorkItemTextRow } from './model'

/** What of a saved view (views.ts) a list applies: its filters, as query parameters, and its sort. */
export interface SavedView {
  filters: Record<string, string | string[]>
  sort: string | null
  name?: string
  /** When it last changed (ISO): dashboards built from it build again after a change. */
  updatedAt?: string
}

const viewInput = (view: SavedView): WorkItemQuery => ({ ...view.filters, ...(view.sort ? { sort: view.sort } : {}) }) as WorkItemQuery

/** The project's maintained counts per status (work_item_counts), moved by the unit of work of each change. */
export const WORK_ITEM_COUNTS: CountTable = { table: 'work_item_counts', scope: 'project_id', key: 'status', filter: 'status' }

/**
 * A list request (filters and sorts of `shape`) as its cache key and its statement, composed only
 * when the page is read (a cache miss): the page and its total, in one statement (the maintained
 * counts when the filters are at most `status`, else a count over the index of the filters).
 * `columns`: every column a work item shows, in the statement's organization.
 */
function listRead(columns: (organization: SQL) => SQL, shape: ListShape, actor: Actor, projectId: string, input: WorkItemQuery, request: PageRequest, view?: SavedView) {
  const scope = { project: param(projectId), organization: param(actor.organizationId) }
  const own = parseListQuery(shape, input, { scope, caller: actor.userId })
  // A saved view's filters and sort, with the request's parameters ANDed on top (its sort wins).
  const query = view ? andListQueries(parseListQuery(shape, viewInput(view), { scope, caller: actor.userId }), own, Boolean(input.sort)) : own
  const identity = listIdentity(shape, `${actor.organizationId} ${projectId}`, query)
  const after = readCursor(request, identity, query.order)
  const statement = (): ListStatement => {
    const conditions = [sql`w.project_id = ${scope.project}`, sql`w.organization_id = ${scope.organization}`, ...query.conditions]
    const total = listTotal(WORK_ITEM_COUNTS, query, { scope: scope.project, organization: scope.organization }, 'work_items w', conditions)
    return { columns: columns(scope.organization), from: 'work_items w', conditions, order: query.order, total, identity, after }
  }
  return { key: `work-items ${projectId} ${query.canonical} ${request.cursor ?? request.page} ${request.size}`, statement }
}

/**
 * The statement the list runs for this request on a cache miss (after its access check), without
 * running it: its text and the values of its `$n`; `builtBy` as the service's
 * `server.listPagesBuiltBy` says: 'database' the one answering the page's JSON, 'service' the one
 * answering its rows. The work items' own list: no extension's property, filter or sort (labels,
 * custom fields).
 */
export async function listStatement(actor: Actor, projectId: string, input: WorkItemQuery, request: PageRequest, builtBy: 'database' | 'service'): Promise<{ text: string; values: unknown[] }> {
  const statement = listRead(workItemColumns, WORK_ITEM_LIST, actor, projectId, input, request).statement()
  const { sql: text, params } = toQuery(builtBy === 'database' ? listPageTextQuery(statement, request, workItemJson([])) : listPageQuery(statement, request))
  return { text, values: params }
}

export interface WorkItemListDeps {
  db: Database
  lists: ListCache
  access: ProjectAccessService
  extensions: readonly WorkItemExtension[]
  /** Every column a work item shows, its own and the extensions', in the statement's `organization` (service.ts). */
  columns: (organization: SQL) => SQL
  /** The saved view a list request names (`view`), readable by the caller in the project; else 400 naming `view` (views.ts). */
  view(actor: Actor, projectId: string, viewId: string, executor?: Executor): Promise<SavedView>
}

export function createWorkItemLists({ db, lists, access, extensions, columns, view }: WorkItemListDeps) {
  /** A page of a list statement: written as JSON by the database, or read as rows and encoded here (`server.listPagesBuiltBy`). */
  const readPage = (statement: ListStatement, request: PageRequest) =>
    lists.builtByDatabase
      ? // The extensions register after this is made (each plugin's `extend`): their properties are read now.
        selectListPageText(db, statement, request, workItemJson(extensions.map((extension) => extension.property)))
      : selectListPage<WorkItemTextRow, WorkItemResource>(db, statement, request, fromWorkItemText)

  /** The filters and sorts of `base` for this request: its own, the extensions', and the organization's dynamic ones it names. */
  const listShape = async (base: ListShape, organizationId: string, input: WorkItemQuery, executor: Executor = db): Promise<ListShape> => {
    if (!extensions.length) return base
    const filters = { ...base.filters }
    const sorts = { ...base.sorts }
    const sort = typeof input.sort === 'string' ? input.sort : ''
    for (const extension of extensions) {
      Object.assign(filters, extension.filters)
      const dynamic = extension.dynamic
      if (!dynamic) continue
      const named = Object.keys(input).some((key) => key.startsWith(dynamic.prefix)) || sort.includes(dynamic.prefix)
      if (!named) continue
      const loaded = await dynamic.load(executor, organizationId)
      Object.assign(filters, loaded.filters)
      Object.assign(sorts, loaded.sorts)
    }
    return { ...base, filters, sorts }
  }

  return {
    /**
     * The work items of a project, filtered and sorted (model.ts WORK_ITEM_LIST; content order by
     * default), by page or cursor: a hot read. The access check reads the project's version; a
     * cached page of that version answers without reading rows, else one statement (listRead).
     */
    async list(actor: Actor, projectId: string, input: WorkItemQuery, request: PageRequest) {
      const { view: viewId, ...own } = input as WorkItemQuery & { view?: unknown }
      if (viewId === undefined || viewId === '') {
        const read = listRead(columns, await listShape(WORK_ITEM_LIST, actor.organizationId, own), actor, projectId, own, request)
        const { version } = await access.listAccess(actor, projectId)
        return lists.page(read.key, version, () => readPage(read.statement(), request))
      }
      // A saved view: the project's access first (404 before anything of the view is said), then the view (one more read).
      const { version } = await access.listAccess(actor, projectId)
      const saved = await view(actor, projectId, String(viewId))
      const read = listRead(columns, await listShape(WORK_ITEM_LIST, actor.organizationId, { ...viewInput(saved), ...own }), actor, projectId, own, request, saved)
      return lists.page(read.key, version, () => readPage(read.statement(), request))
    },

    /**
     * The work items of the project that a saved view shows the actor (without one: all of them),
     * as a subquery of rows `{id, status, priority, assigneeId, createdAt, startedAt, closedAt}` and
     * the extensions' properties (`labels`, `fields`), filtered exactly as the list filters them:
     * what dashboards measure. 404 when the actor cannot view the project, 400 naming `view` when
     * they cannot read the view there. The subquery names the organization and project, bound.
     */
    async matching(actor: Actor, projectId: string, viewId: string | null, executor: Executor = db): Promise<{ items: SQL; viewName: string | null; viewVersion: string | null }> {
      await access.requireProjectAccess(actor, projectId, 'viewer', executor)
      const saved = viewId ? await view(actor, projectId, viewId, executor) : undefined
      const input = saved ? viewInput(saved) : ({} as WorkItemQuery)
      const scope = { project: param(projectId), organization: param(actor.organizationId) }
      const query = parseListQuery(await listShape(WORK_ITEM_LIST, actor.organizationId, input, executor), input, { scope, caller: actor.userId })
      const extended = extensions.map((extension) => sql`, ${extension.column(scope.organization)} as ${sql.raw(`"${extension.property}"`)}`)
      const conditions = [sql`w.project_id = ${scope.project}`, sql`w.organization_id = ${scope.organization}`, ...query.conditions]
      const items = sql`(select w.id, w.status, w.priority, w.assignee_id as "assigneeId", w.created_at as "createdAt", w.started_at as "startedAt", w.closed_at as "closedAt"${sql.join(extended, sql``)}
        from work_items w where ${sql.join(conditions, sql` and `)})`
      return { items, viewName: saved?.name ?? null, viewVersion: saved?.updatedAt ?? null }
    },

    /** The project list's filters and sorts for these parameters (views.ts checks a view's filters with them). */
    shape: (organizationId: string, input: Record<string, unknown>) => listShape(WORK_ITEM_LIST, organizationId, input as WorkItemQuery),

    /**
     * The work items of every project the caller can view (`projectId`: of those among these
     * ids), filtered and sorted as a project's list is (model.ts WORK_ITEM_ACROSS_LIST; the most
     * recently changed first by default), by page or cursor. One statement reads the viewable
     * projects with the version of the cached pages (every one of those projects' versions, the
     * organization's, and which projects they are: a write to any of them, or a change of who sees
     * them, moves it); a cached page of that version answers without reading rows, else one
     * statement (across.ts).
     */
    async across(actor: Actor, input: WorkItemQuery, request: PageRequest) {
      const parsed = acrossRequest(await listShape(WORK_ITEM_ACROSS_LIST, actor.organizationId, input), actor, input, request)
      const viewable = await access.viewableProjects(actor, parsed.among)
      return lists.page(parsed.key, viewable.version, () =>
        // No project to read: the empty page, without a statement.
        viewable.count === 0
          ? Promise.resolve(new Page<WorkItemResource>([], parsed.after === undefined ? { ...pageMeta(request, 0), nextCursor: null } : { size: request.size, totalItems: 0, totalPages: 0, nextCursor: null }))
          : readPage(acrossStatement(parsed, actor, viewable, columns, request), request),
      )
    },
  }
}
