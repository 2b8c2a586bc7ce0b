/** Alert rules on dashboard components, and the history of their transitions. */
import { sql } from 'drizzle-orm'
import { check, index, integer, numeric, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { rowId, tenantKey, tenantReference, timestamps } from '../../src/schema'
import { doneBy, organizationReference } from '../auth/schema'
import { components } from '../display/schema'

export const ALERT_CONDITIONS = ['above', 'below', 'noData'] as const
export const ALERT_STATES = ['ok', 'firing'] as const

/**
 * A rule on one component: `above` / `below` `value` for `for_seconds`, or `noData` for
 * `for_seconds` (`kind` is the API's `when`). `state` changes only by a conditional UPDATE (a transition, exactly once);
 * `pending_since` is when the condition was first seen holding (null while it does not).
 */
export const componentAlerts = pgTable(
  'component_alerts',
  {
    id: rowId(),
    organizationId: organizationReference(),
    pageId: uuid().notNull(),
    componentId: uuid().notNull(),
    /** The API's `when` (a reserved word in SQL). */
    kind: text({ enum: ALERT_CONDITIONS }).notNull(),
    value: numeric(),
    forSeconds: integer().notNull(),
    state: text({ enum: ALERT_STATES }).notNull().default('ok'),
    pendingSince: timestamp({ withTimezone: true, mode: 'date' }),
    createdBy: uuid(),
    ...timestamps,
  },
  (table) => [
    tenantKey('component_alerts', [table.id], table.organizationId),
    // Deleting the component (or its page) deletes its alerts.
    tenantReference('component_alerts_component_fk', [table.componentId, table.organizationId], [components.id, components.organizationId]),
    doneBy('component_alerts_created_by_fk', table.createdBy, table.organizationId),
    index('component_alerts_component_idx').on(table.componentId),
    // An organization's rules per component: what creation counts against both limits.
    index('component_alerts_organization_idx').on(table.organizationId, table.componentId),
    // A sweep's turn in one organization: its noData rules not firing, in id order from where the last turn stopped.
    index('component_alerts_no_data_idx').on(table.organizationId, table.id).where(sql`${table.state} = 'ok' and ${table.kind} = 'noData'`),
    // The sweep's discovery: running timers and noData rules not firing.
    index('component_alerts_due_idx').on(table.pendingSince).where(sql`${table.state} = 'ok'`),
    // A live page's marks: its firing rules.
    index('component_alerts_firing_idx').on(table.organizationId, table.pageId).where(sql`${table.state} = 'firing'`),
    check('component_alerts_kind_check', sql`${table.kind} in ('above', 'below', 'noData')`),
    check('component_alerts_state_check', sql`${table.state} in ('ok', 'firing')`),
    check('component_alerts_value_check', sql`(${table.kind} = 'noData') = (${table.value} is null)`),
    check('component_alerts_for_check', sql`${table.forSeconds} between 0 and 604800`),
  ],
)

/** One row per transition of an alert: `fired` or `resolved`, with the value that made it. */
export const alertTransitions = pgTable(
  'alert_transitions',
  {
    id: rowId(),
    organizationId: organizationReference(),
    alertId: uuid().notNull(),
    transition: text({ enum: ['fired', 'resolved'] }).notNull(),
    value: numeric(),
    at: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('alert_transitions', [table.id], table.organizationId),
    tenantReference('alert_transitions_alert_fk', [table.alertId, table.organizationId], [componentAlerts.id, componentAlerts.organizationId]),
    index('alert_transitions_alert_idx').on(table.alertId, table.at),
    check('alert_transitions_transition_check', sql`${table.transition} in ('fired', 'resolved')`),
  ],
)
