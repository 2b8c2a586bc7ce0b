/**
 * The durable outbox: deliveries are rows; workers in any instance claim due ones with
 * `FOR UPDATE SKIP LOCKED` (a lease, so a worker that dies mid-send gives them back), within one
 * organization per statement (so on Citus each claim runs on one shard), taking the organizations
 * with due deliveries in turn (src/organization-round.ts) until a batch is full; a claim re-checks
 * each delivery's recipient (the device still theirs, the user active and still on the page), and
 * what goes now is decided (decisions.ts); they send the batch through FCM and Web Push and record its results, one statement per organization,
 * each organization's on its own (and, should that fail, each delivery's on its own), so one
 * result that cannot be written never sends anyone else's push again. Transient failures come
 * back later with exponential backoff and jitter (or the push service's Retry-After, within
 * bounds); tokens FCM calls gone lose their device in the statement that marks their delivery
 * `pruned`.
 */
import { queryText, type Database } from '../../src/db'
import { describeError, type Logger } from '../../src/log'
import type { OrganizationRound } from '../../src/organization-round'
import { backoffSeconds, type OutboxQueue } from '../../src/outbox-runner'
import { isoFromText } from '../../src/sql'
import { claimedTooOften, decide, recipientLapsed, secondsToLive, type Claimed, type Decision } from './decisions'
import type { PushResult, PushSender } from './fcm'
import { MAX_TTL_SECONDS } from './messages'
import type { WebPushSender } from './webpush'

/** What the outbox sends through: FCM (or the log sender), and Web Push; either may be off on an instance. */
export interface Senders {
  fcm: PushSender | null
  webPush: WebPushSender | null
}

/** The `data` of a claimed delivery's push, as FCM and the service worker get it: a user push's own (with its message), or its page and message. */
export function pushData(row: Pick<Claimed, 'data' | 'pageName' | 'messageId' | 'sendAt' | 'sentAt'>): Record<string, string> {
  const sentAt = isoFromText(row.sendAt ?? row.sentAt)
  return row.data ? { ...row.data, messageId: row.messageId, sentAt } : { pageName: row.pageName ?? '', messageId: row.messageId, sentAt }
}

/**
 * What a browser's service worker receives (decrypted): the notification (none for a data-only
 * message) and the fields a click needs; the same fields as an FCM push's `data`, plus a page
 * message's page id.
 */
export function webPushPayload(row: Pick<Claimed, 'title' | 'body' | 'data' | 'pageName' | 'pageId' | 'messageId' | 'sendAt' | 'sentAt'>) {
  const data = row.pageId ? { ...pushData(row), pageId: row.pageId } : pushData(row)
  return row.body === null ? { data } : { title: row.title ?? '', body: row.body, data }
}

/** The NOTIFY channel that announces recorded messages to every instance's workers. */
export const OUTBOX_CHANNEL = 'push_outbox'

/** A claimed delivery's result: the sender's, or a decision that kept it from being sent. */
type Outcome = PushResult | Extract<Decision, { send: false }>

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

/**
 * $1 batch size, $2 lease seconds, $3 the organization, $4 whether this instance sends through FCM
 * (without, it takes only Web Push deliveries, whose tokens are their https endpoints). Oldest due
 * first (pending, held by quiet hours until now, or claimed by a worker whose lease ran out: it
 * died); rows another worker holds are skipped. Each comes back with what decides
 * whether it goes now: its message's options, the state it was claimed from, its user's quiet
 * hours and muted pages, and whether its recipient still is one (`lapsed`), by the rules that chose
 * the recipients (plugins/push/messages.ts): the device (only if still registered to the same user
 * here), auth's read model `user_directory` (active) and display's `page_viewers` (on the page;
 * read per delivery, LIMIT 1 keeping it a lookup rather than the organization's whole audience).
 * Every table is named by its organization: on Citus the statement runs on that organization's
 * shard (a row lock over several organizations spans shards, which Citus refuses). Times come
 * back as text uncast (the drivers leave timestamps as text): Citus allows no function that is
 * not immutable in RETURNING, and a timestamptz-to-text cast is stable.
 */
