/**
 * The machinery of the webhook benchmarks (webhooks-delivery, webhooks-writes): the service with
 * loopback targets allowed, receivers in this process noting each arrival, paced and wrk PATCH
 * loads, subscribing and removing webhooks, and what the benchmark's own connection reads of the
 * delivery queue and the workers' statements.
 */
import postgres from 'postgres'
import type { WebhooksPaced } from '../figures'
import type { Fixture } from '../seed/webhooks'
import { LIMITS } from '../targets'
import type { CpuShare } from './cpu'
import { startService, type RunningProcess } from './processes'
import { round } from './stats'
import { COUNT_STATUSES, luaValue, wrk, type LoadResult } from './wrk'

export const PORT = 3901
/** Most PATCHes the paced client keeps in flight; past it, it offers less (and says so). */
export const IN_FLIGHT_CAP = 1000
/** The longest wait for a backlog to drain after a run (what is left is reported). */
export const DRAIN_CAP_SECONDS = 30

export const now = () => performance.timeOrigin + performance.now()

/** The service's set-up, for the sections. */
export const SETUP = `one service process on the PostgreSQL server; config \`webhooks.allowPrivateTargets: true\`, \`auth.requestsPerMinute: 0\`, every other setting its default:
  \`webhooks.concurrency\` 4 workers × 16 streams per claim × batches of 50, the workers sharing the service's
  \`database.maxConnections\` 10 with the API; receivers are Bun.serve servers in the benchmark process answering 200 at once, on loopback`

/** One key for every service of the run (a service restarted on the same database opens the same secrets). */
const ENCRYPTION_KEY = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex')

/** The service with loopback targets allowed, no per-key limit and (unless `workers` is false) its delivery workers. */
export const startWebhookService = (url: string, workers = true): Promise<RunningProcess> =>
  startService(url, PORT, { config: { webhooks: { allowPrivateTargets: true, encryptionKey: ENCRYPTION_KEY, workers }, auth: { requestsPerMinute: 0 } } })

/** A receiver answering 200 at once; it notes each arrival (and, when `parse` is on, the event's work item version). */
export interface Receiver {
  port: number
  /** Arrival times (epoch ms), in order. */
  times: number[]
  /** For parsed arrivals of `work_item.updated`: `${id} ${updatedAt}` → first arrival time, and occurredAt (epoch ms). */
  events: Map<string, { at: number; occurredAt: number }>
  /** Arrivals whose webhook-id this receiver had already seen. */
  duplicates: number
  parse: boolean
  stop(): void
}

export function startReceiver(): Receiver {
  const seen = new Set<string>()
  const receiver: Receiver = {
    port: 0,
    times: [],
    events: new Map(),
    duplicates: 0,
    parse: false,
    stop: () => server.stop(true),
  }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const at = now()
      const id = request.headers.get('webhook-id') ?? ''
      if (seen.has(id)) receiver.duplicates++
      else seen.add(id)
      receiver.times.push(at)
      if (receiver.parse) {
        const event = (await request.json()) as { type: string; occurredAt: string; data: { id: string; updatedAt: string } }
        const key = `${event.data.id} ${event.data.updatedAt}`
        if (event.type === 'work_item.updated' && !receiver.events.has(key)) receiver.events.set(key, { at, occurredAt: Date.parse(event.occurredAt) })
      }
      return new Response('ok')
    },
  })
  receiver.port = server.port!
  return receiver
}

export const arrivalsBetween = (receivers: Receiver[], from: number, to: number) => receivers.reduce((sum, r) => sum + r.times.filter((t) => t >= from && t < to).length, 0)
export const arrivals = (receivers: Receiver[]) => receivers.reduce((sum, r) => sum + r.times.length, 0)

