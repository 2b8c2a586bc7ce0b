/** Reading the audit log: administrators only, newest first, project logs behind project access. */
import { and, count, desc, eq, gte, like, lt, type SQL } from 'drizzle-orm'
import type { Database } from '../../src/db'
import { badRequest, forbidden } from '../../src/http/errors'
import { pageWithTotal, totalOver, window, type PageRequest } from '../../src/http/pagination'
import { auditLogs } from '../../src/schema'
import type { ProjectAccessService } from '../../src/services/access'
import { isAdministrator, type Actor } from '../../src/services/auth'
import type { AuditQuery } from './model'

type AuditRow = typeof auditLogs.$inferSelect

function serializeAuditRecord(row: AuditRow) {
  return {
    id: row.id,
    occurredAt: row.occurredAt.toISOString(),
    actorUserId: row.actorUserId,
    apiKeyId: row.apiKeyId,
    via: row.via as 'rest' | 'mcp' | 'account' | 'cli' | 'display',
    action: row.action,
    resourceType: row.resourceType,
    resourceId: row.resourceId,
    projectId: row.projectId,
    changes: row.changes ?? null,
    requestId: row.requestId,
  }
}

function filters(query: AuditQuery): SQL[] {
  const conditions: SQL[] = []
  const since = query.since ? new Date(query.since) : undefined
  const until = query.until ? new Date(query.until) : undefined
  if (since && until && since > until) throw badRequest('"since" must not be after "until".', 'since')
  if (query.action?.endsWith('.*')) conditions.push(like(auditLogs.action, `${query.action.slice(0, -1).replace(/[\\%_]/g, '\\$&')}%`))
  else if (query.action) conditions.push(eq(auditLogs.action, query.action))
  if (query.actorId) conditions.push(eq(auditLogs.actorUserId, query.actorId))
  if (since) conditions.push(gte(auditLogs.occurredAt, since))
  if (until) conditions.push(lt(auditLogs.occurredAt, until))
  return conditions
}

async function page(db: Database, where: SQL | undefined, request: PageRequest) {
  const rows = await db
    .select({ record: auditLogs, total: totalOver() })
    .from(auditLogs)
    .where(where)
    .orderBy(desc(auditLogs.occurredAt), desc(auditLogs.id))
    .limit(window(request).limit)
    .offset(window(request).offset)
  return pageWithTotal(rows, request, (row) => serializeAuditRecord(row.record), async () => {
    const [total] = await db.select({ value: count() }).from(auditLogs).where(where)
    return total!.value
  })
}

const requireAdministrator = (actor: Actor) => {
  if (!isAdministrator(actor)) throw forbidden('Only an administrator or superadministrator may read the audit log.')
}

/** The organization's audit log. */
export async function listAuditLog(db: Database, actor: Actor, query: AuditQuery, request: PageRequest) {
  const conditions = filters(query)
  requireAdministrator(actor)
  return page(db, and(eq(auditLogs.organizationId, actor.organizationId), ...conditions), request)
}

/** One project's audit log: the project must be visible (404) before the role counts (403). */
export async function listProjectAuditLog(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, query: AuditQuery, request: PageRequest) {
  const conditions = filters(query)
  await access.requireProjectAccess(actor, projectId, 'viewer')
  requireAdministrator(actor)
  return page(db, and(eq(auditLogs.organizationId, actor.organizationId), eq(auditLogs.projectId, projectId), ...conditions), request)
}