export const CLAIM = `with due as (
    select id, state, user_id, message_id, device_token from deliveries where organization_id = $3
      and ((state in ('pending', 'held') and next_attempt_at <= now()) or (state = 'sending' and lease_until < now()))
      and ($4::boolean or device_token like 'https://%')
    order by next_attempt_at limit $1 for update skip locked
  )
  update deliveries d set state = 'sending', attempts = d.attempts + 1, lease_until = now() + $2 * interval '1 second', updated_at = now()
  from due join messages m on m.id = due.message_id and m.organization_id = $3
    left join notification_preferences n on n.user_id = due.user_id and n.organization_id = $3
    left join devices v on v.token = due.device_token and v.user_id = due.user_id and v.organization_id = $3
    left join user_directory u on u.id = due.user_id and u.organization_id = $3 and u.status = 'active'
    left join lateral (
      select true as sees from page_viewers pv where pv.page_id = m.page_id and pv.user_id = due.user_id and pv.organization_id = $3 limit 1
    ) access on true
  where d.organization_id = $3 and d.id = due.id
  returning d.id::text as id, d.organization_id as "organizationId", d.device_token as token, d.attempts, due.state as "claimedFrom",
    v.platform, v.p256dh, v.auth, m.page_id as "pageId",
    m.id as "messageId", m.page_name as "pageName", coalesce(m.title, m.page_name) as title, m.body, m.data, m.created_at as "sentAt", m.send_at as "sendAt",
    m.priority, m.ttl_seconds as "ttlSeconds", m.collapse_key as "collapseKey", m.critical,
    n.quiet_start as "quietStart", n.quiet_end as "quietEnd", n.time_zone as "timeZone", coalesce(m.page_id = any(n.muted_page_ids), false) as muted,
    case when u.id is null then 'inactive' when m.page_id is not null and access.sees is null then 'unshared' when v.token is null then 'device' end as lapsed`

/**
 * The organizations with due deliveries ($1 at most, the longest waiting first; $2 as CLAIM's $4): a read over
 * every organization without row locks (on Citus, pushed down to every shard).
 */
export const DISCOVER = `select organization_id as "organizationId" from deliveries
  where ((state in ('pending', 'held') and next_attempt_at <= now()) or (state = 'sending' and lease_until < now()))
    and ($2::boolean or device_token like 'https://%')
  group by organization_id
  order by min(next_attempt_at)
  limit $1`

/** Claims (organizations) one worker runs side by side. */
const CLAIMS_AT_ONCE = 4


/**
 * $1 ids, $2 states, $3 errors, $4 retry delays (seconds; for `held`, until quiet hours end), $5
 * the attempt each result belongs to, $6 their organization. A hold is not an attempt: it gives its
 * attempt back. Only a delivery still held by this attempt changes; the devices of those
 * now pruned are deleted in the same statement (so no one sees a delivery `pruned` while its
 * device is still there), in the organization (on Citus, the statement runs on its shard), and
 * only while registered to the delivery's user (a token someone else registered since is theirs
 * now); how many were deleted is returned. A token FCM called gone that another organization
 * registered meanwhile is pruned there at its own next send. Each delay is bounded here too, to 0
 * … 4 weeks (the longest TTL: no delivery waits longer), whatever the caller computed: a value no
 * timestamp holds (`now() + 1e13 seconds`) would fail the whole statement, and with it the
 * organization's results. The retry time is read in `r`: Citus refuses a function that is not
 * immutable (now()) inside CASE of an UPDATE on a distributed table.
 */
export const RECORD = `with r as (
    select id, state, error, attempts, now() + least(greatest(delay, 0), ${MAX_TTL_SECONDS}) * interval '1 second' as retry_at
    from unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::int[]) as r(id, state, error, delay, attempts)
  ),
  changed as (
    update deliveries d set state = r.state, last_error = r.error, lease_until = null, updated_at = now(),
      next_attempt_at = case when r.state in ('pending', 'held') then r.retry_at else d.next_attempt_at end,
      attempts = case when r.state = 'held' then d.attempts - 1 else d.attempts end
    from r where d.organization_id = $6 and d.id = r.id::bigint and d.state = 'sending' and d.attempts = r.attempts
    returning d.device_token, d.user_id, d.state
  ),
  pruned as (
    delete from devices where organization_id = $6 and (token, user_id) in (select device_token, user_id from changed where state = 'pruned')
    returning 1
  )
  select count(*)::int as pruned from pruned`

/** The push queue, run by the core's outbox runner (src/outbox-runner.ts). */
export class PushQueue implements OutboxQueue {
  readonly name = 'push'
  readonly channel = OUTBOX_CHANNEL
  readonly concurrency: number
  readonly pollIntervalMs: number

  constructor(
    private readonly db: Database,
    private readonly senders: Senders,
    private readonly options: OutboxOptions,
    private readonly log: Logger,
  ) {
    this.concurrency = options.concurrency
    this.pollIntervalMs = options.pollIntervalMs
  }

