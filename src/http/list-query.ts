/**
 * Filters, sort and cursors of a list (growth within one project): one grammar for REST
 * query parameters and MCP arguments, turned into SQL conditions (bound Drizzle fragments) and an
 * order over the list's own columns; the order and the cursors that continue a list at any depth
 * are list-cursors.ts.
 *
 * Grammar: `status=todo,in_progress` (any of), `assigneeId=<uuid>|none`, `priority=gte:2`,
 * `updatedAt=gte:2026-11-01T00:00:00Z,lt:2026-12-01T00:00:00Z` (a comma list of terms; `eq:`
 * terms, or bare values, are any-of; range terms all hold), `sort=-updatedAt,priority`.
 * Operators `eq gt gte lt lte` apply to integers and dates.
 */
import { createHash } from 'node:crypto'
import { sql, type SQL } from 'drizzle-orm'
import { t, type TSchema } from 'elysia'
import { isUuid } from '../ids'
import { param } from '../statements'
import { ValidationFailure } from '../validate'
import type { ErrorItem } from './errors'
import { columnOf, type ListColumn, type OrderTerm, type SortKey } from './list-cursors'
import { isCalendarDate, parseDateTime } from './models'

export { MAX_CURSOR_LENGTH, readCursor, type ListColumn, type OrderTerm, type SortKey } from './list-cursors'

/** How a filter's values are read and compared. */
export type FilterType =
  | { type: 'enum'; values: readonly string[] }
  | {
      type: 'uuid'
      none?: boolean
      /** A user id: `me` stands for the caller (`ListQueryOptions.caller`). */
      me?: boolean
      /** Up to this many ids, comma-separated, any of (default one; at most MAX_TERMS). */
      many?: number
      /** Matches when any of these columns holds the id (instead of `column`). */
      anyColumn?: readonly string[]
    }
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
  column: ListColumn
  description: string
  /**
   * Wraps the filter's condition over `column` when the column is not the list row's own, e.g. a
   * value in another table: `w.id in (select … where … and ${condition})`; `scope` names the
   * list's scope (its organization, its project…) as the list's statement binds it.
   */
  within?: (condition: SQL, scope: ListScope) => SQL
}

/** The scope of a list's statement as bound fragments, by name (`organization`, `project`…), for filters' `within`. */
export type ListScope = Readonly<Record<string, SQL>>

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
  /** What the `sort` parameter's documentation adds about its keys (e.g. what order `priority` is). */
  sortDescription?: string
}

/** What a list request asked for, parsed: its conditions, its order, and its identity. */
export interface ListQuery {
  /** SQL conditions over the list's columns (bound fragments), to AND together. */
  conditions: SQL[]
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
      description: `Comma-separated sort keys, \`-\` before a key for descending: ${Object.keys(shape.sorts).join(', ')} (default ${shape.defaultOrder.join(',')}).${shape.sortDescription ? ` ${shape.sortDescription}` : ''}`,
    }),
  )
  return parameters
}

