/**
 * Saved views of a project's work-item list: a name for filters (as the list's query parameters)
 * and a sort. A private view is its creator's alone (anyone else: 404); a shared one is read by
 * every viewer of the project and changed by its creator or a project owner. Any viewer creates
 * private views; sharing one needs editor level. The filters are checked as the list checks its
 * parameters (400 naming `filters.<parameter>`). `GET …/work-items?view=<id>` applies one
 * (lists.ts): a view the caller cannot read there is 400 naming `view`.
 */
import { sql } from 'drizzle-orm'
import { queryText, type Executor, type Transaction } from '../../src/db'
import { created, type Page } from '../../src/http/answer'
import { ApiError, badRequest, forbidden, notFound, type ErrorItem } from '../../src/http/errors'
import { listIdentity, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import type { IdempotentRequest } from '../../src/http/idempotency'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid, uuidv7 } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { isoFromText, selectListPage } from '../../src/sql'
import { ValidationFailure } from '../../src/validate'
import type { Writes } from '../../src/writes'
import type { ProjectAccessService } from '../projects/api'
import type { ViewObserver } from './api'

/** The most filters one view holds, and the most views one project holds. */
export const MAX_VIEW_FILTERS = 30
export const MAX_VIEWS_PER_PROJECT = 500

export type ViewFilters = Record<string, string | string[]>

export interface ViewResource {
  id: string
  projectId: string
  name: string
  filters: ViewFilters
  sort: string | null
  shared: boolean
  createdBy: string
  createdAt: string
  updatedAt: string
}

export interface ViewInput {
  name: string
  filters: ViewFilters
  sort?: string | null
  shared?: boolean
}

interface ViewRow extends Omit<ViewResource, 'createdAt' | 'updatedAt'> {
  createdAt: string
  updatedAt: string
}

const toView = (row: ViewRow): ViewResource => ({ ...row, sort: row.sort ?? null, createdAt: isoFromText(row.createdAt), updatedAt: isoFromText(row.updatedAt) })

const COLUMNS = `v.id, v.project_id as "projectId", v.name, v.filters, v.sort, v.shared, v.created_by as "createdBy", v.created_at::text as "createdAt", v.updated_at::text as "updatedAt"`
/** The same in RETURNING, the times uncast (the drivers give them as text): Citus allows no cast to text, which is stable, there. */
const RETURNED = `v.id, v.project_id as "projectId", v.name, v.filters, v.sort, v.shared, v.created_by as "createdBy", v.created_at as "createdAt", v.updated_at as "updatedAt"`

/** $1 organization, $2 project, $3 view, $4 caller: the view, when the caller may read it (theirs, or shared). */
const READABLE = `select ${COLUMNS} from work_item_views v
  where v.organization_id = $1 and v.project_id = $2 and v.id = $3 and (v.shared or v.created_by = $4)`

export const VIEW_LIST: ListShape = {
  name: 'work-item-views',
  filters: { shared: { type: 'enum', values: ['true', 'false'], column: sql`(v.shared::text)`, description: 'Only shared (`true`) or private (`false`) views.' } },
  sorts: { name: { column: 'v.name', cast: 'text' }, createdAt: { column: 'v.created_at', cast: 'timestamptz' } },
  defaultOrder: ['name'],
  tiebreaker: { column: 'v.id', cast: 'uuid' },
}

export interface ViewDeps {
  writes: Writes
  access: ProjectAccessService
  /** The work-item list's filters and sorts for these parameters (the extensions' and the organization's dynamic ones they name). */
  listShape(organizationId: string, input: Record<string, unknown>): Promise<ListShape>
  /** Told of every change or deletion of a view, in its transaction (WorkItemsFace.onViewChanged). */
  observers: readonly ViewObserver[]
}

