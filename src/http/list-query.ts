/**
 * Filters, sort and cursors of a list (growth within one project): one grammar for REST
 * query parameters and MCP arguments, turned into SQL conditions and an ORDER BY over the list's
 * own columns, and cursors that continue a list at any depth for what its first page costs.
 *
 * Grammar: `status=todo,in_progress` (any of), `assigneeId=<uuid>|none`, `priority=gte:2`,
 * `updatedAt=gte:2026-11-01T00:00:00Z,lt:2026-12-01T00:00:00Z` (a comma list of terms; `eq:`
 * terms, or bare values, are any-of; range terms all hold), `sort=-updatedAt,priority`.
 * Operators `eq gt gte lt lte` apply to integers and dates.
 */
import { createHash } from 'node:crypto'
import { t, type TSchema } from 'elysia'
import { isUuid } from '../ids'
import { ValidationFailure } from '../validate'
import type { ErrorItem } from './errors'
import { isCalendarDate, parseDateTime } from './models'

/** How a filter's values are read and compared. */
export type FilterType =
  | { type: 'enum'; values: readonly string[] }
  | { type: 'uuid'; none?: boolean; /** Matches when any of these columns holds the id (instead of `column`). */ anyColumn?: readonly string[] }
  | { type: 'integer'; minimum: number; maximum: number }
  | { type: 'timestamp' }
  | { type: 'date'; none?: boolean }
  /** Exact strings, any of (label names, text custom fields); `aliases` maps other accepted spellings (an option's name) to the stored value. */
  | { type: 'text'; aliases?: Readonly<Record<string, string>> }
  /** Decimal numbers with the integer operators (number custom fields). */
  | { type: 'number' }
  /** Option ids (or, through `aliases`, names) of a `uuid[]` column: rows holding any of them (select custom fields). */
  | { type: 'options'; values: readonly string[]; aliases: Readonly<Record<string, string>> }

export type Filter = FilterType & {
  column: string
  description: string
  /**
   * Wraps the filter's condition over `column` when the column is not the list row's own, e.g. a
   * value in another table: `w.id in (select … where … and ${condition})`.
   */
  within?: (condition: string) => string
}

/** A column the list can be sorted by; `cast` is its SQL type, for cursor values given back as text. */
export interface SortKey {
  column: string
  cast: 'int' | 'numeric' | 'timestamptz' | 'date' | 'uuid' | 'text'
  nullable?: boolean
}

export interface ListShape {
  /** A name for the list (part of its cursors' identity). */
  name: string
  filters: Readonly<Record<string, Filter>>
  sorts: Readonly<Record<string, SortKey>>
  /**
   * The order without `sort`: sort keys, ascending, or descending with a `-` before the key as in
   * `sort` (a newest-first list); the unique tiebreaker follows in the last key's direction.
   */
  defaultOrder: readonly string[]
  /** The unique column every order ends with (ascending, or descending after a descending key). */
  tiebreaker: SortKey
}

/** One key of an ORDER BY. */
export interface OrderTerm {
  key: SortKey
  descending: boolean
}

/** Parameters of a statement under construction, numbered as they are bound. */
export class Parameters {
  readonly values: unknown[]

  constructor(initial: unknown[] = []) {
    this.values = [...initial]
  }

  /** `$n` for `value` (with `::cast` when given). */
  bind(value: unknown, cast?: string): string {
    return `$${this.values.push(value)}${cast ? `::${cast}` : ''}`
  }
}

/** What a list request asked for, parsed: its conditions, its order, and its identity. */
export interface ListQuery {
  /** SQL conditions over the list's columns (each bound into `parameters`), to AND together. */
  conditions: string[]
  /** Filter values by key as parsed (e.g. the statuses asked for), for maintained counts. */
  values: Readonly<Record<string, ParsedFilter>>
  order: OrderTerm[]
  /** Canonical text of filters and sort: a cache key part and a cursor's list identity. */
  canonical: string
}