function describeFilter(filter: Filter): string {
  switch (filter.type) {
    case 'enum':
      return `${filter.description} Any of ${filter.values.join(', ')}, comma-separated.`
    case 'uuid':
      return `${filter.description} ${(filter.many ?? 1) > 1 ? `Up to ${filter.many} ids, comma-separated (any of)` : filter.me ? 'A user id' : 'An id'}${filter.me ? ', `me` (you)' : ''}${filter.none ? ', or `none`' : ''}.`
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
 * How a list's query is read: keys left to the caller (paging and `cursor` by default), the scope
 * its filters' `within` name, and the caller's user id, which `me` stands for in user-id filters.
 */
export interface ListQueryOptions {
  ignore?: readonly string[]
  scope?: ListScope
  caller?: string
}

/**
 * The list query of `input` (query parameters or MCP arguments; paging and `cursor` keys are left
 * to the caller), with every problem as a 400 naming its parameter: unknown keys name the allowed
 * ones. Conditions are bound fragments.
 */
export function parseListQuery(shape: ListShape, input: Record<string, unknown>, options: ListQueryOptions = {}): ListQuery {
  const { ignore = ['page', 'size', 'cursor'], scope = {}, caller } = options
  const errors: ErrorItem[] = []
  const conditions: SQL[] = []
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
    const parsed = parseFilter(filter, text, caller)
    if (typeof parsed === 'string') {
      errors.push({ code: 'BAD_REQUEST', field: key, message: parsed })
      continue
    }
    values[key] = parsed
    conditions.push(filterCondition(filter, parsed, scope))
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
  const sortText = order.map((term) => `${term.descending ? '-' : ''}${sortName(shape, term.key)}`).join(',')
  order.push({ key: shape.tiebreaker, descending: order.at(-1)?.descending ?? false })
  canonical.sort()
  canonical.push(`sort=${sortText}`)
  return { conditions, values, order, canonical: canonical.join('&') }
}

/** How a sort key is named in a list's canonical text: its column's text, or for a fragment its key in the shape. */
const sortName = (shape: ListShape, key: SortKey) => (typeof key.column === 'string' ? key.column : Object.keys(shape.sorts).find((name) => shape.sorts[name] === key))

/** What a uuid filter takes, as its messages say it. */
const uuidRule = (filter: Extract<Filter, { type: 'uuid' }>) =>
  [filter.me ? 'a user id (a UUID)' : 'a UUID', ...(filter.me ? ['`me`'] : []), ...(filter.none ? ['`none`'] : [])].join(', ').replace(/, ([^,]*)$/, ' or $1')

function parseFilter(filter: Filter, text: string, caller?: string): ParsedFilter | string {
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
      const most = Math.min(filter.many ?? 1, MAX_TERMS)
      if (terms.length > most) return most === 1 ? `Must be one value: ${uuidRule(filter)}.` : `At most ${most} comma-separated ids.`
      let value: string | null
      if (filter.none && term === 'none') value = null
      else if (filter.me && term === 'me' && caller) value = caller.toLowerCase()
      else if (isUuid(term)) value = term.toLowerCase()
      else return `Must be ${uuidRule(filter)}${most > 1 ? ', comma-separated' : ''}.`
      if (!parsed.anyOf.includes(value)) parsed.anyOf.push(value)
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

function filterCondition(filter: Filter, parsed: ParsedFilter, scope: ListScope): SQL {
  const condition = columnCondition(filter, parsed)
  return filter.within ? filter.within(condition, scope) : condition
}

/** `value` bound as one parameter, with `::cast` when given. */
const bound = (value: unknown, cast: string | undefined): SQL => (cast ? sql`${param(value)}::${sql.raw(cast)}` : param(value))

/** Conditions that must all hold, or one of which must (in parentheses when there are several). */
const all = (parts: SQL[]) => sql.join(parts, sql` and `)
const any = (parts: SQL[]) => (parts.length === 1 ? parts[0]! : sql`(${sql.join(parts, sql` or `)})`)

function columnCondition(filter: Filter, parsed: ParsedFilter): SQL {
  const column = columnOf(filter.column)
  if (filter.type === 'timestamp') return timestampCondition(column, parsed)
  if (filter.type === 'options') return sql`${column} && ${bound(parsed.anyOf, 'uuid[]')}`
  const cast = CASTS[filter.type]
  const parts: SQL[] = []
  const listed = parsed.anyOf.filter((value) => value !== null)
  const anyOf: SQL[] = []
  if (filter.type === 'uuid' && filter.anyColumn) anyOf.push(sql`${bound(listed[0], cast)} in (${sql.raw(filter.anyColumn.join(', '))})`)
  else if (listed.length === 1) anyOf.push(sql`${column} = ${bound(listed[0], cast)}`)
  else if (listed.length > 1) anyOf.push(sql`${column} = any(${bound(listed, `${cast ?? 'text'}[]`)})`)
  if (parsed.anyOf.includes(null)) anyOf.push(sql`${column} is null`)
  if (anyOf.length) parts.push(any(anyOf))
  for (const range of parsed.ranges) parts.push(sql`${column} ${sql.raw(OPERATORS[range.operator])} ${bound(range.value, cast)}`)
  return all(parts)
}

/**
 * Timestamps are shown in milliseconds and stored in microseconds, so a value compares as its
 * millisecond: `gt: T` is `>= T + 1 ms`, `lte: T` is `< T + 1 ms`, `eq: T` is within T's
 * millisecond (each still a range an index serves).
 */
function timestampCondition(column: SQL, parsed: ParsedFilter): SQL {
  const next = (value: string) => new Date(Date.parse(value) + 1).toISOString()
  const at = (value: string) => bound(value, 'timestamptz')
  const parts: SQL[] = []
  const anyOf = parsed.anyOf.map((value) => sql`(${column} >= ${at(value!)} and ${column} < ${at(next(value!))})`)
  if (anyOf.length) parts.push(any(anyOf))
  for (const { operator, value } of parsed.ranges) {
    if (operator === 'gt') parts.push(sql`${column} >= ${at(next(value))}`)
    else if (operator === 'gte') parts.push(sql`${column} >= ${at(value)}`)
    else if (operator === 'lt') parts.push(sql`${column} < ${at(value)}`)
    else parts.push(sql`${column} < ${at(next(value))}`)
  }
  return all(parts)
}

/** What a refused sort key is told: the key as given (shortened), and the keys the list takes. */
function unknownSortKey(shape: ListShape, name: string): string {
  const named = name === '' ? 'An empty sort key' : `\`${name.length > 64 ? `${name.slice(0, 64)}…` : name}\` is no sort key of this list`
  const keys = Object.keys(shape.sorts)
  return keys.length ? `${named}; allowed: ${keys.join(', ')} (\`-\` before a key for descending).` : `${named}: this list takes no sort.`
}

function parseSort(shape: ListShape, text: string): OrderTerm[] | string {
  const order: OrderTerm[] = []
  const seen = new Set<string>()
  for (const part of text.split(',')) {
    const descending = part.startsWith('-')
    const name = descending ? part.slice(1) : part
    const key = own(shape.sorts, name)
    if (!key) return unknownSortKey(shape, name)
    if (seen.has(name)) return `A sort key may be named once.`
    seen.add(name)
    order.push({ key, descending })
  }
  return order
}

/** The identity a list's cursors carry: a digest of the list, its scope and its query. */
export const listIdentity = (shape: ListShape, scope: string, query: { canonical: string }) =>
  createHash('sha256').update(`${shape.name}\n${scope}\n${query.canonical}`).digest('base64url').slice(0, 16)

/**
 * Two list queries of one shape ANDed: a saved view's (`base`) and the request's parameters on
 * top. Every condition of both holds; the order is the request's when it named a sort
 * (`topSorted`), else the view's. A filter both name is two conditions, so the values of both
 * stay apart (and a maintained count, which reads one filter's values, is not used for them).
 */
export function andListQueries(base: ListQuery, top: ListQuery, topSorted: boolean): ListQuery {
  const values: Record<string, ParsedFilter> = { ...base.values }
  for (const [key, value] of Object.entries(top.values)) values[key in values ? `${key}&` : key] = value
  return {
    conditions: [...base.conditions, ...top.conditions],
    values,
    order: topSorted ? top.order : base.order,
    canonical: `view(${base.canonical})&${top.canonical}${topSorted ? '' : '&sorted-by-view'}`,
  }
}
