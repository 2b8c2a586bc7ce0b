/**
 * Entries of a work item, access-checked through the work item's project: viewers read, editors
 * write, and only the author or a project owner may edit or delete an entry.
 */
import { and, eq, sql } from 'drizzle-orm'
import { changedFields, mutate } from '../../src/audit'
import { queryRows, type Database, type Executor } from '../../src/db'
import { checkIfMatch } from '../../src/http/etag'
import { forbidden, notFound } from '../../src/http/errors'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid } from '../../src/ids'
import { assertLevel, levelRank, type AccessLevel, type ProjectAccess, type ProjectAccessService } from '../projects/api'
import type { Actor } from '../../src/services/identity'
import { selectPage } from '../../src/sql'
import { lockProjectOrdering, workItems } from '../work-items/schema'
import { ENTRY_COLUMNS, fromEntryText, type EntryInput, type EntryPatch, type EntryResource, type EntryTextRow } from './model'
import { entries, type EntryRow } from './schema'

export function serializeEntry(row: EntryRow): EntryResource {
  return {
    id: row.id,
    workItemId: row.workItemId,
    kind: row.kind,
    body: row.body,
    authorId: row.authorId,
    position: row.position,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}

/**
 * The caller's access to the project of a work item of their organization: 404 when the work
 * item is unknown, elsewhere, or in a project they cannot see.
 */
async function accessThroughWorkItem(executor: Executor, access: ProjectAccessService, actor: Actor, workItemId: string, required: AccessLevel): Promise<ProjectAccess> {
  if (!isUuid(workItemId)) throw notFound('No such work item.')
  const [item] = await executor
    .select({ projectId: workItems.projectId })
    .from(workItems)
    .where(and(eq(workItems.id, workItemId), eq(workItems.organizationId, actor.organizationId)))
  if (!item) throw notFound('No such work item.')
  return access.requireProjectAccess(actor, item.projectId, required, executor)
}

async function findEntry(executor: Executor, workItemId: string, entryId: string, lock = false): Promise<EntryRow> {
  if (!isUuid(entryId)) throw notFound('No such entry.')
  const query = executor
    .select()
    .from(entries)
    .where(and(eq(entries.id, entryId), eq(entries.workItemId, workItemId)))
  const [row] = lock ? await query.for('update') : await query
  if (!row) throw notFound('No such entry.')
  return row
}


/** Entries of a work item in content order (viewer). */
export async function listEntries(db: Database, access: ProjectAccessService, actor: Actor, workItemId: string, request: PageRequest) {
  await accessThroughWorkItem(db, access, actor, workItemId, 'viewer')
  return selectPage<EntryTextRow & { total: string }, EntryResource>(
    db,
    `select ${ENTRY_COLUMNS}, count(*) over () as total from entries e where e.work_item_id = $1 order by e.position, e.created_at, e.id`,
    `select count(*) as total from entries where work_item_id = $1`,
    [workItemId],
    request,
    ({ total: _total, ...row }) => fromEntryText(row),
  )
}

export async function getEntry(db: Database, access: ProjectAccessService, actor: Actor, workItemId: string, entryId: string) {
  await accessThroughWorkItem(db, access, actor, workItemId, 'viewer')
  return findEntry(db, workItemId, entryId)
}

/** Adds an entry at the end of the work item's entries (editor); the caller is its author. */
export async function createEntry(db: Database, access: ProjectAccessService, actor: Actor, workItemId: string, input: EntryInput) {
  return mutate(db, actor, async (tx, audit) => {
    const { projectId } = await accessThroughWorkItem(tx, access, actor, workItemId, 'editor')
    await lockProjectOrdering(tx, projectId)
    const [{ next }] = (await queryRows<{ next: number }>(
      tx,
      sql`select coalesce(max(position) + 1, 0)::int as next from entries where work_item_id = ${workItemId}`,
    )) as [{ next: number }]
    const [row] = await tx
      .insert(entries)
      .values({
        organizationId: actor.organizationId,
        projectId,
        workItemId,
        kind: input.kind ?? 'comment',
        body: input.body,
        authorId: actor.userId,
        position: next,
      })
      .returning()
    await audit({
      action: 'entry.created',
      resourceType: 'entry',
      resourceId: row!.id,
      projectId,
      changes: { after: { workItemId, kind: row!.kind, body: row!.body } },
    })
    return serializeEntry(row!)
  })
}

/** Editor access, then the entry's author or a project owner. */
function requireAuthorOrOwner(granted: ProjectAccess, actor: Actor, entry: EntryRow) {
  assertLevel(granted, 'editor')
  if (entry.authorId !== actor.userId && levelRank(granted.level) < levelRank('owner'))
    throw forbidden('Only the author of an entry or a project owner may change it.')
}

export async function updateEntry(db: Database, access: ProjectAccessService, actor: Actor, workItemId: string, entryId: string, patch: EntryPatch, ifMatch?: string) {
  return mutate(db, actor, async (tx, audit) => {
    const granted = await accessThroughWorkItem(tx, access, actor, workItemId, 'viewer')
    const current = await findEntry(tx, workItemId, entryId, true)
    requireAuthorOrOwner(granted, actor, current)
    checkIfMatch(ifMatch, current.updatedAt)
    const changes = changedFields(current, patch)
    if (!changes) return current
    const [row] = await tx
      .update(entries)
      .set({ ...patch, updatedAt: new Date() })
      .where(eq(entries.id, current.id))
      .returning()
    await audit({ action: 'entry.updated', resourceType: 'entry', resourceId: current.id, projectId: granted.projectId, changes })
    return row!
  })
}

export async function deleteEntry(db: Database, access: ProjectAccessService, actor: Actor, workItemId: string, entryId: string, ifMatch?: string) {
  return mutate(db, actor, async (tx, audit) => {
    const granted = await accessThroughWorkItem(tx, access, actor, workItemId, 'viewer')
    const current = await findEntry(tx, workItemId, entryId, true)
    requireAuthorOrOwner(granted, actor, current)
    checkIfMatch(ifMatch, current.updatedAt)
    await tx.delete(entries).where(eq(entries.id, current.id))
    await audit({
      action: 'entry.deleted',
      resourceType: 'entry',
      resourceId: current.id,
      projectId: granted.projectId,
      changes: { before: { workItemId, kind: current.kind, body: current.body } },
    })
    return { id: current.id }
  })
}
