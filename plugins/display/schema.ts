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

export const PAGE_LEVELS = ['viewer', 'editor'] as const

/** Who may see a page besides its creator and the administrators: users and teams, each with a level. */
export const pageAccess = pgTable(
  'page_access',
  {
    pageId: uuid()
      .notNull()
      .references(() => pages.id, { onDelete: 'cascade' }),
    principalType: text({ enum: ['user', 'team'] }).notNull(),
    principalId: uuid().notNull(),
    /** `viewer` sees the page and gets its messages; `editor` also feeds it through the display API. */
    level: text({ enum: PAGE_LEVELS }).notNull().default('viewer'),
    organizationId: organizationReference(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    primaryKey({ columns: [table.pageId, table.principalId] }),
    index('page_access_principal_idx').on(table.principalId),
    check('page_access_level_check', sql`${table.level} in ('viewer', 'editor')`),
  ],
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
    /** Rises with every change of data or settings: the version live pages cache the component's SVG under. */
    version: integer().notNull().default(0),
    ...timestamps,
  },
  (table) => [
    index('components_page_idx').on(table.pageId, table.y, table.x, table.id),
    check('components_type_check', sql`${table.type} in ('horizontalBox', 'verticalBox', 'barChart', 'lineChart', 'pieChart')`),
  ],
)

// ---- SQL shared by the display API's calls (component updates here, messages in `push`) ----

/**
 * The first CTEs of every display API call: `account` (a live key of an active user) and `counted`
 * (this call counted, unless the day's limit is used up: the row update is the check). $1 key hash.
 */
export const DISPLAY_CALL = `account as (
    select a.user_id, a.daily_limit, u.organization_id, u.role
    from display_accounts a join users u on u.id = a.user_id
    where a.key_hash = $1 and u.status = 'active'
  ),
  counted as (
    insert into display_usage (user_id, day, calls)
    select user_id, (now() at time zone 'utc')::date, 1 from account where daily_limit > 0
    on conflict (user_id, day) do update set calls = display_usage.calls + 1
      where display_usage.calls < (select daily_limit from account)
    returning calls
  )`

/** The usage columns of a display call's answer (account alias `a`). */
export const DISPLAY_USAGE = `a.user_id as "userId", a.daily_limit as "dailyLimit", (select calls from counted) as calls,
    (select calls from display_usage where user_id = a.user_id and day = (now() at time zone 'utc')::date) as "callsBefore"`

/** The calling user as the one-row `a` that MAY_USE_PAGE reads, for a FROM list ($1 user, $2 organization, $3 role). */
export const ACTOR = `(select $1::uuid as user_id, $2::uuid as organization_id, $3::text as role) a`
/** ACTOR's parameters ($1..$3) for an API v1 actor. */
export const actorParameters = (actor: { userId: string; organizationId: string; role: string }) => [actor.userId, actor.organizationId, actor.role]

/** An access-list entry `pa` that names the user `a` or one of their teams. */
const NAMES_USER = '(pa.principal_id = a.user_id or pa.principal_id in (select tm.team_id from team_members tm where tm.user_id = a.user_id))'

/** Pages the account's user may see: creator, administrators, or the access list (user or team) at any level. Alias `p`, account `a` (DISPLAY_CALL's `account`, or ACTOR). */
export const MAY_USE_PAGE = `p.organization_id = a.organization_id and (
    a.role in ('administrator', 'superadministrator') or p.created_by = a.user_id
    or exists (select 1 from page_access pa where pa.page_id = p.id and ${NAMES_USER}))`

/** Of the pages MAY_USE_PAGE admits, those the user may feed (display API): creator, administrators, or an `editor` entry. */
export const MAY_EDIT_PAGE = `(a.role in ('administrator', 'superadministrator') or p.created_by = a.user_id
    or exists (select 1 from page_access pa where pa.page_id = p.id and pa.level = 'editor' and ${NAMES_USER}))`