/** The most arrivals in any whole second of [from, to), per second. */
export function bestSecond(receivers: Receiver[], from: number, to: number): number {
  const buckets = new Map<number, number>()
  for (const r of receivers) for (const t of r.times) if (t >= from && t < to) buckets.set(Math.floor((t - from) / 1000), (buckets.get(Math.floor((t - from) / 1000)) ?? 0) + 1)
  const whole = Math.floor((to - from) / 1000)
  return Math.max(0, ...[...buckets.entries()].filter(([second]) => second < whole).map(([, n]) => n))
}

async function api(secret: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`http://127.0.0.1:${PORT}${path}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`)
  return text ? JSON.parse(text) : null
}

/** Subscribes one webhook (`*`) per receiver, then waits until a change reaches every receiver; their ids. */
export async function subscribe(fixture: Fixture, receivers: Receiver[]): Promise<string[]> {
  const ids: string[] = []
  for (const [i, receiver] of receivers.entries()) {
    const created = await api(fixture.secret, 'POST', '/api/v1/webhooks', { url: `http://127.0.0.1:${receiver.port}/hook`, events: ['*'], description: `bench receiver ${i + 1}` })
    ids.push(created.data.id)
  }
  // Every instance learns of a new webhook by NOTIFY: probe until a change reaches each receiver.
  const deadline = Date.now() + 20_000
  for (let probe = 0; ; probe++) {
    const before = receivers.map((r) => r.times.length)
    await api(fixture.secret, 'PATCH', fixture.paths[0]!, { title: `Probe ${Date.now()} ${probe}` })
    const waitUntil = Date.now() + 1000
    while (Date.now() < waitUntil && receivers.some((r, i) => r.times.length === before[i])) await Bun.sleep(10)
    if (receivers.every((r, i) => r.times.length > before[i]!)) return ids
    if (Date.now() > deadline) throw new Error('the subscribed receivers got no event within 20 s')
  }
}


/** DELETE answers 500 (deadlock) that `unsubscribe` retried: reported, since the API should not fail so. */
export let deleteRetries = 0

/**
 * Removes the webhooks and their backlog: disabled first (no new claims), the batches in flight
 * left to arrive, then deleted (their deliveries go with them; a delete racing a worker's record
 * can deadlock, so a 500 is retried).
 */
export async function unsubscribe(fixture: Fixture, ids: string[], receivers: Receiver[]): Promise<void> {
  for (const id of ids) await api(fixture.secret, 'PATCH', `/api/v1/webhooks/${id}`, { enabled: false })
  const deadline = Date.now() + 10_000
  let last = -1
  while (Date.now() < deadline && arrivals(receivers) !== last) {
    last = arrivals(receivers)
    await Bun.sleep(500)
  }
  for (const id of ids)
    for (let attempt = 1; ; attempt++) {
      try {
        await api(fixture.secret, 'DELETE', `/api/v1/webhooks/${id}`)
        break
      } catch (error) {
        if (attempt >= 5 || !/answered 500/.test((error as Error).message)) throw error
        deleteRetries++
        await Bun.sleep(200)
      }
    }
}

/** Enables or disables the webhooks, then waits until a change queues deliveries for exactly the enabled ones. */
export async function setEnabled(fixture: Fixture, monitor: Monitor, ids: string[], enabled: boolean): Promise<void> {
  for (const id of ids) await api(fixture.secret, 'PATCH', `/api/v1/webhooks/${id}`, { enabled })
  const count = async () => (await monitor<{ n: number }[]>`select count(*)::int as n from webhook_deliveries`)[0]!.n
  const deadline = Date.now() + 20_000
  for (let probe = 0; ; probe++) {
    const before = await count()
    await api(fixture.secret, 'PATCH', fixture.paths[0]!, { title: `Probe ${enabled} ${Date.now()} ${probe}` })
    if ((await count()) - before === (enabled ? ids.length : 0)) return
    if (Date.now() > deadline) throw new Error(`the webhooks were not ${enabled ? 'enabled' : 'disabled'} for new changes within 20 s`)
    await Bun.sleep(100)
  }
}


