/**
 * Hand-written SQL for hot reads. Drizzle's query builder costs 100+ µs of CPU per query to
 * build and map (measured: 1.1k vs 2.5k list queries/s on one connection pool); the paths every
 * client hits most run constant SQL text with parameters instead, shaped for the API.
 */
import { sql, type SQL } from 'drizzle-orm'
import type { Executor } from './db'
import { pageMeta, type PageRequest } from './http/pagination'
import { Page, PageText } from './http/answer'
import { afterCondition, columnOf, encodeCursor, orderBy, orderKeysSelected, type ListColumn, type OrderTerm } from './http/list-cursors'
import { runQuery } from './statements'

/**
 * A timestamptz selected as text (every connection runs in UTC: `2026-11-21 23:41:23.422952+00`)
 * written as JavaScript's `toISOString()` does (`2026-11-21T23:41:23.422Z`). String slicing:
 * formatting in SQL with to_char cost the database 40% of its throughput on a 100-row page.
 */
export function isoFromText(text: string): string {
  let end = 19
  if (text[19] === '.') {
    end = 20
    while (end < text.length && text.charCodeAt(end) >= 48 && text.charCodeAt(end) <= 57) end++
  }
  // Any zone but UTC (a connection set up differently) goes the slow, general way.
  const zone = text.slice(end)
  if (zone !== '+00') return new Date(`${text.slice(0, 10)}T${text.slice(11, end)}${zone.length === 3 ? `${zone}:00` : zone}`).toISOString()
  const fraction = end > 20 ? text.slice(20, Math.min(end, 23)).padEnd(3, '0') : '000'
  return `${text.slice(0, 10)}T${text.slice(11, 19)}.${fraction}Z`
}

/** A timestamp as the API shows it: from a Date (a row Drizzle read) or from its text (a row read as text). */
export const isoOf = (value: Date | string): string => (typeof value === 'string' ? isoFromText(value) : value.toISOString())

/** A row read as text with `createdAt` / `updatedAt`: both rewritten, in place, as ISO timestamps. */
export function withIsoTimestamps<T extends { createdAt: string; updatedAt: string }>(row: T): T {
  row.createdAt = isoFromText(row.createdAt)
  row.updatedAt = isoFromText(row.updatedAt)
  return row
}

/**
 * The `updatedAt` of a row being changed: now, and at least a millisecond past `previous` (its
 * value as read under the row's lock; milliseconds, so one past it is past the stored
 * microseconds too), so two changes within one millisecond still give the row (and its ETag,
 * which carries `updatedAt` in milliseconds) a new version. Computed from the value read, not the
 * column: Citus refuses an UPDATE that calls a STABLE function (timestamptz + interval) on a column.
 */
export const nextUpdatedAt = (previous: Date) => sql<Date>`greatest(now(), ${new Date(previous.getTime() + 1).toISOString()}::timestamptz)`

/** A list statement of `selectListPage`: its parts as bound fragments, the list's order and query, and its total. */
export interface ListStatement {
  /** The select list, e.g. `w.id, w.title` (the order keys and the total are added). */
  columns: ListColumn
  /** The FROM clause's contents, e.g. `work_items w`. */
  from: ListColumn
  /** Conditions to AND together (the list's scope first, then its filters). */
  conditions: SQL[]
  order: OrderTerm[]
  /** A scalar statement of the list's exact total (a maintained count, or a count). */
  total: SQL
  /** The list's cursor identity (`listIdentity`). */
  identity: string
  /** The order keys of the row the page continues after (`readCursor`), for a page read by cursor. */
  after?: (string | null)[]
}

/** The LIMIT and OFFSET of a page read by number: one row more than the page, to know whether a next page exists. */
export const pageWindow = ({ page, size }: PageRequest) => ({ limit: size + 1, offset: page * size })

/**
 * The statement of a list page: the rows, their order keys (`k0`…) and the list's total, `limit`
 * rows from `offset` (none for a page read by cursor). `limit` and `offset` are values, or
 * placeholders for a page statement compiled once (see `selectListPage`'s `byNumber`).
 */
export function composeListPage(statement: Omit<ListStatement, 'identity'>, limit: unknown, offset?: unknown, withOrderValues = false): SQL {
  const { columns, from, conditions, order, total, after } = statement
  const where = sql.join(after ? [...conditions, afterCondition(order, after)] : conditions, sql` and `)
  // `withOrderValues` (selectListPageText): the order's keys as their own values (`"o0"`…), not as
  // text: only the page's last row's are written as text, by the statement around this one.
  const keys = withOrderValues ? sql.join(order.map((term, index) => sql`${columnOf(term.key.column)} as ${sql.raw(`"o${index}"`)}`), sql`, `) : orderKeysSelected(order)
  return sql`select ${columnOf(columns)}, ${keys}, (${total}) as total from ${columnOf(from)}
      where ${where} order by ${orderBy(order)} limit ${limit}${offset === undefined ? sql`` : sql` offset ${offset}`}`
}

/** The statement `selectListPage` runs for `request`, its values bound. */
export function listPageQuery(statement: ListStatement, request: PageRequest): SQL {
  const { limit, offset } = pageWindow(request)
  return composeListPage(statement, limit, statement.after === undefined ? offset : undefined)
}

/**
 * The total of a page that read no row: none on a first page (nothing to count), else the list's
 * total counted alone. The conditions stay in that statement (never run: `or true`), as in the
 * page's statement.
 */
