/**
 * Relationships between work items of one project: both ends in the project, no self links, no
 * duplicates (for `relates_to`, in either direction). Viewers read, editors write.
 */
import { and, eq, or, sql, type SQL } from 'drizzle-orm'

import type { ChangeObserver } from '../../src/changes'
import { queryText, type Database, type Executor } from '../../src/db'
import { created } from '../../src/http/answer'
import { violatedConstraint } from '../../src/http/error-mapper'
import { badRequest, conflict, notFound, requireReferences, UnknownReference } from '../../src/http/errors'
import type { IdempotentRequest } from '../../src/http/idempotency'
import type { ListCache } from '../../src/http/list-cache'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid, uuidv7 } from '../../src/ids'
import { lineProblem, assertLevel, creationOrderSection, type ImportSection, type ProjectAccessService } from '../projects/api'
import type { Actor } from '../../src/services/identity'
import { listTotal, type CountTable } from '../../src/counts'
import { listIdentity, parseListQuery, readCursor } from '../../src/http/list-query'
import { selectListPage, nextUpdatedAt } from '../../src/sql'
import type { Writes } from '../../src/writes'
import type { WorkItemsFace } from '../work-items/api'
import { param } from '../../src/statements'
import { RELATIONSHIP_COLUMNS, RELATIONSHIP_LIST, RelationshipInput, toRelationship, type RelationshipQuery, type RelationshipResource, type RelationshipTextRow } from './model'
import { relationships, type RelationshipRow } from './schema'

type RelationshipType = RelationshipRow['type']


/** The body fields of a relationship's ends, by their index in the list of ends checked. */
const END_FIELDS = ['sourceWorkItemId', 'targetWorkItemId'] as const
const NO_END = 'No work item with this id in the project.'

/** The organization's relationship `id`, as a condition (its primary key). */
const theRelationship = (organizationId: string, id: string) => and(eq(relationships.id, id), eq(relationships.organizationId, organizationId))

async function findRelationship(executor: Executor, organizationId: string, projectId: string, relationshipId: string, lock = false) {
  if (!isUuid(relationshipId)) throw notFound('No such relationship.')
  const query = executor
    .select()
    .from(relationships)
    .where(and(theRelationship(organizationId, relationshipId), eq(relationships.projectId, projectId)))
  const [row] = lock ? await query.for('update') : await query
  if (!row) throw notFound('No such relationship.')
  return row
}

/** The organization's existing relationship equal to (source, target, type), if any. */
function sameLink(organizationId: string, source: string, target: string, type: RelationshipType): SQL {
  const forward = and(eq(relationships.sourceWorkItemId, source), eq(relationships.targetWorkItemId, target))!
  const backward = and(eq(relationships.sourceWorkItemId, target), eq(relationships.targetWorkItemId, source))!
  return and(eq(relationships.organizationId, organizationId), type === 'relates_to' ? or(forward, backward) : forward, eq(relationships.type, type))!
}

async function requireNoDuplicate(executor: Executor, organizationId: string, source: string, target: string, type: RelationshipType, exceptId?: string) {
  const [existing] = await executor.select({ id: relationships.id }).from(relationships).where(sameLink(organizationId, source, target, type))
  if (existing && existing.id !== exceptId) throw conflict('This relationship already exists.', existing.id)
}

/** A project's maintained counts per type (relationship_counts), moved by the unit of work of each change. */
const RELATIONSHIP_COUNTS: CountTable = { table: 'relationship_counts', scope: 'project_id', key: 'type', filter: 'type' }

/**
 * Keeps the counts exact when a work item is deleted: before the row goes, its relationships are
 * deleted here and counted out (the foreign key's cascade would remove them unseen).
 */
export const relationshipCountsObserver: ChangeObserver = {
  wants: () => false,
  observe: async () => {},
  async beforeDelete(tx, deletion, count) {
    if (deletion.resourceType !== 'work_item' || !deletion.projectId) return
    const gone = await queryText<{ type: string }>(
      tx,
      'delete from relationships where organization_id = $1 and project_id = $2 and $3 in (source_work_item_id, target_work_item_id) returning type',
      [deletion.organizationId, deletion.projectId, deletion.id],
    )
    const changes: Record<string, number> = {}
    for (const { type } of gone) changes[type] = (changes[type] ?? 0) - 1
    count(RELATIONSHIP_COUNTS, deletion.projectId, changes)
  },
}

export interface RelationshipDeps {
  db: Database
  lists: ListCache
  writes: Writes
  access: ProjectAccessService
  workItems: WorkItemsFace
}

