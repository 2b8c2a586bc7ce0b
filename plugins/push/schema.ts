/** Devices (FCM tokens) of users, and the durable outbox: messages and one delivery per device. */
import { sql } from 'drizzle-orm'
import { bigint, check, index, integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { rowId, tenantKey, tenantReference } from '../../src/schema'
import { doneBy, organizationReference, userOfRow } from '../auth/schema'
import { pageOfRow } from '../display/schema'

export const devices = pgTable(
  'devices',
  {
    /** The FCM registration token; it belongs to the user who registered it last. */
    token: text().notNull(),
    userId: uuid().notNull(),
    organizationId: organizationReference(),
    platform: text({ enum: ['android', 'ios', 'web'] }).notNull(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    lastSeenAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('devices', [table.token], table.organizationId),
    userOfRow('devices_user_fk', table.userId, table.organizationId),
    index('devices_user_idx').on(table.userId),
    index('devices_last_seen_idx').on(table.lastSeenAt),
  ],
)

export const messages = pgTable(
  'messages',
  {
    id: rowId(),
    organizationId: organizationReference(),
    pageId: uuid().notNull(),
    pageName: text().notNull(),
    body: text().notNull(),
    senderId: uuid(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('messages', [table.id], table.organizationId),
    pageOfRow('messages_page_fk', table.pageId, table.organizationId),
    doneBy('messages_sender_fk', table.senderId, table.organizationId),
    index('messages_page_idx').on(table.pageId, table.createdAt),
  ],
)

const DELIVERY_STATES = ['pending', 'sending', 'sent', 'failed', 'pruned', 'undelivered'] as const

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
    index('deliveries_due_idx').on(table.nextAttemptAt).where(sql`${table.state} = 'pending'`),
    index('deliveries_lease_idx').on(table.leaseUntil).where(sql`${table.state} = 'sending'`),
    index('deliveries_message_idx').on(table.messageId, table.state),
    check('deliveries_state_check', sql`${table.state} in ('pending', 'sending', 'sent', 'failed', 'pruned', 'undelivered')`),
  ],
)
