/**
 * Content order: the positions of work items in a project and of entries in each work item.
 * A PUT gives, per list, the new order of the ids it names; the named ids fill the slots they
 * held, the others keep theirs, and every changed list is renumbered 0..n-1. One transaction
 * under the project's ordering lock, so concurrent PUTs and creates never share a position.
 */
import { mutate } from '../../src/audit'
import { queryText, type Database, type Executor } from '../../src/db'
import { badRequest } from '../../src/http/errors'
import type { ProjectAccessService } from '../projects/api'
import type { Actor } from '../../src/services/identity'
import { lockProjectOrdering } from '../work-items/schema'
import type { ContentOrderInput } from './model'

export interface ContentOrderDocument {
  workItems: string[]
  entries: Record<string, string[]>
}

/**
 * The full order of a project, read inside `executor`. `concurrently` runs the two independent
 * reads side by side: for the pool only, as a transaction runs one statement at a time.
 */
async function readOrder(executor: Executor, projectId: string, concurrently = false): Promise<ContentOrderDocument> {
  const readItems = () =>
    queryText<{ id: string }>(executor, `select id from work_items where project_id = $1 order by position, created_at, id`, [projectId])
  const readEntries = () =>
    queryText<{ id: string; workItemId: string }>(
      executor,
      `select id, work_item_id as "workItemId" from entries where project_id = $1 order by work_item_id, position, created_at, id`,
      [projectId],
    )
  const [items, rows] = concurrently ? await Promise.all([readItems(), readEntries()]) : [await readItems(), await readEntries()]
  const entries: Record<string, string[]> = {}
  for (const { id } of items) entries[id] = []
  for (const row of rows) (entries[row.workItemId] ??= []).push(row.id)
  return { workItems: items.map((item) => item.id), entries }
}

export async function getContentOrder(db: Database, access: ProjectAccessService, actor: Actor, projectId: string) {
  await access.requireProjectAccess(actor, projectId, 'viewer')
  return readOrder(db, projectId, true)
}

/**
 * The list after moving the `named` ids (in their new order) into the slots they occupy in
 * `current`; a named id missing from `current` or named twice is a 400 on `field[i]`.
 */
export function reorder(current: readonly string[], named: readonly string[], field: string): string[] {
  const index = new Map(current.map((id, position) => [id, position]))
  const seen = new Set<string>()
  named.forEach((id, i) => {
    if (!index.has(id)) throw badRequest('This id is not in the list it is ordered in.', `${field}[${i}]`)
    if (seen.has(id)) throw badRequest('This id is named twice.', `${field}[${i}]`)
    seen.add(id)
  })
  const slots = named.map((id) => index.get(id)!).sort((a, b) => a - b)
  const result = [...current]
  slots.forEach((slot, i) => (result[slot] = named[i]!))
  return result
}

async function writePositions(executor: Executor, table: 'work_items' | 'entries', ids: string[]) {
  if (!ids.length) return
  await queryText(
    executor,
    `update ${table} t set position = u.position - 1 from unnest($1::uuid[]) with ordinality as u(id, position)
      where t.id = u.id and t.position <> u.position - 1`,
    [ids],
  )
}

export async function putContentOrder(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, input: ContentOrderInput) {
  return mutate(db, actor, async (tx, audit) => {
    await access.requireProjectAccess(actor, projectId, 'editor', tx)
    await lockProjectOrdering(tx, projectId)
    const current = await readOrder(tx, projectId)
    if (input.workItems) await writePositions(tx, 'work_items', reorder(current.workItems, input.workItems, 'workItems'))
    for (const [workItemId, named] of Object.entries(input.entries ?? {})) {
      const list = Object.hasOwn(current.entries, workItemId) ? current.entries[workItemId] : undefined
      if (!list) throw badRequest('No work item with this id in the project.', `entries.${workItemId}`)
      await writePositions(tx, 'entries', reorder(list, named, `entries.${workItemId}`))
    }
    await audit({
      action: 'content.reordered',
      resourceType: 'project',
      resourceId: projectId,
      projectId,
      changes: { after: { ...(input.workItems ? { workItems: input.workItems } : {}), ...(input.entries ? { entries: input.entries } : {}) } },
    })
    return readOrder(tx, projectId)
  })
}
