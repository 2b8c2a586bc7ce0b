/**
 * Audit records: who did what, written in the transaction of the change (a unit of work,
 * src/writes.ts, writes them for every change; system jobs outside one call `writeAudit`).
 */
import { queryText, type Executor } from './db'
import { uuidv7 } from './ids'
import { countUpsert, type CountTable } from './counts'
import type { AuditChanges } from './schema'
import type { Via } from './services/identity'

/** Who did it: an Actor satisfies this, and so does the operator CLI (no user, no key). */
export interface AuditActor {
  organizationId: string
  userId: string | null
  apiKeyId: string | null
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

/** The count of the record's scope (src/schema.ts auditLogCounts): its project, or the organization. */
const COUNT_STEP = `counted as (
    insert into audit_log_counts as c (scope_id, organization_id, records) values (coalesce($9::uuid, $1::uuid), $1::uuid, 1)
    on conflict (scope_id, organization_id) do update set records = c.records + 1
  )`

/** The version bump of the lists the change moves (`change_versions`, scope $12: a project or the organization). */
const BUMP_STEP = `bump as (
    insert into change_versions as v (scope_id, organization_id, version) values ($12::uuid, $1::uuid, 1)
    on conflict (scope_id, organization_id) do update set version = v.version + 1
  )`

const INSERT_RECORD = `insert into audit_logs (id, organization_id, actor_user_id, api_key_id, via, action, resource_type, resource_id, project_id, changes, request_id)
  values ($11, $1, $2, $3, $4, $5, $6, $7, $9, $10::jsonb, $8)`

/** The audit record with its scope's count: the statement of every record but a unit of work's first. */
const INSERT_AUDIT = `with ${COUNT_STEP}\n  ${INSERT_RECORD}`

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
  const parameters = [
    entry.organizationId ?? actor.organizationId,
    actor.userId,
    actor.apiKeyId,
    actor.via,
    entry.action,
    entry.resourceType,
    entry.resourceId,
    actor.requestId,
    entry.projectId ?? null,
    changes === null ? null : JSON.stringify(changes),
    uuidv7(),
  ]
  if (bumpScopeId === undefined && !moves.length) return void (await queryText(executor, INSERT_AUDIT, parameters))
  // The version bump first, then the counts: one statement, so one round trip, and every write of
  // a scope takes its rows in this order.
  const steps = [COUNT_STEP]
  if (bumpScopeId !== undefined) {
    parameters.push(bumpScopeId)
    steps.unshift(BUMP_STEP)
  }
  moves.forEach(({ counts, scopeId, changes }, index) => {
    if (!Object.values(changes).some((delta) => delta !== 0)) return
    steps.push(`moved${index} as (${countUpsert(counts, changes, parameters, `$${parameters.push(scopeId)}`, '$1')})`)
  })
  await queryText(executor, `with ${steps.join(', ')}\n  ${INSERT_RECORD}`, parameters)
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
