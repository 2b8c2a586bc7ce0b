/**
 * Work items across the projects a caller can view (`GET /api/v1/work-items`, MCP
 * `list_work_items` without a project): the project list's filters, sorts and cursors over every
 * viewable project at once, the most recently changed first by default.
 *
 * The viewable projects come from the projects plugin's access service (their ids, from the
 * caller's memberships and teams' links: never a scan of the projects they cannot see), and the
 * page is one statement that merges each project's own range of the order's index: a LATERAL
 * subquery per viewable project reads at most the rows the page needs from that project's index
 * (`work_items_project_updated_idx` for `-updatedAt`, `work_items_project_urgency_idx` for
 * `priority`…, after the cursor's keys), and the outer query orders those few rows and keeps the
 * page. A page costs (viewable projects) × (page size + 1) index rows, whatever the depth of the
 * cursor and however many projects the caller cannot see.
 */
import { sql, type SQL } from 'drizzle-orm'
import { afterCondition, orderBy } from '../../src/http/list-cursors'
import { listIdentity, parseListQuery, readCursor, type ListQuery, type ListShape } from '../../src/http/list-query'
import { pageWindow, type ListStatement } from '../../src/sql'
import type { PageRequest } from '../../src/http/pagination'
import { param } from '../../src/statements'
import type { Actor } from '../../src/services/identity'
import type { ViewableProjects } from '../projects/api'
import type { WorkItemQuery } from './model'

/** The viewable project a lateral subquery reads, as the filters' `within` name the list's project. */
const PROJECT = sql.raw('vp.id')

/** A cross-project list request, parsed and checked (400s before any statement runs). */
export interface AcrossRequest {
  query: ListQuery
  identity: string
  after: (string | null)[] | undefined
  /** The projects `projectId` keeps to (undefined: every viewable one). */
  among: string[] | undefined
  /** The page's cache key, without the version (ListCache.page). */
  key: string
}

/** Parses a cross-project list request: its filters (`me` resolved to the caller), sort and cursor. */
export function acrossRequest(shape: ListShape, actor: Actor, input: WorkItemQuery, request: PageRequest): AcrossRequest {
  const query = parseListQuery(shape, input, { scope: { organization: param(actor.organizationId), project: PROJECT }, caller: actor.userId })
  const identity = listIdentity(shape, `${actor.organizationId} across`, query)
  const after = readCursor(request, identity, query.order)
  const among = query.values.projectId?.anyOf.filter((id): id is string => id !== null)
  return { query, identity, after, among, key: `work-items-across ${actor.userId} ${query.canonical} ${request.cursor ?? request.page} ${request.size}` }
}

/**
 * The total: the maintained counts of the viewable projects (work_item_counts) when the filters
 * are at most `status` and `projectId`, else a count of each project's matching rows, project by
 * project (a lateral count: its filters' index, and their `within` subqueries, in that project).
 */
function acrossTotal(query: ListQuery, projects: SQL, organization: SQL): SQL {
  if (Object.keys(query.values).every((filter) => filter === 'status' || filter === 'projectId')) {
    const statuses = query.values.status
    return sql`select coalesce(sum(c.items), 0) from (${projects}) vp join work_item_counts c on c.project_id = vp.id and c.organization_id = ${organization}${
      statuses ? sql` where c.status = any(${param(statuses.anyOf)}::text[])` : sql``
    }`
  }
  const each = [sql`w.project_id = ${PROJECT}`, sql`w.organization_id = ${organization}`, ...query.conditions]
  return sql`select coalesce(sum(c.n), 0) from (${projects}) vp cross join lateral (select count(*) as n from work_items w where ${sql.join(each, sql` and `)}) c`
}

/**
 * The page's statement (selectListPage): per viewable project, its first rows in the order (after
 * the cursor's keys), at most as many as the page reads, then those rows in the order. `columns`:
 * every column a work item shows in the statement's organization, over the alias `w`.
 */
export function acrossStatement(parsed: AcrossRequest, actor: Actor, viewable: ViewableProjects, columns: (organization: SQL) => SQL, request: PageRequest): ListStatement {
  const { query, identity, after } = parsed
  const organization = param(actor.organizationId)
  const { limit, offset } = pageWindow(request)
  const each = [sql`w.project_id = ${PROJECT}`, sql`w.organization_id = ${organization}`, ...query.conditions]
  if (after) each.push(afterCondition(query.order, after))
  // `w.*`: the outer query reads what it shows; PostgreSQL drops a subquery's unread columns.
  const from = sql`(${viewable.ids}) vp cross join lateral (select w.* from work_items w where ${sql.join(each, sql` and `)}
      order by ${orderBy(query.order)} limit ${after ? limit : limit + offset}) w`
  return {
    columns: columns(organization),
    from,
    conditions: [sql`w.organization_id = ${organization}`],
    order: query.order,
    total: acrossTotal(query, viewable.ids, organization),
    identity,
    after,
  }
}
