/**
 * Audit records: who did what, written in the transaction of the change (a unit of work,
 * src/writes.ts, writes them for every change; system jobs outside one call `writeAudit`).
 */
import { sql } from 'drizzle-orm'
import type { Executor } from './db'
import { uuidv7 } from './ids'
import { countUpsert, type CountTable } from './counts'
import { compileStatement, param, runQuery, runStatement } from './statements'
import type { AuditChanges } from './schema'
import type { Via } from './services/identity'

/** Who did it: an Actor satisfies this, and so does the operator CLI (no user, no key). */
export interface AuditActor {
  organizationId: string
  userId: string | null
  apiKeyId: string | null
  /** The OAuth grant of the access token used (an Actor has it); absent for the CLI and system jobs. */
  grantId?: string | null
  via: Via
  requestId: string | null
}

export interface AuditEntry {
  /** `<resource>.<verb>`, e.g. `team.created`, `project.member_added`. */
  action: string
  resourceType: string
  resourceId: string
  projectId?: string | null
  changes?: AuditChanges | null
  /** Overrides the actor's organization (the CLI acting on a given organization). */
  organizationId?: string
}

/** Never stored, whatever a caller passes in `changes`. */
const SECRET_FIELDS = new Set(['secret', 'password', 'passwordHash', 'secretHash', 'apiKey', 'token', 'tokenHash'])

function scrub(values: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!values) return values
  const clean: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(values)) if (!SECRET_FIELDS.has(key)) clean[key] = value
  return clean
}

/** The record's values, by name: every audit statement is given them (and `bumpScope` with a version bump). */
const ORGANIZATION = sql.placeholder('organization')
const PROJECT = sql.placeholder('project')

/** The count of the record's scope (src/schema.ts auditLogCounts): its project, or the organization. */
const COUNT_STEP = sql`counted as (
    insert into audit_log_counts as c (scope_id, organization_id, records) values (coalesce(${PROJECT}::uuid, ${ORGANIZATION}::uuid), ${ORGANIZATION}::uuid, 1)
    on conflict (scope_id, organization_id) do update set records = c.records + 1
  )`

/** The version bump of the lists the change moves (`change_versions`, scope `bumpScope`: a project or the organization). */
const BUMP_STEP = sql`bump as (
    insert into change_versions as v (scope_id, organization_id, version) values (${sql.placeholder('bumpScope')}::uuid, ${ORGANIZATION}::uuid, 1)
    on conflict (scope_id, organization_id) do update set version = v.version + 1
  )`

const INSERT_RECORD = sql`insert into audit_logs (id, organization_id, actor_user_id, api_key_id, grant_id, via, action, resource_type, resource_id, project_id, changes, request_id)
  values (${sql.placeholder('id')}, ${ORGANIZATION}, ${sql.placeholder('user')}, ${sql.placeholder('apiKey')}, ${sql.placeholder('grant')}, ${sql.placeholder('via')}, ${sql.placeholder('action')},
    ${sql.placeholder('resourceType')}, ${sql.placeholder('resourceId')}, ${PROJECT}, ${sql.placeholder('changes')}::jsonb, ${sql.placeholder('requestId')})`

/** The audit record with its scope's count: the statement of every record but a unit of work's first. */
const INSERT_AUDIT = compileStatement(sql`with ${COUNT_STEP}\n  ${INSERT_RECORD}`)

/** The same after the version bump: a unit of work's first record, when it moves no count. */
const BUMP_AND_INSERT_AUDIT = compileStatement(sql`with ${BUMP_STEP}, ${COUNT_STEP}\n  ${INSERT_RECORD}`)

/** A unit of work's count moves (src/counts.ts), carried by its audit record's statement. */
export interface CountMoves {
  counts: CountTable
  scopeId: string
  changes: Readonly<Record<string, number>>
}

/**
 * Writes one audit record on `executor`, which should be the transaction of the change; with
 * `bumpScopeId`, also advances that list scope's version (the unit of work's first record does).
 */
