/** Work items of a project: viewers read, editors write; numbers come from a per-project counter. */
import { and, eq, sql } from 'drizzle-orm'
import { changedFields, mutate } from '../../src/audit'
import { queryRows, type Database, type Executor } from '../../src/db'
import { checkIfMatch } from '../../src/http/etag'
import { notFound } from '../../src/http/errors'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid } from '../../src/ids'
import { assertLevel, type ProjectAccessService } from '../projects/api'
import type { Actor } from '../../src/services/identity'
import type { UserDirectory } from '../auth/api'
import { selectPage } from '../../src/sql'
import { fromWorkItemText, WORK_ITEM_COLUMNS, type WorkItemInput, type WorkItemPatch, type WorkItemQuery, type WorkItemResource, type WorkItemTextRow } from './model'
import { lockProjectOrdering, workItems, type WorkItemRow } from './schema'

export function serializeWorkItem(row: WorkItemRow): WorkItemResource {
  return {
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
  }
}

/**
 * The work items of a project in content order (position, then creation), filtered by status
 * and assignee: a hot read, two statements (access check, page with total).
 */
export async function listWorkItems(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, query: WorkItemQuery, request: PageRequest) {
  await access.requireProjectAccess(actor, projectId, 'viewer')
  const parameters: unknown[] = [projectId]
  let where = 'w.project_id = $1'
  if (query.status) where += ` and w.status = $${parameters.push(query.status)}`
  if (query.assigneeId) where += ` and w.assignee_id = $${parameters.push(query.assigneeId)}`
  return selectPage<WorkItemTextRow & { total: string }, WorkItemResource>(
    db,
    `select ${WORK_ITEM_COLUMNS}, count(*) over () as total from work_items w where ${where} order by w.position, w.created_at, w.id`,
    `select count(*) as total from work_items w where ${where}`,
    parameters,
    request,
    ({ total: _total, ...row }) => fromWorkItemText(row),
  )
}

/** The work item, if it is in the project; 404 otherwise. */
async function findWorkItem(executor: Executor, projectId: string, workItemId: string, lock = false): Promise<WorkItemRow> {
  if (!isUuid(workItemId)) throw notFound('No such work item.')
  const query = executor
    .select()
    .from(workItems)
    .where(and(eq(workItems.id, workItemId), eq(workItems.projectId, projectId)))
  const [row] = lock ? await query.for('update') : await query
  if (!row) throw notFound('No such work item.')
  return row
}

export async function getWorkItem(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, workItemId: string) {
  await access.requireProjectAccess(actor, projectId, 'viewer')
  return findWorkItem(db, projectId, workItemId)
}

async function checkAssignee(executor: Executor, directory: UserDirectory, actor: Actor, assigneeId: string | null | undefined) {
  if (assigneeId) await directory.requireActiveUser(executor, actor.organizationId, assigneeId, 'assigneeId')
}

/** Creates a work item at the end of the project's order, with the project's next number. */
export async function createWorkItem(db: Database, access: ProjectAccessService, directory: UserDirectory, actor: Actor, projectId: string, input: WorkItemInput) {
  return mutate(db, actor, async (tx, audit) => {
    await access.requireProjectAccess(actor, projectId, 'editor', tx)
    await checkAssignee(tx, directory, actor, input.assigneeId)
    const number = await lockProjectOrdering(tx, projectId, true)
    const [{ next }] = (await queryRows<{ next: number }>(
      tx,
      sql`select coalesce(max(position) + 1, 0)::int as next from work_items where project_id = ${projectId}`,
    )) as [{ next: number }]
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
    await audit({
      action: 'work_item.created',
      resourceType: 'work_item',
      resourceId: row!.id,
      projectId,
      changes: {
        after: { number, title: row!.title, status: row!.status, priority: row!.priority, assigneeId: row!.assigneeId, dueDate: row!.dueDate },
      },
    })
    return serializeWorkItem(row!)
  })
}

export async function updateWorkItem(
  db: Database,
  access: ProjectAccessService,
  directory: UserDirectory,
  actor: Actor,
  projectId: string,
  workItemId: string,
  patch: WorkItemPatch,
  ifMatch?: string,
) {
  return mutate(db, actor, async (tx, audit) => {
    const granted = await access.requireProjectAccess(actor, projectId, 'viewer', tx)
    const current = await findWorkItem(tx, projectId, workItemId, true)
    assertLevel(granted, 'editor')
    checkIfMatch(ifMatch, current.updatedAt)
    await checkAssignee(tx, directory, actor, patch.assigneeId)
    const changes = changedFields(current, patch)
    if (!changes) return current
    const [row] = await tx
      .update(workItems)
      .set({ ...patch, updatedAt: new Date() })
      .where(eq(workItems.id, current.id))
      .returning()
    await audit({ action: 'work_item.updated', resourceType: 'work_item', resourceId: current.id, projectId, changes })
    return row!
  })
}

/** Deletes the work item; its entries and relationships go with it. */
export async function deleteWorkItem(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, workItemId: string, ifMatch?: string) {
  return mutate(db, actor, async (tx, audit) => {
    const granted = await access.requireProjectAccess(actor, projectId, 'viewer', tx)
    const current = await findWorkItem(tx, projectId, workItemId, true)
    assertLevel(granted, 'editor')
    checkIfMatch(ifMatch, current.updatedAt)
    await tx.delete(workItems).where(eq(workItems.id, current.id))
    await audit({
      action: 'work_item.deleted',
      resourceType: 'work_item',
      resourceId: current.id,
      projectId,
      changes: { before: { number: current.number, title: current.title, status: current.status } },
    })
    return { id: current.id }
  })
}
