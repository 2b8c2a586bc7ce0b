/**
 * Work items of a project: viewers read, editors write; numbers come from a per-project counter.
 * Bound once (`createWorkItems`); every function returns the resource in its API shape.
 */
import { and, eq } from 'drizzle-orm'
import { changedFields } from '../../src/audit'
import { listTotal, type CountTable } from '../../src/counts'
import { queryText, type Database, type Executor, type Transaction } from '../../src/db'
import { checkIfMatch, created } from '../../src/http/answer'
import type { IdempotentRequest } from '../../src/http/idempotency'
import { notFound } from '../../src/http/errors'
import type { ListCache } from '../../src/http/list-cache'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { listIdentity, Parameters, parseListQuery, readCursor } from '../../src/http/list-query'
import { selectListPage, nextUpdatedAt } from '../../src/sql'
import type { Writes } from '../../src/writes'
import type { UserDirectory } from '../auth/api'
import { assertLevel, type ProjectAccessService } from '../projects/api'
import type { WorkItemsFace } from './api'
import { fromWorkItemText, WORK_ITEM_COLUMNS, WORK_ITEM_LIST, type WorkItemInput, type WorkItemPatch, type WorkItemQuery, type WorkItemResource, type WorkItemTextRow } from './model'
import { workItems, type WorkItemRow } from './schema'

const serializeWorkItem = (row: WorkItemRow): WorkItemResource => ({
  id: row.id,
  projectId: row.projectId,
  number: row.number,
  title: row.title,
  description: row.description,
  status: row.status,
  priority: row.priority,
  assigneeId: row.assigneeId,
  dueDate: row.dueDate,
  position: row.position,
  createdBy: row.createdBy,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
})

/** The organization's work item `id`, as a condition (its primary key). */
const theWorkItem = (organizationId: string, id: string) => and(eq(workItems.id, id), eq(workItems.organizationId, organizationId))

/** The work item, if it is in the organization's project; 404 otherwise. */
async function findWorkItem(executor: Executor, organizationId: string, projectId: string, workItemId: string, lock = false): Promise<WorkItemRow> {
  if (!isUuid(workItemId)) throw notFound('No such work item.')
  const query = executor
    .select()
    .from(workItems)
    .where(and(theWorkItem(organizationId, workItemId), eq(workItems.projectId, projectId)))
  const [row] = lock ? await query.for('update') : await query
  if (!row) throw notFound('No such work item.')
  return row
}

/** The project's maintained counts per status (work_item_counts), moved by the unit of work of each change. */
const WORK_ITEM_COUNTS: CountTable = { table: 'work_item_counts', scope: 'project_id', key: 'status', filter: 'status' }

