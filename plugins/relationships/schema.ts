/** Typed links between two work items of the same project. */
import { sql } from 'drizzle-orm'
import { check, index, pgTable, pgView, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { primaryId, timestamps } from '../../src/schema'
import { organizationReference, userReference } from '../auth/schema'
import { projectReference } from '../projects/schema'
import { workItems } from '../work-items/schema'

export const RELATIONSHIP_TYPES = ['blocks', 'relates_to', 'duplicates', 'parent_of'] as const

export const relationships = pgTable(
  'relationships',
  {
    id: primaryId(),
    organizationId: organizationReference(),
    projectId: projectReference(),
    sourceWorkItemId: uuid()
      .notNull()
      .references(() => workItems.id, { onDelete: 'cascade' }),
    targetWorkItemId: uuid()
      .notNull()
      .references(() => workItems.id, { onDelete: 'cascade' }),
    type: text({ enum: RELATIONSHIP_TYPES }).notNull(),
    createdBy: userReference(),
    ...timestamps,
  },
  (table) => [
    uniqueIndex('relationships_link_unique').on(table.sourceWorkItemId, table.targetWorkItemId, table.type),
    // relates_to has no direction: A relates_to B and B relates_to A are the same link.
    uniqueIndex('relationships_relates_to_unique')
      .on(sql`least(${table.sourceWorkItemId}, ${table.targetWorkItemId})`, sql`greatest(${table.sourceWorkItemId}, ${table.targetWorkItemId})`)
      .where(sql`${table.type} = 'relates_to'`),
    index('relationships_project_idx').on(table.projectId, table.createdAt, table.id),
    index('relationships_target_idx').on(table.targetWorkItemId),
    check('relationships_no_self_link', sql`${table.sourceWorkItemId} <> ${table.targetWorkItemId}`),
    check('relationships_type_check', sql`${table.type} in ('blocks', 'relates_to', 'duplicates', 'parent_of')`),
  ],
)

export type RelationshipRow = typeof relationships.$inferSelect

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
