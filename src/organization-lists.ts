/**
 * A page of one of an organization's own lists (teams, labels, custom fields, webhooks): its rows
 * (`<alias>.organization_id` the organization's, no filters), in the list's one order, by page or cursor, with
 * its total counted by the same statement. With `cache`, the page is kept in the list cache keyed on
 * the organization's list version (src/http/list-cache.ts), which every change of those lists moves.
 */
import { sql } from 'drizzle-orm'
import type { Database } from './db'
import type { Page } from './http/answer'
import type { CachedPage, ListCache } from './http/list-cache'
import { listIdentity, parseListQuery, readCursor, type ListShape } from './http/list-query'
import type { PageRequest } from './http/pagination'
import { selectListPage } from './sql'
import { organizationVersion } from './writes'

export interface OrganizationList<Row, Item> {
  shape: ListShape
  /** The table and its alias, e.g. `labels l`. */
  from: string
  /** The select list, as text (no parameters). */
  columns: string
  toItem: (row: Row) => Item
}

export async function organizationListPage<Row, Item>(db: Database, organizationId: string, list: OrganizationList<Row, Item>, request: PageRequest, cache?: ListCache): Promise<Page<Item> | CachedPage> {
  const query = parseListQuery(list.shape, {})
  const identity = listIdentity(list.shape, organizationId, query)
  const after = readCursor(request, identity, query.order)
  const alias = list.from.split(' ').at(-1)
  const condition = sql`${sql.raw(`${alias}.organization_id`)} = ${organizationId}`
  const read = () =>
    selectListPage<Row, Item>(
      db,
      { columns: list.columns, from: list.from, conditions: [condition], order: query.order, total: sql`select count(*) from ${sql.raw(list.from)} where ${condition}`, identity, after },
      request,
      list.toItem,
    )
  if (!cache) return read()
  const version = await organizationVersion(db, organizationId)
  return cache.page(`${list.shape.name} ${organizationId} ${request.cursor ?? request.page} ${request.size}`, version, read)
}
