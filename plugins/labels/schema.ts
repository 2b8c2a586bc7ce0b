/** Labels of an organization, and which work items carry them. */
import { sql } from 'drizzle-orm'
import { index, pgTable, pgView, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { rowId, tenantKey, tenantReference, timestamps } from '../../src/schema'
import { organizationReference } from '../auth/schema'
import { workItemOfRow } from '../work-items/schema'

export const labels = pgTable(
  'labels',
  {
    id: rowId(),
    organizationId: organizationReference(),
    name: text().notNull(),
    /** `#` and 6 hex digits, lower case. */
    color: text().notNull(),
    ...timestamps,
  },
  (table) => [tenantKey('labels', [table.id], table.organizationId), uniqueIndex('labels_name_unique').on(table.organizationId, sql`lower(${table.name})`)],
)

/** A label on a work item (the work item's project kept for the list filter's index). */
export const workItemLabels = pgTable(
  'work_item_labels',
  {
    workItemId: uuid().notNull(),
    labelId: uuid().notNull(),
    organizationId: organizationReference(),
    projectId: uuid().notNull(),
  },
  (table) => [
    tenantKey('work_item_labels', [table.workItemId, table.labelId], table.organizationId),
    workItemOfRow('work_item_labels_work_item_fk', table.workItemId, table.organizationId),
    // A deleted label leaves its work items: only these rows go.
    tenantReference('work_item_labels_label_fk', [table.labelId, table.organizationId], [labels.id, labels.organizationId]),
    index('work_item_labels_label_idx').on(table.labelId, table.projectId, table.workItemId),
  ],
)

// ---- read models: what other plugins' SQL may read of these tables --------------------------

/** Labels as other plugins read them (dashboards name their buckets): id, organization, name and colour. */
export const labelDirectory = pgView('label_directory', {
  id: uuid().notNull(),
  organizationId: uuid().notNull(),
  name: text().notNull(),
  color: text().notNull(),
}).as(sql`select id, organization_id, name, color from labels`)
