/** Typed links between two work items of the same project. */
import { sql } from 'drizzle-orm'
import { check, index, integer, pgTable, pgView, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { rowId, tenantKey, timestamps } from '../../src/schema'
import { doneBy, organizationReference } from '../auth/schema'
import { projectOfRow } from '../projects/schema'
import { workItemOfRow } from '../work-items/schema'

export const RELATIONSHIP_TYPES = ['blocks', 'relates_to', 'duplicates', 'parent_of'] as const

export const relationships = pgTable(
  'relationships',
  {
    id: rowId(),
    organizationId: organizationReference(),
    projectId: uuid().notNull(),
    sourceWorkItemId: uuid().notNull(),
    targetWorkItemId: uuid().notNull(),
    type: text({ enum: RELATIONSHIP_TYPES }).notNull(),
    createdBy: uuid(),
    ...timestamps,
  },
  (table) => [
    tenantKey('relationships', [table.id], table.organizationId),
    projectOfRow('relationships_project_fk', table.projectId, table.organizationId),
    workItemOfRow('relationships_source_fk', table.sourceWorkItemId, table.organizationId),
    workItemOfRow('relationships_target_fk', table.targetWorkItemId, table.organizationId),
    doneBy('relationships_created_by_fk', table.createdBy, table.organizationId),
    uniqueIndex('relationships_link_unique').on(table.sourceWorkItemId, table.targetWorkItemId, table.type, table.organizationId),
    // relates_to has no direction: A relates_to B and B relates_to A are the same link.
    uniqueIndex('relationships_relates_to_unique')
      .on(
        sql`least(${table.sourceWorkItemId}, ${table.targetWorkItemId})`,
        sql`greatest(${table.sourceWorkItemId}, ${table.targetWorkItemId})`,
        table.organizationId,
      )
      .where(sql`${table.type} = 'relates_to'`),
    index('relationships_project_idx').on(table.projectId, table.createdAt, table.id),
    index('relationships_project_type_idx').on(table.projectId, table.type, table.createdAt, table.id),
    index('relationships_target_idx').on(table.targetWorkItemId),
    check('relationships_no_self_link', sql`${table.sourceWorkItemId} <> ${table.targetWorkItemId}`),
    check('relationships_type_check', sql`${table.type} in ('blocks', 'relates_to', 'duplicates', 'parent_of')`),
  ],
)

export type RelationshipRow = typeof relationships.$inferSelect

/**
 * How many relationships a project has of each type, moved in the transaction of every change
 * (service.ts), including a work item's deletion, whose relationships go first (`forgetWorkItem`).
 */
export const relationshipCounts = pgTable(
  'relationship_counts',
  {
    projectId: uuid().notNull(),
    type: text({ enum: RELATIONSHIP_TYPES }).notNull(),
    organizationId: organizationReference(),
    items: integer().notNull(),
  },
  (table) => [tenantKey('relationship_counts', [table.projectId, table.type], table.organizationId), projectOfRow('relationship_counts_project_fk', table.projectId, table.organizationId)],
)

// ---- read models: what other plugins' SQL may read of these tables --------------------------

/** Relationships as other plugins read them (search matches a relationship through either end). */
export const relationshipLinks = pgView('relationship_links', {
  id: uuid().notNull(),
  organizationId: uuid().notNull(),
  projectId: uuid().notNull(),
  sourceWorkItemId: uuid().notNull(),
  targetWorkItemId: uuid().notNull(),
  type: text().notNull(),
  createdBy: uuid(),
  createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull(),
  updatedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull(),
}).as(sql`select id, organization_id, project_id, source_work_item_id, target_work_item_id, type, created_by, created_at, updated_at from relationships`)

/** The maintained counts per type (relationship_counts) as other plugins read them (the project summary). */
export const relationshipTypeCounts = pgView('relationship_type_counts', {
  projectId: uuid().notNull(),
  organizationId: uuid().notNull(),
  type: text().notNull(),
  items: integer().notNull(),
}).as(sql`select project_id, organization_id, type, items from relationship_counts`)