export interface Paced {
  /** PATCHes sent / answered 2xx / failed (non-2xx or transport). */
  sent: number
  ok: number
  failed: number
  firstFailure?: string
  started: number
  /** When the last PATCH was sent, and when the last answer came. */
  sendEnded: number
  ended: number
  maxInFlight: number
  /** `${id} ${updatedAt}` of each changed work item version → when its 2xx answer reached the client. */
  answered: Map<string, number>
}

/** PATCHes at `rate` per second for `seconds` (each on the next path, a new title each time). */
export async function pace(fixture: Fixture, rate: number, seconds: number, tag: string): Promise<Paced> {
  const headers = { authorization: `Bearer ${fixture.secret}`, 'content-type': 'application/json' }
  const total = Math.round(rate * seconds)
  const result: Paced = { sent: 0, ok: 0, failed: 0, started: now(), sendEnded: 0, ended: 0, maxInFlight: 0, answered: new Map() }
  let inFlight = 0
  const all: Promise<void>[] = []
  const send = (i: number) => {
    inFlight++
    result.maxInFlight = Math.max(result.maxInFlight, inFlight)
    const call = fetch(`http://127.0.0.1:${PORT}${fixture.paths[i % fixture.paths.length]}`, { method: 'PATCH', headers, body: `{"title":"${tag} ${i}"}`, signal: AbortSignal.timeout(30_000) })
      .then(async (response) => {
        const at = now()
        const text = await response.text()
        if (response.ok) {
          const item = (JSON.parse(text) as { data: { id: string; updatedAt: string } }).data
          result.answered.set(`${item.id} ${item.updatedAt}`, at)
          result.ok++
        } else {
          result.failed++
          result.firstFailure ??= `${response.status} ${text.slice(0, 200)}`
        }
      })
      .catch((error: Error) => {
        result.failed++
        result.firstFailure ??= error.message
      })
      .finally(() => inFlight--)
    all.push(call)
  }
  let skipped = 0
  while (result.sent + skipped < total) {
    const due = Math.min(total, Math.floor(((now() - result.started) * rate) / 1000) + 1)
    while (result.sent + skipped < due) {
      if (inFlight >= IN_FLIGHT_CAP) skipped++
      else send(result.sent++)
    }
    await Bun.sleep(1)
  }
  result.sendEnded = now()
  await Promise.all(all)
  result.ended = now()
  return result
}

/** wrk Lua: PATCH of the next path, a title never used before each time. */
function patchScript(fixture: Fixture, tag: string): string {
  return `local items = ${luaValue(fixture.paths)}
local headers = ${luaValue({ authorization: `Bearer ${fixture.secret}`, 'content-type': 'application/json' })}
local n = 0
function request()
  n = n + 1
  return wrk.format("PATCH", items[n % #items + 1], headers, '{"title":"${tag} ' .. n .. '"}')
end
${COUNT_STATUSES}`
}

export async function patchLoad(fixture: Fixture, tag: string, duration: number): Promise<LoadResult> {
  const result = await wrk(`http://127.0.0.1:${PORT}`, { script: patchScript(fixture, tag), tally: true, duration })
  if (result.errors || result.non2xx) throw new Error(`PATCH load (${tag}): ${result.errors} socket errors, ${result.non2xx} answers ≥ 400 (${JSON.stringify(result.counts)})`)
  return result
}

/** Kinds of statement the service runs, by how their text begins. */
export const STATEMENTS: Array<[RegExp, string]> = [
  [/^with heads as/, 'worker: claim'],
  [/^with r as/, 'worker: record results'],
  [/^with w as/, 'change: record event + deliveries'],
  [/^update "work_items"/i, 'change: update work item'],
  [/audit/i, 'change: audit record'],
  [/^(begin|commit)/i, 'begin / commit'],
]

/** A connection of the benchmark's own to the service's database (backlog, send times, drains). */
export type Monitor = ReturnType<typeof postgres>

export async function pendingDeliveries(monitor: Monitor): Promise<number> {
  // A count without a where clause: a sequential scan, so the partial indexes' scan counts stay the workers' (deliveryCounters).
  const [row] = await monitor<{ n: number }[]>`select (count(*) filter (where status = 'pending'))::int as n from webhook_deliveries`
  return row!.n
}

