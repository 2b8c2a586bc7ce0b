/**
 * The delivering side of the outbox. Deliveries form streams (one per webhook and project);
 * a stream goes out in order, one delivery at a time, and a delivery waiting for a retry holds
 * back the rest of its stream. A worker claims the heads of due streams with `FOR UPDATE SKIP
 * LOCKED`, within one organization per statement (so on Citus each claim runs on one shard),
 * taking the organizations with due work in turn (src/organization-round.ts), leasing each head
 * with the deliveries behind it (a batch), so no other worker, on any instance, touches the
 * stream until the lease runs out; it checks that the webhook's creator
 * still sees the project (again before any send once that answer is older than
 * `visibilityCheckMaxAgeMs`, so a slow receiver cannot carry it along the batch; what the creator
 * no longer sees is dropped unsent), sends the batch in order, stops at the first failure, and records the
 * batch's results, the webhook's health and (after `failAfterHours` of failures without a
 * success) its disabling with an audit record, in one transaction.
 */
import { writeAudit } from '../../src/audit'
import { queryText, type Database, type Transaction } from '../../src/db'
import { describeError, type Logger } from '../../src/log'
import type { OrganizationRound } from '../../src/organization-round'
import type { OutboxQueue } from '../../src/outbox-runner'
import { isoFromText } from '../../src/sql'
import type { ProjectAccessService } from '../projects/api'
import { NO_PROJECT, OUTBOX_CHANNEL } from './outbox'
import { countPendingDeliveries } from './upkeep'
import type { SecretBox } from './secrets'
import type { Attempt, Sender } from './sender'

export interface WorkerOptions {
  /** Workers per instance, each claiming its own streams. */
  concurrency: number
  /** Streams one claim takes (sent side by side). */
  streamsPerClaim: number
  /** Deliveries of one stream a claim takes (sent one after another). */
  batchSize: number
  pollIntervalMs: number
  leaseSeconds: number
  timeoutMs: number
  /** Waits before the 2nd, 3rd… attempt; then `retryEverySeconds`. */
  retryDelaysSeconds: readonly number[]
  retryEverySeconds: number
  failAfterHours: number
  /** How old the creator's visibility check may be when a delivery of the batch is sent (0: before every send). */
  visibilityCheckMaxAgeMs: number
}

interface Claimed {
  id: string
  organizationId: string
  webhookId: string
  projectKey: string
  seq: string | number
  attempts: number
  granted: boolean
  eventId: string
  type: string
  occurredAt: string
  projectId: string | null
  actorUserId: string | null
  via: string
  data: string
  /** An update's old values of the changed fields (JSON text), or null. */
  previous: string | null
  url: string
  createdBy: string
  secretSealed: string
  previousSecretSealed: string | null
}

/**
 * $1 streams, $2 batch size, $3 lease seconds, $4 this worker, $5 the organization: every table
 * named by its organization, so on Citus the statement runs on that organization's shard (a row
 * lock over several organizations spans shards, which Citus refuses).
 */
