/**
 * The order of a list and its cursors: the ORDER BY of an order and the order keys a page selects,
 * as Drizzle fragments, and cursors that continue a list at any depth for what its first page
 * costs (a keyset condition after the last row's keys, which the order's index starts its scan at).
 */
import { sql, type SQL } from 'drizzle-orm'
import { isUuid } from '../ids'
import { param } from '../statements'
import { ValidationFailure } from '../validate'
import { isCalendarDate } from './models'

/**
 * A column of the list's statement: its text (`w.status`, no parameters) or a bound fragment (a
 * subquery naming its organization).
 */
export type ListColumn = string | SQL

/** A column the list can be sorted by; `cast` is its SQL type, for cursor values given back as text. */
export interface SortKey {
  column: ListColumn
  cast: 'int' | 'numeric' | 'timestamptz' | 'date' | 'uuid' | 'text'
  nullable?: boolean
}

/** One key of an ORDER BY. */
export interface OrderTerm {
  key: SortKey
  descending: boolean
}

/** A column as a fragment. */
export const columnOf = (column: ListColumn): SQL => (typeof column === 'string' ? sql.raw(column) : column)

/** `order by …` of an order (PostgreSQL's default null placement: nulls sort as the largest value). */
export const orderBy = (order: readonly OrderTerm[]): SQL =>
  sql.join(
    order.map((term) => (term.descending ? sql`${columnOf(term.key.column)} desc` : columnOf(term.key.column))),
    sql`, `,
  )

/** The order's keys selected as text (`"k0"`, `"k1"`, …): what a cursor carries of the last row. */
export const orderKeysSelected = (order: readonly OrderTerm[]): SQL =>
  sql.join(
    order.map((term, index) => sql`${columnOf(term.key.column)}::text as ${sql.raw(`"k${index}"`)}`),
    sql`, `,
  )

/** A cursor is at most this long (a list's keys are a few columns). */
export const MAX_CURSOR_LENGTH = 1024

/** The cursor after a row whose order keys (as text) are `keys`. */
export const encodeCursor = (identity: string, keys: readonly (string | null)[]) => Buffer.from(JSON.stringify([identity, ...keys])).toString('base64url')

const invalidCursor = (message = 'Not a cursor of this list (with these filters and sort); take one from meta.nextCursor or the next link.') =>
  new ValidationFailure([{ code: 'BAD_REQUEST', field: 'cursor', message }])

/** PostgreSQL's `integer`: what a value bound `::int` must fit. */
const INT_MIN = -(2 ** 31)
const INT_MAX = 2 ** 31 - 1

/** A timestamptz as PostgreSQL writes it as text (`2026-11-21 23:41:23.422952+00`). */
const TIMESTAMP_TEXT = /^(\d{4}-\d{2}-\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?[+-](\d{2})(?::(\d{2}))?$/

/** A real instant: a calendar day of years 0001..9999, a time of day, an offset PostgreSQL takes (under 16 hours). */
function isTimestampText(value: string): boolean {
  const match = TIMESTAMP_TEXT.exec(value)
  if (!match || !isCalendarDate(match[1]!)) return false
  const [hour, minute, second, offsetHours, offsetMinutes] = match.slice(2).map((part) => Number(part ?? 0)) as [number, number, number, number, number]
  return hour <= 23 && minute <= 59 && second <= 59 && offsetHours <= 15 && offsetMinutes <= 59
}

/**
 * Whether a cursor's key is a value its column's type holds. A cursor comes back from the client,
 * so it may be forged: a value the database would refuse when bound (an integer past int32, day
 * 30 of February, year 0) must be refused here as a bad cursor, not reach the statement.
 */
const KEY_FORMATS: Record<SortKey['cast'], (value: string) => boolean> = {
  int: (value) => /^-?\d{1,10}$/.test(value) && Number(value) >= INT_MIN && Number(value) <= INT_MAX,
  // A number value is a double written out in full: 5e-324 has 324 decimals.
  numeric: (value) => /^-?\d{1,30}(\.\d{1,400})?$/.test(value),
  timestamptz: isTimestampText,
  date: isCalendarDate,
  uuid: isUuid,
  // PostgreSQL text holds no NUL character.
  text: (value) => value.length <= 1000 && !value.includes('\u0000'),
}

/** The order keys a cursor continues after; 400 naming `cursor` for anything but this list's own. */
export function decodeCursor(cursor: string, identity: string, order: readonly OrderTerm[]): (string | null)[] {
  if (cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalidCursor()
  let decoded: unknown
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    throw invalidCursor()
  }
  if (!Array.isArray(decoded) || decoded[0] !== identity || decoded.length !== order.length + 1) throw invalidCursor()
  const keys = decoded.slice(1) as unknown[]
  keys.forEach((value, index) => {
    const { key } = order[index]!
    if (value === null ? !key.nullable : typeof value !== 'string' || !KEY_FORMATS[key.cast](value)) throw invalidCursor()
  })
  return keys as (string | null)[]
}

/**
 * The condition "after the row with order keys `keys`" in `order`, with nulls as the largest
 * values (PostgreSQL's default). Keys of one direction and no nulls compare as one row value,
 * which a btree index on the order's columns starts its scan at; otherwise the expansion
 * `k1 > v1 or (k1 = v1 and (…))` is led by the bound `k1 >= v1` that an index can use.
 */
export function afterCondition(order: readonly OrderTerm[], keys: readonly (string | null)[]): SQL {
  const bound = (index: number) => sql`${param(keys[index])}::${sql.raw(order[index]!.key.cast)}`
  const column = (index: number) => columnOf(order[index]!.key.column)
  const uniform = order.every((term) => term.descending === order[0]!.descending && !term.key.nullable)
  if (uniform) {
    const columns = sql.join(order.map((_, index) => column(index)), sql`, `)
    const values = sql.join(order.map((_, index) => bound(index)), sql`, `)
    return sql`(${columns}) ${sql.raw(order[0]!.descending ? '<' : '>')} (${values})`
  }
  const expand = (index: number): SQL => {
    const { key, descending } = order[index]!
    const value = keys[index]
    const it = column(index)
    let beyond: SQL
    let equal: SQL
    if (value === null) {
      // Nulls are largest: nothing is beyond null ascending; descending, every non-null is.
      beyond = descending ? sql`${it} is not null` : sql`false`
      equal = sql`${it} is null`
    } else {
      beyond = descending ? sql`${it} < ${bound(index)}` : key.nullable ? sql`(${it} > ${bound(index)} or ${it} is null)` : sql`${it} > ${bound(index)}`
      equal = sql`${it} = ${bound(index)}`
    }
    if (index === order.length - 1) return beyond
    return sql`(${beyond} or (${equal} and ${expand(index + 1)}))`
  }
  const first = order[0]!
  const lead = !first.key.nullable && keys[0] !== null ? sql`${column(0)} ${sql.raw(first.descending ? '<=' : '>=')} ${bound(0)} and ` : sql``
  return sql`${lead}${expand(0)}`
}

/** The keys a page request's cursor continues after (undefined without a cursor); 400 naming `cursor` for any other list's. */
export const readCursor = (request: { cursor?: string }, identity: string, order: readonly OrderTerm[]) =>
  request.cursor === undefined ? undefined : decodeCursor(request.cursor, identity, order)
