/**
 * The one loop behind every durable queue of the service (push deliveries, webhook deliveries,
 * the alert sweep): each instance runs `concurrency` workers; a worker takes one batch
 * (`runOnce`: claim rows due in the organizations the round hands out, under a lease, send,
 * record), goes on while there is work, and otherwise sleeps until the poll interval or a
 * wake-up. A wake-up (a NOTIFY on the queue's channel, from any instance, or a local `wake`)
 * wakes ONE idle worker; a worker whose claim came back full wakes one more, so a burst fans out
 * to every worker and a trickle costs one. Rows are claimed under leases, never by state alone: a
 * worker that dies (SIGKILL) leaves rows whose lease runs out, and the next claim takes them
 * again. `stop` lets batches in flight finish and record. The depth and the age of the oldest due
 * item of each queue are in /metrics (`worktrack_outbox_depth`, `worktrack_outbox_oldest_due_seconds`,
 * label `queue`).
 */
import type { EventBus } from './events'
import { describeError, type Logger } from './log'
import type { Metrics } from './metrics'
import { OrganizationRound } from './organization-round'

/** The most organizations one discovery lists. */
export const DISCOVER_LIMIT = 1000

export interface OutboxQueue {
  /** Its name in logs and metrics (`push`, `webhooks`, `alerts`). */
  name: string
  /** Workers per instance. */
  concurrency: number
  /** How long an idle worker sleeps before looking again (work nobody announced: retries coming due, leases running out). */
  pollIntervalMs: number
  /** The NOTIFY channel that announces work (payload: `{organizationId}`, or anything else: somewhere). */
  channel: string
  /** The organizations with due work, the longest waiting first, at most `limit`: one read across organizations, without row locks. */
  discover(limit: number): Promise<string[]>
  /**
   * Claims one batch in the organizations `round` hands out (one organization per statement),
   * sends it and records it: how many items it handled, and whether it got all it asked for (so
   * more is probably waiting). Check `stopping()` before each claim.
   */
  runOnce(round: OrganizationRound, stopping: () => boolean): Promise<{ handled: number; full: boolean }>
  /** Items waiting and how long the oldest due one has waited (bounded reads), for /metrics. */
  backlog(): Promise<{ depth: number; oldestDueSeconds: number }>
}

/**
 * A Retry-After header as seconds from `now`: delay-seconds or an HTTP date (RFC 9110 §10.2.3), a
 * date past counting as 0; undefined when absent or unreadable. Not bounded here: the value is the
 * receiver's, and `backoffSeconds` decides how much of it is honoured.
 */
export function readRetryAfter(value: unknown, now = Date.now()): number | undefined {
  if (typeof value !== 'string') return undefined
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Number(value)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000))
}

/**
 * The longest a receiver's Retry-After may delay a retry when the policy's own longest delay is
 * shorter: an hour. Retry-After comes from outside (a push service, any endpoint a user
 * registered), so it is honoured only within bounds.
 */
export const RETRY_AFTER_MAX_SECONDS = 3600

/**
 * The delay before attempt `attempts + 1`: doubling from `baseMs`, capped at `maxMs`, with jitter
 * in [½, 1]; at least `retryAfterSeconds`, as far as it is honoured (see `honouredRetryAfter`).
 */
export function backoffSeconds(attempts: number, baseMs: number, maxMs: number, retryAfterSeconds?: number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempts - 1))
  const jittered = (ceiling / 2 + (Math.random() * ceiling) / 2) / 1000
  return Math.max(jittered, honouredRetryAfter(retryAfterSeconds, maxMs))
}

/**
 * A receiver's Retry-After as a wait: none when it is absent or not a number, never negative, and
 * at most the policy's longest delay or RETRY_AFTER_MAX_SECONDS, whichever is longer (a hostile
 * `Retry-After: 10000000000000` must neither park a delivery for ever nor overflow its retry time).
 */
function honouredRetryAfter(retryAfterSeconds: number | undefined, maxMs: number): number {
  if (retryAfterSeconds === undefined || Number.isNaN(retryAfterSeconds)) return 0
  return Math.min(Math.max(retryAfterSeconds, 0), Math.max(maxMs / 1000, RETRY_AFTER_MAX_SECONDS))
}