export const CLAIM = `with heads as (
    select d.webhook_id, d.project_key, d.organization_id from webhook_deliveries d
    join webhooks w on w.id = d.webhook_id and w.organization_id = d.organization_id and w.enabled
    where d.organization_id = $5 and d.status = 'pending' and d.next_attempt_at <= now() and (d.lease_until is null or d.lease_until < now())
      and not exists (
        select 1 from webhook_deliveries p
        where p.webhook_id = d.webhook_id and p.project_key = d.project_key and p.organization_id = $5
          and p.status = 'pending' and (p.seq, p.id) < (d.seq, d.id))
    order by d.next_attempt_at
    limit $1
    for update of d skip locked
  ),
  batch as (
    select x.id from heads h cross join lateral (
      select p.id from webhook_deliveries p
      where p.webhook_id = h.webhook_id and p.project_key = h.project_key and p.organization_id = $5 and p.status = 'pending'
      order by p.seq, p.id limit $2) x
  ),
  claimed as (
    update webhook_deliveries d set lease_until = now() + $3 * interval '1 second', leased_by = $4
    from batch, webhook_events e, webhooks w
    where d.organization_id = $5 and d.id = batch.id and e.id = d.event_id and e.organization_id = $5 and w.id = d.webhook_id and w.organization_id = $5
    returning d.id, d.organization_id, d.webhook_id, d.project_key, d.seq, d.attempts, d.granted,
      e.id as event_id, e.type, e.occurred_at, e.project_id, e.actor_user_id, e.via, e.data::text as data, e.previous::text as previous,
      w.url, w.created_by, w.secret_sealed, w.previous_secret_sealed, w.previous_secret_expires_at
  )
  -- Read from the updated rows rather than in RETURNING, where Citus allows no now() (nor any function that is not immutable).
  select id, organization_id as "organizationId", webhook_id as "webhookId", project_key as "projectKey", seq, attempts, granted,
    event_id as "eventId", type, occurred_at as "occurredAt", project_id as "projectId", actor_user_id as "actorUserId", via, data, previous,
    url, created_by as "createdBy", secret_sealed as "secretSealed",
    case when previous_secret_expires_at > now() then previous_secret_sealed end as "previousSecretSealed"
  from claimed`

/**
 * The organizations with deliveries a claim could take ($1 at most, the longest waiting first):
 * a read over every organization without row locks (on Citus, pushed down to every shard).
 */
export const DISCOVER = `select d.organization_id as "organizationId" from webhook_deliveries d
  join webhooks w on w.id = d.webhook_id and w.organization_id = d.organization_id and w.enabled
  where d.status = 'pending' and d.next_attempt_at <= now() and (d.lease_until is null or d.lease_until < now())
  group by d.organization_id
  order by min(d.next_attempt_at)
  limit $1`

/** Claims (organizations) one worker runs side by side. */
const CLAIMS_AT_ONCE = 4

/**
 * The longest wait RECORD derives from the configuration (a retry delay, the failure window): a
 * year. The configuration sets no upper bound, and a wait no timestamp holds (`now() + 1e13
 * seconds`) would fail every RECORD, leaving each batch leased, to be sent again and again.
 */
export const LONGEST_WAIT_SECONDS = 366 * 86_400

/**
 * $1 organization, $2 webhook, $3 this worker, $4 ids, $5 outcomes (succeeded/retry), $6 response
 * statuses, $7 durations, $8 errors, $9 bodies, $10 retry delays (s), $11 attempt times, $12 ids
 * released unsent, $13 hours of failure before giving up. A failed attempt past the window (from
 * the delivery's first attempt) is final; the webhook's health follows its last result, and a
 * webhook failing for the window without a success is disabled (`"disabled"` is then true).
 * Delays and the window are bounded to 0 … LONGEST_WAIT_SECONDS, so no configuration makes a time
 * overflow. The times derived from now() are read once in `r` and `outcome`: Citus refuses a
 * function that is not immutable inside CASE or COALESCE of an UPDATE on a distributed table.
 */