export function createViews({ writes, access, listShape, observers }: ViewDeps) {
  const db = writes.db

  /**
   * The filters and sort, checked as the list checks its parameters, the errors named
   * `filters.<parameter>` (and `sort`).
   */
  async function check(actor: Actor, filters: ViewFilters, sort: string | null | undefined): Promise<void> {
    const errors: ErrorItem[] = []
    const keys = Object.keys(filters)
    if (keys.length > MAX_VIEW_FILTERS) throw badRequest(`At most ${MAX_VIEW_FILTERS} filters.`, 'filters')
    for (const key of ['sort', 'page', 'size', 'cursor', 'view']) if (key in filters) errors.push({ code: 'BAD_REQUEST', field: `filters.${key}`, message: `${key} is not a filter${key === 'sort' ? ': give it as the view\'s `sort`' : ''}.` })
    if (errors.length) throw new ValidationFailure(errors)
    const input = { ...filters, ...(sort ? { sort } : {}) }
    try {
      parseListQuery(await listShape(actor.organizationId, input), input, { ignore: [], caller: actor.userId })
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      throw new ValidationFailure(error.toItems().map((item) => ({ ...item, field: item.field === 'sort' ? 'sort' : `filters.${item.field ?? ''}` })))
    }
  }

  /** The view as the caller may read it in the project (which they can view), or 404. */
  async function readable(executor: Executor, actor: Actor, projectId: string, viewId: string): Promise<ViewResource> {
    if (!isUuid(viewId)) throw notFound('No such view.')
    const [row] = await queryText<ViewRow>(executor, READABLE, [actor.organizationId, projectId, viewId, actor.userId])
    if (!row) throw notFound('No such view.')
    return toView(row)
  }

  /** The view, locked, for a change by its creator or (shared) a project owner; 404 when unreadable, 403 otherwise. */
  async function changeable(executor: Executor, actor: Actor, projectId: string, viewId: string) {
    const { level } = await access.requireProjectAccess(actor, projectId, 'viewer', executor)
    const view = await readable(executor, actor, projectId, viewId)
    await queryText(executor, 'select 1 from work_item_views where organization_id = $1 and id = $2 for update', [actor.organizationId, view.id])
    if (view.createdBy !== actor.userId && level !== 'owner') throw forbidden("Only the view's creator or a project owner changes a shared view.")
    return { view, level }
  }

  const requireShareable = (level: string) => {
    if (level === 'viewer') throw forbidden('Sharing a view needs editor access to the project.')
  }

  return {
    /** The view a list request names (`view`), or 400 naming `view`: unknown, another user's private view, or of another project. */
    async resolve(actor: Actor, projectId: string, viewId: string, executor: Executor = db): Promise<ViewResource> {
      return readable(executor, actor, projectId, viewId).catch((error) => {
        throw error instanceof ApiError && error.status === 404 ? badRequest('No view with this id that you can read in this project.', 'view') : error
      })
    },

    async get(actor: Actor, projectId: string, viewId: string): Promise<ViewResource> {
      await access.requireProjectAccess(actor, projectId, 'viewer')
      return readable(db, actor, projectId, viewId)
    },

    /** The caller's private views and the project's shared ones, by name (or `sort`), by page or cursor. */
    async list(actor: Actor, projectId: string, query: Record<string, unknown>, request: PageRequest): Promise<Page<ViewResource>> {
      const parsed = parseListQuery(VIEW_LIST, query)
      await access.requireProjectAccess(actor, projectId, 'viewer')
      const identity = listIdentity(VIEW_LIST, `${actor.organizationId} ${projectId} ${actor.userId}`, parsed)
      const conditions = [sql`v.organization_id = ${actor.organizationId}`, sql`v.project_id = ${projectId}`, sql`(v.shared or v.created_by = ${actor.userId})`, ...parsed.conditions]
      return selectListPage<ViewRow, ViewResource>(
        db,
        {
          columns: sql.raw(COLUMNS),
          from: 'work_item_views v',
          conditions,
          order: parsed.order,
          total: sql`select count(*) from work_item_views v where ${sql.join(conditions, sql` and `)}`,
          identity,
          after: readCursor(request, identity, parsed.order),
        },
        request,
        toView,
      )
    },

    /** Saves a view; an Idempotency-Key (`request`) replays the first answer. */
    async create(actor: Actor, projectId: string, input: ViewInput, request?: IdempotentRequest) {
      await check(actor, input.filters, input.sort)
      return writes.change(
        actor,
        null,
        async ({ tx, audit }) => {
          const { level } = await access.requireProjectAccess(actor, projectId, 'viewer', tx)
          if (input.shared) requireShareable(level)
          const [{ n } = { n: 0 }] = await queryText<{ n: number }>(tx, 'select count(*)::int as n from work_item_views where organization_id = $1 and project_id = $2', [actor.organizationId, projectId])
          if (n >= MAX_VIEWS_PER_PROJECT) throw badRequest(`A project holds at most ${MAX_VIEWS_PER_PROJECT} views.`, 'name')
          const [row] = await queryText<ViewRow>(
            tx,
            `insert into work_item_views as v (id, organization_id, project_id, name, filters, sort, shared, created_by)
              values ($1, $2, $3, $4, $5::jsonb, $6, $7, $8) returning ${RETURNED}`,
            [uuidv7(), actor.organizationId, projectId, input.name, JSON.stringify(input.filters), input.sort ?? null, input.shared ?? false, actor.userId],
          )
          const view = toView(row!)
          await audit({ action: 'work_item_view.created', resourceType: 'work_item_view', resourceId: view.id, projectId, changes: { after: { ...view } } })
          return created(view, `/api/v1/projects/${projectId}/views/${view.id}`)
        },
        request,
      )
    },

    /** Changes what the body names (`filters` replaces them). */
    async update(actor: Actor, projectId: string, viewId: string, patch: Partial<ViewInput>) {
      return writes.change(actor, null, async ({ tx, audit }) => {
        const { view, level } = await changeable(tx, actor, projectId, viewId)
        const next = { name: patch.name ?? view.name, filters: patch.filters ?? view.filters, sort: patch.sort === undefined ? view.sort : patch.sort, shared: patch.shared ?? view.shared }
        if (next.shared && !view.shared) requireShareable(level)
        if (patch.filters !== undefined || patch.sort !== undefined) await check(actor, next.filters, next.sort)
        const [row] = await queryText<ViewRow>(
          tx,
          `update work_item_views v set name = $3, filters = $4::jsonb, sort = $5, shared = $6, updated_at = $7::timestamptz
            where v.organization_id = $1 and v.id = $2 returning ${RETURNED}`,
          [actor.organizationId, view.id, next.name, JSON.stringify(next.filters), next.sort, next.shared, new Date().toISOString()],
        )
        const after = toView(row!)
        await audit({ action: 'work_item_view.updated', resourceType: 'work_item_view', resourceId: view.id, projectId, changes: { before: { ...view }, after: { ...after } } })
        for (const observe of observers) await observe(tx as Transaction, actor.organizationId, projectId, view.id)
        return after
      })
    },

    async remove(actor: Actor, projectId: string, viewId: string) {
      return writes.change(actor, null, async ({ tx, audit }) => {
        const { view } = await changeable(tx, actor, projectId, viewId)
        await queryText(tx, 'delete from work_item_views where organization_id = $1 and id = $2', [actor.organizationId, view.id])
        await audit({ action: 'work_item_view.deleted', resourceType: 'work_item_view', resourceId: view.id, projectId, changes: { before: { ...view } } })
        for (const observe of observers) await observe(tx as Transaction, actor.organizationId, projectId, view.id)
        return { id: view.id }
      })
    },
  }
}

export type Views = ReturnType<typeof createViews>
