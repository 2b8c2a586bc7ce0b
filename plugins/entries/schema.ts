/** Entries (comments, notes, logs) of work items. */
import { sql } from 'drizzle-orm'
import { check, index, integer, pgTable, pgView, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { rowId, tenantKey, timestamps, tsvector } from '../../src/schema'
import { doneBy, organizationReference } from '../auth/schema'
import { projectOfRow } from '../projects/schema'
import { workItemOfRow } from '../work-items/schema'

export const ENTRY_KINDS = ['comment', 'note', 'log'] as const

export const entries = pgTable(
  'entries',
  {
    id: rowId(),
    organizationId: organizationReference(),
    /** The work item's project, kept here so search and listing need no join. */
    projectId: uuid().notNull(),
    workItemId: uuid().notNull(),
    kind: text({ enum: ENTRY_KINDS }).notNull().default('comment'),
    body: text().notNull(),
    authorId: uuid(),
    position: integer().notNull(),
    ...timestamps,
    searchVector: tsvector().generatedAlwaysAs(sql`setweight(to_tsvector('simple', body), 'B')`),
  },
  (table) => [
    tenantKey('entries', [table.id], table.organizationId),
    projectOfRow('entries_project_fk', table.projectId, table.organizationId),
    workItemOfRow('entries_work_item_fk', table.workItemId, table.organizationId),
    doneBy('entries_author_fk', table.authorId, table.organizationId),
    // One index per documented filter and sort of the list (model.ts ENTRY_LIST), each ending in
    // the order's tiebreaker so a cursor page starts its scan at the cursor's row.
    index('entries_work_item_order_idx').on(table.workItemId, table.position, table.createdAt, table.id),
    index('entries_work_item_kind_order_idx').on(table.workItemId, table.kind, table.position, table.createdAt, table.id),
    index('entries_work_item_author_order_idx').on(table.workItemId, table.authorId, table.position, table.createdAt, table.id),
    index('entries_work_item_created_idx').on(table.workItemId, table.createdAt, table.id),
    index('entries_work_item_updated_idx').on(table.workItemId, table.updatedAt, table.id),
    // A project's entries, most recent first (search reads those before asking its text indexes).
    index('entries_project_created_idx').on(table.projectId, table.createdAt.desc(), table.id.desc()),
    index('entries_search_idx').using('gin', table.searchVector),
    index('entries_body_trgm_idx').using('gin', sql`${table.body} gin_trgm_ops`),
    check('entries_kind_check', sql`${table.kind} in ('comment', 'note', 'log')`),
  ],
)

export type EntryRow = typeof entries.$inferSelect

/** How many entries a work item has of each kind, moved in the transaction of every change (service.ts). */
export const entryCounts = pgTable(
  'entry_counts',
  {
    workItemId: uuid().notNull(),
    kind: text({ enum: ENTRY_KINDS }).notNull(),
    organizationId: organizationReference(),
    items: integer().notNull(),
  },
  (table) => [tenantKey('entry_counts', [table.workItemId, table.kind], table.organizationId), workItemOfRow('entry_counts_work_item_fk', table.workItemId, table.organizationId)],
)

// ---- read models: what other plugins' SQL may read of these tables --------------------------

/** Entries as other plugins read them (search, summaries, content order): the API's columns, project and search document. */
export const entryDocuments = pgView('entry_documents', {
  id: uuid().notNull(),
  organizationId: uuid().notNull(),
  projectId: uuid().notNull(),
  workItemId: uuid().notNull(),
  kind: text().notNull(),
  body: text().notNull(),
  authorId: uuid(),
  position: integer().notNull(),
  createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull(),
  updatedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull(),
  searchVector: tsvector(),
}).as(sql`select id, organization_id, project_id, work_item_id, kind, body, author_id, position, created_at, updated_at, search_vector from entries`)