export const RECORD = `with r as (
    select id, outcome, response_status, duration, error, body, attempted_text::timestamptz as attempted_at,
      now() as at, now() + least(greatest(delay, 0), ${LONGEST_WAIT_SECONDS}) * interval '1 second' as retry_at,
      now() - least(greatest($13::float8, 0), ${LONGEST_WAIT_SECONDS / 3600}) * interval '1 hour' as give_up_before
    from unnest($4::uuid[], $5::text[], $6::int[], $7::int[], $8::text[], $9::text[], $10::float8[], $11::text[])
      as r(id, outcome, response_status, duration, error, body, delay, attempted_text)
  ),
  done as (
    update webhook_deliveries d set
      status = case when r.outcome = 'succeeded' then 'succeeded'
        when coalesce(d.first_attempt_at, r.attempted_at) <= r.give_up_before then 'failed' else 'pending' end,
      attempts = d.attempts + 1,
      first_attempt_at = coalesce(d.first_attempt_at, r.attempted_at),
      last_attempt_at = r.attempted_at,
      last_response_status = r.response_status, last_duration_ms = r.duration, last_error = r.error, last_response_body = r.body,
      next_attempt_at = case when r.outcome = 'succeeded' or coalesce(d.first_attempt_at, r.attempted_at) <= r.give_up_before then null
        else r.retry_at end,
      delivered_at = case when r.outcome = 'succeeded' then r.at end,
      lease_until = null, leased_by = null
    from r where d.id = r.id and d.organization_id = $1 and d.leased_by = $3 and d.status = 'pending'
    returning d.id
  ),
  released as (
    update webhook_deliveries set lease_until = null, leased_by = null
    where id = any($12::uuid[]) and organization_id = $1 and leased_by = $3 and status = 'pending'
    returning id
  ),
  outcome as (
    select exists (select 1 from r where outcome = 'succeeded') as succeeded,
      (select outcome from r order by attempted_at desc, id limit 1) = 'succeeded' as ended_well,
      now() as at, now() - least(greatest($13::float8, 0), ${LONGEST_WAIT_SECONDS / 3600}) * interval '1 hour' as give_up_before, now() - interval '1 second' as a_second_ago
  ),
  health as (
    update webhooks w set
      last_success_at = case when o.succeeded then o.at else w.last_success_at end,
      failing_since = case when o.ended_well then null when o.succeeded then o.at else coalesce(w.failing_since, o.at) end,
      enabled = w.enabled and (o.succeeded or coalesce(w.failing_since, o.at) > o.give_up_before),
      disabled_reason = case when w.enabled and not o.succeeded and coalesce(w.failing_since, o.at) <= o.give_up_before
        then 'failing' else w.disabled_reason end
    from outcome o
    -- A webhook that keeps succeeding has its row written at most once a second (one row every batch of it would queue behind).
    where w.id = $2 and w.organization_id = $1 and exists (select 1 from r)
      and (not o.ended_well or w.failing_since is not null or w.last_success_at is null or w.last_success_at < o.a_second_ago)
    returning w.enabled, w.disabled_reason as "disabledReason", w.failing_since as "failingSince"
  )
  select (select count(*) from done)::int as recorded, (select count(*) from released)::int as released,
    coalesce((select not enabled and "disabledReason" = 'failing' from health), false) as "disabledNow", (select "failingSince" from health)::text as "failingSince"`

/** Deliveries the creator may no longer see are dropped unsent: $1 organization, $2 ids. */
export const DROP = `delete from webhook_deliveries where organization_id = $1 and id = any($2::uuid[])`

/** Whether the stream holds a delivery granted when its project was deleted (the creator could see it then): $1 organization, $2 webhook, $3 project. */
export const GRANTED = `select 1 from webhook_deliveries where organization_id = $1 and webhook_id = $2 and project_key = $3 and granted limit 1`

/** The wait before attempt `attempts + 2`, after `attempts + 1` failed. */
export function retryDelaySeconds(failedAttempts: number, options: Pick<WorkerOptions, 'retryDelaysSeconds' | 'retryEverySeconds'>): number {
  return options.retryDelaysSeconds[failedAttempts - 1] ?? options.retryEverySeconds
}

/** The JSON body of an event (built once per attempt from the stored parts; `data` is spliced in as stored). */
export function payloadOf(row: Pick<Claimed, 'type' | 'eventId' | 'occurredAt' | 'organizationId' | 'projectId' | 'actorUserId' | 'via' | 'data'> & { previous?: string | null }): string {
  const head = JSON.stringify({
    type: row.type,
    id: row.eventId,
    occurredAt: isoFromText(row.occurredAt),
    organizationId: row.organizationId,
    projectId: row.projectId,
    actor: { userId: row.actorUserId, via: row.via },
  })
  return `${head.slice(0, -1)},"data":${row.data}${row.previous ? `,"previous":${row.previous}` : ''}}`
}

