/**
 * The audit writer every plugin uses: `mutate` runs a change and its audit record in one
 * transaction, so neither exists without the other.
 */
import type { Database, Executor, Transaction } from './db'
import { auditLogs, type AuditChanges } from './schema'
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

/** Writes one audit record on `executor`, which should be the transaction of the change. */
export async function writeAudit(executor: Executor, actor: AuditActor, entry: AuditEntry): Promise<void> {
  const changes = entry.changes ? { before: scrub(entry.changes.before), after: scrub(entry.changes.after) } : null
  await executor.insert(auditLogs).values({
    organizationId: entry.organizationId ?? actor.organizationId,
    actorUserId: actor.userId,
    apiKeyId: actor.apiKeyId,
    via: actor.via,
    action: entry.action,
    resourceType: entry.resourceType,
    resourceId: entry.resourceId,
    projectId: entry.projectId ?? null,
    changes,
    requestId: actor.requestId,
  })
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
