/**
 * The core's outbox runner (src/outbox-runner.ts) with a queue of its own: a wake-up (local, or a
 * NOTIFY from any instance) wakes one idle worker, a full batch wakes one more, a failing batch
 * is logged and tried again after the poll interval, `stop` waits for the batch in flight, and
 * the backoff doubles with jitter. (Leases after a SIGKILL: tests/plugins/push-restart.test.ts
 * kills a worker process with a batch in flight; the push queue runs on this runner.)
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createEventBus, type EventBus } from '../../src/events'
import { backoffSeconds, OutboxRunner, type OutboxQueue } from '../../src/outbox-runner'
import type { OrganizationRound } from '../../src/organization-round'
import { createTestDatabase, type TestDatabase } from '../helpers/database'
import { capturingLogger } from '../helpers/logger'

let database: TestDatabase
let events: EventBus

beforeAll(async () => {
  database = await createTestDatabase()
  events = createEventBus(database, () => {})
})
afterAll(async () => {
  await events.close()
  await database.close()
})

/** Polls `check` every 5 ms until it holds; throws after `ms`. */
async function until(check: () => boolean, ms = 5000): Promise<void> {
  const deadline = performance.now() + ms
  while (!check()) {
    if (performance.now() > deadline) throw new Error('condition not reached in time')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** A queue whose batches the test hands out: each runOnce takes one scripted batch (or finds nothing). */
function scriptedQueue(channel: string, concurrency: number) {
  const batches: Array<{ handled: number; full: boolean } | Error> = []
  const calls: number[] = []
  let inFlight = 0
  let release: (() => void) | null = null
  let holdNext = false
  const queue: OutboxQueue = {
    name: 'scripted',
    concurrency,
    // Long: in these tests only wake-ups move the workers.
    pollIntervalMs: 60_000,
    channel,
    discover: async () => [],
    backlog: async () => ({ depth: batches.length, oldestDueSeconds: 0 }),
    async runOnce(_round: OrganizationRound, _stopping: () => boolean) {
      calls.push(performance.now())
      const next = batches.shift()
      if (!next) return { handled: 0, full: false }
      if (next instanceof Error) throw next
      inFlight++
      if (holdNext) {
        holdNext = false
        await new Promise<void>((resolve) => (release = resolve))
      }
      inFlight--
      return next
    },
  }
  return {
    queue,
    calls,
    add: (...items: Array<{ handled: number; full: boolean } | Error>) => batches.push(...items),
    hold: () => (holdNext = true),
    release: () => release?.(),
    inFlight: () => inFlight,
  }
}

describe('the outbox runner', () => {
  test('a wake-up wakes one idle worker, not all of them; a full batch wakes one more', async () => {
    const script = scriptedQueue('runner_test_one', 4)
    const runner = new OutboxRunner(script.queue, capturingLogger([]))
    await runner.start(events)
    // Each worker looks once at start, finds nothing and sleeps.
    await until(() => script.calls.length === 4)

    script.add({ handled: 3, full: false })
    runner.wake()
    // The woken worker takes the batch, looks again (nothing) and sleeps: two calls, one worker.
    await until(() => script.calls.length === 6)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(script.calls.length).toBe(6)

    // A full batch means more is waiting: the worker goes on and wakes a second one.
    script.add({ handled: 500, full: true })
    runner.wake()
    await until(() => script.calls.length === 9)
    await new Promise((resolve) => setTimeout(resolve, 50))
    // The woken worker: the full batch, then nothing; the one it woke: nothing.
    expect(script.calls.length).toBe(9)
    await runner.stop()
  })

  test('a NOTIFY on the queue channel, from any connection, wakes a worker', async () => {
    const script = scriptedQueue('runner_test_notify', 1)
    const runner = new OutboxRunner(script.queue, capturingLogger([]))
    await runner.start(events)
    await until(() => script.calls.length === 1)
    script.add({ handled: 1, full: false })
    await events.publish(database.db, 'runner_test_notify', { organizationId: '01900000-0000-7000-8000-000000000001' })
    await until(() => script.calls.length === 3)
    await runner.stop()
  })

  test('a failing batch is logged and the worker sleeps, then goes on at the next wake-up', async () => {
    const lines: Array<{ level: string; message: string }> = []
    const script = scriptedQueue('runner_test_fail', 1)
    const runner = new OutboxRunner(script.queue, capturingLogger(lines))
    await runner.start(events)
    await until(() => script.calls.length === 1)
    script.add(new Error('connection reset'), { handled: 2, full: false })
    runner.wake()
    await until(() => lines.some((line) => line.level === 'warn' && line.message.includes('scripted outbox: a batch failed')))
    // Not straight on: the failure costs a poll interval (60 s here) unless something wakes it.
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(script.calls.length).toBe(2)
    runner.wake()
    await until(() => script.calls.length === 4)
    await runner.stop()
  })

  test('stop waits for the batch in flight to finish', async () => {
    const script = scriptedQueue('runner_test_stop', 2)
    const runner = new OutboxRunner(script.queue, capturingLogger([]))
    await runner.start(events)
    await until(() => script.calls.length === 2)
    script.hold()
    script.add({ handled: 1, full: false })
    runner.wake()
    await until(() => script.inFlight() === 1)
    let stopped = false
    const stopping = runner.stop().then(() => (stopped = true))
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(stopped).toBe(false)
    script.release()
    await stopping
    expect(script.inFlight()).toBe(0)
  })

  test('backoff doubles per attempt up to the cap, with jitter in [½, 1], and waits at least Retry-After', () => {
    for (let attempt = 1; attempt <= 12; attempt++) {
      const ceiling = Math.min(60_000, 1000 * 2 ** (attempt - 1)) / 1000
      for (let i = 0; i < 50; i++) {
        const delay = backoffSeconds(attempt, 1000, 60_000)
        expect(delay).toBeGreaterThanOrEqual(ceiling / 2)
        expect(delay).toBeLessThanOrEqual(ceiling)
      }
    }
    expect(backoffSeconds(1, 1000, 60_000, 30)).toBe(30)
  })
})
