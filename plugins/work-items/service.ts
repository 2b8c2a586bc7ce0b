/**
 * Work items of a project: viewers read, editors write; numbers come from a per-project counter.
 * Bound once (`createWorkItems`); every function returns the resource in its API shape.
 */
import { and, eq, inArray, sql, type SQL } from 'drizzle-orm'
import { changedFields } from '../../src/audit'
import { queryRows, queryText, type Database, type Executor, type Transaction } from '../../src/db'
import { checkIfMatch, created } from '../../src/http/answer'
import type { IdempotentRequest } from '../../src/http/idempotency'
import { ApiError, badRequest, conflict, notFound, requireReference, type ErrorItem } from '../../src/http/errors'
import type { ListCache } from '../../src/http/list-cache'
import { isUuid } from '../../src/ids'
import { userOf } from '../../src/http/models'
import type { Actor } from '../../src/services/identity'
import { nextUpdatedAt } from '../../src/sql'
import { compileStatement, runStatement, type CompiledStatement } from '../../src/statements'
import type { Write, Writes } from '../../src/writes'
import type { UserDirectory } from '../auth/api'
import { lineProblem, assertLevel, readAfter, type ExportSection, type ImportSection, type ProjectAccessService } from '../projects/api'
import type { ExtendedItem, ExtensionChange, ViewObserver, WorkItemExtension, WorkItemsFace } from './api'
import { fromWorkItemText, WorkItemInput, workItemColumns, workItemModels, type WorkItemPatch, type WorkItemResource, type WorkItemTextRow } from './model'
import { createWorkItemLists, WORK_ITEM_COUNTS } from './lists'
import { createViews } from './views'
import { workItems, type WorkItemRow } from './schema'

const CLOSED: ReadonlySet<string> = new Set(['done', 'cancelled'])

/**
 * The times a move to `status` sets (`current`: the row before, null for a creation): `started_at`
 * when it first enters `in_progress`, `closed_at` when it enters `done` or `cancelled` from an open
 * status (a creation as `done` closes it at once), cleared when it opens again. Dashboards' daily
 * series and cycle time read them (work_item_documents).
 */
function statusTimes(current: Pick<WorkItemRow, 'status' | 'startedAt'> | null, status: string): { startedAt?: SQL<Date>; closedAt?: SQL<Date> | null } {
  const times: { startedAt?: SQL<Date>; closedAt?: SQL<Date> | null } = {}
  if (status === current?.status) return times
  if (status === 'in_progress' && !current?.startedAt) times.startedAt = sql<Date>`now()`
  if (CLOSED.has(status) && !(current && CLOSED.has(current.status))) times.closedAt = sql<Date>`now()`
  if (!CLOSED.has(status) && current && CLOSED.has(current.status)) times.closedAt = null
  return times
}

/** The organization's work item `id`, as a condition (its primary key). */
const theWorkItem = (organizationId: string, id: string) => and(eq(workItems.id, id), eq(workItems.organizationId, organizationId))

/** The work item, if it is in the organization's project; 404 otherwise. */
/**
 * `lock`: `update` for a delete; `no key update` for a change, which leaves the key alone, so rows
 * being added that point at the item (an entry, its count, a label) do not wait for it.
 */
async function findWorkItem(executor: Executor, organizationId: string, projectId: string, workItemId: string, lock?: 'update' | 'no key update'): Promise<WorkItemRow> {
  if (!isUuid(workItemId)) throw notFound('No such work item.')
  const query = executor
    .select()
    .from(workItems)
    .where(and(theWorkItem(organizationId, workItemId), eq(workItems.projectId, projectId)))
  const [row] = lock ? await query.for(lock) : await query
  if (!row) throw notFound('No such work item.')
  return row
}

/** Every column a work item shows, its own and the extensions', in the statement's `organization`. */
export const columnsOf = (extensions: readonly WorkItemExtension[], organization: SQL) =>
  sql.join([workItemColumns(organization), ...extensions.map((extension) => sql`${extension.column(organization)} as ${sql.raw(`"${extension.property}"`)}`)], sql`,\n  `)

/** The statement the list runs for a request on a cache miss (lists.ts), for api.ts. */
export { listStatement } from './lists'

