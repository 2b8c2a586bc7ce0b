/** Dashboard components fed by work (their sources), and the marks that tell a project's sources to recompute. */
import { sql } from 'drizzle-orm'
import { boolean, check, index, integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { rowId, tenantKey, tenantReference, timestamps } from '../../src/schema'
import { doneBy, organizationReference } from '../auth/schema'
import { components } from '../display/schema'
import { projectOfRow } from '../projects/schema'

export const SOURCE_STATES = ['active', 'suspended'] as const

/**
 * A component fed by a project's work items (or a saved view of them): which measure, over how
 * many days, bound by whom. `state` turns `suspended` (with `reason`) when the binder can no longer
 * view the project or its view, and the component then keeps its last data. `computed_at`: when
 * its data was last written (the coalescing window starts there).
 */
export const componentSources = pgTable(
  'component_sources',
  {
    componentId: uuid().notNull(),
    organizationId: organizationReference(),
    pageId: uuid().notNull(),
    projectId: uuid().notNull(),
    viewId: uuid(),
    measure: text().notNull(),
    rangeDays: integer(),
    boundBy: uuid().notNull(),
    state: text({ enum: SOURCE_STATES }).notNull().default('active'),
    reason: text(),
    computedAt: timestamp({ withTimezone: true, mode: 'date' }),
    /** Its items and counts (work_source_items, work_source_counts) are built; false: build them all at the next recomputation. */
    built: boolean().notNull().default(false),
    /** The view's version (its updated_at) they were built with: a view changed since is built again. */
    viewVersion: text(),
    ...timestamps,
  },
  (table) => [
    tenantKey('component_sources', [table.componentId], table.organizationId),
    // Deleting the component (or its page, or the project) deletes its source.
    tenantReference('component_sources_component_fk', [table.componentId, table.organizationId], [components.id, components.organizationId]),
    projectOfRow('component_sources_project_fk', table.projectId, table.organizationId),
    doneBy('component_sources_bound_by_fk', table.boundBy, table.organizationId),
    // The sources a project's change marks for recomputation.
    index('component_sources_project_idx').on(table.organizationId, table.projectId).where(sql`${table.state} = 'active'`),
    check('component_sources_state_check', sql`${table.state} in ('active', 'suspended')`),
    check('component_sources_range_check', sql`${table.rangeDays} is null or ${table.rangeDays} between 1 and 365`),
  ],
)

/**
 * One row per committed change of a project with active sources, written in the change's own
 * transaction (never waiting on anything: a plain insert); the recompute worker claims and deletes
 * them, and recomputes each marked project's sources once per claim (the coalescing).
 */
export const workSourceMarks = pgTable(
  'work_source_marks',
  {
    id: rowId(),
    organizationId: organizationReference(),
    projectId: uuid().notNull(),
    /** The work item that changed; null: nothing of the items changed, the data is drawn again (a new day). */
    workItemId: uuid(),
    markedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [tenantKey('work_source_marks', [table.id], table.organizationId), index('work_source_marks_organization_idx').on(table.organizationId, table.markedAt)],
)

/**
 * Sources removed (unbound, or their component or page deleted) whose rows in work_source_items
 * are still to go: the recompute workers delete them in batches, so a removal costs the same
 * whatever the source counted (a source's rows have no foreign key to it for that reason).
 */
export const workSourcePurges = pgTable(
  'work_source_purges',
  {
    componentId: uuid().notNull(),
    organizationId: organizationReference(),
    requestedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [tenantKey('work_source_purges', [table.componentId], table.organizationId)],
)

/**
 * The work items a source counts, each with the buckets it counts in (a status, a label id, `c:`
 * and a creation day, `y:`, the day it was done and its cycle time…; none for an item a daily
 * series leaves out). A recomputation replaces the rows of the items that changed
 * and moves the counts by the difference: its cost follows the changes, not the project.
 */
export const workSourceItems = pgTable(
  'work_source_items',
  {
    componentId: uuid().notNull(),
    organizationId: organizationReference(),
    workItemId: uuid().notNull(),
    buckets: text().array().notNull(),
  },
  (table) => [
    tenantKey('work_source_items', [table.componentId, table.workItemId], table.organizationId),
  ],
)

/** How many of a source's items count in each bucket: what its data is drawn from. */
export const workSourceCounts = pgTable(
  'work_source_counts',
  {
    componentId: uuid().notNull(),
    organizationId: organizationReference(),
    bucket: text().notNull(),
    items: integer().notNull(),
  },
  (table) => [
    tenantKey('work_source_counts', [table.componentId, table.bucket], table.organizationId),
    tenantReference('work_source_counts_source_fk', [table.componentId, table.organizationId], [componentSources.componentId, componentSources.organizationId]),
  ],
)