/** The project's relationships in its export, in creation order, each as API v1 shows it. */
export const relationshipExportSection = creationOrderSection<RelationshipTextRow>({
  type: 'relationship',
  order: 60,
  scope: 'relationships:read',
  table: 'relationships',
  alias: 'r',
  columns: RELATIONSHIP_COLUMNS,
  shape: toRelationship,
})

/**
 * An import's relationships (after its work items): both ends of each `relationship` line are
 * work items of the file (else refused), no self link, no link twice (a `relates_to` either way);
 * one insert, the project's counts by type moved once.
 */
export const relationshipImportSection: ImportSection = {
  type: 'relationship',
  order: 60,
  scope: 'relationships:write',
  async write({ tx, count }, context) {
    const lines = context.lines('relationship')
    if (!lines.length) return 0
    const items = context.ids('work_item')
    const seen = new Set<string>()
    const rows: { source: string; target: string; type: string }[] = []
    for (const { line, data } of lines) {
      const [source, target] = [data.sourceWorkItemId, data.targetWorkItemId].map((id) => (typeof id === 'string' ? items.get(id) : undefined))
      const input = { sourceWorkItemId: source ?? '00000000-0000-0000-0000-000000000000', targetWorkItemId: target ?? '00000000-0000-0000-0000-000000000000', type: data.type }
      const problem = lineProblem(RelationshipInput, input)
      if (problem) context.refuse(line, problem)
      else if (!source || !target) context.refuse(line, `${source ? 'targetWorkItemId' : 'sourceWorkItemId'}: no work item of this import has this id`)
      else if (source === target) context.refuse(line, 'a work item cannot be linked to itself')
      else {
        const key = data.type === 'relates_to' ? `relates_to ${[source, target].sort().join(' ')}` : `${data.type} ${source} ${target}`
        if (seen.has(key)) context.refuse(line, 'the same link is on an earlier line')
        else {
          seen.add(key)
          rows.push({ source, target, type: data.type as string })
        }
      }
    }
    if (!rows.length) return 0
    // Multi-row inserts, every row naming the organization: Citus routes each to its one shard.
    for (let from = 0; from < rows.length; from += 1000)
      await tx.insert(relationships).values(
        rows.slice(from, from + 1000).map((row) => ({
        organizationId: context.actor.organizationId,
        projectId: context.projectId,
        sourceWorkItemId: row.source,
        targetWorkItemId: row.target,
        type: row.type as RelationshipRow['type'],
          createdBy: context.actor.userId,
        })),
      )
    const byType: Record<string, number> = {}
    for (const { type } of rows) byType[type] = (byType[type] ?? 0) + 1
    count(RELATIONSHIP_COUNTS, context.projectId, byType)
    return rows.length
  },
}

