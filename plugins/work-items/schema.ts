/** Work items, and the per-project counter their numbers come from. */
import { sql } from 'drizzle-orm'
import { check, date, index, integer, pgTable, pgView, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { primaryId, timestamps, tsvector } from '../../src/schema'
import { organizationReference, userReference } from '../auth/schema'
import { projectReference, projects } from '../projects/schema'

export const WORK_ITEM_STATUSES = ['todo', 'in_progress', 'done', 'cancelled'] as const
export type WorkItemStatus = (typeof WORK_ITEM_STATUSES)[number]

export const workItems = pgTable(
  'work_items',
  {
    id: primaryId(),
    organizationId: organizationReference(),
    projectId: projectReference(),
    number: integer().notNull(),
    title: text().notNull(),
    description: text(),
    status: text({ enum: WORK_ITEM_STATUSES }).notNull().default('todo'),
    priority: integer().notNull().default(0),
    assigneeId: userReference(),
    dueDate: date({ mode: 'string' }),
    position: integer().notNull(),
    createdBy: userReference(),
    ...timestamps,
    /** Title weighs more than description in search ranking. */
    searchVector: tsvector().generatedAlwaysAs(
      sql`setweight(to_tsvector('simple', coalesce(title, '')), 'A') || setweight(to_tsvector('simple', coalesce(description, '')), 'B')`,
    ),
  },
  (table) => [
    uniqueIndex('work_items_project_number_unique').on(table.projectId, table.number),
    index('work_items_project_order_idx').on(table.projectId, table.position, table.createdAt, table.id),
    index('work_items_project_assignee_idx').on(table.projectId, table.assigneeId),
    index('work_items_project_updated_idx').on(table.projectId, table.updatedAt.desc(), table.id.desc()),
    index('work_items_search_idx').using('gin', table.searchVector),
    index('work_items_title_trgm_idx').using('gin', sql`${table.title} gin_trgm_ops`),
    check('work_items_status_check', sql`${table.status} in (${sql.raw(WORK_ITEM_STATUSES.map((status) => `'${status}'`).join(', '))})`),
    check('work_items_priority_check', sql`${table.priority} between 0 and 4`),
  ],
)

/** The last number handed out per project; numbers never repeat, even after deletes. */
export const workItemCounters = pgTable('work_item_counters', {
  projectId: uuid()
    .primaryKey()
    .references(() => projects.id, { onDelete: 'cascade' }),
  lastNumber: integer().notNull(),
})

export type WorkItemRow = typeof workItems.$inferSelect

// ---- read models: what other plugins' SQL may read of these tables --------------------------

/**
 * Work items as other plugins read them (search, summaries, content order): every column the API
 * shows, plus the search document. Positions change only through this plugin's public face.
 */
export const workItemDocuments = pgView('work_item_documents', {
  id: uuid().notNull(),
  organizationId: uuid().notNull(),
  projectId: uuid().notNull(),
  number: integer().notNull(),
  title: text().notNull(),
  description: text(),
  status: text().notNull(),
  priority: integer().notNull(),
  assigneeId: uuid(),
  dueDate: date({ mode: 'string' }),
  position: integer().notNull(),
  createdBy: uuid(),
  createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull(),
  updatedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull(),
  searchVector: tsvector(),
}).as(
  sql`select id, organization_id, project_id, number, title, description, status, priority, assignee_id, due_date, position, created_by, created_at, updated_at, search_vector from work_items`,
)
