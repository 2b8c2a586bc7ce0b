/**
 * Webhooks: subscriptions, the events recorded for them (in the transaction of each change), one
 * delivery per webhook and event (the durable outbox workers drain), the per-project sequence
 * that orders them, and the key that seals secrets when none is configured.
 */
import { sql } from 'drizzle-orm'
import { bigint, boolean, check, index, integer, json, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { primaryId, rowId, tenantKey, timestamps } from '../../src/schema'
import { doneBy, organizationReference } from '../auth/schema'

export const webhooks = pgTable(
  'webhooks',
  {
    id: rowId(),
    organizationId: organizationReference(),
    url: text().notNull(),
    description: text(),
    /** Event types (`work_item.created`…) or `*`. */
    events: text().array().notNull(),
    /** Only this project's events; null: every project the creator can see. Not a foreign key: the webhook outlives its project (it receives `project.deleted`). */
    projectId: uuid(),
    createdBy: uuid().notNull(),
    enabled: boolean().notNull().default(true),
    /** Why it was disabled by the service (`failing`); null when enabled or disabled by a person. */
    disabledReason: text(),
    /** The signing secret, sealed (AES-256-GCM, see secrets.ts): `v1.<key id>.<iv>.<ciphertext+tag>`. */
    secretSealed: text().notNull(),
    /** After a rotation, the previous secret still signs (a second signature) until `previousSecretExpiresAt`. */
    previousSecretSealed: text(),
    previousSecretExpiresAt: timestamp({ withTimezone: true, mode: 'date' }),
    lastSuccessAt: timestamp({ withTimezone: true, mode: 'date' }),
    /** The first failure since the last success; a webhook failing for `failAfterHours` is disabled. */
    failingSince: timestamp({ withTimezone: true, mode: 'date' }),
    ...timestamps,
  },
  (table) => [
    tenantKey('webhooks', [table.id], table.organizationId),
    doneBy('webhooks_created_by_fk', table.createdBy, table.organizationId),
    index('webhooks_organization_idx').on(table.organizationId, table.createdAt, table.id),
    check('webhooks_disabled_reason_check', sql`${table.disabledReason} is null or ${table.disabledReason} in ('failing')`),
  ],
)

/** One counter per organization and project (the nil UUID for events of no project): taken in each change's transaction, it orders events in commit order. */
export const webhookSequences = pgTable(
  'webhook_sequences',
  {
    projectKey: uuid().notNull(),
    organizationId: organizationReference(),
    lastSeq: bigint({ mode: 'number' }).notNull(),
  },
  (table) => [tenantKey('webhook_sequences', [table.projectKey], table.organizationId)],
)

export const webhookEvents = pgTable(
  'webhook_events',
  {
    id: rowId(),
    organizationId: organizationReference(),
    projectId: uuid(),
    /** Position in its project's sequence (commit order). */
    seq: bigint({ mode: 'number' }).notNull(),
    type: text().notNull(),
    occurredAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    actorUserId: uuid(),
    via: text().notNull(),
    /** The resource as API v1 returns it (after the change; before it for deletes). */
    data: json().notNull(),
    /** An update's old values of the fields that changed, or null. */
    previous: json(),
  },
  (table) => [tenantKey('webhook_events', [table.id], table.organizationId), index('webhook_events_occurred_idx').on(table.occurredAt)],
)

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const

/**
 * Written five at a time on a hot write path (one per matching webhook and change), so it carries
 * no foreign keys (each is a trigger per row): a webhook's deliveries are deleted with it by the
 * service, and the hourly upkeep removes old ones and any a deleted organization left behind.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: rowId(),
    /** The webhook's organization (every tenant row carries it: a distribution key). */
    organizationId: uuid().notNull(),
    webhookId: uuid().notNull(),
    eventId: uuid().notNull(),
    /** The event's project, or the nil UUID: with the webhook, the stream deliveries keep order in. */
    projectKey: uuid().notNull(),
    /** The event's position in its project's sequence: deliveries of a stream go out in this order. */
    seq: bigint({ mode: 'number' }).notNull(),
    /** Set when its project was deleted and the webhook's creator could see it then: it still goes out (with the `project.deleted`). */
    granted: boolean().notNull().default(false),
    status: text({ enum: DELIVERY_STATUSES }).notNull().default('pending'),
    attempts: integer().notNull().default(0),
    nextAttemptAt: timestamp({ withTimezone: true, mode: 'date' }).defaultNow(),
    /** While a worker holds it: until when (and which instance). */
    leaseUntil: timestamp({ withTimezone: true, mode: 'date' }),
    leasedBy: text(),
    firstAttemptAt: timestamp({ withTimezone: true, mode: 'date' }),
    lastAttemptAt: timestamp({ withTimezone: true, mode: 'date' }),
    lastResponseStatus: integer(),
    lastDurationMs: integer(),
    lastError: text(),
    /** The start of the last response's body (at most 2 KiB of the 64 KiB read). */
    lastResponseBody: text(),
    deliveredAt: timestamp({ withTimezone: true, mode: 'date' }),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('webhook_deliveries', [table.id], table.organizationId),
    index('webhook_deliveries_stream_idx').on(table.webhookId, table.projectKey, table.seq).where(sql`${table.status} = 'pending'`),
    index('webhook_deliveries_due_idx').on(table.nextAttemptAt).where(sql`${table.status} = 'pending'`),
    index('webhook_deliveries_list_idx').on(table.webhookId, table.createdAt.desc(), table.id.desc()),
    check('webhook_deliveries_status_check', sql`${table.status} in ('pending', 'succeeded', 'failed')`),
  ],
)

/** The key that seals secrets when `webhooks.encryptionKey` is not configured (generated once; see docs/api.md, Webhooks). */
export const webhookKeys = pgTable('webhook_keys', {
  id: primaryId(),
  key: text().notNull(),
  createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
})
