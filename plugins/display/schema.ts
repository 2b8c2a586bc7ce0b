/** Display accounts and their daily usage, dashboard pages, their access lists and components. */
import { sql } from 'drizzle-orm'
import { check, date, doublePrecision, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { primaryId, timestamps } from '../../src/schema'
import { organizationReference, userReference, users } from '../auth/schema'

/** One per user: the `dpk_…` key (hash and prefix only) and the daily call limit. */
export const displayAccounts = pgTable(
  'display_accounts',
  {
    userId: uuid()
      .primaryKey()
      .references(() => users.id, { onDelete: 'cascade' }),
    organizationId: organizationReference(),
    keyHash: text().notNull(),
    keyPrefix: text().notNull(),
    dailyLimit: integer().notNull(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    rotatedAt: timestamp({ withTimezone: true, mode: 'date' }),
  },
  (table) => [uniqueIndex('display_accounts_key_hash_unique').on(table.keyHash), check('display_accounts_limit_check', sql`${table.dailyLimit} >= 0`)],
)

/** Calls used per account per UTC day; incremented atomically with the limit check. */
export const displayUsage = pgTable(
  'display_usage',
  {
    userId: uuid()
      .notNull()
      .references(() => displayAccounts.userId, { onDelete: 'cascade' }),
    day: date({ mode: 'string' }).notNull(),
    calls: integer().notNull(),
  },
  (table) => [primaryKey({ columns: [table.userId, table.day] })],
)

export const pages = pgTable(
  'pages',
  {
    id: primaryId(),
    organizationId: organizationReference(),
    /** Used in URLs (`/pages/{name}`) and by `POST /api/message`; unique per organization, any case. */
    name: text().notNull(),
    title: text(),
    createdBy: userReference(),
    ...timestamps,
  },
  (table) => [uniqueIndex('pages_organization_name_unique').on(table.organizationId, sql`lower(${table.name})`)],
)

/** Who may see a page besides its creator and the administrators: users and teams. */
export const pageAccess = pgTable(
  'page_access',
  {
    pageId: uuid()
      .notNull()
      .references(() => pages.id, { onDelete: 'cascade' }),
    principalType: text({ enum: ['user', 'team'] }).notNull(),
    principalId: uuid().notNull(),
    organizationId: organizationReference(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [primaryKey({ columns: [table.pageId, table.principalId] }), index('page_access_principal_idx').on(table.principalId)],
)

export const COMPONENT_TYPES = ['horizontalBox', 'verticalBox', 'barChart', 'lineChart', 'pieChart'] as const

export const components = pgTable(
  'components',
  {
    id: primaryId(),
    organizationId: organizationReference(),
    pageId: uuid()
      .notNull()
      .references(() => pages.id, { onDelete: 'cascade' }),
    type: text({ enum: COMPONENT_TYPES }).notNull(),
    title: text(),
    /** Grid placement: column, row, width and height in grid cells. */
    x: integer().notNull().default(0),
    y: integer().notNull().default(0),
    width: integer().notNull().default(6),
    height: integer().notNull().default(4),
    /** The last accepted `data` of POST /api/component, as posted, and its timestamp (Unix seconds). */
    data: jsonb(),
    dataTimestamp: doublePrecision(),
    ...timestamps,
  },
  (table) => [
    index('components_page_idx').on(table.pageId, table.y, table.x, table.id),
    check('components_type_check', sql`${table.type} in ('horizontalBox', 'verticalBox', 'barChart', 'lineChart', 'pieChart')`),
  ],
)
