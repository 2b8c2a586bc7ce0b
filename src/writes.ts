/**
 * The unit of work of every write. A write has four obligations besides the change itself: its
 * audit record, its change-feed events, the version bump of the lists it can change (cached list
 * pages are keyed on those versions: src/http/list-cache.ts), and, for an idempotent POST, the
 * recorded answer. `writes.change(actor, scope, work, request)` keeps all four in the change's
 * transaction, so they commit or roll back together:
 *
 *     return writes.change(actor, 'project', async (w) => {
 *       const [row] = await w.tx.insert(workItems).values({ … }).returning()
 *       await w.audit({ action: 'work_item.created', resourceType: 'work_item', resourceId: row.id, projectId })
 *       await w.emit({ type: 'work_item.created', projectId, data: serialize(row) })
 *       return created(serialize(row))
 *     }, request)
 *
 * The scope names the lists the change moves: its project's (`'project'`: the project its audit
 * record names), the organization's own lists (`'organization'`: teams and their members, and
 * with them every project's access), or
 * none (`null`: sign-ins, API keys, webhooks, pages: nothing a cached list shows), so an
 * organization's list versions move only with changes to what those lists show. The version is
 * bumped by the unit's first audit record, in the same statement, so it costs no round trip; a
 * unit that changes nothing writes no record and moves no version.
 *
 * What `work` returns is the answer: a value (200) or an `Answer` (`created(value)`: 201 with its
 * Location). For an idempotent POST the answer is recorded, sealed, in the same transaction
 * (src/http/idempotency.ts); when another request with the same key committed first, its recorded
 * answer is returned instead, as a `Replay`.
 *
 * With `requireAudit` (the tests' services), a unit with a list scope that changed rows and wrote
 * no audit record throws, naming its scope, so its transaction rolls back: a change no record
 * tells of fails loudly. Rows changed are read from `pg_stat_xact_user_tables` before and after
 * the work, so a unit that only read and changed nothing (a no-op update) passes.
 */
import { writeAudit, writeAudits, type AuditActor, type AuditEntry } from './audit'
import type { ChangeFeed, RecordedChange } from './changes'
import { moveCounts, type CountTable } from './counts'
import { queryText, type Database, type Executor, type Transaction } from './db'
import { Answer } from './http/answer'
import { claimIdempotencyKey, recordAnswer, storedAnswer, type IdempotentRequest } from './http/idempotency'

/** The lists a change moves: its project's (the audit record's `projectId`), the organization's own, or none. */
export type ListScope = 'project' | 'organization' | null

/** One unit of work in progress: its transaction and its obligations. */
export interface Write {
  readonly tx: Transaction
  /** Writes an audit record (the first also bumps the scope's list version). */
  audit(entry: AuditEntry): Promise<void>
  /**
   * Writes the audit records of a batch (a bulk request's items) in one statement, as many
   * `audit` calls would: the first record of the unit bumps the scope's list version.
   */
  auditMany(entries: readonly AuditEntry[]): Promise<void>
  /** Records a change-feed event (webhooks observe it in this transaction). */
  emit(change: RecordedChange): Promise<void>
  /** Records a batch's events, in order; observers that can take them at once do (`observeMany`). */
  emitMany(changes: readonly RecordedChange[]): Promise<void>
  /**
   * Moves maintained counts (src/counts.ts) of `scopeId` by `changes`. They are moved by the next
   * audit record's statement, after its version bump (or at the end of the work): every write of a
   * project takes that row first, so two writes never wait on each other's count rows in turn.
   */
  count(counts: CountTable, scopeId: string, changes: Readonly<Record<string, number>>): void
  /**
   * Before deleting a row it has locked (and before any other row lock): lets other plugins remove
   * and count out what points at it (src/changes.ts `beforeDelete`).
   */
  deleting(resourceType: string, id: string, projectId: string | null): Promise<void>
}

/** An answer recorded by an earlier request with the same Idempotency-Key, returned in place of running again. */
export class Replay<T = unknown> extends Answer<T> {}

export interface Writes {
  readonly db: Database
  /** Runs `work` as one unit of work (see above); `request`: the idempotent POST it answers. */
  change<T>(actor: AuditActor, scope: ListScope, work: (w: Write) => Promise<T>, request?: IdempotentRequest): Promise<T>
  /** Records the answer of an idempotent POST that changed nothing through a unit of work. */
  recordUnchanged(request: IdempotentRequest, answer: Answer): Promise<void>
}