/** The webhook queue, run by the core's outbox runner (src/outbox-runner.ts). */
export class WebhookQueue implements OutboxQueue {
  readonly name = 'webhooks'
  readonly channel = OUTBOX_CHANNEL
  readonly concurrency: number
  readonly pollIntervalMs: number

  constructor(
    private readonly db: Database,
    private readonly sender: Sender,
    private readonly secrets: SecretBox,
    private readonly access: ProjectAccessService,
    private readonly options: WorkerOptions,
    private readonly log: Logger,
    private readonly workerId: string,
  ) {
    this.concurrency = options.concurrency
    this.pollIntervalMs = options.pollIntervalMs
  }

  async discover(limit: number): Promise<string[]> {
    return (await queryText<{ organizationId: string }>(this.db, DISCOVER, [limit])).map((row) => row.organizationId)
  }

  async backlog(): Promise<{ depth: number; oldestDueSeconds: number }> {
    const [oldest] = await queryText<{ seconds: number }>(
      this.db,
      `select coalesce(extract(epoch from now() - min(next_attempt_at)), 0)::float8 as seconds from webhook_deliveries where status = 'pending' and next_attempt_at <= now()`,
      [],
    )
    return { depth: await countPendingDeliveries(this.db), oldestDueSeconds: oldest?.seconds ?? 0 }
  }

  /**
   * Claims up to `streamsPerClaim` streams, one organization per statement (a few side by side),
   * taking the organizations in turn; sends them side by side and records them; the number of
   * deliveries claimed.
   */
  async runOnce(round: OrganizationRound, stopping: () => boolean): Promise<{ handled: number; full: boolean }> {
    const claimedAt = performance.now()
    const streams = new Map<string, Claimed[]>()
    let rows = 0
    const claimIn = async (organizationId: string, wanted: number) => {
      if (stopping()) return 0
      const claimed = await queryText<Claimed>(this.db, CLAIM, [wanted, this.options.batchSize, this.options.leaseSeconds, this.workerId, organizationId])
      const before = streams.size
      for (const row of claimed) {
        const key = `${row.webhookId} ${row.projectKey}`
        const list = streams.get(key) ?? []
        list.push(row)
        streams.set(key, list)
      }
      rows += claimed.length
      return streams.size - before
    }
    // What was claimed before a claim failed goes out; that organization is tried again at its next turn.
    const failed = (error: unknown) => this.log.warn('webhooks: a claim failed; sending the streams claimed so far', describeError(error))
    await round.claim(this.options.streamsPerClaim, CLAIMS_AT_ONCE, claimIn, failed)
    if (!rows) return { handled: 0, full: false }
    await Promise.all([...streams.values()].map((stream) => this.runStream(stream.sort((a, b) => Number(a.seq) - Number(b.seq) || (a.id < b.id ? -1 : 1)), claimedAt, round, stopping)))
    return { handled: rows, full: streams.size >= this.options.streamsPerClaim }
  }