/**
 * The workers' statements so far, from PostgreSQL's statistics: claims (scans of the due index, which
 * only the claim uses) and recorded batches (each updates its webhook's health row). Statistics reach
 * the views up to a second late.
 */
async function deliveryCounters(monitor: Monitor): Promise<{ claims: number; records: number }> {
  const [row] = await monitor<{ claims: number; records: number }[]>`
    select (select idx_scan from pg_stat_user_indexes where indexrelname = 'webhook_deliveries_due_idx')::float8 as claims,
      (select n_tup_upd from pg_stat_user_tables where relname = 'webhooks')::float8 as records`
  return row!
}

/** Claims and recorded batches per second over a window, and events delivered per claim and per batch. */
export interface WorkerCounts {
  claimsPerSecond: number
  recordsPerSecond: number
  eventsPerClaim: number
  eventsPerRecord: number
}

/** Starts counting; the returned function waits for the statistics to settle and gives the window's counts. */
export async function workerCounter(monitor: Monitor, receivers: Receiver[]): Promise<() => Promise<WorkerCounts>> {
  const before = await deliveryCounters(monitor)
  const from = now()
  return async () => {
    await Bun.sleep(1200)
    const after = await deliveryCounters(monitor)
    const to = now()
    const seconds = (to - from) / 1000
    const events = arrivalsBetween(receivers, from, to)
    const claims = after.claims - before.claims
    const records = after.records - before.records
    return { claimsPerSecond: claims / seconds, recordsPerSecond: records / seconds, eventsPerClaim: events / Math.max(1, claims), eventsPerRecord: events / Math.max(1, records) }
  }
}

/** Waits until the database has no pending delivery (at most DRAIN_CAP_SECONDS); the seconds it took, and what was left. */
export async function drain(monitor: Monitor): Promise<{ seconds: number; left: number }> {
  const started = now()
  for (;;) {
    const left = await pendingDeliveries(monitor)
    const seconds = (now() - started) / 1000
    if (left === 0 || seconds >= DRAIN_CAP_SECONDS) return { seconds, left }
    await Bun.sleep(200)
  }
}

/** Send durations the service recorded for the succeeded deliveries (ms): mean and p99. */
export async function sendDurations(monitor: Monitor): Promise<{ mean: number; p99: number }> {
  const [row] = await monitor<{ mean: number; p99: number }[]>`
    select coalesce(avg(last_duration_ms), 0)::float8 as mean, coalesce(percentile_cont(0.99) within group (order by last_duration_ms), 0)::float8 as p99
    from webhook_deliveries where status = 'succeeded'`
  return row!
}


/** The delivery target: the service keeps up with the offered rate (commits it, delivers as fast, each event once). */
export function keepsUp(p: WebhooksPaced, rate: number): boolean {
  const share = LIMITS.webhooksKeptUpShare
  return p.changesPerSecond >= share * rate && p.deliveredPerSecond >= share * p.changesPerSecond && p.missing === 0 && p.duplicates === 0 && p.failed === 0
}

const cores = (value: number) => round(value, 2)
export const CPU_HEADER = `| run | service | PostgreSQL | benchmark process (client, receivers) | other (wrk…) | machine busy |
|---|---:|---:|---:|---:|---:|`
export const cpuRow = (label: string, c: CpuShare) => `| ${label} | ${cores(c.service)} | ${cores(c.postgres)} | ${cores(c.bench)} | ${cores(c.other)} | ${cores(c.busy)} |`
export const WORKER_HEADER = `| run | claims/s | recorded batches/s | events per claim | events per batch |
|---|---:|---:|---:|---:|`
export const workerRow = (label: string, w: WorkerCounts) => `| ${label} | ${round(w.claimsPerSecond)} | ${round(w.recordsPerSecond)} | ${round(w.eventsPerClaim, 1)} | ${round(w.eventsPerRecord, 1)} |`
