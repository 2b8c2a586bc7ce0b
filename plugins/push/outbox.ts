/**
 * The durable outbox: deliveries are rows; workers in any instance claim due ones with
 * `FOR UPDATE SKIP LOCKED` (a lease, so a worker that dies mid-send gives them back), within one
 * organization per statement (so on Citus each claim runs on one shard), taking the organizations
 * with due deliveries in turn (src/organization-round.ts) until a batch is full; they send the
 * batch through FCM and record its results, one statement per organization. Transient failures come back
 * later with exponential backoff and jitter (or FCM's Retry-After); tokens FCM calls gone lose
 * their device in the statement that marks their delivery `pruned`.
 */
import { queryText, type Database } from '../../src/db'
import { describeError, type Logger } from '../../src/log'
import { OrganizationRound } from '../../src/organization-round'
import { isoFromText } from '../../src/sql'
import type { PushResult, PushSender } from './fcm'

interface OutboxOptions {
  /** Deliveries one worker claims at a time (at most 500: one `sendEach`). */
  batchSize: number
  /** Workers per instance, each claiming its own batches. */
  concurrency: number
  /** How often an idle worker looks for due deliveries (a local message wakes it at once). */
  pollIntervalMs: number
  /** How long a claim lasts; a delivery still `sending` after it is claimed again. */
  leaseSeconds: number
  /** Attempts before a transient failure becomes `failed`. */
  maxAttempts: number
  /** First retry delay; it doubles per attempt up to `retryMaxMs`, with jitter. */
  retryBaseMs: number
  retryMaxMs: number
}

interface Claimed {
  id: string
  organizationId: string
  token: string
  attempts: number
  messageId: string
  pageName: string
  body: string
  sentAt: string
}

/**
 * $1 batch size, $2 lease seconds, $3 the organization. Oldest due first; rows another worker
 * holds are skipped. Every table is named by its organization: on Citus the statement runs on
 * that organization's shard (a row lock over several organizations spans shards, which Citus
 * refuses). `created_at` comes back as text uncast (the drivers leave timestamps as text): Citus
 * allows no function that is not immutable in RETURNING, and a timestamptz-to-text cast is stable.
 */
export const CLAIM = `with due as (
    select id from deliveries where organization_id = $3 and state = 'pending' and next_attempt_at <= now()
    order by next_attempt_at limit $1 for update skip locked
  )
  update deliveries d set state = 'sending', attempts = d.attempts + 1, lease_until = now() + $2 * interval '1 second', updated_at = now()
  from due, messages m
  where d.organization_id = $3 and d.id = due.id and m.id = d.message_id and m.organization_id = $3
  returning d.id::text as id, d.organization_id as "organizationId", d.device_token as token, d.attempts, m.id as "messageId", m.page_name as "pageName", m.body, m.created_at as "sentAt"`

/**
 * The organizations with due deliveries ($1 at most, the longest waiting first): a read over
 * every organization without row locks (on Citus, pushed down to every shard).
 */
export const DISCOVER = `select organization_id as "organizationId" from deliveries
  where state = 'pending' and next_attempt_at <= now()
  group by organization_id
  order by min(next_attempt_at)
  limit $1`

/** The most organizations one discovery lists. */
const DISCOVER_LIMIT = 1000
/** Claims (organizations) one worker runs side by side. */
const CLAIMS_AT_ONCE = 4

/** Deliveries whose worker died (lease run out) are due again (a sweep over every organization, without row locks). */
const RECLAIM = `with reclaimed as (
    update deliveries set state = 'pending', lease_until = null, next_attempt_at = now(), updated_at = now()
    where state = 'sending' and lease_until < now() returning 1
  ) select count(*)::int as n from reclaimed`

/**
 * $1 ids, $2 states, $3 errors, $4 retry delays (seconds), $5 the attempt each result belongs to,
 * $6 their organization. Only a delivery still held by this attempt changes; the devices of those
 * now pruned are deleted in the same statement (so no one sees a delivery `pruned` while its
 * device is still there), in the organization (on Citus, the statement runs on its shard); how
 * many were deleted is returned. A token FCM called gone that another organization registered
 * meanwhile is pruned there at its own next send. The retry time is read in `r`: Citus refuses a
 * function that is not immutable (now()) inside CASE of an UPDATE on a distributed table.
 */
export const RECORD = `with r as (
    select id, state, error, attempts, now() + delay * interval '1 second' as retry_at
    from unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::int[]) as r(id, state, error, delay, attempts)
  ),
  changed as (
    update deliveries d set state = r.state, last_error = r.error, lease_until = null, updated_at = now(),
      next_attempt_at = case when r.state = 'pending' then r.retry_at else d.next_attempt_at end
    from r where d.organization_id = $6 and d.id = r.id::bigint and d.state = 'sending' and d.attempts = r.attempts
    returning d.device_token, d.state
  ),
  pruned as (
    delete from devices where organization_id = $6 and token in (select device_token from changed where state = 'pruned')
    returning 1
  )
  select count(*)::int as pruned from pruned`

/** The delay before attempt `attempts + 1`: doubling from `base`, capped, with jitter in [½, 1]. */
function backoffSeconds(attempts: number, options: Pick<OutboxOptions, 'retryBaseMs' | 'retryMaxMs'>, retryAfterSeconds?: number): number {
  const ceiling = Math.min(options.retryMaxMs, options.retryBaseMs * 2 ** Math.max(0, attempts - 1))
  const jittered = (ceiling / 2 + (Math.random() * ceiling) / 2) / 1000
  return Math.max(jittered, retryAfterSeconds ?? 0)
}