/** Relationships bound once; every function returns the resource in its API shape. */
export function createRelationships({ db, lists, writes, access, workItems }: RelationshipDeps) {
  return {
    /**
     * Relationships of a project, oldest first unless `sort` says otherwise, filtered by a work
     * item at either end, type and creation time (model.ts RELATIONSHIP_LIST), by page or cursor
     * (viewer); the total from the maintained counts when the filters are at most `type`, else a
     * count over the filters' index.
     */
    async list(actor: Actor, projectId: string, input: RelationshipQuery, request: PageRequest) {
      const query = parseListQuery(RELATIONSHIP_LIST, input)
      const identity = listIdentity(RELATIONSHIP_LIST, `${actor.organizationId} ${projectId}`, query)
      const after = readCursor(request, identity, query.order)
      const { version } = await access.listAccess(actor, projectId)
      return lists.page(`relationships ${projectId} ${query.canonical} ${request.cursor ?? request.page} ${request.size}`, version, () => {
        const scope = { scope: param(projectId), organization: param(actor.organizationId) }
        const conditions = [sql`r.project_id = ${scope.scope}`, sql`r.organization_id = ${scope.organization}`, ...query.conditions]
        const total = listTotal(RELATIONSHIP_COUNTS, query, scope, 'relationships r', conditions)
        return selectListPage<RelationshipTextRow, RelationshipResource>(
          db,
          { columns: RELATIONSHIP_COLUMNS, from: 'relationships r', conditions, order: query.order, total, identity, after },
          request,
          toRelationship,
        )
      })
    },

    async get(actor: Actor, projectId: string, relationshipId: string) {
      await access.requireProjectAccess(actor, projectId, 'viewer')
      return toRelationship(await findRelationship(db, actor.organizationId, projectId, relationshipId))
    },

    create(actor: Actor, projectId: string, input: RelationshipInput, request?: IdempotentRequest) {
      return writes.change(actor, 'project', async ({ tx, audit, emit, count }) => {
        await access.requireProjectAccess(actor, projectId, 'editor', tx)
        if (input.sourceWorkItemId.toLowerCase() === input.targetWorkItemId.toLowerCase()) throw badRequest('A work item cannot be related to itself.', 'targetWorkItemId')
        // Both ends key-share locked now, in id order (WorkItemsFace.inProject): an end being deleted is waited for and then missing.
        const ends = [input.sourceWorkItemId, input.targetWorkItemId]
        requireReferences(ends, new Set(await workItems.inProject(tx, actor.organizationId, projectId, ends, true)), (index) => END_FIELDS[index]!, NO_END)
        // A duplicate (also a concurrent create of one link) is decided by the unique indexes; when the
        // insert yields no row, the existing link is looked up for the 409.
        const [row] = await tx
          .insert(relationships)
          .values({
            organizationId: actor.organizationId,
            projectId,
            sourceWorkItemId: input.sourceWorkItemId,
            targetWorkItemId: input.targetWorkItemId,
            type: input.type,
            createdBy: actor.userId,
          })
          .onConflictDoNothing()
          .returning()
          .catch((error: unknown) => {
            // An end deleted after the check above, before this insert: as if it had been gone already.
            const constraint = violatedConstraint(error, '23503')
            if (constraint === 'relationships_source_fk' || constraint === 'relationships_target_fk')
              throw new UnknownReference([constraint === 'relationships_source_fk' ? 'sourceWorkItemId' : 'targetWorkItemId'], NO_END)
            throw error
          })
        if (!row) await requireNoDuplicate(tx, actor.organizationId, input.sourceWorkItemId, input.targetWorkItemId, input.type)
        count(RELATIONSHIP_COUNTS, projectId, { [row!.type]: 1 })
        await audit({
          action: 'relationship.created',
          resourceType: 'relationship',
          resourceId: row!.id,
          projectId,
          changes: { after: { sourceWorkItemId: row!.sourceWorkItemId, targetWorkItemId: row!.targetWorkItemId, type: row!.type } },
        })
        const relationship = toRelationship(row!)
        await emit({ type: 'relationship.created', projectId, data: relationship })
        return created(relationship)
      }, request)
    },

    update(actor: Actor, projectId: string, relationshipId: string, type: RelationshipType) {
      return writes.change(actor, 'project', async ({ tx, audit, emit, count }) => {
        const granted = await access.requireProjectAccess(actor, projectId, 'viewer', tx)
        const current = await findRelationship(tx, actor.organizationId, projectId, relationshipId, true)
        assertLevel(granted, 'editor')
        if (current.type === type) return toRelationship(current)
        await requireNoDuplicate(tx, actor.organizationId, current.sourceWorkItemId, current.targetWorkItemId, type, current.id)
        const [row] = await tx
          .update(relationships)
          .set({ type, updatedAt: nextUpdatedAt(current.updatedAt) })
          .where(theRelationship(actor.organizationId, current.id))
          .returning()
        count(RELATIONSHIP_COUNTS, projectId, { [current.type]: -1, [type]: 1 })
        await audit({
          action: 'relationship.updated',
          resourceType: 'relationship',
          resourceId: current.id,
          projectId,
          changes: { before: { type: current.type }, after: { type } },
        })
        const updated = toRelationship(row!)
        await emit({ type: 'relationship.updated', projectId, data: updated, previous: { type: current.type } })
        return updated
      })
    },

    delete(actor: Actor, projectId: string, relationshipId: string) {
      return writes.change(actor, 'project', async ({ tx, audit, emit, count }) => {
        const granted = await access.requireProjectAccess(actor, projectId, 'viewer', tx)
        const current = await findRelationship(tx, actor.organizationId, projectId, relationshipId, true)
        assertLevel(granted, 'editor')
        await tx.delete(relationships).where(theRelationship(actor.organizationId, current.id))
        count(RELATIONSHIP_COUNTS, projectId, { [current.type]: -1 })
        await audit({
          action: 'relationship.deleted',
          resourceType: 'relationship',
          resourceId: current.id,
          projectId,
          changes: { before: { sourceWorkItemId: current.sourceWorkItemId, targetWorkItemId: current.targetWorkItemId, type: current.type } },
        })
        await emit({ type: 'relationship.deleted', projectId, data: toRelationship(current) })
        return { id: current.id }
      })
    },
  }
}

export type RelationshipService = ReturnType<typeof createRelationships>
