/** Request and response models of relationships. */
import { sql } from 'drizzle-orm'
import { t } from 'elysia'
import { Timestamp, UuidString } from '../../src/http/models'
import { filterParameters, type ListShape } from '../../src/http/list-query'
import { cursorParameter, pageQuery } from '../../src/http/pagination'
import { isoOf } from '../../src/sql'
import { RELATIONSHIP_TYPES } from './schema'

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

/** The filters and sorts of a project's relationships. */
export const RELATIONSHIP_LIST: ListShape = {
  name: 'relationships',
  filters: {
    workItemId: { type: 'uuid', column: 'r.source_work_item_id', anyColumn: ['r.source_work_item_id', 'r.target_work_item_id'], description: 'Only relationships with this work item at either end.' },
    type: { type: 'enum', values: RELATIONSHIP_TYPES, column: 'r.type', description: 'Only relationships of these types.' },
    createdAt: { type: 'timestamp', column: 'r.created_at', description: 'Creation time.' },
  },
  sorts: { createdAt: { column: 'r.created_at', cast: 'timestamptz' } },
  defaultOrder: ['createdAt'],
  tiebreaker: { column: 'r.id', cast: 'uuid' },
}

// Other keys reach the service, which refuses them naming the allowed ones.
export const RelationshipQuery = t.Object({ ...pageQuery(), ...cursorParameter(), ...filterParameters(RELATIONSHIP_LIST) }, { additionalProperties: true })

export type RelationshipInput = typeof RelationshipInput.static
/** A list request's filters and sort (unknown keys are refused when parsed). */
export type RelationshipQuery = Record<string, unknown>

export type RelationshipResource = typeof Relationship.static

/** A relationship's columns as the API shows them, timestamps as text (table alias `r`). */
export const RELATIONSHIP_COLUMNS = sql.raw(`r.id, r.project_id as "projectId", r.source_work_item_id as "sourceWorkItemId",
  r.target_work_item_id as "targetWorkItemId", r.type, r.created_by as "createdBy", r.created_at as "createdAt", r.updated_at as "updatedAt"`)

export type RelationshipTextRow = Omit<RelationshipResource, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string }

/**
 * A relationship as the API shows it, from its row as Drizzle reads it or as RELATIONSHIP_COLUMNS
 * read it (timestamps as text): the one mapping of a relationship.
 */
export const toRelationship = (row: Omit<RelationshipResource, 'createdAt' | 'updatedAt'> & { createdAt: Date | string; updatedAt: Date | string }): RelationshipResource => ({
  id: row.id,
  projectId: row.projectId,
  sourceWorkItemId: row.sourceWorkItemId,
  targetWorkItemId: row.targetWorkItemId,
  type: row.type,
  createdBy: row.createdBy,
  createdAt: isoOf(row.createdAt),
  updatedAt: isoOf(row.updatedAt),
})
