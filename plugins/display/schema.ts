/** Display accounts and their daily usage, dashboard pages, their access lists and components. */
import { sql } from 'drizzle-orm'
import { check, date, doublePrecision, index, integer, jsonb, numeric, pgTable, pgView, text, timestamp, uniqueIndex, uuid, type PgColumn } from 'drizzle-orm/pg-core'
import { rowId, tenantKey, tenantReference, timestamps } from '../../src/schema'
import { doneBy, organizationReference, userOfRow } from '../auth/schema'

/** One per user: the `dpk_…` key (hash and prefix only) and the daily call limit. */
export const displayAccounts = pgTable(
  'display_accounts',
  {
    userId: uuid().notNull(),
    organizationId: organizationReference(),
    keyHash: text().notNull(),
    keyPrefix: text().notNull(),
    dailyLimit: integer().notNull(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    rotatedAt: timestamp({ withTimezone: true, mode: 'date' }),
  },
  (table) => [
    tenantKey('display_accounts', [table.userId], table.organizationId),
    userOfRow('display_accounts_user_fk', table.userId, table.organizationId),
    uniqueIndex('display_accounts_key_hash_unique').on(table.keyHash, table.organizationId),
    check('display_accounts_limit_check', sql`${table.dailyLimit} >= 0`),
  ],
)

/** Calls charged per account per UTC day; raised atomically with the limit check. */
export const displayUsage = pgTable(
  'display_usage',
  {
    userId: uuid().notNull(),
    organizationId: organizationReference(),
    day: date({ mode: 'string' }).notNull(),
    calls: integer().notNull(),
    /**
     * `calls` before the statement that last raised it: a grouped statement charges several calls
     * of an account at once and reads here where its first one stood.
     */
    previousCalls: integer().notNull().default(0),
  },
  (table) => [
    tenantKey('display_usage', [table.userId, table.day], table.organizationId),
    tenantReference('display_usage_account_fk', [table.userId, table.organizationId], [displayAccounts.userId, displayAccounts.organizationId]),
  ],
)

export const pages = pgTable(
  'pages',
  {
    id: rowId(),
    organizationId: organizationReference(),
    /** Used in URLs (`/pages/{name}`) and by `POST /api/message`; unique per organization, any case. */
    name: text().notNull(),
    title: text(),
    createdBy: uuid(),
    ...timestamps,
  },
  (table) => [
    tenantKey('pages', [table.id], table.organizationId),
    doneBy('pages_created_by_fk', table.createdBy, table.organizationId),
    uniqueIndex('pages_organization_name_unique').on(table.organizationId, sql`lower(${table.name})`),
  ],
)

/** The page a row belongs to, of the row's organization: deleted with it. */
export const pageOfRow = (name: string, column: PgColumn, organizationId: PgColumn) => tenantReference(name, [column, organizationId], [pages.id, pages.organizationId])

export const PAGE_LEVELS = ['viewer', 'editor'] as const

/** Who may see a page besides its creator and the administrators: users and teams, each with a level. */
export const pageAccess = pgTable(
  'page_access',
  {
    pageId: uuid().notNull(),
    principalType: text({ enum: ['user', 'team'] }).notNull(),
    principalId: uuid().notNull(),
    /** `viewer` sees the page and gets its messages; `editor` also feeds it through the display API. */
    level: text({ enum: PAGE_LEVELS }).notNull().default('viewer'),
    organizationId: organizationReference(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('page_access', [table.pageId, table.principalId], table.organizationId),
    pageOfRow('page_access_page_fk', table.pageId, table.organizationId),
    index('page_access_principal_idx').on(table.principalId),
    check('page_access_level_check', sql`${table.level} in ('viewer', 'editor')`),
  ],
)

export const COMPONENT_TYPES = ['horizontalBox', 'verticalBox', 'barChart', 'lineChart', 'pieChart'] as const

export const components = pgTable(
  'components',
  {
    id: rowId(),
    organizationId: organizationReference(),
    pageId: uuid().notNull(),
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
    /** Rises with every change of data or settings: the version live pages cache the component's SVG under. */
    version: integer().notNull().default(0),
    /**
     * The plugin feeding the component's data instead of display calls (`work`: a work source), and
     * what it is fed from in a few words (`ENG · open bugs`, drawn under the title); null: display
     * calls feed it. A display call to a fed component is 409 componentBound.
     */
    feed: text(),
    feedLabel: text(),
    ...timestamps,
  },
  (table) => [
    tenantKey('components', [table.id], table.organizationId),
    pageOfRow('components_page_fk', table.pageId, table.organizationId),
    index('components_page_idx').on(table.pageId, table.y, table.x, table.id),
    check('components_type_check', sql`${table.type} in ('horizontalBox', 'verticalBox', 'barChart', 'lineChart', 'pieChart')`),
  ],
)

/**
 * Read-only links to a page (`/s/<token>`): anyone holding one sees the live page without
 * signing in, until it expires or is revoked (the row deleted). Only the token's SHA-256 hash
 * and first characters are stored, as for keys.
 */
export const pageShareLinks = pgTable(
  'page_share_links',
  {
    id: rowId(),
    organizationId: organizationReference(),
    pageId: uuid().notNull(),
    tokenHash: text().notNull(),
    tokenPrefix: text().notNull(),
    createdBy: uuid(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    expiresAt: timestamp({ withTimezone: true, mode: 'date' }),
  },
  (table) => [
    tenantKey('page_share_links', [table.id], table.organizationId),
    pageOfRow('page_share_links_page_fk', table.pageId, table.organizationId),
    doneBy('page_share_links_created_by_fk', table.createdBy, table.organizationId),
    uniqueIndex('page_share_links_token_unique').on(table.tokenHash, table.organizationId),
    index('page_share_links_page_idx').on(table.pageId),
  ],
)

// ---- read models: what other plugins' SQL may read of these tables --------------------------

/**
 * Who sees a page (and so receives its messages), one row per page and user: its creator, users
 * on its access list, and members of teams on it, at any level. Push addresses messages with it.
 */
export const pageViewers = pgView('page_viewers', {
  pageId: uuid().notNull(),
  userId: uuid().notNull(),
  organizationId: uuid().notNull(),
}).as(
  sql`select id as page_id, created_by as user_id, organization_id from pages where created_by is not null
    union select page_id, principal_id, organization_id from page_access where principal_type = 'user'
    union select pa.page_id, tm.user_id, pa.organization_id from page_access pa join team_memberships tm on tm.team_id = pa.principal_id and tm.organization_id = pa.organization_id where pa.principal_type = 'team'`,
)

/** A text that reads as a plain decimal once spaces, grouping commas and `%` are dropped ("1,204", "93.5 %"). */
const DECIMAL = `'^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)$'`
/** An x a numeric axis places (as the live page does; an exponent of at most 3 digits, which numeric holds). */
const AXIS_NUMBER = `'^\\s*[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]{1,3})?\\s*$'`

/**
 * Each component's number, as alerts compare it: a box's value (the first of its texts that is a
 * number: a horizontal box's middle, right, left text; a vertical box's bottom, top text), a line
 * chart's last point (by x on a numeric axis, else as posted), a bar or pie chart's total; null
 * without data or without a number. `updated_at` is when its data was last stamped (the display
 * call's `timestamp`; settings changes do not move it), null before any data; its page's name.
 */
export const componentValues = pgView('component_values', {
  organizationId: uuid().notNull(),
  pageId: uuid().notNull(),
  pageName: text().notNull(),
  componentId: uuid().notNull(),
  title: text(),
  type: text().notNull(),
  value: numeric(),
  updatedAt: timestamp({ withTimezone: true, mode: 'date' }),
}).as(
  sql.raw(`select c.organization_id, c.page_id, p.name as page_name, c.id as component_id, c.title, c.type, v.value, to_timestamp(c.data_timestamp) as updated_at
    from components c join pages p on p.id = c.page_id and p.organization_id = c.organization_id cross join lateral (
      select case
        when c.type in ('horizontalBox', 'verticalBox') then (
          select t.plain::numeric
          from unnest(array[c.data->'middleText'->>'value', c.data->'bottomText'->>'value', c.data->'rightText'->>'value', c.data->'topText'->>'value', c.data->'leftText'->>'value']) with ordinality as b(raw, k)
            cross join lateral (select regexp_replace(b.raw, '[[:space:],%]', '', 'g') as plain) t
          where t.plain ~ ${DECIMAL} order by b.k limit 1)
        when c.type = 'lineChart' then (
          select (p.point->>'y')::numeric
          from (select coalesce((c.data->>'xNumber')::boolean, false) and not exists (
              select 1 from jsonb_array_elements(c.data->'points') q(point) where not (q.point->>'x' ~ ${AXIS_NUMBER})) as numeric_axis) a,
            jsonb_array_elements(c.data->'points') with ordinality as p(point, k)
          order by case when a.numeric_axis then (p.point->>'x')::numeric end desc nulls last, p.k desc
          limit 1)
        else (select sum((p.point->>'y')::numeric) from jsonb_array_elements(c.data->'points') p(point))
      end as value
    ) v`),
)
