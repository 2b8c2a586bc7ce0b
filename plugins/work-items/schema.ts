/** Work items, and the per-project counter their numbers come from. */
import { sql } from 'drizzle-orm'
import { boolean, check, date, index, integer, jsonb, pgTable, pgView, text, timestamp, uniqueIndex, uuid, type PgColumn } from 'drizzle-orm/pg-core'
import { rowId, tenantKey, tenantReference, timestamps, tsvector } from '../../src/schema'
import { doneBy, organizationReference } from '../auth/schema'
import { projectOfRow } from '../projects/schema'

export const WORK_ITEM_STATUSES = ['todo', 'in_progress', 'done', 'cancelled'] as const
export type WorkItemStatus = (typeof WORK_ITEM_STATUSES)[number]

export const workItems = pgTable(
  'work_items',
  {
    id: rowId(),
    organizationId: organizationReference(),
    projectId: uuid().notNull(),
    number: integer().notNull(),
    title: text().notNull(),
    description: text(),
    status: text({ enum: WORK_ITEM_STATUSES }).notNull().default('todo'),
    priority: integer().notNull().default(0),
    assigneeId: uuid(),
    dueDate: date({ mode: 'string' }),
    position: integer().notNull(),
    createdBy: uuid(),
    ...timestamps,
    /** When it first entered `in_progress` (kept after it leaves): the start of its cycle time. */
    startedAt: timestamp({ withTimezone: true, mode: 'date' }),
    /** When it last entered `done` or `cancelled` from an open status (a work item created closed: its creation); null while open. */
    closedAt: timestamp({ withTimezone: true, mode: 'date' }),
    /** Title weighs more than description in search ranking. */
    searchVector: tsvector().generatedAlwaysAs(
      sql`setweight(to_tsvector('simple', coalesce(title, '')), 'A') || setweight(to_tsvector('simple', coalesce(description, '')), 'B')`,
    ),
  },
  (table) => [
    tenantKey('work_items', [table.id], table.organizationId),
    projectOfRow('work_items_project_fk', table.projectId, table.organizationId),
    doneBy('work_items_assignee_fk', table.assigneeId, table.organizationId),
    doneBy('work_items_created_by_fk', table.createdBy, table.organizationId),
    uniqueIndex('work_items_project_number_unique').on(table.projectId, table.number, table.organizationId),
    // One index per documented filter and sort of the list (model.ts WORK_ITEM_LIST), each
    // ending in the order's tiebreaker so a cursor page starts its scan at the cursor's row.
    index('work_items_project_order_idx').on(table.projectId, table.position, table.createdAt, table.id),
    index('work_items_project_status_order_idx').on(table.projectId, table.status, table.position, table.createdAt, table.id),
    index('work_items_project_assignee_order_idx').on(table.projectId, table.assigneeId, table.position, table.createdAt, table.id),
    index('work_items_project_updated_idx').on(table.projectId, table.updatedAt.desc(), table.id.desc()),
    index('work_items_project_created_idx').on(table.projectId, table.createdAt, table.id),
    // Priority as urgency: 1 urgent … 4 low, then 0 (no priority) last — `(priority + 4) % 5` (model.ts).
    index('work_items_project_urgency_idx').on(table.projectId, sql`((${table.priority} + 4) % 5)`, table.id),
    index('work_items_project_due_idx').on(table.projectId, table.dueDate, table.id),
    index('work_items_search_idx').using('gin', table.searchVector),
    index('work_items_title_trgm_idx').using('gin', sql`${table.title} gin_trgm_ops`),
    check('work_items_status_check', sql`${table.status} in (${sql.raw(WORK_ITEM_STATUSES.map((status) => `'${status}'`).join(', '))})`),
    check('work_items_priority_check', sql`${table.priority} between 0 and 4`),
  ],
)

/** The last number handed out per project; numbers never repeat, even after deletes. */
export const workItemCounters = pgTable(
  'work_item_counters',
  {
    projectId: uuid().notNull(),
    organizationId: organizationReference(),
    lastNumber: integer().notNull(),
  },
  (table) => [tenantKey('work_item_counters', [table.projectId], table.organizationId), projectOfRow('work_item_counters_project_fk', table.projectId, table.organizationId)],
)

/**
 * How many work items a project has in each status, changed in the transaction of every create,
 * status change and delete (service.ts `countChanges`): a list's `totalItems` without counting rows.
 */
export const workItemCounts = pgTable(
  'work_item_counts',
  {
    projectId: uuid().notNull(),
    status: text({ enum: WORK_ITEM_STATUSES }).notNull(),
    organizationId: organizationReference(),
    items: integer().notNull(),
  },
  (table) => [
    tenantKey('work_item_counts', [table.projectId, table.status], table.organizationId),
    // No CHECK (items >= 0): PostgreSQL checks the row an upsert proposes, so a decrement
    // (proposed as a row of -1) would fail before it met the existing row.
    projectOfRow('work_item_counts_project_fk', table.projectId, table.organizationId),
  ],
)

/**
 * Saved views: a name for a set of the work-item list's filters (as query parameters: strings, a
 * repeated parameter as an array) and a sort, private to its creator or shared with the project's
 * viewers (views.ts).
 */
export const workItemViews = pgTable(
  'work_item_views',
  {
    id: rowId(),
    organizationId: organizationReference(),
    projectId: uuid().notNull(),
    name: text().notNull(),
    filters: jsonb().$type<Record<string, string | string[]>>().notNull(),
    sort: text(),
    shared: boolean().notNull().default(false),
    createdBy: uuid().notNull(),
    ...timestamps,
  },
  (table) => [
    tenantKey('work_item_views', [table.id], table.organizationId),
    projectOfRow('work_item_views_project_fk', table.projectId, table.organizationId),
    doneBy('work_item_views_creator_fk', table.createdBy, table.organizationId),
    index('work_item_views_project_idx').on(table.projectId, table.name),
  ],
)

/** The work item a row belongs to, of the row's organization: deleted with it. */
export const workItemOfRow = (name: string, column: PgColumn, organizationId: PgColumn) =>
  tenantReference(name, [column, organizationId], [workItems.id, workItems.organizationId])

export type WorkItemRow = typeof workItems.$inferSelect

// ---- read models: what other plugins' SQL may read of these tables --------------------------

/**
 * Work items as other plugins read them (search, summaries, content order, dashboards): every
 * column the API shows, plus the search document and when it started and closed. Positions change only through this plugin's public face.
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
  startedAt: timestamp({ withTimezone: true, mode: 'date' }),
  closedAt: timestamp({ withTimezone: true, mode: 'date' }),
}).as(
  sql`select id, organization_id, project_id, number, title, description, status, priority, assignee_id, due_date, position, created_by, created_at, updated_at, search_vector, started_at, closed_at from work_items`,
)

/** The maintained counts per status (work_item_counts) as other plugins read them (the project summary). */
export const workItemStatusCounts = pgView('work_item_status_counts', {
  projectId: uuid().notNull(),
  organizationId: uuid().notNull(),
  status: text().notNull(),
  items: integer().notNull(),
}).as(sql`select project_id, organization_id, status, items from work_item_counts`)