export interface WritesOptions {
  /** Tests: a unit of work with a list scope that changes rows without an audit record throws. */
  requireAudit?: boolean
}

/** Rows the transaction has inserted, updated or deleted so far (for `requireAudit`). */
async function rowsChanged(tx: Transaction): Promise<number> {
  const [row] = await queryText<{ changed: number | string }>(tx, 'select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) as changed from pg_stat_xact_user_tables', [])
  return Number(row?.changed ?? 0)
}

export function createWrites(db: Database, feed: ChangeFeed, options: WritesOptions = {}): Writes {
  const unit = (tx: Transaction, actor: AuditActor, scope: ListScope): Write & { flush(): Promise<void>; audited: boolean } => {
    let pending = scope
    const moves = new Map<string, { counts: CountTable; scopeId: string; changes: Record<string, number> }>()
    const write: Write & { flush(): Promise<void>; audited: boolean } = {
      tx,
      audited: false,
      deleting: (resourceType, id, projectId) => feed.deleting(tx, { resourceType, id, projectId, organizationId: actor.organizationId }, write.count),
      count(counts, scopeId, changes) {
        const key = `${counts.table} ${scopeId}`
        const move = moves.get(key) ?? { counts, scopeId, changes: {} }
        moves.set(key, move)
        for (const [value, delta] of Object.entries(changes)) move.changes[value] = (move.changes[value] ?? 0) + delta
      },
      async flush() {
        for (const key of [...moves.keys()].sort()) {
          const { counts, scopeId, changes } = moves.get(key)!
          await moveCounts(tx, counts, actor.organizationId, scopeId, changes)
        }
      },
      async audit(entry) {
        await write.auditMany([entry])
      },
      async auditMany(entries) {
        if (!entries.length) return
        const [first] = entries
        const scopeId = pending === null ? undefined : pending === 'organization' ? (first!.organizationId ?? actor.organizationId) : (first!.projectId ?? undefined)
        if (pending === 'project' && entries.some((entry) => !entry.projectId)) throw new Error(`${first!.action}: a change of a project's lists is audited with its projectId`)
        pending = null
        write.audited = true
        // The counts moved so far travel in the records' statement; later ones at the end (flush).
        const carried = [...moves.keys()].sort().map((key) => moves.get(key)!)
        moves.clear()
        await (entries.length === 1 ? writeAudit(tx, actor, first!, scopeId, carried) : writeAudits(tx, actor, entries, scopeId, carried))
      },
      emit: (change) => feed.record(tx, actor, change),
      emitMany: (changes) => feed.recordMany(tx, actor, changes),
    }
    return write
  }

  return {
    db,
    async change(actor, scope, work, request) {
      const run = async (tx: Transaction) => {
        const write = unit(tx, actor, scope)
        const checked = options.requireAudit && scope !== null
        const before = checked ? await rowsChanged(tx) : 0
        const result = await work(write)
        await write.flush()
        if (checked && !write.audited) {
          const changed = (await rowsChanged(tx)) - before
          if (changed > 0) throw new Error(`a unit of work with list scope '${scope}' changed ${changed} rows and wrote no audit record`)
        }
        return result
      }
      if (!request || request.claimed) return db.transaction(run)
      // The first unit of an idempotent request commits with its key's record and answer: both or neither.
      request.claimed = true
      const outcome = await db.transaction(async (tx) => {
        if (!(await claimIdempotencyKey(tx, request))) return null
        const result = await run(tx)
        await recordAnswer(tx, request, result instanceof Answer ? result : new Answer(result, 200))
        return { result }
      })
      if (outcome) return outcome.result
      // A request with the same key committed first (this one waited for its lock): its answer is ours.
      const answer = await storedAnswer(db, request)
      if (!answer) throw new Error('idempotency record vanished between claim and read')
      return new Replay(answer.value, answer.status, answer.location) as never
    },
    async recordUnchanged(request, answer) {
      if (request.claimed) return
      request.claimed = true
      await db.transaction(async (tx) => {
        if (await claimIdempotencyKey(tx, request)) await recordAnswer(tx, request, answer)
      })
    },
  }
}

/**
 * The version of the organization's own lists (teams, team members): a cached page of them is
 * keyed on it (src/http/list-cache.ts). Read before the list's rows.
 */
export async function organizationVersion(executor: Executor, organizationId: string): Promise<string> {
  const [row] = await queryText<{ version: string | number }>(executor, 'select version from change_versions where scope_id = $1 and organization_id = $1', [organizationId])
  return `o${row?.version ?? 0}`
}
