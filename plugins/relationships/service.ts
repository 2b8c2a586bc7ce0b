/**
 * Relationships between work items of one project: both ends in the project, no self links, no
 * duplicates (for `relates_to`, in either direction). Viewers read, editors write.
 */
import { and, eq, or, type SQL } from 'drizzle-orm'

import type { Database, Executor } from '../../src/db'
import { created } from '../../src/http/answer'
import { badRequest, conflict, notFound } from '../../src/http/errors'
import type { IdempotentRequest } from '../../src/http/idempotency'
import type { ListCache } from '../../src/http/list-cache'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid } from '../../src/ids'
import { assertLevel, type ProjectAccessService } from '../projects/api'
import type { Actor } from '../../src/services/identity'
import { selectPage, nextUpdatedAt } from '../../src/sql'
import type { Writes } from '../../src/writes'
import type { WorkItemsFace } from '../work-items/api'
import { fromRelationshipText, RELATIONSHIP_COLUMNS, type RelationshipInput, type RelationshipQuery, type RelationshipResource, type RelationshipTextRow } from './model'
import { relationships, type RelationshipRow } from './schema'

type RelationshipType = RelationshipRow['type']

const serializeRelationship = (row: RelationshipRow): RelationshipResource => ({
  id: row.id,
  projectId: row.projectId,
  sourceWorkItemId: row.sourceWorkItemId,
  targetWorkItemId: row.targetWorkItemId,
  type: row.type,
  createdBy: row.createdBy,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
})


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

export interface RelationshipDeps {
  db: Database
  lists: ListCache
  writes: Writes
  access: ProjectAccessService
  workItems: WorkItemsFace
}

/** Relationships bound once; every function returns the resource in its API shape. */
export function createRelationships({ db, lists, writes, access, workItems }: RelationshipDeps) {
  return {
    /** Relationships of a project, oldest first, optionally those touching one work item (viewer). */
    async list(actor: Actor, projectId: string, query: RelationshipQuery, request: PageRequest) {
      const { version } = await access.listAccess(actor, projectId)
      return lists.page(`relationships ${projectId} ${query.workItemId ?? ''} ${request.page} ${request.size}`, version, () => {
        const parameters: unknown[] = [projectId, actor.organizationId]
        let where = 'r.project_id = $1 and r.organization_id = $2'
        if (query.workItemId) where += ` and $3 in (r.source_work_item_id, r.target_work_item_id)`
        if (query.workItemId) parameters.push(query.workItemId)
        return selectPage<RelationshipTextRow & { total: string }, RelationshipResource>(
          db,
          `select ${RELATIONSHIP_COLUMNS}, count(*) over () as total from relationships r where ${where} order by r.created_at, r.id`,
          `select count(*) as total from relationships r where ${where}`,
          parameters,
          request,
          fromRelationshipText,
        )
      })
    },

    async get(actor: Actor, projectId: string, relationshipId: string) {
      await access.requireProjectAccess(actor, projectId, 'viewer')
      return serializeRelationship(await findRelationship(db, actor.organizationId, projectId, relationshipId))
    },

    create(actor: Actor, projectId: string, input: RelationshipInput, request?: IdempotentRequest) {
      return writes.change(actor, 'project', async ({ tx, audit, emit }) => {
        await access.requireProjectAccess(actor, projectId, 'editor', tx)
        if (input.sourceWorkItemId === input.targetWorkItemId) throw badRequest('A work item cannot be related to itself.', 'targetWorkItemId')
        const inProject = new Set(await workItems.inProject(tx, actor.organizationId, projectId, [input.sourceWorkItemId, input.targetWorkItemId]))
        for (const field of ['sourceWorkItemId', 'targetWorkItemId'] as const)
          if (!inProject.has(input[field])) throw badRequest('No work item with this id in the project.', field)
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
        if (!row) await requireNoDuplicate(tx, actor.organizationId, input.sourceWorkItemId, input.targetWorkItemId, input.type)
        await audit({
          action: 'relationship.created',
          resourceType: 'relationship',
          resourceId: row!.id,
          projectId,
          changes: { after: { sourceWorkItemId: row!.sourceWorkItemId, targetWorkItemId: row!.targetWorkItemId, type: row!.type } },
        })
        const relationship = serializeRelationship(row!)
        await emit({ type: 'relationship.created', projectId, data: relationship })
        return created(relationship)
      }, request)
    },

    update(actor: Actor, projectId: string, relationshipId: string, type: RelationshipType) {
      return writes.change(actor, 'project', async ({ tx, audit, emit }) => {
        const granted = await access.requireProjectAccess(actor, projectId, 'viewer', tx)
        const current = await findRelationship(tx, actor.organizationId, projectId, relationshipId, true)
        assertLevel(granted, 'editor')
        if (current.type === type) return serializeRelationship(current)
        await requireNoDuplicate(tx, actor.organizationId, current.sourceWorkItemId, current.targetWorkItemId, type, current.id)
        const [row] = await tx
          .update(relationships)
          .set({ type, updatedAt: nextUpdatedAt(current.updatedAt) })
          .where(theRelationship(actor.organizationId, current.id))
          .returning()
        await audit({
          action: 'relationship.updated',
          resourceType: 'relationship',
          resourceId: current.id,
          projectId,
          changes: { before: { type: current.type }, after: { type } },
        })
        const updated = serializeRelationship(row!)
        await emit({ type: 'relationship.updated', projectId, data: updated })
        return updated
      })
    },

    delete(actor: Actor, projectId: string, relationshipId: string) {
      return writes.change(actor, 'project', async ({ tx, audit, emit }) => {
        const granted = await access.requireProjectAccess(actor, projectId, 'viewer', tx)
        const current = await findRelationship(tx, actor.organizationId, projectId, relationshipId, true)
        assertLevel(granted, 'editor')
        await tx.delete(relationships).where(theRelationship(actor.organizationId, current.id))
        await audit({
          action: 'relationship.deleted',
          resourceType: 'relationship',
          resourceId: current.id,
          projectId,
          changes: { before: { sourceWorkItemId: current.sourceWorkItemId, targetWorkItemId: current.targetWorkItemId, type: current.type } },
        })
        await emit({ type: 'relationship.deleted', projectId, data: serializeRelationship(current) })
        return { id: current.id }
      })
    },
  }
}

export type RelationshipService = ReturnType<typeof createRelationships>
