/** Zero-based pagination: the query model, the SQL window and the meta, in one place. */
import { sql } from 'drizzle-orm'
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { MAX_OFFSET_ROWS, offsetAllowed, Page, type PageMeta } from './answer'
import { MAX_CURSOR_LENGTH } from './list-query'
import { ValidationFailure } from '../validate'

export { MAX_OFFSET_ROWS, offsetAllowed }

export const MAX_PAGE_SIZE = 100


/**
 * How a list reaches rows past MAX_OFFSET_ROWS: by `cursor`, or, for a list that takes none, only
 * by narrower filters.
 */
export type Deeper = 'cursor' | 'filters'

const OFFSET_BOUND = `page × size may not reach ${MAX_OFFSET_ROWS.toLocaleString('en')} rows`
const GO_DEEPER: Record<Deeper, string> = {
  cursor: 'use cursor (meta.nextCursor or the next link) to go deeper',
  filters: 'this list takes no cursor: narrow the filters to reach the rows beyond',
}


const pageDescription = (deeper: Deeper) => `Zero-based page index (default 0); ${OFFSET_BOUND}: ${GO_DEEPER[deeper]}.`

/**
 * An integer query parameter. Elysia converts query strings with a per-parameter transform whose
 * errors do not carry the parameter's name, so the name travels as the schema's `title`.
 */
export const queryInteger = (name: string, options: { minimum?: number; maximum?: number; default?: number; description?: string }) =>
  t.Integer({ ...options, title: name })

/**
 * Query parameters `page` and `size`; `defaultSize` is the endpoint's own default. `page` has no
 * maximum of its own: its bound is page × size, which `pageRequest` refuses with its own message.
 */
export const pageQuery = (defaultSize = 20, deeper: Deeper = 'cursor') => ({
  page: t.Optional(queryInteger('page', { minimum: 0, default: 0, description: pageDescription(deeper) })),
  size: t.Optional(
    queryInteger('size', {
      minimum: 1,
      maximum: MAX_PAGE_SIZE,
      default: defaultSize,
      description: `Items per page, 1..${MAX_PAGE_SIZE} (default ${defaultSize}).`,
    }),
  ),
})

/** `page` and `size` as JSON arguments (MCP tools): strict integers, same bounds and defaults. */
export const pageArguments = (defaultSize = 20, deeper: Deeper = 'cursor') => ({
  page: t.Optional(Type.Integer({ minimum: 0, default: 0, description: pageDescription(deeper) })),
  size: t.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: defaultSize, description: `Items per page, 1..${MAX_PAGE_SIZE} (default ${defaultSize}).` })),
})

export interface PageRequest {
  page: number
  size: number
  /** Continue after the row this cursor names (lists that take cursors); `page` is then not used. */
  cursor?: string
}

/** Query parameter (and MCP argument) `cursor`, on lists that take cursors. */
export const cursorParameter = () => ({
  cursor: t.Optional(
    t.String({
      maxLength: MAX_CURSOR_LENGTH,
      description: 'Continue after the page that gave this cursor (`meta.nextCursor`, or the `next` link). A cursor page costs the same at any depth; `page` is then ignored.',
    }),
  ),
})

/**
 * Normalises parsed query values (or MCP arguments) into a page request: every list's paging goes
 * through here, so here an offset at or past MAX_OFFSET_ROWS is refused, naming `page`.
 */
export function pageRequest(query: { page?: number; size?: number; cursor?: string }, defaultSize = 20, deeper: Deeper = 'cursor'): PageRequest {
  const size = query.size ?? defaultSize
  if (query.cursor !== undefined) return { page: 0, size, cursor: query.cursor }
  const page = query.page ?? 0
  if (!offsetAllowed(page, size)) throw new ValidationFailure([{ code: 'BAD_REQUEST', field: 'page', message: `${OFFSET_BOUND}; ${GO_DEEPER[deeper]}.` }])
  return { page, size }
}

/** LIMIT/OFFSET of a page request. */
export const window = ({ page, size }: PageRequest) => ({ limit: size, offset: page * size })

/** Builds the meta of a page from the total count. */
export function pageMeta({ page, size }: PageRequest, totalItems: number): PageMeta {
  return { page, size, totalItems, totalPages: Math.ceil(totalItems / size) }
}

/** A page of items with its meta; a page past the end is empty with the correct meta. */
export function toPage<T>(items: T[], request: PageRequest, totalItems: number): Page<T> {
  return new Page(items, pageMeta(request, totalItems))
}

/** Select it as `total` in a list query to get the count and the page in one statement. */
export const totalOver = () => sql<number>`count(*) over ()`.mapWith(Number)

/**
 * A page from rows that carry `total` (see `totalOver`). Only a page past the end (no rows)
 * needs `count`, a second statement.
 */
export async function pageWithTotal<T extends { total: number }, U>(
  rows: T[],
  request: PageRequest,
  serialize: (row: Omit<T, 'total'>) => U,
  count: () => Promise<number>,
): Promise<Page<U>> {
  const total = rows.length ? rows[0]!.total : request.page > 0 ? await count() : 0
  return toPage(
    rows.map(({ total: _total, ...row }) => serialize(row)),
    request,
    total,
  )
}