export class Outbox {
  private stopped = false
  private readonly loops: Promise<void>[] = []
  private readonly sleepers = new Set<() => void>()
  /** The organizations the workers claim in, in turn (claims name one organization each). */
  private readonly round: OrganizationRound

  constructor(
    private readonly db: Database,
    private readonly sender: PushSender,
    private readonly options: OutboxOptions,
    private readonly log: Logger,
  ) {
    this.round = new OrganizationRound(async () => (await queryText<{ organizationId: string }>(this.db, DISCOVER, [DISCOVER_LIMIT])).map((row) => row.organizationId), options.pollIntervalMs)
  }

  start(): void {
    for (let i = 0; i < this.options.concurrency; i++) this.loops.push(this.loop())
  }

  /** A message was recorded (in `organizationId`; unnamed: anywhere, found by a discovery): idle workers look now instead of at their next poll. */
  wake(organizationId?: string): void {
    if (organizationId) this.round.add(organizationId)
    else this.round.stale()
    for (const wake of this.sleepers) wake()
  }

  /** Stops claiming; a batch in flight finishes and records its results. */
  async stop(): Promise<void> {
    this.stopped = true
    this.wake()
    await Promise.all(this.loops)
  }

  /**
   * Claims one batch (one organization per statement, a few side by side, the organizations in
   * turn, until the batch is full), sends it and records the results; the number of deliveries it
   * handled.
   */
  async runOnce(): Promise<number> {
    const claimed: Claimed[] = []
    const claimIn = async (organizationId: string, wanted: number) => {
      if (this.stopped) return 0
      const rows = await queryText<Claimed>(this.db, CLAIM, [wanted, this.options.leaseSeconds, organizationId])
      claimed.push(...rows)
      return rows.length
    }
    // What was claimed before a claim failed goes out; that organization is tried again at its next turn.
    const failed = (error: unknown) => this.log.warn('push outbox: a claim failed; sending what was claimed so far', describeError(error))
    await this.round.claim(Math.min(500, this.options.batchSize), CLAIMS_AT_ONCE, claimIn, failed)
    if (claimed.length === 0) return 0
    const pushes = claimed.map((row) => ({
      token: row.token,
      title: row.pageName,
      body: row.body,
      data: { pageName: row.pageName, messageId: row.messageId, sentAt: isoFromText(row.sentAt) },
    }))
    let results: PushResult[]
    try {
      results = await this.sender.send(pushes)
    } catch (error) {
      results = claimed.map(() => ({ outcome: 'retry', error: (error as Error).message }))
    }
    await this.record(claimed, results)
    return claimed.length
  }

  /** Records a batch's results (and deletes the pruned tokens' devices): one statement per organization. */
  private async record(claimed: Claimed[], results: PushResult[]): Promise<void> {
    const byOrganization = new Map<string, Array<[Claimed, PushResult | undefined]>>()
    claimed.forEach((row, i) => {
      const list = byOrganization.get(row.organizationId) ?? []
      list.push([row, results[i]])
      byOrganization.set(row.organizationId, list)
    })
    for (const [organizationId, rows] of byOrganization) await queryText(this.db, RECORD, [...this.recordParameters(rows), organizationId])
  }

  /** RECORD's $1 to $5 for one organization's results. */
  private recordParameters(rows: Array<[Claimed, PushResult | undefined]>): unknown[] {
    const ids: string[] = []
    const states: string[] = []
    const errors: Array<string | null> = []
    const delays: number[] = []
    const attempts: number[] = []
    rows.forEach(([row, outcome]) => {
      const result = outcome ?? { outcome: 'retry', error: 'no result from the sender' }
      ids.push(row.id)
      attempts.push(row.attempts)
      errors.push(result.outcome === 'sent' ? null : result.error)
      let state = 'sent'
      let delay = 0
      if (result.outcome === 'prune') state = 'pruned'
      else if (result.outcome === 'fail') state = 'failed'
      else if (result.outcome === 'retry') {
        state = row.attempts >= this.options.maxAttempts ? 'failed' : 'pending'
        delay = backoffSeconds(row.attempts, this.options, result.retryAfterSeconds)
      }
      states.push(state)
      delays.push(delay)
    })
    return [ids, states, errors, delays, attempts]
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        if ((await this.runOnce()) > 0) continue
        const [reclaimed] = await queryText<{ n: number }>(this.db, RECLAIM, [])
        if (reclaimed?.n) continue
      } catch (error) {
        if (this.stopped) break
        this.log.warn('push outbox: a batch failed; it is retried after its lease', describeError(error))
      }
      await this.sleep(this.options.pollIntervalMs)
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.sleepers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.sleepers.add(done)
    })
  }
}

/** The most pending deliveries one scrape counts: a bounded walk of the pending index, whatever the backlog. */
export const OUTBOX_DEPTH_CAP = 100_000

/** Deliveries waiting to be sent (due or backing off), at most OUTBOX_DEPTH_CAP: what /metrics reports. */
export async function countPendingDeliveries(db: Database): Promise<number> {
  const [row] = await queryText<{ n: number }>(db, `select count(*)::int as n from (select 1 from deliveries where state = 'pending' limit $1) pending`, [OUTBOX_DEPTH_CAP])
  return row?.n ?? 0
}

/** Deletes devices nobody has registered or refreshed for `days` days; the number deleted. */
export async function pruneStaleDevices(db: Database, days: number): Promise<number> {
  const [row] = await queryText<{ n: number }>(
    db,
    `with gone as (delete from devices where last_seen_at < now() - $1 * interval '1 day' returning 1) select count(*)::int as n from gone`,
    [days],
  )
  return row?.n ?? 0
}