  async discover(limit: number): Promise<string[]> {
    return (await queryText<{ organizationId: string }>(this.db, DISCOVER, [limit, Boolean(this.senders.fcm)])).map((row) => row.organizationId)
  }

  async backlog(): Promise<{ depth: number; oldestDueSeconds: number }> {
    const [oldest] = await queryText<{ seconds: number }>(
      this.db,
      `select coalesce(extract(epoch from now() - min(next_attempt_at)), 0)::float8 as seconds from deliveries where state in ('pending', 'held') and next_attempt_at <= now()`,
      [],
    )
    return { depth: await countPendingDeliveries(this.db), oldestDueSeconds: oldest?.seconds ?? 0 }
  }

  /**
   * Claims one batch (one organization per statement, a few side by side, the organizations in
   * turn, until the batch is full), sends it and records the results; the number of deliveries it
   * handled.
   */
  async runOnce(round: OrganizationRound, stopping: () => boolean): Promise<{ handled: number; full: boolean }> {
    const claimed: Claimed[] = []
    const wantedInAll = Math.min(500, this.options.batchSize)
    const claimIn = async (organizationId: string, wanted: number) => {
      if (stopping()) return 0
      const rows = await queryText<Claimed>(this.db, CLAIM, [wanted, this.options.leaseSeconds, organizationId, Boolean(this.senders.fcm)])
      claimed.push(...rows)
      return rows.length
    }
    // What was claimed before a claim failed goes out; that organization is tried again at its next turn.
    const failed = (error: unknown) => this.log.warn('push outbox: a claim failed; sending what was claimed so far', describeError(error))
    await round.claim(wantedInAll, CLAIMS_AT_ONCE, claimIn, failed)
    if (claimed.length === 0) return { handled: 0, full: false }
    const now = new Date()
    const decided = claimed.map((row) => [row, this.decideNow(row, now)] as const)
    const results = new Map<Claimed, Outcome>()
    for (const [row, decision] of decided) if (!decision.send) results.set(row, decision)
    const going = decided.filter((entry): entry is readonly [Claimed, Extract<Decision, { send: true }>] => entry[1].send)
    const isWebPush = ([row]: readonly [Claimed, unknown]) => row.platform === 'webpush'
    const webPush = going.filter(isWebPush)
    const fcm = going.filter((entry) => !isWebPush(entry))
    await Promise.all([this.sendFcm(fcm, results), this.sendWebPush(webPush, results)])
    await this.record(claimed, claimed.map((row) => results.get(row)!))
    return { handled: claimed.length, full: claimed.length >= wantedInAll }
  }

  /** Whether a claimed delivery goes now: not once claimed too often, nor to a recipient who no longer is one; then as `decide` says. */
  private decideNow(row: Claimed, now: Date): Decision {
    return claimedTooOften(row, this.options.maxAttempts) ?? recipientLapsed(row) ?? decide(row, now)
  }

  /** Sends the FCM pushes of a batch (one sendEach per 500) and puts their results in `results`. */
  private async sendFcm(going: ReadonlyArray<readonly [Claimed, { ttlSeconds: number | null }]>, results: Map<Claimed, Outcome>): Promise<void> {
    if (going.length === 0) return
    const sender = this.senders.fcm
    if (!sender) {
      for (const [row] of going) results.set(row, { outcome: 'fail', error: 'this instance has no FCM sender' })
      return
    }
    const pushes = going.map(([row, decision]) => ({
      token: row.token,
      notification: row.body === null ? null : { title: row.title ?? '', body: row.body },
      data: pushData(row),
      priority: row.priority,
      ttlSeconds: decision.ttlSeconds,
      collapseKey: row.collapseKey,
    }))
    let sent: PushResult[]
    try {
      sent = await sender.send(pushes)
    } catch (error) {
      sent = pushes.map(() => ({ outcome: 'retry', error: (error as Error).message }))
    }
    going.forEach(([row], i) => results.set(row, sent[i] ?? { outcome: 'retry', error: 'no result from the sender' }))
  }