export interface ParsedFilter {
  /** Any-of values (enum values, eq terms; `null` stands for `none`). */
  anyOf: (string | null)[]
  /** Range terms that must all hold. */
  ranges: { operator: 'gt' | 'gte' | 'lt' | 'lte'; value: string }[]
}

const OPERATORS = { eq: '=', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const
type Operator = keyof typeof OPERATORS
/** Bounds what one parameter can cost: terms per filter, characters per value. */
const MAX_TERMS = 20
const MAX_PARAMETER_LENGTH = 2000

const allowedKeys = (shape: ListShape) => Object.keys(shape.filters).join(', ')

/**
 * `record[key]` when the record holds `key` itself. Filter, sort, operator and option names come
 * from clients, and a plain object answers `constructor`, `toString` or `__proto__` from
 * Object.prototype: such a name must be as unknown as any other.
 */
export const own = <T>(record: Readonly<Record<string, T>>, key: string): T | undefined => (Object.hasOwn(record, key) ? record[key] : undefined)

/** The query parameters (and MCP arguments) a list with `shape` takes besides paging: documented, all strings. */
export function filterParameters(shape: ListShape): Record<string, TSchema> {
  const parameters: Record<string, TSchema> = {}
  for (const [key, filter] of Object.entries(shape.filters)) {
    const text = t.String({ maxLength: MAX_PARAMETER_LENGTH })
    // Names and option ids may come as the parameter repeated (`label=a&label=b`): any of them.
    parameters[key] =
      filter.type === 'text' || filter.type === 'options'
        ? t.Optional(t.Union([text, t.Array(text, { maxItems: MAX_TERMS })], { description: describeFilter(filter) }))
        : t.Optional(t.String({ maxLength: MAX_PARAMETER_LENGTH, description: describeFilter(filter) }))
  }
  parameters.sort = t.Optional(
    t.String({
      maxLength: 200,
      description: `Comma-separated sort keys, \`-\` before a key for descending: ${Object.keys(shape.sorts).join(', ')} (default ${shape.defaultOrder.join(',')}).`,
    }),
  )
  return parameters
}

function describeFilter(filter: Filter): string {
  switch (filter.type) {
    case 'enum':
      return `${filter.description} Any of ${filter.values.join(', ')}, comma-separated.`
    case 'uuid':
      return `${filter.description} An id${filter.none ? ', or `none`' : ''}.`
    case 'integer':
      return `${filter.description} ${filter.minimum}..${filter.maximum}; comma-separated terms \`eq:\` (or a bare value: any of), \`gt:\`, \`gte:\`, \`lt:\`, \`lte:\` (all hold), e.g. \`gte:2\`.`
    case 'timestamp':
      return `${filter.description} RFC 3339 date-times with terms \`gt:\`, \`gte:\`, \`lt:\`, \`lte:\`, \`eq:\`, comma-separated, e.g. \`gte:2026-11-01T00:00:00Z\`.`
    case 'date':
      return `${filter.description} YYYY-MM-DD dates with terms \`gt:\`, \`gte:\`, \`lt:\`, \`lte:\`, \`eq:\`, comma-separated${filter.none ? ', or `none`' : ''}.`
    case 'text':
      return `${filter.description} Any of these values, comma-separated (or the parameter repeated).`
    case 'options':
      return `${filter.description} Any of these option ids or names, comma-separated (or the parameter repeated).`
    case 'number':
      return `${filter.description} Numbers with terms \`eq:\` (or a bare value: any of), \`gt:\`, \`gte:\`, \`lt:\`, \`lte:\` (all hold), comma-separated, e.g. \`gte:2.5\`.`
  }
}

/**
 * The list query of `input` (query parameters or MCP arguments; paging and `cursor` keys are left
 * to the caller), with every problem as a 400 naming its parameter: unknown keys name the allowed
 * ones. Conditions are bound into `parameters`.
 */
export function parseListQuery(shape: ListShape, input: Record<string, unknown>, parameters: Parameters, ignore: readonly string[] = ['page', 'size', 'cursor']): ListQuery {
  const errors: ErrorItem[] = []
  const conditions: string[] = []
  const values: Record<string, ParsedFilter> = {}
  const canonical: string[] = []
  for (const [key, raw] of Object.entries(input)) {
    // An empty name (a trailing `&`) is no parameter.
    if (raw === undefined || key === '' || ignore.includes(key) || key === 'sort') continue
    const filter = own(shape.filters, key)
    if (!filter) {
      errors.push({ code: 'BAD_REQUEST', field: key.slice(0, 64), message: `Unknown filter; the filters are ${allowedKeys(shape)} (and sort, which orders the list).` })
      continue
    }
    // A repeated parameter (`label=a&label=b`) arrives as an array: any of its values.
    const text = Array.isArray(raw) ? raw.join(',') : String(raw)
    const parsed = parseFilter(filter, text)
    if (typeof parsed === 'string') {
      errors.push({ code: 'BAD_REQUEST', field: key, message: parsed })
      continue
    }
    values[key] = parsed
    conditions.push(filterCondition(filter, parsed, parameters))
    canonical.push(`${key}=${[...parsed.anyOf.map(String).sort(), ...parsed.ranges.map((range) => `${range.operator}:${range.value}`).sort()].join(',')}`)
  }
  let order: OrderTerm[] = []
  const sort = input.sort
  if (sort !== undefined && sort !== '') {
    const parsed = parseSort(shape, String(sort))
    if (typeof parsed === 'string') errors.push({ code: 'BAD_REQUEST', field: 'sort', message: parsed })
    else order = parsed
  }
  if (errors.length) throw new ValidationFailure(errors.slice(0, 20))
  if (!order.length) order = shape.defaultOrder.map((key) => (key.startsWith('-') ? { key: shape.sorts[key.slice(1)]!, descending: true } : { key: shape.sorts[key]!, descending: false }))
  const sortText = order.map((term) => `${term.descending ? '-' : ''}${term.key.column}`).join(',')
  order.push({ key: shape.tiebreaker, descending: order.at(-1)?.descending ?? false })
  canonical.sort()
  canonical.push(`sort=${sortText}`)
  return { conditions, values, order, canonical: canonical.join('&') }
}

function parseFilter(filter: Filter, text: string): ParsedFilter | string {
  const terms = text.split(',').map((term) => term.trim())
  if (terms.length > MAX_TERMS) return `At most ${MAX_TERMS} comma-separated terms.`
  const parsed: ParsedFilter = { anyOf: [], ranges: [] }
  for (const term of terms) {
    if (filter.type === 'enum') {
      if (!filter.values.includes(term)) return `Must be one or more of ${filter.values.join(', ')}, comma-separated.`
      if (!parsed.anyOf.includes(term)) parsed.anyOf.push(term)
      continue
    }
    if (filter.type === 'options') {
      const value = filter.values.includes(term.toLowerCase()) ? term.toLowerCase() : own(filter.aliases, term)
      if (value === undefined) return `Must be one or more option ids or names of this field: ${Object.keys(filter.aliases).slice(0, 50).join(', ')}.`
      if (!parsed.anyOf.includes(value)) parsed.anyOf.push(value)
      continue
    }
    if (filter.type === 'text') {
      if (!term.length || term.length > 1000) return 'Must be comma-separated values of 1 to 1000 characters.'
      const value = (filter.aliases && own(filter.aliases, term)) ?? term
      if (!parsed.anyOf.includes(value)) parsed.anyOf.push(value)
      continue
    }
    if (filter.type === 'uuid') {
      if (terms.length > 1) return `One id${filter.none ? ' or `none`' : ''}.`
      if (filter.none && term === 'none') parsed.anyOf.push(null)
      else if (isUuid(term)) parsed.anyOf.push(term.toLowerCase())
      else return `Must be a UUID${filter.none ? ' or `none`' : ''}.`
      continue
    }
    if (filter.type === 'date' && filter.none && term === 'none') {
      parsed.anyOf.push(null)
      continue
    }
    const colon = term.indexOf(':')
    const named = colon > 0 && own(OPERATORS, term.slice(0, colon)) !== undefined
    const operator = (named ? term.slice(0, colon) : 'eq') as Operator
    const value = named ? term.slice(colon + 1) : term
    const checked = checkValue(filter, value)
    if (checked === undefined) return valueRule(filter)
    if (operator === 'eq') parsed.anyOf.push(checked)
    else parsed.ranges.push({ operator, value: checked })
  }
  return parsed
}

/** The value in its canonical text, or undefined when it is not one the filter takes. */
function checkValue(filter: Filter, value: string): string | undefined {
  switch (filter.type) {
    case 'integer': {
      if (!/^-?\d{1,10}$/.test(value)) return undefined
      const number = Number(value)
      return number >= filter.minimum && number <= filter.maximum ? String(number) : undefined
    }
    case 'number':
      return /^-?\d{1,15}(\.\d{1,6})?$/.test(value) ? String(Number(value)) : undefined
    case 'timestamp':
      return parseDateTime(value)?.toISOString()
    case 'date':
      return isCalendarDate(value) ? value : undefined
    default:
      return undefined
  }
}

function valueRule(filter: Filter): string {
  switch (filter.type) {
    case 'integer':
      return `Must be comma-separated terms eq:, gt:, gte:, lt:, lte: (or a bare value) with integers ${filter.minimum}..${filter.maximum}, e.g. gte:2.`
    case 'timestamp':
      return 'Must be comma-separated terms eq:, gt:, gte:, lt:, lte: with RFC 3339 date-times (e.g. gte:2026-11-01T00:00:00Z).'
    case 'number':
      return 'Must be comma-separated terms eq:, gt:, gte:, lt:, lte: (or a bare value) with numbers, e.g. gte:2.5.'
    default:
      return `Must be comma-separated terms eq:, gt:, gte:, lt:, lte: with dates YYYY-MM-DD${filter.type === 'date' && filter.none ? ', or none' : ''}.`
  }
}

const CASTS: Record<Filter['type'], string | undefined> = { enum: undefined, uuid: 'uuid', integer: 'int', timestamp: 'timestamptz', date: 'date', text: undefined, number: 'numeric', options: 'uuid' }

function filterCondition(filter: Filter, parsed: ParsedFilter, parameters: Parameters): string {
  const condition = columnCondition(filter, parsed, parameters)
  return filter.within ? filter.within(condition) : condition
}

function columnCondition(filter: Filter, parsed: ParsedFilter, parameters: Parameters): string {
  if (filter.type === 'timestamp') return timestampCondition(filter.column, parsed, parameters)
  if (filter.type === 'options') return `${filter.column} && ${parameters.bind(parsed.anyOf, 'uuid[]')}`
  const cast = CASTS[filter.type]
  const parts: string[] = []
  const listed = parsed.anyOf.filter((value) => value !== null)
  const any: string[] = []
  if (filter.type === 'uuid' && filter.anyColumn) any.push(`${parameters.bind(listed[0], cast)} in (${filter.anyColumn.join(', ')})`)
  else if (listed.length === 1) any.push(`${filter.column} = ${parameters.bind(listed[0], cast)}`)
  else if (listed.length > 1) any.push(`${filter.column} = any(${parameters.bind(listed, `${cast ?? 'text'}[]`)})`)
  if (parsed.anyOf.includes(null)) any.push(`${filter.column} is null`)
  if (any.length) parts.push(any.length === 1 ? any[0]! : `(${any.join(' or ')})`)
  for (const range of parsed.ranges) parts.push(`${filter.column} ${OPERATORS[range.operator]} ${parameters.bind(range.value, cast)}`)
  return parts.join(' and ')
}

/**
 * Timestamps are shown in milliseconds and stored in microseconds, so a value compares as its
 * millisecond: `gt: T` is `>= T + 1 ms`, `lte: T` is `< T + 1 ms`, `eq: T` is within T's
 * millisecond (each still a range an index serves).
 */
function timestampCondition(column: string, parsed: ParsedFilter, parameters: Parameters): string {
  const next = (value: string) => new Date(Date.parse(value) + 1).toISOString()
  const at = (value: string) => parameters.bind(value, 'timestamptz')
  const parts: string[] = []
  const any = parsed.anyOf.map((value) => `(${column} >= ${at(value!)} and ${column} < ${at(next(value!))})`)
  if (any.length) parts.push(any.length === 1 ? any[0]! : `(${any.join(' or ')})`)
  for (const { operator, value } of parsed.ranges) {
    if (operator === 'gt') parts.push(`${column} >= ${at(next(value))}`)
    else if (operator === 'gte') parts.push(`${column} >= ${at(value)}`)
    else if (operator === 'lt') parts.push(`${column} < ${at(value)}`)
    else parts.push(`${column} < ${at(next(value))}`)
  }
  return parts.join(' and ')
}

function parseSort(shape: ListShape, text: string): OrderTerm[] | string {
  const order: OrderTerm[] = []
  const seen = new Set<string>()
  for (const part of text.split(',')) {
    const descending = part.startsWith('-')
    const name = descending ? part.slice(1) : part
    const key = own(shape.sorts, name)
    if (!key) return Object.keys(shape.sorts).length ? `Unknown sort key; allowed: ${Object.keys(shape.sorts).join(', ')} (\`-\` before a key for descending).` : 'This list takes no sort.'
    if (seen.has(name)) return `A sort key may be named once.`
    seen.add(name)
    order.push({ key, descending })
  }
  return order
}

/** `order by …` of an order (PostgreSQL's default null placement: nulls sort as the largest value). */
export const orderBy = (order: readonly OrderTerm[]) => order.map((term) => `${term.key.column}${term.descending ? ' desc' : ''}`).join(', ')

/** The order's keys selected as text (`"k0"`, `"k1"`, …): what a cursor carries of the last row. */
export const orderKeysSelected = (order: readonly OrderTerm[]) => order.map((term, index) => `${term.key.column}::text as "k${index}"`).join(', ')

// ---- cursors --------------------------------------------------------------------------------

/** A cursor is at most this long (a list's keys are a few columns). */
export const MAX_CURSOR_LENGTH = 1024

/** The identity a list's cursors carry: a digest of the list, its scope and its query. */
export const listIdentity = (shape: ListShape, scope: string, query: ListQuery) =>
  createHash('sha256').update(`${shape.name}\n${scope}\n${query.canonical}`).digest('base64url').slice(0, 16)

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
export function afterCondition(order: readonly OrderTerm[], keys: readonly (string | null)[], parameters: Parameters): string {
  const bound = (index: number) => parameters.bind(keys[index], order[index]!.key.cast)
  const uniform = order.every((term) => term.descending === order[0]!.descending && !term.key.nullable)
  if (uniform) {
    const columns = order.map((term) => term.key.column).join(', ')
    const values = order.map((_, index) => bound(index)).join(', ')
    return `(${columns}) ${order[0]!.descending ? '<' : '>'} (${values})`
  }
  const expand = (index: number): string => {
    const { key, descending } = order[index]!
    const value = keys[index]
    let beyond: string
    let equal: string
    if (value === null) {
      // Nulls are largest: nothing is beyond null ascending; descending, every non-null is.
      beyond = descending ? `${key.column} is not null` : 'false'
      equal = `${key.column} is null`
    } else {
      const placeholder = bound(index)
      beyond = descending ? `${key.column} < ${placeholder}` : key.nullable ? `(${key.column} > ${placeholder} or ${key.column} is null)` : `${key.column} > ${placeholder}`
      equal = `${key.column} = ${placeholder}`
    }
    if (index === order.length - 1) return beyond
    return `(${beyond} or (${equal} and ${expand(index + 1)}))`
  }
  const first = order[0]!
  const lead = !first.key.nullable && keys[0] !== null ? `${first.key.column} ${first.descending ? '<=' : '>='} ${bound(0)} and ` : ''
  return `${lead}${expand(0)}`
}

/** The keys a page request's cursor continues after (undefined without a cursor); 400 naming `cursor` for any other list's. */
export const readCursor = (request: { cursor?: string }, identity: string, order: readonly OrderTerm[]) =>
  request.cursor === undefined ? undefined : decodeCursor(request.cursor, identity, order)
