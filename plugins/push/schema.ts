/** Devices (FCM tokens) of users, and the durable outbox: messages and one delivery per device. */
import { sql } from 'drizzle-orm'
import { bigint, boolean, check, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { primaryId, rowId, tenantKey, tenantReference } from '../../src/schema'
import { doneBy, organizationReference, userOfRow } from '../auth/schema'
import { pageOfRow } from '../display/schema'

export const devices = pgTable(
  'devices',
  {
    /** The FCM registration token, or a Web Push subscription's endpoint; it belongs to the user who registered it last. */
    token: text().notNull(),
    userId: uuid().notNull(),
    organizationId: organizationReference(),
    platform: text({ enum: ['android', 'ios', 'web', 'webpush'] }).notNull(),
    /**
     * A Web Push subscription's keys (base64url), with which its messages are encrypted: the
     * browser's, not a secret of this service, and useless without the endpoint's own push service.
     */
    p256dh: text(),
    auth: text(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    lastSeenAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('devices', [table.token], table.organizationId),
    userOfRow('devices_user_fk', table.userId, table.organizationId),
    index('devices_user_idx').on(table.userId),
    index('devices_last_seen_idx').on(table.lastSeenAt),
    check('devices_webpush_keys_check', sql`(${table.platform} = 'webpush') = (${table.p256dh} is not null and ${table.auth} is not null)`),
  ],
)

export const messages = pgTable(
  'messages',
  {
    id: rowId(),
    organizationId: organizationReference(),
    /** The page it was sent to; null for a push to one user that no page sent (a notification about work). */
    pageId: uuid(),
    pageName: text(),
    /** The notification title when it is not the page's name (alerts: `⚠ <component title>`). */
    title: text(),
    /** null: a data-only message (nothing is shown; the app or service worker acts on `data`). */
    body: text(),
    /** The push's `data` when it is not a page's (a user push: `{type: "work", threadId, …}`); string values, as FCM takes them. */
    data: jsonb().$type<Record<string, string>>(),
    senderId: uuid(),
    /** A user push's user (its devices are its recipients); null for a page's message. */
    recipientId: uuid(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** FCM's android priority / apns-priority / Web Push Urgency: `high` (the default) or `normal`. */
    priority: text({ enum: ['high', 'normal'] }).notNull().default('high'),
    /** How long the push services keep it for an offline device (FCM's default, 4 weeks, when null); also how long quiet hours may hold it. */
    ttlSeconds: integer(),
    collapseKey: text(),
    /** When a scheduled message is due (null: sent at once). */
    sendAt: timestamp({ withTimezone: true, mode: 'date' }),
    /** Sent through quiet hours. */
    critical: boolean().notNull().default(false),
    cancelledAt: timestamp({ withTimezone: true, mode: 'date' }),
  },
  (table) => [
    tenantKey('messages', [table.id], table.organizationId),
    pageOfRow('messages_page_fk', table.pageId, table.organizationId),
    doneBy('messages_sender_fk', table.senderId, table.organizationId),
    userOfRow('messages_recipient_fk', table.recipientId, table.organizationId),
    index('messages_page_idx').on(table.pageId, table.createdAt),
    check('messages_addressed_check', sql`(${table.pageId} is not null and ${table.pageName} is not null and ${table.body} is not null) or (${table.recipientId} is not null and ${table.data} is not null)`),
  ],
)

/**
 * `pending` (due at `next_attempt_at`), `held` (quiet hours: due when they end), `sending` (claimed,
 * counted as pending), and the final ones: `sent`, `failed`, `pruned` (the device is gone),
 * `expired` (held past its TTL), `cancelled` (the message was cancelled, or the page muted before
 * it went out), `undelivered` (no sender was configured).
 */
const DELIVERY_STATES = ['pending', 'held', 'sending', 'sent', 'failed', 'pruned', 'expired', 'cancelled', 'undelivered'] as const

export const deliveries = pgTable(
  'deliveries',
  {
    /** A bigint sequence: a message to 10,000 devices writes 10,000 rows, so the key stays small. */
    id: bigint({ mode: 'bigint' }).notNull().generatedAlwaysAsIdentity(),
    messageId: uuid().notNull(),
    /** The message's organization (every tenant row carries it: a distribution key). */
    organizationId: uuid().notNull(),
    /** Kept as text: the device row may be pruned while the delivery is remembered. */
    deviceToken: text().notNull(),
    userId: uuid(),
    state: text({ enum: DELIVERY_STATES }).notNull(),
    attempts: integer().notNull().default(0),
    nextAttemptAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** While `sending`: when the claim runs out and another worker may take the delivery. */
    leaseUntil: timestamp({ withTimezone: true, mode: 'date' }),
    lastError: text(),
    updatedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('deliveries', [table.id], table.organizationId),
    tenantReference('deliveries_message_fk', [table.messageId, table.organizationId], [messages.id, messages.organizationId]),
    index('deliveries_due_idx').on(table.nextAttemptAt).where(sql`${table.state} in ('pending', 'held')`),
    index('deliveries_lease_idx').on(table.leaseUntil).where(sql`${table.state} = 'sending'`),
    index('deliveries_message_idx').on(table.messageId, table.state),
    check('deliveries_state_check', sql`${table.state} in ('pending', 'held', 'sending', 'sent', 'failed', 'pruned', 'expired', 'cancelled', 'undelivered')`),
    index('deliveries_user_idx').on(table.userId, table.messageId),
  ],
)

/** A user's push preferences: quiet hours (in their time zone) and the pages they muted. */
export const notificationPreferences = pgTable(
  'notification_preferences',
  {
    userId: uuid().notNull(),
    organizationId: uuid().notNull(),
    /** Local wall-clock times, `HH:MM`; both null when there are no quiet hours. */
    quietStart: text(),
    quietEnd: text(),
    /** An IANA time zone, e.g. `Europe/Berlin`. */
    timeZone: text(),
    mutedPageIds: uuid().array().notNull().default(sql`'{}'::uuid[]`),
    updatedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('notification_preferences', [table.userId], table.organizationId),
    userOfRow('notification_preferences_user_fk', table.userId, table.organizationId),
    check('notification_preferences_quiet_check', sql`(${table.quietStart} is null) = (${table.quietEnd} is null) and (${table.quietStart} is null) = (${table.timeZone} is null)`),
  ],
)

/** What a user's app reported about a message it got: `delivered`, `opened`; each counts once per user. */
export const messageReceipts = pgTable(
  'message_receipts',
  {
    messageId: uuid().notNull(),
    userId: uuid().notNull(),
    organizationId: uuid().notNull(),
    event: text({ enum: ['delivered', 'opened'] }).notNull(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('message_receipts', [table.messageId, table.userId, table.event], table.organizationId),
    tenantReference('message_receipts_message_fk', [table.messageId, table.organizationId], [messages.id, messages.organizationId]),
    check('message_receipts_event_check', sql`${table.event} in ('delivered', 'opened')`),
  ],
)

/** The VAPID key pair Web Push is signed with when none is configured: one row, generated by the first instance. */
export const pushVapidKeys = pgTable('push_vapid_keys', {
  id: primaryId(),
  publicKey: text().notNull(),
  privateKey: text().notNull(),
  createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
})
