/** Reading the audit log: administrators only, newest first, project records behind project access. */
import type { Database } from '../../src/db'
import { badRequest, forbidden } from '../../src/http/errors'
import type { PageRequest } from '../../src/http/pagination'
import type { ProjectAccessService } from '../projects/api'
import { isAdministrator, type Actor } from '../../src/services/identity'
import { listIdentity, Parameters, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import { isoFromText, selectListPage } from '../../src/sql'
import type { AuditQuery } from './model'

type Via = 'rest' | 'mcp' | 'account' | 'cli' | 'display' | 'system'

interface AuditRow {
  id: string
  occurredAt: string
  actorUserId: string | null
  apiKeyId: string | null
  via: Via
  action: string
  resourceType: string
  resourceId: string
  projectId: string | null
  changes: { before?: Record<string, unknown>; after?: Record<string, unknown> } | null
  requestId: string | null
}

const COLUMNS = `a.id, a.occurred_at as "occurredAt", a.actor_user_id as "actorUserId", a.api_key_id as "apiKeyId", a.via, a.action,
  a.resource_type as "resourceType", a.resource_id as "resourceId", a.project_id as "projectId", a.changes, a.request_id as "requestId"`

/** A `where` on the alias `a` and its parameters, numbered from $1. */
interface Condition {
  where: string[]
  parameters: unknown[]
}

/** Adds the query's filters to `condition`. */
function withFilters(condition: Condition, query: AuditQuery): Condition {
  const { where, parameters } = condition
  const next = (value: unknown) => `$${parameters.push(value)}`
  const since = query.since ? new Date(query.since) : undefined
  const until = query.until ? new Date(query.until) : undefined
  if (since && until && since > until) throw badRequest('"since" must not be after "until".', 'since')
  if (query.action?.endsWith('.*')) where.push(`a.action like ${next(`${query.action.slice(0, -1).replace(/[\\%_]/g, '\\$&')}%`)}`)
  else if (query.action) where.push(`a.action = ${next(query.action)}`)
  if (query.actorId) where.push(`a.actor_user_id = ${next(query.actorId)}`)
  if (since) where.push(`a.occurred_at >= ${next(since.toISOString())}`)
  if (until) where.push(`a.occurred_at < ${next(until.toISOString())}`)
  return condition
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
async function page(db: Database, condition: Condition, query: AuditQuery, request: PageRequest, scope: string, counted: string | undefined) {
  const parameters = new Parameters(condition.parameters)
  const listQuery = parseListQuery(AUDIT_LIST, {}, parameters)
  const filtered = FILTER_KEYS.slice(3).filter((key) => query[key] !== undefined)
  const identity = listIdentity(AUDIT_LIST, scope, { ...listQuery, canonical: `${filtered.map((key) => `${key}=${query[key]}`).join('&')}&${listQuery.canonical}` })
  const after = readCursor(request, identity, listQuery.order)
  return selectListPage<AuditRow, AuditRow>(
    db,
    {
      columns: COLUMNS,
      from: 'audit_logs a',
      conditions: condition.where,
      parameters,
      order: listQuery.order,
      total: !filtered.length && counted ? counted : `select count(*) from audit_logs a where ${condition.where.join(' and ')}`,
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
  const condition = withFilters({ where: ['a.organization_id = $1'], parameters: [actor.organizationId] }, query)
  requireAdministrator(actor)
  // The total without filters: every scope's count, or the organization's own and the visible projects'.
  let counted = 'select coalesce(sum(c.records), 0) from audit_log_counts c where c.organization_id = $1'
  if (actor.role !== 'superadministrator') {
    const visible = access.visibleProjectIds(actor, condition.parameters.length + 1)
    condition.where.push(`(a.project_id is null or a.project_id in (${visible.sql}))`)
    counted += ` and (c.scope_id = $1 or c.scope_id in (${visible.sql}))`
    condition.parameters.push(...visible.parameters)
  }
  return page(db, condition, query, request, `${actor.organizationId} ${actor.userId}`, counted)
}

/** One project's audit log: the project must be visible (404) before the role counts (403). */
export async function listProjectAuditLog(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, query: AuditQuery, request: PageRequest) {
  const condition = withFilters({ where: ['a.organization_id = $1', 'a.project_id = $2'], parameters: [actor.organizationId, projectId] }, query)
  await access.requireProjectAccess(actor, projectId, 'viewer')
  requireAdministrator(actor)
  const counted = 'select coalesce(sum(c.records), 0) from audit_log_counts c where c.organization_id = $1 and c.scope_id = $2'
  return page(db, condition, query, request, `${actor.organizationId} ${projectId}`, counted)
}

/** The audit logs, bound once. */
export function createAuditLog({ db, access }: { db: Database; access: ProjectAccessService }) {
  return {
    organization: (actor: Actor, query: AuditQuery, request: PageRequest) => listAuditLog(db, access, actor, query, request),
    project: (actor: Actor, projectId: string, query: AuditQuery, request: PageRequest) => listProjectAuditLog(db, access, actor, projectId, query, request),
  }
}

export type AuditLogService = ReturnType<typeof createAuditLog>