export async function writeAudit(executor: Executor, actor: AuditActor, entry: AuditEntry, bumpScopeId?: string, moves: readonly CountMoves[] = []): Promise<void> {
  const changes = entry.changes ? { before: scrub(entry.changes.before), after: scrub(entry.changes.after) } : null
  const values = {
    organization: entry.organizationId ?? actor.organizationId,
    user: actor.userId,
    apiKey: actor.apiKeyId,
    grant: actor.grantId ?? null,
    via: actor.via,
    action: entry.action,
    resourceType: entry.resourceType,
    resourceId: entry.resourceId,
    requestId: actor.requestId,
    project: entry.projectId ?? null,
    changes: changes === null ? null : JSON.stringify(changes),
    id: uuidv7(),
    bumpScope: bumpScopeId ?? null,
  }
  const moved = moves.flatMap(({ counts, scopeId, changes }, index) => {
    const upsert = countUpsert(counts, changes, param(scopeId), sql`${ORGANIZATION}`)
    return upsert ? [sql`${sql.raw(`moved${index}`)} as (${upsert})`] : []
  })
  if (!moved.length) return void (await runStatement(executor, bumpScopeId === undefined ? INSERT_AUDIT : BUMP_AND_INSERT_AUDIT, values))
  // The version bump first, then the counts: one statement, so one round trip, and every write of
  // a scope takes its rows in this order.
  const steps = [...(bumpScopeId === undefined ? [] : [BUMP_STEP]), COUNT_STEP, ...moved]
  await runQuery(executor, sql`with ${sql.join(steps, sql`, `)}\n  ${INSERT_RECORD}`, values)
}

/**
 * Writes the audit records of a batch (a bulk request's items) on `executor` in one statement: the
 * records as rows of one INSERT, each scope's count moved once by its number of records, and with
 * `bumpScopeId` the version bump and the unit's count moves first, as `writeAudit` orders them.
 */
export async function writeAudits(executor: Executor, actor: AuditActor, entries: readonly AuditEntry[], bumpScopeId?: string, moves: readonly CountMoves[] = []): Promise<void> {
  if (!entries.length) return
  if (entries.length === 1) return writeAudit(executor, actor, entries[0]!, bumpScopeId, moves)
  const organizationOf = (entry: AuditEntry) => entry.organizationId ?? actor.organizationId
  const organizations = new Set(entries.map(organizationOf))
  if (organizations.size > 1) throw new Error('a batch of audit records names one organization')
  const organization = param([...organizations][0]!)
  const perScope = new Map<string, number>()
  for (const entry of entries) {
    const scope = entry.projectId ?? organizationOf(entry)
    perScope.set(scope, (perScope.get(scope) ?? 0) + 1)
  }
  const counted = sql`counted as (
    insert into audit_log_counts as c (scope_id, organization_id, records)
    values ${sql.join([...perScope].sort(([a], [b]) => (a < b ? -1 : 1)).map(([scope, records]) => sql`(${param(scope)}::uuid, ${organization}::uuid, ${param(records)}::int)`), sql`, `)}
    on conflict (scope_id, organization_id) do update set records = c.records + excluded.records
  )`
  const bump =
    bumpScopeId === undefined
      ? []
      : [
          sql`bump as (
    insert into change_versions as v (scope_id, organization_id, version) values (${param(bumpScopeId)}::uuid, ${organization}::uuid, 1)
    on conflict (scope_id, organization_id) do update set version = v.version + 1
  )`,
        ]
  const moved = moves.flatMap(({ counts, scopeId, changes }, index) => {
    const upsert = countUpsert(counts, changes, param(scopeId), organization)
    return upsert ? [sql`${sql.raw(`moved${index}`)} as (${upsert})`] : []
  })
  const rows = entries.map((entry) => {
    const changes = entry.changes ? JSON.stringify({ before: scrub(entry.changes.before), after: scrub(entry.changes.after) }) : null
    return sql`(${param(uuidv7())}::uuid, ${organization}::uuid, ${param(actor.userId)}::uuid, ${param(actor.apiKeyId)}::uuid, ${param(actor.grantId ?? null)}::uuid, ${param(actor.via)}, ${param(entry.action)},
      ${param(entry.resourceType)}, ${param(entry.resourceId)}, ${param(entry.projectId ?? null)}::uuid, ${param(changes)}::jsonb, ${param(actor.requestId)})`
  })
  await runQuery(
    executor,
    sql`with ${sql.join([...bump, counted, ...moved], sql`, `)}
  insert into audit_logs (id, organization_id, actor_user_id, api_key_id, grant_id, via, action, resource_type, resource_id, project_id, changes, request_id)
  values ${sql.join(rows, sql`, `)}`,
  )
}

/**
 * The before/after of the fields that `patch` changes in `current`; undefined when nothing
 * changes (a no-op update writes no record).
 */
export function changedFields<T extends Record<string, unknown>>(current: T, patch: Partial<T>): AuditChanges | undefined {
  const before: Record<string, unknown> = {}
  const after: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue
    const old = current[key]
    const same = old instanceof Date && value instanceof Date ? old.getTime() === value.getTime() : old === value
    if (!same) {
      before[key] = old
      after[key] = value
    }
  }
  return Object.keys(after).length ? { before, after } : undefined
}
