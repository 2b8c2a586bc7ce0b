/**
 * Tables the core owns, and the helpers every tenant table is built with. The audit log has no
 * foreign keys on purpose: a record outlives the user, key or project it names.
 *
 * Every tenant table is ready to be distributed by `organization_id` on Citus (docs/scaling.md):
 * its primary key, unique indexes and foreign keys include that column, so a row and everything it
 * points at live on the same shard; a table that cannot be is declared in its plugin's manifest
 * (`placement`) with the reason. tests/architecture/citus.test.ts reads the live schema and holds
 * every table to this.
 */
import { bigint, customType, foreignKey, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid, type PgColumn } from 'drizzle-orm/pg-core'
import { uuidv7 } from './ids'

/** `createdAt`/`updatedAt` columns, spread into tables. */
export const timestamps = {
  createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  updatedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
}

/** A full-text search document (always a generated column; never read or written by the app). */
export const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' })

/** A UUIDv7 primary key (reference tables: organizations). */
export const primaryId = () => uuid().primaryKey().$defaultFn(uuidv7)

/** A tenant row's UUIDv7 id: the primary key with `organization_id`, through `tenantKey`. */
export const rowId = () => uuid().notNull().$defaultFn(uuidv7)

/**
 * The primary key of a tenant table: its own columns, then `organization_id` (the distribution
 * column; last, so a lookup by id alone still uses the index).
 */
export const tenantKey = (table: string, columns: readonly PgColumn[], organizationId: PgColumn) =>
  primaryKey({ name: `${table}_pkey`, columns: [...columns, organizationId] as never })

/**
 * A foreign key to a row of the same organization: `(column, organization_id)` → `(id,
 * organization_id)`, so a row can never point into another tenant. `cascade` (the default): the
 * row goes with its parent; `no action`: the parent cannot go while rows name it (users are
 * deactivated, never deleted; an organization takes all its rows at once).
 */
export const tenantReference = (
  name: string,
  columns: readonly [PgColumn, PgColumn],
  foreignColumns: readonly [PgColumn, PgColumn],
  onDelete: 'cascade' | 'no action' = 'cascade',
) => foreignKey({ name, columns: [...columns], foreignColumns: [...foreignColumns] } as never).onDelete(onDelete)

export const auditLogs = pgTable(
  'audit_logs',
  {
    id: rowId(),
    organizationId: uuid().notNull(),
    occurredAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    actorUserId: uuid(),
    apiKeyId: uuid(),
    /** The OAuth grant whose access token made the change (no foreign key: the grant's plugin may be disabled). */
    grantId: uuid(),
    via: text().notNull(),
    action: text().notNull(),
    resourceType: text().notNull(),
    resourceId: text().notNull(),
    projectId: uuid(),
    changes: jsonb().$type<AuditChanges>(),
    requestId: text(),
  },
  (table) => [
    tenantKey('audit_logs', [table.id], table.organizationId),
    index('audit_logs_organization_idx').on(table.organizationId, table.occurredAt.desc(), table.id.desc()),
    index('audit_logs_project_idx').on(table.projectId, table.occurredAt.desc(), table.id.desc()),
  ],
)

/**
 * How many audit records each scope holds: a project (`scope_id` = its id) or the organization's
 * own records (`scope_id` = the organization's id). Moved with each record, in its statement
 * (src/audit.ts); the audit log's totals read these rows instead of counting records. No foreign
 * key to projects: a deleted project's records stay, and so does their count.
 */
export const auditLogCounts = pgTable(
  'audit_log_counts',
  {
    scopeId: uuid().notNull(),
    organizationId: uuid().notNull(),
    records: integer().notNull(),
  },
  (table) => [tenantKey('audit_log_counts', [table.scopeId], table.organizationId)],
)

export interface AuditChanges {
  before?: Record<string, unknown>
  after?: Record<string, unknown>
}

/**
 * Idempotency-Key records of POST requests, per API key, kept 24 hours: a pending row while the
 * first request runs, then its status and its answer for replays, sealed (src/http/idempotency.ts).
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    apiKeyId: uuid().notNull(),
    organizationId: uuid().notNull(),
    key: text().notNull(),
    requestHash: text().notNull(),
    status: integer(),
    response: jsonb(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [tenantKey('idempotency_keys', [table.apiKeyId, table.key], table.organizationId), index('idempotency_keys_created_idx').on(table.createdAt)],
)

/**
 * The version of everything a list can show, per project (`scope_id` = the project) and per
 * organization (`scope_id` = the organization, for what is not in a project: users, teams, keys).
 * The audit writer advances it in the statement that writes the audit record, so every change
 * advances it in its own transaction (src/audit.ts); list reads key their cached pages on it
 * (src/http/list-cache.ts). Rows are never deleted, so a version never goes back.
 */
export const changeVersions = pgTable(
  'change_versions',
  {
    scopeId: uuid().notNull(),
    organizationId: uuid().notNull(),
    version: bigint({ mode: 'number' }).notNull(),
  },
  (table) => [tenantKey('change_versions', [table.scopeId], table.organizationId)],
)
