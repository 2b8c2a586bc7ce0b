/** Reading the audit log: administrators only, newest first, project records behind project access. */
import { sql, type SQL } from 'drizzle-orm'
import type { Database } from '../../src/db'
import { badRequest, forbidden } from '../../src/http/errors'
import type { PageRequest } from '../../src/http/pagination'
import type { ProjectAccessService } from '../projects/api'
import { isAdministrator, type Actor } from '../../src/services/identity'
import { listIdentity, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import { isoFromText, selectListPage } from '../../src/sql'
import type { AuditQuery } from './model'

type Via = 'rest' | 'oauth' | 'mcp' | 'account' | 'cli' | 'display' | 'system'

interface AuditRow {
  id: string
  occurredAt: string
  actorUserId: string | null
  apiKeyId: string | null
  grantId: string | null
  via: Via
  action: string
  resourceType: string
  resourceId: string
  projectId: string | null
  changes: { before?: Record<string, unknown>; after?: Record<string, unknown> } | null
  requestId: string | null
}

const COLUMNS = `a.id, a.occurred_at as "occurredAt", a.actor_user_id as "actorUserId", a.api_key_id as "apiKeyId", a.grant_id as "grantId", a.via, a.action,
  a.resource_type as "resourceType", a.resource_id as "resourceId", a.project_id as "projectId", a.changes, a.request_id as "requestId"`

/** The query's filters, as conditions on the alias `a`. */
function filters(query: AuditQuery): SQL[] {
  const where: SQL[] = []
  const since = query.since ? new Date(query.since) : undefined
  const until = query.until ? new Date(query.until) : undefined
  if (since && until && since > until) throw badRequest('"since" must not be after "until".', 'since')
  if (query.action?.endsWith('.*')) where.push(sql`a.action like ${`${query.action.slice(0, -1).replace(/[\\%_]/g, '\\$&')}%`}`)
  else if (query.action) where.push(sql`a.action = ${query.action}`)
  if (query.actorId) where.push(sql`a.actor_user_id = ${query.actorId}`)
  if (since) where.push(sql`a.occurred_at >= ${since.toISOString()}`)
  if (until) where.push(sql`a.occurred_at < ${until.toISOString()}`)
  return where
}

/** The audit log's order: newest first; its filters are the query's own (`withFilters`), so the shape has none. */
const AUDIT_LIST: ListShape = {
  name: 'audit-logs',
  filters: {},
  sorts: { occurredAt: { column: 'a.occurred_at', cast: 'timestamptz' } },
  defaultOrder: ['-occurredAt'],
  tiebreaker: { column: 'a.id', cast: 'uuid' },
}
const FILTER_KEYS = ['page', 'size', 'cursor', 'action', 'actorId', 'since', 'until'] as const

/**
 * A page of audit records by page or cursor. `counted` is the scalar total from the maintained
 * counts (audit_log_counts) when no filter narrows the log; filtered, the records are counted.
 */
async function page(db: Database, where: SQL[], query: AuditQuery, request: PageRequest, scope: string, counted: SQL | undefined) {
  const listQuery = parseListQuery(AUDIT_LIST, {})
  const filtered = FILTER_KEYS.slice(3).filter((key) => query[key] !== undefined)
  const identity = listIdentity(AUDIT_LIST, scope, { ...listQuery, canonical: `${filtered.map((key) => `${key}=${query[key]}`).join('&')}&${listQuery.canonical}` })
  const after = readCursor(request, identity, listQuery.order)
  return selectListPage<AuditRow, AuditRow>(
    db,
    {
      columns: COLUMNS,
      from: 'audit_logs a',
      conditions: where,
      order: listQuery.order,
      total: !filtered.length && counted ? counted : sql`select count(*) from audit_logs a where ${sql.join(where, sql` and `)}`,
      identity,
      after,
    },
    request,
    (row) => ({ ...row, occurredAt: isoFromText(row.occurredAt) }),
  )
}

const requireAdministrator = (actor: Actor) => {
  if (!isAdministrator(actor)) throw forbidden('Only an administrator or superadministrator may read the audit log.')
}

/**
 * The organization's audit log: its organization-level records and the records of the projects
 * the actor can see (a superadministrator sees every project, deleted ones included).
 */
export async function listAuditLog(db: Database, access: ProjectAccessService, actor: Actor, query: AuditQuery, request: PageRequest) {
  const where = [sql`a.organization_id = ${actor.organizationId}`, ...filters(query)]
  requireAdministrator(actor)
  // The total without filters: every scope's count, or the organization's own and the visible projects'.
  let counted = sql`select coalesce(sum(c.records), 0) from audit_log_counts c where c.organization_id = ${actor.organizationId}`
  if (actor.role !== 'superadministrator') {
    where.push(sql`(a.project_id is null or a.project_id in (${access.visibleProjects(actor)}))`)
    counted = sql`${counted} and (c.scope_id = ${actor.organizationId} or c.scope_id in (${access.visibleProjects(actor)}))`
  }
  return page(db, where, query, request, `${actor.organizationId} ${actor.userId}`, counted)
}

/** One project's audit log: the project must be visible (404) before the role counts (403). */
export async function listProjectAuditLog(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, query: AuditQuery, request: PageRequest) {
  const where = [sql`a.organization_id = ${actor.organizationId}`, sql`a.project_id = ${projectId}`, ...filters(query)]
  await access.requireProjectAccess(actor, projectId, 'viewer')
  requireAdministrator(actor)
  const counted = sql`select coalesce(sum(c.records), 0) from audit_log_counts c where c.organization_id = ${actor.organizationId} and c.scope_id = ${projectId}`
  return page(db, where, query, request, `${actor.organizationId} ${projectId}`, counted)
}

/** The audit logs, bound once. */
export function createAuditLog({ db, access }: { db: Database; access: ProjectAccessService }) {
  return {
    organization: (actor: Actor, query: AuditQuery, request: PageRequest) => listAuditLog(db, access, actor, query, request),
    project: (actor: Actor, projectId: string, query: AuditQuery, request: PageRequest) => listProjectAuditLog(db, access, actor, projectId, query, request),
  }
}

export type AuditLogService = ReturnType<typeof createAuditLog>