  private async runStream(stream: Claimed[], claimedAt: number, round: OrganizationRound, stopping: () => boolean): Promise<void> {
    const head = stream[0]!
    try {
      let checkedAt = performance.now()
      if (!(await this.creatorSees(head))) {
        await queryText(this.db, DROP, [head.organizationId, stream.map((row) => row.id)])
        return round.add(head.organizationId)
      }
      let secrets: string[]
      try {
        secrets = [this.secrets.open(head.secretSealed), ...(head.previousSecretSealed ? [this.secrets.open(head.previousSecretSealed)] : [])]
      } catch (error) {
        // Not sendable as signed: an attempt that failed, retried like any other.
        return await this.record(head, [[head, { ok: false, status: null, durationMs: 0, error: (error as Error).message, body: null }, new Date()]], stream.slice(1))
      }
      const results: Array<[Claimed, Attempt, Date]> = []
      // Each send must end well inside the lease: what does not fit is left for the next claim.
      const budgetMs = this.options.leaseSeconds * 1000 - this.options.timeoutMs - 2000
      let sent = 0
      let unseen = false
      for (const row of stream) {
        if (stopping() || performance.now() - claimedAt > budgetMs) break
        if (sent > 0 && performance.now() - checkedAt > this.options.visibilityCheckMaxAgeMs) {
          checkedAt = performance.now()
          if (!(await this.creatorSees(row))) {
            unseen = true
            break
          }
        }
        const attemptedAt = new Date()
        const attempt = await this.sender.send({ url: row.url, id: row.eventId, body: payloadOf(row), secrets })
        results.push([row, attempt, attemptedAt])
        sent++
        if (!attempt.ok) break
      }
      // The creator lost sight of the project while the batch went out: what is left of it is dropped unsent.
      if (unseen) await queryText(this.db, DROP, [head.organizationId, stream.slice(sent).map((row) => row.id)])
      await this.record(head, results, unseen ? [] : stream.slice(sent))
      // The stream may go on (deliveries behind the batch, or queued while it went out) unless it waits for a retry now.
      if (results.every(([, attempt]) => attempt.ok)) round.add(head.organizationId)
    } catch (error) {
      this.log.warn('webhooks: a stream failed; it is taken again when its lease runs out', { webhookId: head.webhookId, ...describeError(error) })
    }
  }

  /** The creator sees the project now, or could see it when it was deleted; pings (no project) always go. */
  private async creatorSees(row: Claimed): Promise<boolean> {
    if (row.projectKey === NO_PROJECT) return true
    if ((await this.access.projectsVisibleTo(this.db, row.organizationId, row.createdBy, [row.projectKey])).size) return true
    return (await queryText(this.db, GRANTED, [row.organizationId, row.webhookId, row.projectKey])).length > 0
  }

  private async record(head: Claimed, results: Array<[Claimed, Attempt, Date]>, unsent: Claimed[]): Promise<void> {
    const parameters = [
      head.organizationId,
      head.webhookId,
      this.workerId,
      results.map(([row]) => row.id),
      results.map(([, attempt]) => (attempt.ok ? 'succeeded' : 'retry')),
      results.map(([, attempt]) => attempt.status),
      results.map(([, attempt]) => attempt.durationMs),
      results.map(([, attempt]) => attempt.error),
      results.map(([, attempt]) => attempt.body),
      results.map(([row]) => retryDelaySeconds(row.attempts + 1, this.options)),
      results.map(([, , at]) => at.toISOString()),
      unsent.map((row) => row.id),
      this.options.failAfterHours,
    ]
    if (results.every(([, attempt]) => attempt.ok)) {
      await queryText(this.db, RECORD, parameters)
      return
    }
    await this.db.transaction(async (tx) => {
      const [outcome] = await queryText<{ disabledNow: boolean; failingSince: string | null }>(tx, RECORD, parameters)
      if (outcome?.disabledNow) await this.auditDisabled(tx as Transaction, head, outcome.failingSince)
    })
  }

  private async auditDisabled(tx: Transaction, head: Claimed, failingSince: string | null): Promise<void> {
    this.log.warn('webhooks: a webhook failing without a success was disabled', { webhookId: head.webhookId, failingSince })
    await writeAudit(
      tx,
      { organizationId: head.organizationId, userId: null, apiKeyId: null, via: 'system', requestId: null },
      {
        action: 'webhook.disabled',
        resourceType: 'webhook',
        resourceId: head.webhookId,
        changes: { before: { enabled: true }, after: { enabled: false, disabledReason: 'failing', failingSince } },
      },
    )
  }
}
