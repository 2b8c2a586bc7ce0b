/** Reading the audit log: administrators only, newest first, project records behind project access. */
import type { Database } from '../../src/db'
import { badRequest, forbidden } from '../../src/http/errors'
import type { PageRequest } from '../../src/http/pagination'
import type { ProjectAccessService } from '../projects/api'
import { isAdministrator, type Actor } from '../../src/services/identity'
import { isoFromText, selectPage } from '../../src/sql'
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

async function page(db: Database, { where, parameters }: Condition, request: PageRequest) {
  const filter = where.join(' and ')
  return selectPage<AuditRow & { total: string }, AuditRow>(
    db,
    `select ${COLUMNS}, count(*) over () as total from audit_logs a where ${filter} order by a.occurred_at desc, a.id desc`,
    `select count(*) as total from audit_logs a where ${filter}`,
    parameters,
    request,
    ({ total: _total, ...row }) => ({ ...row, occurredAt: isoFromText(row.occurredAt) }),
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
  if (actor.role !== 'superadministrator') {
    const visible = access.visibleProjectIds(actor, condition.parameters.length + 1)
    condition.where.push(`(a.project_id is null or a.project_id in (${visible.sql}))`)
    condition.parameters.push(...visible.parameters)
  }
  return page(db, condition, request)
}

/** One project's audit log: the project must be visible (404) before the role counts (403). */
export async function listProjectAuditLog(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, query: AuditQuery, request: PageRequest) {
  const condition = withFilters({ where: ['a.organization_id = $1', 'a.project_id = $2'], parameters: [actor.organizationId, projectId] }, query)
  await access.requireProjectAccess(actor, projectId, 'viewer')
  requireAdministrator(actor)
  return page(db, condition, request)
}

/** The audit logs, bound once. */
export function createAuditLog({ db, access }: { db: Database; access: ProjectAccessService }) {
  return {
    organization: (actor: Actor, query: AuditQuery, request: PageRequest) => listAuditLog(db, access, actor, query, request),
    project: (actor: Actor, projectId: string, query: AuditQuery, request: PageRequest) => listProjectAuditLog(db, access, actor, projectId, query, request),
  }
}

export type AuditLogService = ReturnType<typeof createAuditLog>