  /**
   * Sends the Web Push pushes of a batch, encrypted for each browser (a registered subscription
   * always has its keys), and puts their results in `results`.
   */
  private async sendWebPush(going: ReadonlyArray<readonly [Claimed, { ttlSeconds: number | null }]>, results: Map<Claimed, Outcome>): Promise<void> {
    if (going.length === 0) return
    const sender = this.senders.webPush
    const pushes = going.map(([row, decision]) => ({
      subscription: { endpoint: row.token, keys: { p256dh: row.p256dh!, auth: row.auth! } },
      payload: webPushPayload(row),
      ttlSeconds: decision.ttlSeconds ?? MAX_TTL_SECONDS,
      urgency: row.priority,
      ...(row.collapseKey === null ? {} : { topic: row.collapseKey }),
    }))
    const sent = sender ? await sender.send(pushes) : pushes.map(() => ({ outcome: 'fail' as const, error: 'Web Push is off on this instance' }))
    going.forEach(([row], i) => results.set(row, sent[i] ?? { outcome: 'retry', error: 'no result from the sender' }))
  }

  /**
   * Records a batch's results (and deletes the pruned tokens' devices): one statement per
   * organization, each on its own, so an organization whose results cannot be written (logged)
   * never keeps another's from being written. A result not written leaves its delivery claimed,
   * and it is sent again once its lease runs out: that must never happen to a push that was not
   * at fault.
   */
  private async record(claimed: Claimed[], results: Outcome[]): Promise<void> {
    const byOrganization = new Map<string, Array<[Claimed, Outcome]>>()
    claimed.forEach((row, i) => {
      const list = byOrganization.get(row.organizationId) ?? []
      list.push([row, results[i]!])
      byOrganization.set(row.organizationId, list)
    })
    for (const [organizationId, rows] of byOrganization) await this.recordOrganization(organizationId, rows)
  }

  /**
   * One organization's results in one statement; if that fails, each delivery's in its own, so
   * only a delivery whose own result cannot be written stays claimed (and its siblings' sent
   * pushes are recorded sent). Never throws.
   */
  private async recordOrganization(organizationId: string, rows: Array<[Claimed, Outcome]>): Promise<void> {
    try {
      await this.writeResults(organizationId, rows)
    } catch (error) {
      if (rows.length === 1) return this.unrecorded(organizationId, rows[0]!, error)
      this.log.warn("push outbox: an organization's results could not be recorded together; recording them one by one", { organizationId, ...describeError(error) })
      for (const row of rows) await this.writeResults(organizationId, [row]).catch((error) => this.unrecorded(organizationId, row, error))
    }
  }

  private writeResults(organizationId: string, rows: Array<[Claimed, Outcome]>): Promise<unknown> {
    return queryText(this.db, RECORD, [...this.recordParameters(rows), organizationId])
  }

  private unrecorded(organizationId: string, [row, result]: [Claimed, Outcome], error: unknown): void {
    const outcome = 'send' in result ? result.state : result.outcome
    this.log.error("push outbox: a delivery's result could not be recorded; it is claimed again when its lease runs out", { organizationId, deliveryId: row.id, outcome, ...describeError(error) })
  }

  /** RECORD's $1 to $5 for one organization's results. */
  private recordParameters(rows: Array<[Claimed, Outcome]>): unknown[] {
    const ids: string[] = []
    const states: string[] = []
    const errors: Array<string | null> = []
    const delays: number[] = []
    const attempts: number[] = []
    const now = Date.now()
    rows.forEach(([row, result]) => {
      ids.push(row.id)
      attempts.push(row.attempts)
      if ('send' in result) {
        states.push(result.state)
        errors.push(result.reason ?? null)
        delays.push(result.until ? Math.max(0, (result.until.getTime() - now) / 1000) : 0)
        return
      }
      errors.push(result.outcome === 'sent' ? null : result.error)
      let state = 'sent'
      let delay = 0
      if (result.outcome === 'prune') state = 'pruned'
      else if (result.outcome === 'fail') state = 'failed'
      else if (result.outcome === 'retry') {
        state = row.attempts >= this.options.maxAttempts ? 'failed' : 'pending'
        delay = Math.min(backoffSeconds(row.attempts, this.options.retryBaseMs, this.options.retryMaxMs, result.retryAfterSeconds), secondsToLive(row, now))
      }
      states.push(state)
      delays.push(delay)
    })
    return [ids, states, errors, delays, attempts]
  }
}

/** The most pending deliveries one scrape counts: a bounded walk of the pending index, whatever the backlog. */
export const OUTBOX_DEPTH_CAP = 100_000

/** Deliveries waiting to be sent (due, scheduled, backing off or held by quiet hours), at most OUTBOX_DEPTH_CAP: what /metrics reports. */
export async function countPendingDeliveries(db: Database): Promise<number> {
  const [row] = await queryText<{ n: number }>(db, `select count(*)::int as n from (select 1 from deliveries where state in ('pending', 'held') limit $1) pending`, [OUTBOX_DEPTH_CAP])
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