/** The plugin's public face (api.ts) without `extend`: ordering and lookups for dependents' transactions. */
export const workItemsFace: Omit<WorkItemsFace, 'extend' | 'filterable' | 'locate' | 'matching' | 'onViewChanged'> = {
  async lockOrdering(tx, organizationId, projectId, advance = false) {
    const [row] = await queryText<{ lastNumber: number }>(
      tx,
      `insert into work_item_counters (project_id, organization_id, last_number) values ($1, $3, $2)
         on conflict (project_id, organization_id) do update set last_number = work_item_counters.last_number + $2
         returning last_number as "lastNumber"`,
      [projectId, advance === true ? 1 : advance === false ? 0 : advance, organizationId],
    )
    return row!.lastNumber
  },
  async writeOrder(tx, organizationId, ids) {
    if (!ids.length) return
    await queryText(
      tx,
      `update work_items t set position = u.position - 1 from unnest($1::uuid[]) with ordinality as u(id, position)
        where t.id = u.id and t.organization_id = $2 and t.position <> u.position - 1`,
      [ids, organizationId],
    )
  },
  async projectOf(executor, organizationId, workItemId, share = false) {
    if (!isUuid(workItemId)) return undefined
    const [row] = await queryText<{ projectId: string }>(executor, `select project_id as "projectId" from work_items where id = $1 and organization_id = $2${share ? ' for key share' : ''}`, [
      workItemId,
      organizationId,
    ])
    return row?.projectId
  },
  async inProject(executor, organizationId, projectId, ids, share = false) {
    const locked = share ? ' order by id for key share' : ''
    const rows = await queryText<{ id: string }>(executor, `select id from work_items where project_id = $1 and id = any($2::uuid[]) and organization_id = $3${locked}`, [
      projectId,
      ids.filter(isUuid),
      organizationId,
    ])
    return rows.map((row) => row.id)
  },
}

export interface WorkItemDeps {
  db: Database
  lists: ListCache
  writes: Writes
  access: ProjectAccessService
  users: UserDirectory
  /** The properties other plugins add (labels, custom fields), registered during their setup. */
  extensions: readonly WorkItemExtension[]
  /** Told of saved views changed or deleted (WorkItemsFace.onViewChanged), registered during setups. */
  viewObservers: readonly ViewObserver[]
}

/** At most this many work items in one bulk request. */
export const BULK_MAX = 100
/** An import writes its work items in batches of this many rows (one insert and one `writeMany` of each extension a batch). */
const IMPORT_BATCH = 1000
/** The highest number or position an import keeps (an integer column holds 2³¹ − 1; the counter must go on after it): else renumbered in file order. */
const IMPORT_NUMBER_MAX = 1_000_000_000

/** A new work item's row (a create, a bulk create, an import): its own fields, its number and position; created by the actor. */
const newRow = (actor: Actor, projectId: string, own: WorkItemInput, number: number, position: number) => ({
  organizationId: actor.organizationId,
  projectId,
  number,
  title: own.title,
  description: own.description ?? null,
  status: own.status ?? 'todo',
  priority: own.priority ?? 0,
  assigneeId: own.assigneeId ?? null,
  dueDate: own.dueDate ?? null,
  position,
  createdBy: actor.userId,
  ...statusTimes(null, own.status ?? 'todo'),
})

/** A bulk request's failures, each naming its item (`items[3].title`): one status when they share it, else 400 (every code BAD_REQUEST: a code fits its answer's status). */
export class BulkFailure extends ApiError {
  constructor(readonly items: ErrorItem[], status: number) {
    super(status, items[0]!.code, items[0]!.message, items[0]!.field)
  }
  override toItems(): ErrorItem[] {
    return this.items
  }
}

/**
 * The failures of a bulk request's items, each named by its item (`items[3].title`), in item order;
 * `throwIfAny` answers them all at once (one status when they share it, else 400 with every code
 * BAD_REQUEST: a code fits its answer's status).
 */
class BulkErrors {
  private readonly failures: { index: number; item: ErrorItem }[] = []
  private readonly statuses = new Set<number>()

  add(index: number, error: ApiError) {
    this.statuses.add(error.status)
    for (const failure of error.toItems())
      this.failures.push({ index, item: { ...failure, field: `items[${index}]${failure.field ? (failure.field.startsWith('[') ? '' : '.') + failure.field : ''}` } })
  }

  /** Each failure with its item's index, its field without the `items[i]` prefix. */
  each(visit: (index: number, item: ErrorItem) => void) {
    for (const { index, item } of this.failures) visit(index, { ...item, field: item.field?.replace(/^items\[\d+\]\.?/, '') || undefined })
  }

  /** Runs `work`, keeping an API error as the item's failure; other errors go on. */
  async guard<T>(index: number, work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await work()
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      this.add(index, error)
      return undefined
    }
  }

  throwIfAny() {
    if (!this.failures.length) return
    const items = this.failures
      .map((failure, order) => ({ ...failure, order }))
      .sort((a, b) => a.index - b.index || a.order - b.order)
      .slice(0, 100)
      .map((failure) => failure.item)
    if (this.statuses.size === 1) throw new BulkFailure(items, [...this.statuses][0]!)
    throw new BulkFailure(items.map((failure) => ({ ...failure, code: 'BAD_REQUEST' })), 400)
  }
}