export class OutboxRunner {
  private stopped = false
  private readonly loops: Promise<void>[] = []
  /** Idle workers' wake-ups, oldest sleeper first. */
  private readonly sleepers = new Set<() => void>()
  /** The organizations the workers claim in, in turn. */
  readonly round: OrganizationRound

  constructor(
    private readonly queue: OutboxQueue,
    private readonly log: Logger,
  ) {
    this.round = new OrganizationRound(() => queue.discover(DISCOVER_LIMIT), queue.pollIntervalMs)
  }

  /** Starts the workers, woken by the queue's channel on every instance. */
  async start(events: EventBus): Promise<void> {
    await events.subscribe(
      this.queue.channel,
      (announced: { organizationId?: unknown } | null) => this.wake(typeof announced?.organizationId === 'string' ? announced.organizationId : undefined),
      () => this.wake(),
    )
    for (let i = 0; i < this.queue.concurrency; i++) this.loops.push(this.loop())
  }

  /** Work is due (in `organizationId`; unnamed: somewhere, found by a discovery): one idle worker looks now. */
  wake(organizationId?: string): void {
    if (organizationId) this.round.add(organizationId)
    else this.round.stale()
    this.wakeOne()
  }

  /** Stops claiming; batches in flight finish and record. */
  async stop(): Promise<void> {
    this.stopped = true
    for (const wake of [...this.sleepers]) wake()
    await Promise.all(this.loops)
  }

  /** One batch, as a worker takes it (tests drive the queue with it). */
  runOnce(): Promise<{ handled: number; full: boolean }> {
    return this.queue.runOnce(this.round, () => this.stopped)
  }

  private wakeOne(): void {
    for (const wake of this.sleepers) return wake()
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        const { handled, full } = await this.runOnce()
        if (full) this.wakeOne()
        if (handled > 0) continue
      } catch (error) {
        if (this.stopped) break
        this.log.warn(`${this.queue.name} outbox: a batch failed; its rows are claimed again when their lease runs out`, describeError(error))
      }
      await this.sleep(this.queue.pollIntervalMs)
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

/** The core's queues of one service: `run` gives a plugin its runner; every queue's backlog is in /metrics. */
export interface Outboxes {
  /**
   * The runner of `queue`; its workers start (`start`) only where background work runs and the
   * plugin wants workers here, and stop at shutdown.
   */
  run(queue: OutboxQueue, options?: { workers?: boolean; log?: Logger }): Promise<OutboxRunner>
}

export function createOutboxes(deps: { metrics: Metrics; events: EventBus; log: Logger; background: boolean; onStop(stop: () => Promise<void>): void }): Outboxes {
  const queues: OutboxQueue[] = []
  const backlogs = new Map<string, Promise<{ depth: number; oldestDueSeconds: number }>>()
  // One read of each queue's backlog per scrape, shared by the two gauges (collected side by side,
  // each awaiting the same reads); forgotten once it settles, so the next scrape reads again
  // (not after a timer: on PGlite two scrapes can run without a timer firing between them).
  const backlogOf = (queue: OutboxQueue) => {
    let pending = backlogs.get(queue.name)
    if (!pending) {
      const read = queue.backlog().finally(() => {
        if (backlogs.get(queue.name) === read) backlogs.delete(queue.name)
      })
      pending = read
      backlogs.set(queue.name, pending)
    }
    return pending
  }
  deps.metrics.gauge({
    name: 'worktrack_outbox_depth',
    help: 'Items waiting in each durable queue (due, scheduled or backing off), counted up to 100,000 at each scrape.',
    labelNames: ['queue'],
    collect: async (gauge) => {
      for (const queue of queues) gauge.labels(queue.name).set((await backlogOf(queue)).depth)
    },
  })
  deps.metrics.gauge({
    name: 'worktrack_outbox_oldest_due_seconds',
    help: 'How long the oldest due item of each durable queue has waited past its due time (0: none due).',
    labelNames: ['queue'],
    collect: async (gauge) => {
      for (const queue of queues) gauge.labels(queue.name).set((await backlogOf(queue)).oldestDueSeconds)
    },
  })
  return {
    async run(queue, options = {}) {
      queues.push(queue)
      const runner = new OutboxRunner(queue, options.log ?? deps.log.child({ queue: queue.name }))
      if (deps.background && options.workers !== false) {
        await runner.start(deps.events)
        deps.onStop(() => runner.stop())
      }
      return runner
    },
  }
}
