/**
 * Tables the core owns. The audit log has no foreign keys on purpose: a record outlives the
 * user, key or project it names.
 */
import { customType, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { uuidv7 } from './ids'

/** `createdAt`/`updatedAt` columns, spread into tables. */
export const timestamps = {
  createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  updatedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
}

/** A full-text search document (always a generated column; never read or written by the app). */
export const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' })

/** A UUIDv7 primary key. */
export const primaryId = () => uuid().primaryKey().$defaultFn(uuidv7)

export const auditLogs = pgTable(
  'audit_logs',
  {
    id: primaryId(),
    organizationId: uuid().notNull(),
    occurredAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    actorUserId: uuid(),
    apiKeyId: uuid(),
    via: text().notNull(),
    action: text().notNull(),
    resourceType: text().notNull(),
    resourceId: text().notNull(),
    projectId: uuid(),
    changes: jsonb().$type<AuditChanges>(),
    requestId: text(),
  },
  (table) => [
    index('audit_logs_organization_idx').on(table.organizationId, table.occurredAt.desc(), table.id.desc()),
    index('audit_logs_project_idx').on(table.projectId, table.occurredAt.desc(), table.id.desc()),
  ],
)

export interface AuditChanges {
  before?: Record<string, unknown>
  after?: Record<string, unknown>
}

/**
 * Idempotency-Key records of POST requests, per API key, kept 24 hours: a pending row while the
 * first request runs, then its status and response for replays.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    apiKeyId: uuid().notNull(),
    key: text().notNull(),
    requestHash: text().notNull(),
    status: integer(),
    response: jsonb(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [primaryKey({ columns: [table.apiKeyId, table.key] }), index('idempotency_keys_created_idx').on(table.createdAt)],
)
