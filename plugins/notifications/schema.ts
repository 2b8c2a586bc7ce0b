/**
 * Notifications about work: who watches what, each person's inbox (one thread per user and work
 * item) and the queue of changes still to be turned into thread updates. Every table is
 * distributed by organization; a thread and a subscription go with their work item, project and
 * user (foreign keys with cascade, as labels do).
 */
import { sql } from 'drizzle-orm'
import { boolean, index, jsonb, pgTable, smallint, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { rowId, tenantKey } from '../../src/schema'
import { organizationReference, userOfRow } from '../auth/schema'
import { projectOfRow } from '../projects/schema'
import { workItemOfRow } from '../work-items/schema'

/**
 * A user's explicit or automatic watch of a work item: `watching` false is an ignore, which wins
 * over the automatic rules (an automatic watch never replaces a row). `reason`: why they watch
 * (`manual`, `created`, `assigned`, `mentioned`, `commented`) or ignore (`manual`).
 */
export const workItemSubscriptions = pgTable(
  'work_item_subscriptions',
  {
    workItemId: uuid().notNull(),
    userId: uuid().notNull(),
    organizationId: organizationReference(),
    projectId: uuid().notNull(),
    watching: boolean().notNull(),
    reason: text().notNull(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('work_item_subscriptions', [table.workItemId, table.userId], table.organizationId),
    workItemOfRow('work_item_subscriptions_work_item_fk', table.workItemId, table.organizationId),
    userOfRow('work_item_subscriptions_user_fk', table.userId, table.organizationId),
  ],
)

/** A user watching a whole project: every work item's `created`, `commented` and `status_changed`. */
export const projectSubscriptions = pgTable(
  'project_subscriptions',
  {
    projectId: uuid().notNull(),
    userId: uuid().notNull(),
    organizationId: organizationReference(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('project_subscriptions', [table.projectId, table.userId], table.organizationId),
    projectOfRow('project_subscriptions_project_fk', table.projectId, table.organizationId),
    userOfRow('project_subscriptions_user_fk', table.userId, table.organizationId),
  ],
)

/**
 * One thread per (user, work item): new activity makes it unread, clears `done_at` and moves
 * `activity_at`; `actor_id` and `excerpt` are the latest activity's.
 */
export const notificationThreads = pgTable(
  'notification_threads',
  {
    id: rowId(),
    organizationId: organizationReference(),
    userId: uuid().notNull(),
    workItemId: uuid().notNull(),
    projectId: uuid().notNull(),
    /** Every reason since the thread was last read, as bits (reasons.ts); the strongest is `reason`. */
    reasons: smallint().notNull(),
    actorId: uuid(),
    excerpt: text().notNull(),
    unread: boolean().notNull(),
    activityAt: timestamp({ withTimezone: true }).notNull(),
    readAt: timestamp({ withTimezone: true }),
    doneAt: timestamp({ withTimezone: true }),
  },
  (table) => [
    tenantKey('notification_threads', [table.id], table.organizationId),
    uniqueIndex('notification_threads_user_item_unique').on(table.userId, table.workItemId, table.organizationId),
    workItemOfRow('notification_threads_work_item_fk', table.workItemId, table.organizationId),
    userOfRow('notification_threads_user_fk', table.userId, table.organizationId),
    // The inbox, newest activity first: each page a range of this index.
    index('notification_threads_inbox_idx').on(table.organizationId, table.userId, table.activityAt, table.id),
    // The exact unread count: the user's unread threads that are not done.
    index('notification_threads_unread_idx')
      .on(table.organizationId, table.userId)
      .where(sql`unread and done_at is null`),
  ],
)

/**
 * The queue between a change and its thread updates: one row per change, written in the change's
 * transaction (its cost to the writer: one insert, whoever watches), fanned out to every user it
 * concerns by the outbox runner, in a transaction that deletes the row (exactly once).
 */
export const notificationActivities = pgTable(
  'notification_activities',
  {
    id: rowId(),
    organizationId: organizationReference(),
    workItemId: uuid().notNull(),
    projectId: uuid().notNull(),
    /** `created`, `updated` (assignee or status or text), `commented`. */
    kind: text().notNull(),
    actorId: uuid(),
    /** What the fan-out needs: the new assignee, the status change, the mentioned usernames, the excerpt. */
    detail: jsonb().notNull(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    // No foreign key to the work item: a deletion must not wait for a fan-out holding the row (the
    // fan-out drops a change whose work item is gone).
    tenantKey('notification_activities', [table.id], table.organizationId),
    index('notification_activities_due_idx').on(table.organizationId, table.createdAt),
  ],
)

/**
 * A user's choice, per reason, of what a thread update does (notifications/preferences.ts): the
 * reasons whose updates are pushed to their devices, and those that write no thread at all (the
 * rest reach the inbox only). No row: the defaults, `assigned` and `mentioned` pushed.
 */
export const workNotificationSettings = pgTable(
  'work_notification_settings',
  {
    userId: uuid().notNull(),
    organizationId: organizationReference(),
    pushReasons: smallint().notNull(),
    offReasons: smallint().notNull(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('work_notification_settings', [table.userId], table.organizationId),
    userOfRow('work_notification_settings_user_fk', table.userId, table.organizationId),
  ],
)
