/**
 * Content order: the positions of work items in a project and of entries in each work item,
 * read through the owners' read models and written through their public faces.
 * A PUT gives, per list, the new order of the ids it names; the named ids fill the slots they
 * held, the others keep theirs, and every changed list is renumbered 0..n-1. One transaction
 * under the project's ordering lock, so concurrent PUTs and creates never share a position.
 */

import { queryText, type Database, type Executor, type Transaction } from '../../src/db'
import { badRequest } from '../../src/http/errors'
import type { ProjectAccessService } from '../projects/api'
import type { Actor } from '../../src/services/identity'
import type { Writes } from '../../src/writes'
import type { EntriesFace } from '../entries/api'
import type { WorkItemsFace } from '../work-items/api'
import type { ContentOrderInput } from './model'

export interface ContentOrderDocument {
  workItems: string[]
  entries: Record<string, string[]>
}

/**
 * The full order of a project, read inside `executor`. `concurrently` runs the two independent
 * reads side by side: for the pool only, as a transaction runs one statement at a time.
 */
async function readOrder(executor: Executor, organizationId: string, projectId: string, concurrently = false): Promise<ContentOrderDocument> {
  const readItems = () =>
    queryText<{ id: string }>(executor, `select id from work_item_documents where project_id = $1 and organization_id = $2 order by position, created_at, id`, [
      projectId,
      organizationId,
    ])
  const readEntries = () =>
    queryText<{ id: string; workItemId: string }>(
      executor,
      `select id, work_item_id as "workItemId" from entry_documents where project_id = $1 and organization_id = $2 order by work_item_id, position, created_at, id`,
      [projectId, organizationId],
    )
  const [items, rows] = concurrently ? await Promise.all([readItems(), readEntries()]) : [await readItems(), await readEntries()]
  const entries: Record<string, string[]> = {}
  for (const { id } of items) entries[id] = []
  for (const row of rows) (entries[row.workItemId] ??= []).push(row.id)
  return { workItems: items.map((item) => item.id), entries }
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

export interface ContentOrderDeps {
  db: Database
  writes: Writes
  access: ProjectAccessService
  workItems: WorkItemsFace
  entries: EntriesFace
}

/** Content order bound once: reads through the owners' read models, writes through their public faces. */
export function createContentOrder({ db, writes, access, workItems, entries }: ContentOrderDeps) {
  return {
    async get(actor: Actor, projectId: string) {
      await access.requireProjectAccess(actor, projectId, 'viewer')
      return readOrder(db, actor.organizationId, projectId, true)
    },

    put(actor: Actor, projectId: string, input: ContentOrderInput) {
      return writes.change(actor, 'project', async ({ tx, audit, emit }) => {
        await access.requireProjectAccess(actor, projectId, 'editor', tx)
        await workItems.lockOrdering(tx as Transaction, actor.organizationId, projectId)
        const current = await readOrder(tx, actor.organizationId, projectId)
        if (input.workItems) await workItems.writeOrder(tx as Transaction, actor.organizationId, reorder(current.workItems, input.workItems, 'workItems'))
        for (const [workItemId, named] of Object.entries(input.entries ?? {})) {
          const list = Object.hasOwn(current.entries, workItemId) ? current.entries[workItemId] : undefined
          if (!list) throw badRequest('No work item with this id in the project.', `entries.${workItemId}`)
          await entries.writeOrder(tx as Transaction, actor.organizationId, reorder(list, named, `entries.${workItemId}`))
        }
        await audit({
          action: 'content.reordered',
          resourceType: 'project',
          resourceId: projectId,
          projectId,
          changes: { after: { ...(input.workItems ? { workItems: input.workItems } : {}), ...(input.entries ? { entries: input.entries } : {}) } },
        })
        const order = await readOrder(tx, actor.organizationId, projectId)
        // The old order of what the request named: the project's work items, and each named item's entries.
        const previous: Record<string, unknown> = {}
        if (input.workItems) previous.workItems = current.workItems
        if (input.entries) previous.entries = Object.fromEntries(Object.keys(input.entries).map((workItemId) => [workItemId, current.entries[workItemId]]))
        await emit({ type: 'content_order.updated', projectId, data: order, previous })
        return order
      })
    },
  }
}

export type ContentOrderService = ReturnType<typeof createContentOrder>