async function totalWithoutRows(executor: Executor, statement: ListStatement, request: PageRequest): Promise<number> {
  if (statement.after === undefined && request.page === 0) return 0
  const { from, conditions, total } = statement
  const [row] = await runQuery<{ total: string | number }>(executor, sql`select (${total}) as total where exists (select from ${columnOf(from)} where ${sql.join(conditions, sql` and `)}) or true`)
  return Number(row?.total ?? 0)
}

/** A page's meta: a page read by cursor has no index. */
function listPageMeta(statement: ListStatement, request: PageRequest, total: number, nextCursor: string | null) {
  const meta = pageMeta(request, total)
  return statement.after === undefined ? { ...meta, nextCursor } : { size: meta.size, totalItems: meta.totalItems, totalPages: meta.totalPages, nextCursor }
}

/**
 * A page of a list that takes cursors: `size` rows after the cursor's row (a keyset condition:
 * the same cost at any depth), or at `page`'s offset. One statement reads the rows, the order
 * keys of the last one (`meta.nextCursor`, with one row more read to know a next page exists) and
 * the total; only a page with no rows runs the total alone. `byNumber`, when given, reads a page
 * by number instead, with the same statement compiled once (`composeListPage` with the
 * placeholders `limit` and `offset`), given their values.
 */
export async function selectListPage<Row, Item>(
  executor: Executor,
  statement: ListStatement,
  request: PageRequest,
  toItem: (row: Row) => Item,
  byNumber?: (window: { limit: number; offset: number }) => Promise<Record<string, unknown>[]>,
): Promise<Page<Item>> {
  const { order, identity, after } = statement
  const rows = after === undefined && byNumber ? await byNumber(pageWindow(request)) : await runQuery<Record<string, unknown>>(executor, listPageQuery(statement, request))
  const more = rows.length > request.size
  if (more) rows.pop()
  const last = rows.at(-1)
  const nextCursor = more && last ? encodeCursor(identity, order.map((_, index) => last[`k${index}`] as string | null)) : null
  const total = rows.length ? Number(rows[0]!.total) : await totalWithoutRows(executor, statement, request)
  for (const row of rows) {
    delete row.total
    for (let index = 0; index < order.length; index++) delete row[`k${index}`]
  }
  return new Page(rows.map((row) => toItem(row as Row)), listPageMeta(statement, request, total, nextCursor))
}

/**
 * How the database writes a list's items as JSON (selectListPageText): each item's properties in
 * the API's order (the select list's aliases), and which of them are timestamps, written as the
 * API writes them (`toISOString()`: milliseconds, `Z`). Every other value is written as
 * PostgreSQL's JSON writes its type (a json column as it is).
 */
export interface ListJson {
  properties: readonly string[]
  timestamps: readonly string[]
}

/**
 * A timestamptz as `toISOString()` writes it (milliseconds truncated, as isoFromText truncates).
 * The format is a bound value: the statement's text then has no `:` outside casts, so pgbench can
 * run it as it is (bench/lib/pgbench.ts: pgbench reads `:name` anywhere as a variable).
 */
const isoInSql = (column: SQL) => sql`to_char(${column} at time zone 'UTC', ${'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'}::text)`

/**
 * The page `selectListPage` reads, with its items written as JSON by the database: one statement
 * answers the items' JSON array as one text, how many rows it read (one more than the page means
 * a next page), the total and the order keys of the page's last row. The page's statement keeps
 * its ORDER BY and LIMIT (a top-N sort where no index gives the order); around it, each of its at
 * most `size + 1` rows is numbered by the same order over the order's values, and the aggregate
 * follows those numbers: the text's order is the page's, by definition rather than by chance.
 * The service decodes one text instead of every value of every row and encodes nothing: the list
 * cache keeps that text (src/http/list-cache.ts).
 */
export async function selectListPageText(executor: Executor, statement: ListStatement, request: PageRequest, json: ListJson): Promise<PageText> {
  const { order, identity } = statement
  const [row] = await runQuery<Record<string, string | number | null>>(executor, listPageTextQuery(statement, request, json))
  const size = request.size
  const count = Number(row?.count ?? 0)
  const nextCursor = count > size ? encodeCursor(identity, order.map((_, index) => row![`k${index}`] as string | null)) : null
  const total = count ? Number(row!.total) : await totalWithoutRows(executor, statement, request)
  return new PageText(`[${(row?.data as string | null) ?? ''}]`, listPageMeta(statement, request, total, nextCursor))
}

/** The statement `selectListPageText` runs for `request`, its values bound. */
export function listPageTextQuery(statement: ListStatement, request: PageRequest, json: ListJson): SQL {
  const { order, after } = statement
  const { limit, offset } = pageWindow(request)
  const size = request.size
  const timestamps = new Set(json.timestamps)
  const properties = json.properties.map((name) => {
    const column = sql.raw(`q."${name}"`)
    return timestamps.has(name) ? sql`${isoInSql(column)} as ${sql.raw(`"${name}"`)}` : column
  })
  const places = sql.join(order.map((term, index) => sql.raw(`p."o${index}"${term.descending ? ' desc' : ''}`)), sql`, `)
  // The last row's keys as the cursor carries them (`::text`, as orderKeysSelected writes them), of that row only.
  const keys = order.map((_, index) => sql`, max(q.${sql.raw(`"o${index}"`)}::text) filter (where q.n = ${size}) as ${sql.raw(`"k${index}"`)}`)
  return sql`select string_agg(row_to_json(r)::text, ',' order by q.n) filter (where q.n <= ${size}) as data, count(*)::int as count, max(q.total) as total${sql.join(keys, sql``)}
      from (select p.*, row_number() over (order by ${places}) as n from (${composeListPage(statement, limit, after === undefined ? offset : undefined, true)}) p) q
      cross join lateral (select ${sql.join(properties, sql`, `)}) r`
}