/** A bulk update's item: the work item's id, its expected ETag, and the changes. */
export type BulkPatch = WorkItemPatch & { id: string; ifMatch?: string } & Record<string, unknown>

export function createWorkItems({ db, lists, writes, access, users, extensions, viewObservers }: WorkItemDeps) {
  // Saved views (views.ts) are checked with the list's filters, and a list applies one: each names the other, bound once.
  const workItemLists = createWorkItemLists({ db, lists, access, extensions, columns: (organization) => columnsOf(extensions, organization), view: (actor, projectId, viewId, executor) => views.resolve(actor, projectId, viewId, executor) })
  const views = createViews({ writes, access, listShape: workItemLists.shape, observers: viewObservers })
  const checkAssignee = async (executor: Executor, actor: Actor, assigneeId: string | null | undefined) => {
    if (assigneeId) await users.requireActiveUser(executor, actor.organizationId, assigneeId, 'assigneeId')
  }

  /** The statement reading one work item, compiled at its first use (every extension is registered by then). */
  let readStatement: CompiledStatement | undefined
  const organization = sql.placeholder('organization')
  const READ_ITEM = () =>
    (readStatement ??= compileStatement(
      sql`select ${columnsOf(extensions, sql`${organization}`)} from work_items w where w.id = ${sql.placeholder('id')} and w.organization_id = ${organization} and w.project_id = ${sql.placeholder('project')}`,
    ))

  let readManyStatement: CompiledStatement | undefined
  const READ_ITEMS = () =>
    (readManyStatement ??= compileStatement(
      sql`select ${columnsOf(extensions, sql`${organization}`)} from work_items w where w.id = any(${sql.placeholder('ids')}::uuid[]) and w.organization_id = ${organization} and w.project_id = ${sql.placeholder('project')}`,
    ))

  /** The work item as API v1 shows it, extensions included (after a write, in its transaction). */
  const readItem = async (executor: Executor, organizationId: string, projectId: string, workItemId: string): Promise<WorkItemResource> => {
    const [row] = await runStatement<WorkItemTextRow>(executor, READ_ITEM(), { id: workItemId, organization: organizationId, project: projectId })
    if (!row) throw notFound('No such work item.')
    return fromWorkItemText(row)
  }

  /** The values a body gives the extensions' properties, apart from the work item's own fields (`assigneeId: "me"`: the caller). */
  const split = <T extends Record<string, unknown>>(actor: Actor, body: T) => {
    const own: Record<string, unknown> = { ...body }
    if (own.assigneeId !== undefined) own.assigneeId = userOf(actor, own.assigneeId as string | null)
    const extended: Record<string, unknown> = {}
    for (const { property } of extensions) {
      extended[property] = own[property]
      delete own[property]
    }
    return { own: own as T, extended }
  }

  /** Creates one work item in the unit of work `w` (the caller checked editor access). */
  async function createIn({ tx, audit, emit, count }: Write, actor: Actor, projectId: string, input: WorkItemInput): Promise<WorkItemResource> {
    const { own, extended } = split(actor, input)
    await checkAssignee(tx, actor, own.assigneeId)
    const number = await workItemsFace.lockOrdering(tx as Transaction, actor.organizationId, projectId, true)
    const [{ next }] = (await queryText<{ next: number }>(tx, 'select coalesce(max(position) + 1, 0)::int as next from work_items where project_id = $1 and organization_id = $2', [
      projectId,
      actor.organizationId,
    ])) as [{ next: number }]
    const [row] = await tx
      .insert(workItems)
      .values(newRow(actor, projectId, own, number, next))
      .returning()
    const after: Record<string, unknown> = { number, title: row!.title, status: row!.status, priority: row!.priority, assigneeId: row!.assigneeId, dueDate: row!.dueDate }
    for (const extension of extensions) {
      const change = await extension.write(tx as Transaction, actor, { id: row!.id, projectId }, extended[extension.property], true)
      if (change) after[extension.property] = change.next
    }
    count(WORK_ITEM_COUNTS, projectId, { [row!.status]: 1 })
    await audit({ action: 'work_item.created', resourceType: 'work_item', resourceId: row!.id, projectId, changes: { after } })
    const item = await readItem(tx, actor.organizationId, projectId, row!.id)
    await emit({ type: 'work_item.created', projectId, data: item })
    return item
  }

  /** Updates one locked work item in the unit of work `w` (the caller checked editor access and If-Match). */
  async function updateIn({ tx, audit, emit, count }: Write, actor: Actor, projectId: string, current: WorkItemRow, patch: WorkItemPatch): Promise<WorkItemResource> {
    const { own, extended } = split(actor, patch as Record<string, unknown>)
    await checkAssignee(tx, actor, own.assigneeId as string | null | undefined)
    const changes = changedFields(current, own as WorkItemPatch) ?? { before: {}, after: {} }
    for (const extension of extensions) {
      if (extended[extension.property] === undefined) continue
      const change = await extension.write(tx as Transaction, actor, { id: current.id, projectId }, extended[extension.property], false)
      if (!change) continue
      changes.before![extension.property] = change.previous
      changes.after![extension.property] = change.next
    }
    if (!Object.keys(changes.after!).length) return readItem(tx, actor.organizationId, projectId, current.id)
    const [row] = await tx
      .update(workItems)
      .set({ ...(own as WorkItemPatch), ...statusTimes(current, (own as WorkItemPatch).status ?? current.status), updatedAt: nextUpdatedAt(current.updatedAt) })
      .where(theWorkItem(actor.organizationId, current.id))
      .returning({ status: workItems.status })
    if (row!.status !== current.status) count(WORK_ITEM_COUNTS, projectId, { [current.status]: -1, [row!.status]: 1 })
    await audit({ action: 'work_item.updated', resourceType: 'work_item', resourceId: current.id, projectId, changes })
    const updated = await readItem(tx, actor.organizationId, projectId, current.id)
    await emit({ type: 'work_item.updated', projectId, data: updated, previous: changes.before })
    return updated
  }

  /**
   * The extensions' values of a batch of items written (`writeMany` where an extension has it),
   * each item's failures kept in `errors`; the changes by item index, per property.
   */
  async function writeExtensions(tx: Transaction, actor: Actor, entries: readonly { item: ExtendedItem; extended: Record<string, unknown> }[], creating: boolean, errors: BulkErrors) {
    const changes = entries.map(() => new Map<string, ExtensionChange>())
    for (const extension of extensions) {
      const batch = entries.map(({ item, extended }) => ({ item, value: extended[extension.property] }))
      // A change writes only the items that name the property; a creation calls every item's (required values).
      const named = creating ? batch.map((_, index) => index) : batch.flatMap((entry, index) => (entry.value === undefined ? [] : [index]))
      if (!named.length) continue
      if (extension.writeMany) {
        const outcomes = await extension.writeMany(tx, actor, named.map((index) => batch[index]!), creating)
        for (const [at, outcome] of outcomes.entries()) {
          if (outcome instanceof ApiError) errors.add(named[at]!, outcome)
          else if (outcome) changes[named[at]!]!.set(extension.property, outcome)
        }
      } else
        for (const index of named) {
          const outcome = await errors.guard(index, () => extension.write(tx, actor, batch[index]!.item, batch[index]!.value, creating))
          if (outcome) changes[index]!.set(extension.property, outcome)
        }
    }
    return changes
  }

  /** The work items as API v1 shows them, extensions included, in the order of `ids` (after a batch's writes, in its transaction). */
  const readItems = async (executor: Executor, organizationId: string, projectId: string, ids: readonly string[]): Promise<WorkItemResource[]> => {
    const rows = await runStatement<WorkItemTextRow & { id: string }>(executor, READ_ITEMS(), { ids, organization: organizationId, project: projectId })
    const byId = new Map(rows.map((row) => [row.id, fromWorkItemText(row)]))
    return ids.map((id) => {
      const item = byId.get(id)
      if (!item) throw notFound('No such work item.')
      return item
    })
  }

  /**
   * Creates a batch of work items in the unit of work `w` (the caller checked editor access), set
   * based: their assignees checked once each, their numbers reserved at once, one insert of every
   * row, the extensions' values (one `writeMany` each), the counts moved once, the audit records
   * and the events one statement each, the items read back in one. A failing item is named with the
   * others (`items[3].labels[0]`) and nothing is written.
   */
  async function createManyIn(w: Write, actor: Actor, projectId: string, inputs: readonly WorkItemInput[]): Promise<WorkItemResource[]> {
    const { tx } = w
    const errors = new BulkErrors()
    const parts = inputs.map((input) => split(actor, input))
    const refusedAssignee = new Set<string>()
    for (const assignee of new Set(parts.map((part) => part.own.assigneeId).filter((id): id is string => typeof id === 'string'))) {
      try {
        await checkAssignee(tx, actor, assignee)
      } catch (error) {
        if (!(error instanceof ApiError)) throw error
        refusedAssignee.add(assignee)
        for (const [index, part] of parts.entries()) if (part.own.assigneeId === assignee) errors.add(index, error)
      }
    }
    const last = await workItemsFace.lockOrdering(tx as Transaction, actor.organizationId, projectId, inputs.length)
    const first = last - inputs.length + 1
    const [{ next }] = (await queryText<{ next: number }>(tx, 'select coalesce(max(position) + 1, 0)::int as next from work_items where project_id = $1 and organization_id = $2', [
      projectId,
      actor.organizationId,
    ])) as [{ next: number }]
    const inserted = await tx
      .insert(workItems)
      .values(
        // A refused assignee is named in the answer; its row (rolled back) is written without it.
        parts.map(({ own }, index) =>
          newRow(actor, projectId, { ...own, assigneeId: own.assigneeId && !refusedAssignee.has(own.assigneeId) ? own.assigneeId : null }, first + index, next + index),
        ),
      )
      .returning()
    const byNumber = new Map(inserted.map((row) => [row.number, row]))
    const rows = parts.map((_, index) => byNumber.get(first + index)!)
    const extended = await writeExtensions(tx as Transaction, actor, rows.map((row, index) => ({ item: { id: row.id, projectId }, extended: parts[index]!.extended })), true, errors)
    errors.throwIfAny()
    const statuses: Record<string, number> = {}
    for (const row of rows) statuses[row.status] = (statuses[row.status] ?? 0) + 1
    w.count(WORK_ITEM_COUNTS, projectId, statuses)
    await w.auditMany(
      rows.map((row, index) => {
        const after: Record<string, unknown> = { number: row.number, title: row.title, status: row.status, priority: row.priority, assigneeId: row.assigneeId, dueDate: row.dueDate }
        for (const [property, change] of extended[index]!) after[property] = change.next
        return { action: 'work_item.created', resourceType: 'work_item', resourceId: row.id, projectId, changes: { after } }
      }),
    )
    const items = await readItems(tx, actor.organizationId, projectId, rows.map((row) => row.id))
    await w.emitMany(items.map((item) => ({ type: 'work_item.created', projectId, data: item })))
    return items
  }

  /**
   * Changes a batch of locked work items (`locked`, by id) in the unit of work `w` (the caller
   * checked editor access), set based: each item's id, ETag and own changes checked in memory, its
   * assignees once each, the extensions' values (one `writeMany` each), every changed row in one
   * UPDATE, the counts moved once, the audit records and the events one statement each, the items
   * read back in one. A failing item is named with the others and nothing is written.
   */
  async function updateManyIn(w: Write, actor: Actor, projectId: string, items: readonly BulkPatch[], locked: ReadonlyMap<string, WorkItemRow>, now: string | undefined): Promise<WorkItemResource[]> {
    const { tx } = w
    const errors = new BulkErrors()
    const seen = new Set<string>()
    const planned: { index: number; current: WorkItemRow; own: WorkItemPatch; extended: Record<string, unknown> }[] = []
    for (const [index, { id, ifMatch, ...patch }] of items.entries()) {
      await errors.guard(index, async () => {
        // An item's id refers to a work item of the path's project: an unknown one, or another project's, is 400.
        const current = requireReference(isUuid(id) ? locked.get(id.toLowerCase()) : undefined, 'id', 'No work item with this id in the project.')
        if (seen.has(current.id)) throw badRequest('This work item is named by an earlier item of the request.', 'id')
        seen.add(current.id)
        checkIfMatch(ifMatch, current.updatedAt)
        const { own, extended } = split(actor, patch as Record<string, unknown>)
        planned.push({ index, current, own: own as WorkItemPatch, extended })
      })
    }
    for (const assignee of new Set(planned.map((plan) => plan.own.assigneeId).filter((id): id is string => typeof id === 'string'))) {
      try {
        await checkAssignee(tx, actor, assignee)
      } catch (error) {
        if (!(error instanceof ApiError)) throw error
        for (const plan of planned) if (plan.own.assigneeId === assignee) errors.add(plan.index, error)
      }
    }
    const extensionChanges = await writeExtensions(tx as Transaction, actor, planned.map((plan) => ({ item: { id: plan.current.id, projectId }, extended: plan.extended })), false, errors)
    errors.throwIfAny()
    const changed = planned.flatMap((plan, at) => {
      const changes = changedFields(plan.current, plan.own) ?? { before: {}, after: {} }
      for (const [property, change] of extensionChanges[at]!) {
        changes.before![property] = change.previous
        changes.after![property] = change.next
      }
      return Object.keys(changes.after!).length ? [{ ...plan, changes }] : []
    })
    if (changed.length) {
      // One UPDATE of every changed row: each row's own columns where given (a flag per column,
      // as null is a value), its status times as statusTimes decides them, its updated_at moved on.
      const columns = ['title', 'description', 'status', 'priority', 'assignee_id', 'due_date'] as const
      const keys = ['title', 'description', 'status', 'priority', 'assigneeId', 'dueDate'] as const
      const types = ['text', 'text', 'text', 'int', 'uuid', 'date'] as const
      // updated_at: the transaction's time, or 1 ms past the row's (ETags always move), as nextUpdatedAt.
      const width = 4 + columns.length * 2
      const parameters: unknown[] = [actor.organizationId, now]
      const rows = changed.map(({ current, own }, row) => {
        const times = statusTimes(current, own.status ?? current.status)
        parameters.push(current.id, times.startedAt ? 'now' : 'keep', times.closedAt === undefined ? 'keep' : times.closedAt === null ? 'clear' : 'now', new Date(current.updatedAt.getTime() + 1).toISOString())
        for (const key of keys) parameters.push(own[key] !== undefined, own[key] ?? null)
        const at = (column: number) => `$${row * width + column + 3}`
        return `(${[`${at(0)}::uuid`, `${at(1)}::text`, `${at(2)}::text`, `${at(3)}::timestamptz`, ...columns.flatMap((_, c) => [`${at(4 + c * 2)}::boolean`, `${at(5 + c * 2)}::${types[c]}`])].join(', ')})`
      })
      await queryText(
        tx,
        `update work_items t set ${columns.map((column) => `${column} = case when v.set_${column} then v.${column} else t.${column} end`).join(', ')},
           started_at = case v.started when 'now' then $2::timestamptz else t.started_at end,
           closed_at = case v.closed when 'now' then $2::timestamptz when 'clear' then null else t.closed_at end,
           updated_at = greatest($2::timestamptz, v.floor)
         from (values ${rows.join(', ')}) v(id, started, closed, floor, ${columns.map((column) => `set_${column}, ${column}`).join(', ')})
         where t.id = v.id and t.organization_id = $1 and t.project_id = $${parameters.length + 1}`,
        [...parameters, projectId],
      )
      const moves: Record<string, number> = {}
      for (const { current, own } of changed)
        if (own.status !== undefined && own.status !== current.status) {
          moves[current.status] = (moves[current.status] ?? 0) - 1
          moves[own.status] = (moves[own.status] ?? 0) + 1
        }
      w.count(WORK_ITEM_COUNTS, projectId, moves)
      await w.auditMany(changed.map(({ current, changes }) => ({ action: 'work_item.updated', resourceType: 'work_item', resourceId: current.id, projectId, changes })))
    }
    const updated = await readItems(tx, actor.organizationId, projectId, planned.map((plan) => plan.current.id))
    const byId = new Map(updated.map((item) => [item.id, item]))
    await w.emitMany(changed.map(({ current, changes }) => ({ type: 'work_item.updated', projectId, data: byId.get(current.id)!, previous: changes.before })))
    return updated
  }

  /** The project's work items in its export, by number, each as API v1 shows it (extensions included). */
  const exportSection: ExportSection = {
    type: 'work_item',
    order: 40,
    scope: 'work_items:read',
    read: (tx, organizationId, projectId, after, limit) =>
      readAfter(
        () =>
          queryRows<WorkItemTextRow & { after: string }>(
            tx,
            sql`select ${columnsOf(extensions, sql`${organizationId}`)}, w.number::text as after from work_items w
                 where w.organization_id = ${organizationId} and w.project_id = ${projectId} ${after === null ? sql`` : sql`and w.number > ${Number(after)}`}
                 order by w.number limit ${limit}`,
          ),
        limit,
        ({ after: _, ...row }) => fromWorkItemText(row),
      ),
  }

  /**
   * The project's work items from an import's `work_item` lines, into a project without any (409
   * otherwise: checked under its ordering lock, which every creation takes), in batches of
   * IMPORT_BATCH rows: each line's number kept when every line has a distinct one (else numbered in
   * file order after the last), its position kept, its assignee matched among the organization's
   * active users (by id, email or username; else unassigned and noted), the extensions' values
   * through their `imported` and `writeMany`, the counts moved once. No audit records or events.
   */
  const importSection: ImportSection = {
    type: 'work_item',
    order: 40,
    scope: 'work_items:write',
    async write(w, context) {
      const { tx } = w
      const { actor, projectId } = context
      const last = await workItemsFace.lockOrdering(tx as Transaction, actor.organizationId, projectId, false)
      const [{ taken }] = (await queryText<{ taken: boolean }>(tx, 'select exists (select 1 from work_items where organization_id = $1 and project_id = $2) as taken', [
        actor.organizationId,
        projectId,
      ])) as [{ taken: boolean }]
      if (taken) throw conflict('The project already has work items: an import goes into a project without any.')
      const lines = context.lines('work_item')
      if (!lines.length) return 0
      const refOf = (data: Record<string, unknown>) => [data.assigneeId, data.assignee].find((ref): ref is string => typeof ref === 'string' && ref !== '')
      const assignees = await users.activeUsersNamed(tx, actor.organizationId, lines.map(({ data }) => refOf(data)).filter((ref): ref is string => ref !== undefined))
      const given = lines.map(({ data }) => data.number)
      const keep = given.every((number) => Number.isInteger(number) && (number as number) > 0 && (number as number) <= IMPORT_NUMBER_MAX) && new Set(given).size === given.length
      let refused = false
      const planned = lines.map(({ line, data }, index) => {
        const own: WorkItemInput = {
          title: data.title as string,
          ...(data.description !== undefined ? { description: data.description as string | null } : {}),
          ...(data.status !== undefined ? { status: data.status as WorkItemInput['status'] } : {}),
          ...(data.priority !== undefined ? { priority: data.priority as number } : {}),
          ...(data.dueDate !== undefined && data.dueDate !== null ? { dueDate: data.dueDate as string } : {}),
        }
        const problem = lineProblem(WorkItemInput, own)
        if (problem) {
          refused = true
          context.refuse(line, problem)
        }
        const ref = refOf(data)
        const assigneeId = ref === undefined ? null : (assignees.get(ref) ?? null)
        if (ref !== undefined && !assigneeId) context.note(line, `the assignee ${ref.slice(0, 80)} is not an active user of this organization: unassigned`)
        const position = Number.isInteger(data.position) && Math.abs(data.position as number) <= IMPORT_NUMBER_MAX ? (data.position as number) : index
        return { line, oldId: typeof data.id === 'string' ? data.id : undefined, own: { ...own, assigneeId }, number: keep ? (given[index] as number) : last + index + 1, position, data }
      })
      // Rows of refused lines are not written (the import ends after this section).
      if (refused) return 0
      // The extensions' values, as a create takes them (labels by their new ids, field values with their options remapped).
      const values = new Map<string, unknown[]>()
      for (const extension of extensions) {
        const given = extension.imported ? await extension.imported(tx as Transaction, context, planned.map(({ line, data }) => ({ line, value: data[extension.property] }))) : planned.map(() => undefined)
        // As a create body would be checked (at most 50 labels, field values' shapes), before any row is written.
        for (const [index, value] of given.entries()) {
          const problem = value === undefined ? undefined : lineProblem(extension.input, value, `work item's ${extension.property}`)
          if (problem) {
            refused = true
            context.refuse(planned[index]!.line, problem)
          }
        }
        values.set(extension.property, given)
      }
      if (refused) return 0
      const statuses: Record<string, number> = {}
      for (let from = 0; from < planned.length; from += IMPORT_BATCH) {
        const batch = planned.slice(from, from + IMPORT_BATCH)
        const inserted = await tx
          .insert(workItems)
          .values(batch.map(({ own, number, position }) => newRow(actor, projectId, own, number, position)))
          .returning({ id: workItems.id, number: workItems.number, status: workItems.status })
        const byNumber = new Map(inserted.map((row) => [row.number, row]))
        const rows = batch.map(({ number }) => byNumber.get(number)!)
        for (const [at, row] of rows.entries()) {
          statuses[row.status] = (statuses[row.status] ?? 0) + 1
          if (batch[at]!.oldId) context.ids('work_item').set(batch[at]!.oldId!, row.id)
        }
        const errors = new BulkErrors()
        const extended = rows.map((row, at) => ({
          item: { id: row.id, projectId },
          extended: Object.fromEntries(extensions.map((extension) => [extension.property, values.get(extension.property)![from + at]])),
        }))
        await writeExtensions(tx as Transaction, actor, extended, true, errors)
        errors.each((at, item) => context.refuse(batch[at]!.line, `${item.field ? `${item.field}: ` : ''}${item.message}`))
      }
      w.count(WORK_ITEM_COUNTS, projectId, statuses)
      const highest = Math.max(...planned.map(({ number }) => number))
      if (highest > last) await workItemsFace.lockOrdering(tx as Transaction, actor.organizationId, projectId, highest - last)
      return planned.length
    },
  }

  return {
    exportSection,
    importSection,
    /** The work item models as one organization sees them: its custom fields' keys, types and options (MCP tool listings). */
    async modelsFor(organizationId: string) {
      const described = await Promise.all(
        extensions.map(async (extension) => ({
          ...extension,
          input: extension.describe ? await extension.describe(db, organizationId) : extension.input,
          filters: { ...extension.filters, ...(extension.dynamic ? (await extension.dynamic.load(db, organizationId)).filters : {}) },
        })),
      )
      return workItemModels(described, BULK_MAX)
    },

    // The project's list and the list across projects (lists.ts).
    ...workItemLists,
    views,

    async get(actor: Actor, projectId: string, workItemId: string) {
      await access.requireProjectAccess(actor, projectId, 'viewer')
      if (!isUuid(workItemId)) throw notFound('No such work item.')
      return readItem(db, actor.organizationId, projectId, workItemId)
    },

    /** Creates a work item at the end of the project's order, with the project's next number. */
    create(actor: Actor, projectId: string, input: WorkItemInput, request?: IdempotentRequest) {
      return writes.change(actor, 'project', async (w) => {
        await access.requireProjectAccess(actor, projectId, 'editor', w.tx)
        return created(await createIn(w, actor, projectId, input))
      }, request)
    },

    update(actor: Actor, projectId: string, workItemId: string, patch: WorkItemPatch, ifMatch?: string) {
      return writes.change(actor, 'project', async (w) => {
        const granted = await access.requireProjectAccess(actor, projectId, 'viewer', w.tx)
        const current = await findWorkItem(w.tx, actor.organizationId, projectId, workItemId, 'no key update')
        assertLevel(granted, 'editor')
        checkIfMatch(ifMatch, current.updatedAt)
        return updateIn(w, actor, projectId, current, patch)
      })
    },

    /** Creates up to BULK_MAX work items in order, in one transaction: all or none. */
    bulkCreate(actor: Actor, projectId: string, items: readonly WorkItemInput[], request?: IdempotentRequest) {
      return writes.change(actor, 'project', async (w) => {
        await access.requireProjectAccess(actor, projectId, 'editor', w.tx)
        return createManyIn(w, actor, projectId, items)
      }, request)
    },

    /**
     * Updates up to BULK_MAX work items, each with its own changes and optional `ifMatch`, in one
     * transaction: all or none. Every item is locked first, in id order (two bulk requests over
     * the same items never wait on each other in turn), then changed in the request's order.
     */
    bulkUpdate(actor: Actor, projectId: string, items: readonly BulkPatch[], request?: IdempotentRequest) {
      return writes.change(actor, 'project', async (w) => {
        const granted = await access.requireProjectAccess(actor, projectId, 'viewer', w.tx)
        const ids = [...new Set(items.map((item) => item.id).filter(isUuid).map((id) => id.toLowerCase()))].sort()
        // With the transaction's time (now()), which the batch's UPDATE is given as a value: Citus
        // refuses a stable function beside the row's own columns in an UPDATE.
        const locked = ids.length
          ? await w.tx
              .select({ row: workItems, now: sql<string>`now()::text` })
              .from(workItems)
              .where(and(eq(workItems.organizationId, actor.organizationId), eq(workItems.projectId, projectId), inArray(workItems.id, ids)))
              .orderBy(workItems.id)
              .for('no key update')
          : []
        assertLevel(granted, 'editor')
        return updateManyIn(w, actor, projectId, items, new Map(locked.map(({ row }) => [row.id, row])), locked[0]?.now)
      }, request)
    },

    /** Deletes the work item; its entries and relationships go with it. */
    delete(actor: Actor, projectId: string, workItemId: string, ifMatch?: string) {
      return writes.change(actor, 'project', async ({ tx, audit, emit, count, deleting }) => {
        const granted = await access.requireProjectAccess(actor, projectId, 'viewer', tx)
        const current = await findWorkItem(tx, actor.organizationId, projectId, workItemId, 'update')
        assertLevel(granted, 'editor')
        checkIfMatch(ifMatch, current.updatedAt)
        // The event's data is the work item as API v1 showed it, extensions included: read before it goes.
        const before = await readItem(tx, actor.organizationId, projectId, current.id)
        await deleting('work_item', current.id, projectId)
        await tx.delete(workItems).where(theWorkItem(actor.organizationId, current.id))
        count(WORK_ITEM_COUNTS, projectId, { [current.status]: -1 })
        await audit({
          action: 'work_item.deleted',
          resourceType: 'work_item',
          resourceId: current.id,
          projectId,
          changes: { before: { number: current.number, title: current.title, status: current.status } },
        })
        await emit({ type: 'work_item.deleted', projectId, data: before })
        return { id: current.id }
      })
    },
  }
}

export type WorkItemService = ReturnType<typeof createWorkItems>