/** The plugin's public face (api.ts): ordering and lookups for dependents' transactions. */
export const workItemsFace: WorkItemsFace = {
  async lockOrdering(tx, organizationId, projectId, advance = false) {
    const [row] = await queryText<{ lastNumber: number }>(
      tx,
      `insert into work_item_counters (project_id, organization_id, last_number) values ($1, $3, $2)
         on conflict (project_id, organization_id) do update set last_number = work_item_counters.last_number + $2
         returning last_number as "lastNumber"`,
      [projectId, advance ? 1 : 0, organizationId],
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
  async projectOf(executor, organizationId, workItemId) {
    if (!isUuid(workItemId)) return undefined
    const [row] = await queryText<{ projectId: string }>(executor, 'select project_id as "projectId" from work_items where id = $1 and organization_id = $2', [workItemId, organizationId])
    return row?.projectId
  },
  async inProject(executor, organizationId, projectId, ids) {
    const rows = await queryText<{ id: string }>(executor, 'select id from work_items where project_id = $1 and id = any($2::uuid[]) and organization_id = $3', [
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
}

export function createWorkItems({ db, lists, writes, access, users }: WorkItemDeps) {
  const checkAssignee = async (executor: Executor, actor: Actor, assigneeId: string | null | undefined) => {
    if (assigneeId) await users.requireActiveUser(executor, actor.organizationId, assigneeId, 'assigneeId')
  }
  return {
    /**
     * The work items of a project, filtered and sorted (model.ts WORK_ITEM_LIST; content order by
     * default), by page or cursor: a hot read. The access check reads the project's version; a
     * cached page of that version answers without reading rows. Otherwise one statement reads the
     * page and its total: the maintained counts when the filters are at most `status`, else a
     * count over the index of the filters.
     */
    async list(actor: Actor, projectId: string, input: WorkItemQuery, request: PageRequest) {
      const parameters = new Parameters([projectId, actor.organizationId])
      const query = parseListQuery(WORK_ITEM_LIST, input, parameters)
      const identity = listIdentity(WORK_ITEM_LIST, `${actor.organizationId} ${projectId}`, query)
      const after = readCursor(request, identity, query.order)
      const { version } = await access.listAccess(actor, projectId)
      const key = `work-items ${projectId} ${query.canonical} ${request.cursor ?? request.page} ${request.size}`
      return lists.page(key, version, () => {
        const conditions = ['w.project_id = $1', 'w.organization_id = $2', ...query.conditions]
        const total = listTotal(WORK_ITEM_COUNTS, query, parameters, 'work_items w', conditions)
        return selectListPage<WorkItemTextRow, WorkItemResource>(
          db,
          { columns: WORK_ITEM_COLUMNS, from: 'work_items w', conditions, parameters, order: query.order, total, identity, after },
          request,
          fromWorkItemText,
        )
      })
    },

    async get(actor: Actor, projectId: string, workItemId: string) {
      await access.requireProjectAccess(actor, projectId, 'viewer')
      return serializeWorkItem(await findWorkItem(db, actor.organizationId, projectId, workItemId))
    },

    /** Creates a work item at the end of the project's order, with the project's next number. */
    create(actor: Actor, projectId: string, input: WorkItemInput, request?: IdempotentRequest) {
      return writes.change(actor, 'project', async ({ tx, audit, emit, count }) => {
        await access.requireProjectAccess(actor, projectId, 'editor', tx)
        await checkAssignee(tx, actor, input.assigneeId)
        const number = await workItemsFace.lockOrdering(tx as Transaction, actor.organizationId, projectId, true)
        const [{ next }] = (await queryText<{ next: number }>(tx, 'select coalesce(max(position) + 1, 0)::int as next from work_items where project_id = $1 and organization_id = $2', [
          projectId,
          actor.organizationId,
        ])) as [{ next: number }]
        const [row] = await tx
          .insert(workItems)
          .values({
            organizationId: actor.organizationId,
            projectId,
            number,
            title: input.title,
            description: input.description ?? null,
            status: input.status ?? 'todo',
            priority: input.priority ?? 0,
            assigneeId: input.assigneeId ?? null,
            dueDate: input.dueDate ?? null,
            position: next,
            createdBy: actor.userId,
          })
          .returning()
        count(WORK_ITEM_COUNTS, projectId, { [row!.status]: 1 })
        await audit({
          action: 'work_item.created',
          resourceType: 'work_item',
          resourceId: row!.id,
          projectId,
          changes: { after: { number, title: row!.title, status: row!.status, priority: row!.priority, assigneeId: row!.assigneeId, dueDate: row!.dueDate } },
        })
        const item = serializeWorkItem(row!)
        await emit({ type: 'work_item.created', projectId, data: item })
        return created(item)
      }, request)
    },

    update(actor: Actor, projectId: string, workItemId: string, patch: WorkItemPatch, ifMatch?: string) {
      return writes.change(actor, 'project', async ({ tx, audit, emit, count }) => {
        const granted = await access.requireProjectAccess(actor, projectId, 'viewer', tx)
        const current = await findWorkItem(tx, actor.organizationId, projectId, workItemId, true)
        assertLevel(granted, 'editor')
        checkIfMatch(ifMatch, current.updatedAt)
        await checkAssignee(tx, actor, patch.assigneeId)
        const changes = changedFields(current, patch)
        if (!changes) return serializeWorkItem(current)
        const [row] = await tx
          .update(workItems)
          .set({ ...patch, updatedAt: nextUpdatedAt(current.updatedAt) })
          .where(theWorkItem(actor.organizationId, current.id))
          .returning()
        if (row!.status !== current.status) count(WORK_ITEM_COUNTS, projectId, { [current.status]: -1, [row!.status]: 1 })
        await audit({ action: 'work_item.updated', resourceType: 'work_item', resourceId: current.id, projectId, changes })
        const updated = serializeWorkItem(row!)
        await emit({ type: 'work_item.updated', projectId, data: updated })
        return updated
      })
    },

    /** Deletes the work item; its entries and relationships go with it. */
    delete(actor: Actor, projectId: string, workItemId: string, ifMatch?: string) {
      return writes.change(actor, 'project', async ({ tx, audit, emit, count, deleting }) => {
        const granted = await access.requireProjectAccess(actor, projectId, 'viewer', tx)
        const current = await findWorkItem(tx, actor.organizationId, projectId, workItemId, true)
        assertLevel(granted, 'editor')
        checkIfMatch(ifMatch, current.updatedAt)
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
        await emit({ type: 'work_item.deleted', projectId, data: serializeWorkItem(current) })
        return { id: current.id }
      })
    },
  }
}

export type WorkItemService = ReturnType<typeof createWorkItems>
