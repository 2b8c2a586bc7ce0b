/**
 * The audit writer every plugin uses: `mutate` runs a change and its audit record in one
 * transaction, so neither exists without the other.
 */
import { queryText, type Database, type Executor, type Transaction } from './db'
import { uuidv7 } from './ids'
import type { AuditChanges } from './schema'
import type { Via } from './services/identity'
import { claimIdempotencyKey, recordAnswer, storedAnswer, type IdempotentRequest } from './http/idempotency'

/** Who did it: an Actor satisfies this, and so does the operator CLI (no user, no key). */
export interface AuditActor {
  organizationId: string
  userId: string | null
  apiKeyId: string | null
  via: Via
  requestId: string | null
  /** A POST with an Idempotency-Key (API v1): its record commits with the change. */
  idempotency?: IdempotentRequest
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

/**
 * The audit record and the version bump of what it changed, in one statement: the project's
 * version for a change in a project, the organization's otherwise (change_versions: cached list
 * pages are keyed on them, so no list survives a change it could show).
 */
const WRITE_AUDIT = `with bump as (
    insert into change_versions as v (scope_id, organization_id, version) values (coalesce($9::uuid, $1::uuid), $1::uuid, 1)
    on conflict (scope_id, organization_id) do update set version = v.version + 1
  )
  insert into audit_logs (id, organization_id, actor_user_id, api_key_id, via, action, resource_type, resource_id, project_id, changes, request_id)
  values ($11, $1, $2, $3, $4, $5, $6, $7, $9, $10::jsonb, $8)`

/** Writes one audit record on `executor`, which should be the transaction of the change. */
export async function writeAudit(executor: Executor, actor: AuditActor, entry: AuditEntry): Promise<void> {
  const changes = entry.changes ? { before: scrub(entry.changes.before), after: scrub(entry.changes.after) } : null
  await queryText(executor, WRITE_AUDIT, [
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
  ])
}

/**
 * The version of the organization's lists that are not in a project (teams, team members): a
 * cached page of them is keyed on it (src/http/list-cache.ts). Read before the list's rows.
 */
export async function organizationVersion(executor: Executor, organizationId: string): Promise<string> {
  const [row] = await queryText<{ version: string | number }>(executor, 'select version from change_versions where scope_id = $1 and organization_id = $1', [organizationId])
  return `o${row?.version ?? 0}`
}

export type Audit = (entry: AuditEntry) => Promise<void>

/**
 * Runs `change` in a transaction and gives it `audit`, which records on the same transaction.
 * Any throw rolls back the change and its records together.
 */
export async function mutate<T>(db: Database, actor: AuditActor, change: (tx: Transaction, audit: Audit) => Promise<T>): Promise<T> {
  const request = actor.idempotency
  if (!request || request.claimed) return db.transaction((tx) => change(tx, (entry) => writeAudit(tx, actor, entry)))
  // The first change of an idempotent request commits with its key's record and answer: both or neither.
  request.claimed = true
  const outcome = await db.transaction(async (tx) => {
    if (!(await claimIdempotencyKey(tx, request))) return null
    const result = await change(tx, (entry) => writeAudit(tx, actor, entry))
    await recordAnswer(tx, request, result)
    return { result }
  })
  if (outcome) return outcome.result
  // A request with the same key committed first (this one waited for it): its answer is ours.
  const answer = await storedAnswer(db, request)
  if (!answer) throw new Error('idempotency record vanished between claim and read')
  request.replayed = { status: answer.status }
  return answer.response as T
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
