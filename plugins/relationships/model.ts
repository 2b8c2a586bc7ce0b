/** Request and response models of relationships. */
import { t } from 'elysia'
import { Timestamp, UuidString } from '../../src/http/models'
import { pageQuery } from '../../src/http/pagination'
import { withIsoTimestamps } from '../../src/sql'

export const RelationshipType = t.Union([t.Literal('blocks'), t.Literal('relates_to'), t.Literal('duplicates'), t.Literal('parent_of')], {
  description: '`relates_to` has no direction; the others read "source <type> target".',
})

export const Relationship = t.Object(
  {
    id: UuidString(),
    projectId: UuidString(),
    sourceWorkItemId: UuidString(),
    targetWorkItemId: UuidString(),
    type: RelationshipType,
    createdBy: t.Union([UuidString(), t.Null()]),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Relationship' },
)

export const RelationshipInput = t.Object(
  { sourceWorkItemId: UuidString(), targetWorkItemId: UuidString(), type: RelationshipType },
  { additionalProperties: false },
)

export const RelationshipPatch = t.Object({ type: RelationshipType }, { additionalProperties: false })

export const RelationshipQuery = t.Object({
  ...pageQuery(),
  workItemId: t.Optional(UuidString({ description: 'Only relationships with this work item at either end.' })),
})

export type RelationshipInput = typeof RelationshipInput.static
export type RelationshipQuery = typeof RelationshipQuery.static

export type RelationshipResource = typeof Relationship.static

/** A relationship's columns as the API shows them, for SQL-text reads (table alias `r`). */
export const RELATIONSHIP_COLUMNS = `r.id, r.project_id as "projectId", r.source_work_item_id as "sourceWorkItemId",
  r.target_work_item_id as "targetWorkItemId", r.type, r.created_by as "createdBy", r.created_at as "createdAt", r.updated_at as "updatedAt"`

export type RelationshipTextRow = Omit<RelationshipResource, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string }

export const fromRelationshipText = (row: RelationshipTextRow): RelationshipResource => withIsoTimestamps(row)
