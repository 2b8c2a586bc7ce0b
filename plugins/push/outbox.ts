/**
 * The durable outbox: deliveries are rows; workers in any instance claim due ones with
 * `FOR UPDATE SKIP LOCKED` (a lease, so a worker that dies mid-send gives them back), send them
 * through FCM, and record every result of a batch in one statement. Transient failures come back
 * later with exponential backoff and jitter (or FCM's Retry-After); tokens FCM calls gone are
 * deleted with their delivery marked `pruned`.
 */
import { queryText, type Database } from '../../src/db'
import { describeError, type Logger } from '../../src/log'
import { isoFromText } from '../../src/sql'
import type { OutgoingPush, PushResult } from './fcm'

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

interface PushSender {
  send(pushes: OutgoingPush[]): Promise<PushResult[]>
}

interface Claimed {
  id: string
  token: string
  attempts: number
  messageId: string
  pageName: string
  body: string
  sentAt: string
}

/** $1 batch size, $2 lease seconds. Oldest due first; rows another worker holds are skipped. */
const CLAIM = `with due as (
    select id from deliveries where state = 'pending' and next_attempt_at <= now()
    order by next_attempt_at limit $1 for update skip locked
  )
  update deliveries d set state = 'sending', attempts = d.attempts + 1, lease_until = now() + $2 * interval '1 second', updated_at = now()
  from due, messages m
  where d.id = due.id and m.id = d.message_id
  returning d.id::text as id, d.device_token as token, d.attempts, m.id as "messageId", m.page_name as "pageName", m.body, m.created_at::text as "sentAt"`

/** Deliveries whose worker died (lease run out) are due again. */
const RECLAIM = `with reclaimed as (
    update deliveries set state = 'pending', lease_until = null, next_attempt_at = now(), updated_at = now()
    where state = 'sending' and lease_until < now() returning 1
  ) select count(*)::int as n from reclaimed`

/**
 * $1 ids, $2 states, $3 errors, $4 retry delays (seconds), $5 the attempt each result belongs to.
 * Only a delivery still held by this attempt changes; pruned tokens lose their device row.
 */
const RECORD = `with r as (
    select * from unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::int[]) as r(id, state, error, delay, attempts)
  ),
  changed as (
    update deliveries d set state = r.state, last_error = r.error, lease_until = null, updated_at = now(),
      next_attempt_at = case when r.state = 'pending' then now() + r.delay * interval '1 second' else d.next_attempt_at end
    from r where d.id = r.id::bigint and d.state = 'sending' and d.attempts = r.attempts
    returning d.device_token, d.state
  )
  delete from devices where token in (select device_token from changed where state = 'pruned')`

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

  constructor(
    private readonly db: Database,
    private readonly sender: PushSender,
    private readonly options: OutboxOptions,
    private readonly log: Logger,
  ) {}

  start(): void {
    for (let i = 0; i < this.options.concurrency; i++) this.loops.push(this.loop())
  }

  /** A message was recorded here: idle workers look now instead of at their next poll. */
  wake(): void {
    for (const wake of this.sleepers) wake()
  }

  /** Stops claiming; a batch in flight finishes and records its results. */
  async stop(): Promise<void> {
    this.stopped = true
    this.wake()
    await Promise.all(this.loops)
  }

  /** Claims, sends and records one batch; the number of deliveries it handled. */
  async runOnce(): Promise<number> {
    const claimed = await queryText<Claimed>(this.db, CLAIM, [Math.min(500, this.options.batchSize), this.options.leaseSeconds])
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

  private async record(claimed: Claimed[], results: PushResult[]): Promise<void> {
    const ids: string[] = []
    const states: string[] = []
    const errors: Array<string | null> = []
    const delays: number[] = []
    const attempts: number[] = []
    claimed.forEach((row, i) => {
      const result = results[i] ?? { outcome: 'retry', error: 'no result from the sender' }
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
    await queryText(this.db, RECORD, [ids, states, errors, delays, attempts])
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
