/**
 * Webhooks (issue 18): delivery throughput and end-to-end latency, and what subscriptions cost
 * the API's writes. One service process on the PostgreSQL server (`webhooks.allowPrivateTargets`
 * on, the per-key rate limit off, every other webhooks setting its default); the receivers are
 * Bun.serve servers in this process answering 200 at once.
 *
 * A. One webhook (`*`) and 10 projects: `PATCH …/work-items/{id}` (a new title each time, so each
 * is a change and an event) paced at 1,000/s from this process for BENCH_WEBHOOKS_SECONDS (25),
 * after a warm-up. End-to-end latency of an event = its arrival at the receiver − the moment the
 * PATCH's 2xx answer reached the client (matched by work item id + updatedAt); also − the event's
 * `occurredAt` (the transaction's start). Then a saturation run: wrk (64 connections) as fast as
 * the service takes the PATCHes, and the delivery rate meanwhile and while the backlog drains; then
 * a steady run paced at half the saturated commit rate (a load this machine carries).
 *
 * B. The same PATCHes from wrk on a fresh database, alternating: no webhook, 5 (`*`, each to its
 * own receiver, the delivery workers running), no webhook (the 5 deleted), 5 new ones; target
 * mean req/s(5) ≥ 0.8 × mean req/s(none). Then the same 5 with the workers off (a service
 * restarted with `webhooks.workers: false`): what recording the events alone costs.
 *
 * Where the time goes: CPU seconds of the service, of PostgreSQL and of this process over each
 * run, the workers' claims and recorded batches (PostgreSQL's statistics), and what the database's
 * sessions were doing (pg_stat_activity sampled every 50 ms).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import postgres from 'postgres'
import { openDatabase, queryText } from '../src/db'
import { migrate } from '../src/migrate'
import { COUNT_STATUSES, CONNECTIONS, freshDatabase, luaValue, machine, recordResult, round, startProcess, wrk, writeSection, type LoadResult, type RunningProcess, type Throughput } from './lib'
import { seedOrganization } from './seed'
import { seedWork } from './seed-work'

const RATE = Number(process.env.BENCH_WEBHOOKS_RATE ?? 1000)
const PACED_SECONDS = Number(process.env.BENCH_WEBHOOKS_SECONDS ?? 25)
const WARMUP_SECONDS = 3
const SATURATION_SECONDS = Number(process.env.BENCH_WEBHOOKS_SATURATION_SECONDS ?? 15)
const WRITES_SECONDS = Number(process.env.BENCH_WEBHOOKS_WRITES_SECONDS ?? 10)
/** B's rounds of (none, 5 webhooks), with the workers on, then off. */
const WRITE_ROUNDS = 2
/** Each run with the workers off (recording only). */
const RECORDING_SECONDS = Number(process.env.BENCH_WEBHOOKS_RECORDING_SECONDS ?? 8)
/** A second paced run at this share of the rate the service committed when saturated (a load it carries). */
const STEADY_SHARE = 0.5
const STEADY_SECONDS = Number(process.env.BENCH_WEBHOOKS_STEADY_SECONDS ?? 15)
/** The longest wait for a backlog to drain after a run (what is left is reported). */
const DRAIN_CAP_SECONDS = 30
const PROJECTS = 10
const ITEMS_PER_PROJECT = 50
const HOOKS = 5
/** Most PATCHes the paced client keeps in flight; past it, it offers less (and says so). */
const IN_FLIGHT_CAP = 1000
const PORT = 3901
const SCOPES = ['work_items:read', 'work_items:write', 'webhooks:read', 'webhooks:write']

const now = () => performance.timeOrigin + performance.now()

export interface WebhooksPaced {
  offeredPerSecond: number
  changesPerSecond: number
  /** Events that arrived while the changes were being made, per second of it. */
  deliveredPerSecond: number
  changes: number
  failed: number
  /** Latency from the PATCH's 2xx answer at the client to the event's arrival, ms. */
  p50: number
  p99: number
  max: number
  /** The same from the event's occurredAt (the transaction's start, ms precision). */
  occurredP50: number
  occurredP99: number
  /** Pending deliveries when the last change was answered. */
  backlogAtEnd: number
  drainSeconds: number
  /** Changes whose event never arrived (after the drain). */
  missing: number
  duplicates: number
}

export interface WebhooksSaturation {
  changesPerSecond: number
  /** Arrivals during the wrk run, per second. */
  deliveredPerSecond: number
  /** The best whole second of arrivals during the run and the drain. */
  bestSecond: number
  /** Arrivals during the drain (no API load), per second. */
  drainPerSecond: number
  backlogAtEnd: number
  drainSeconds: number
  leftAfterDrain: number
  duplicates: number
}

export interface WebhooksWrites {
  none: Throughput
  five: Throughput
  /** req/s(5 webhooks) / req/s(none). */
  ratio: number
  /** Events that reached the 5 receivers during the measured run with webhooks, and per second. */
  delivered: number
  deliveredPerSecond: number
  /** Deliveries queued by the measured run (5 per change) and pending at its end. */
  queued: number
  backlogAtEnd: number
  duplicates: number
  /** The same webhooks with the delivery workers off (\`webhooks.workers: false\`): the events recorded, none sent. */
  recordingOnly?: Throughput
  /** That service with the webhooks disabled, in turn with recordingOnly's runs: the recording's own "none". */
  recordingNone?: Throughput
}

/** What bench/results.json keeps of this benchmark. */
export interface WebhooksFigures {
  /** Changes per second offered in A's paced run. */
  rate: number
  paced: WebhooksPaced
  saturation: WebhooksSaturation
  writes: WebhooksWrites
  /** A second paced run at a rate the service carries (half its saturated commit rate); absent in older records. */
  steady?: WebhooksPaced & { rate: number }
  peakRssMiB: number
}


interface Fixture {
  url: string
  secret: string
  /** `/api/v1/projects/{p}/work-items/{id}`, the projects interleaved (consecutive paths, different projects). */
  paths: string[]
}

async function seed(name: string): Promise<Fixture> {
  const url = await freshDatabase(name)
  const database = await openDatabase(url)
  await migrate(database.db)
  const seeded = await seedOrganization(database.db, { scopes: SCOPES, role: 'administrator' })
  const projects = [seeded.projectId]
  for (let i = 1; i < PROJECTS; i++) {
    const [row] = await queryText<{ id: string }>(
      database.db,
      `insert into projects (id, organization_id, name, created_by) values (gen_random_uuid(), $1, $2, $3) returning id`,
      [seeded.organizationId, `Bench project ${i + 1}`, seeded.userId],
    )
    await queryText(database.db, `insert into project_members (project_id, user_id, organization_id, access_level) values ($1, $2, $3, 'owner')`, [row!.id, seeded.userId, seeded.organizationId])
    projects.push(row!.id)
  }
  const byProject: string[][] = []
  for (const projectId of projects) {
    await seedWork(database.db, { ...seeded, projectId }, { workItems: ITEMS_PER_PROJECT, entries: 0 })
    const items = await queryText<{ id: string }>(database.db, 'select id from work_items where project_id = $1 order by number', [projectId])
    byProject.push(items.map((item) => `/api/v1/projects/${projectId}/work-items/${item.id}`))
  }
  await database.close()
  const paths: string[] = []
  for (let i = 0; i < ITEMS_PER_PROJECT; i++) for (const list of byProject) paths.push(list[i]!)
  return { url, secret: seeded.secret, paths }
}

/** One key for every service of the run (a service restarted on the same database opens the same secrets). */
const ENCRYPTION_KEY = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex')

/** The service with loopback targets allowed, no per-key limit and (unless `workers` is false) its delivery workers. */
async function startService(url: string, workers = true): Promise<RunningProcess> {
  const config = `/tmp/worktrack-bench-webhooks-${process.pid}.json`
  writeFileSync(config, JSON.stringify({ webhooks: { allowPrivateTargets: true, encryptionKey: ENCRYPTION_KEY, workers }, auth: { requestsPerMinute: 0 } }))
  return startProcess([process.execPath, 'entries/bun.ts'], { DATABASE_URL: url, SERVICE_CONFIG: config }, PORT)
}

/** A receiver answering 200 at once; it notes each arrival (and, when `parse` is on, the event's work item version). */
interface Receiver {
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

function startReceiver(): Receiver {
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

const arrivalsBetween = (receivers: Receiver[], from: number, to: number) => receivers.reduce((sum, r) => sum + r.times.filter((t) => t >= from && t < to).length, 0)
const arrivals = (receivers: Receiver[]) => receivers.reduce((sum, r) => sum + r.times.length, 0)

/** The most arrivals in any whole second of [from, to), per second. */
function bestSecond(receivers: Receiver[], from: number, to: number): number {
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
async function subscribe(fixture: Fixture, receivers: Receiver[]): Promise<string[]> {
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
let deleteRetries = 0

/**
 * Removes the webhooks and their backlog: disabled first (no new claims), the batches in flight
 * left to arrive, then deleted (their deliveries go with them; a delete racing a worker's record
 * can deadlock, so a 500 is retried).
 */
async function unsubscribe(fixture: Fixture, ids: string[], receivers: Receiver[]): Promise<void> {
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
async function setEnabled(fixture: Fixture, monitor: Monitor, ids: string[], enabled: boolean): Promise<void> {
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

interface Paced {
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
async function pace(fixture: Fixture, rate: number, seconds: number, tag: string): Promise<Paced> {
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

async function patchLoad(fixture: Fixture, tag: string, duration: number): Promise<LoadResult> {
  const result = await wrk(`http://127.0.0.1:${PORT}`, { script: patchScript(fixture, tag), tally: true, duration })
  if (result.errors || result.non2xx) throw new Error(`PATCH load (${tag}): ${result.errors} socket errors, ${result.non2xx} answers ≥ 400 (${JSON.stringify(result.counts)})`)
  return result
}

// ---- where the time goes ----------------------------------------------------------------------

const TICK = 100 // /proc clock ticks per second (USER_HZ)

function ticksOf(pid: number | string): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return 0
  }
}

/** CPU ticks of every PostgreSQL process (backends that ended meanwhile are lost, new ones start at 0). */
function postgresTicks(): Map<string, number> {
  const ticks = new Map<string, number>()
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') ticks.set(pid, ticksOf(pid))
    } catch {
      // gone
    }
  }
  return ticks
}

function machineTicks(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const total = fields.slice(0, 8).reduce((a, b) => a + b, 0)
  return { busy: total - fields[3]! - fields[4]!, total }
}

interface CpuShare {
  seconds: number
  /** CPU seconds per wall second (cores in use) of the service, PostgreSQL, this process (receivers, paced client) and the rest (wrk…). */
  service: number
  postgres: number
  bench: number
  other: number
  /** Machine-wide cores busy. */
  busy: number
}

function cpuMeter(service: RunningProcess): () => CpuShare {
  const started = now()
  const serviceBefore = ticksOf(service.pid)
  const postgresBefore = postgresTicks()
  const benchBefore = process.cpuUsage()
  const machineBefore = machineTicks()
  return () => {
    const seconds = (now() - started) / 1000
    const serviceSeconds = (ticksOf(service.pid) - serviceBefore) / TICK
    let postgresSeconds = 0
    for (const [pid, ticks] of postgresTicks()) postgresSeconds += (ticks - (postgresBefore.get(pid) ?? 0)) / TICK
    const bench = process.cpuUsage(benchBefore)
    const benchSeconds = (bench.user + bench.system) / 1e6
    const machineAfter = machineTicks()
    const cores = cpus().length
    const busySeconds = ((machineAfter.busy - machineBefore.busy) / Math.max(1, machineAfter.total - machineBefore.total)) * seconds * cores
    return {
      seconds,
      service: serviceSeconds / seconds,
      postgres: postgresSeconds / seconds,
      bench: benchSeconds / seconds,
      other: Math.max(0, busySeconds - serviceSeconds - postgresSeconds - benchSeconds) / seconds,
      busy: busySeconds / seconds,
    }
  }
}

/** Kinds of statement the service runs, by how their text begins. */
const STATEMENTS: Array<[RegExp, string]> = [
  [/^with heads as/, 'worker: claim'],
  [/^with r as/, 'worker: record results'],
  [/^with w as/, 'change: record event + deliveries'],
  [/^update "work_items"/i, 'change: update work item'],
  [/audit/i, 'change: audit record'],
  [/^(begin|commit)/i, 'begin / commit'],
]

interface Activity {
  samples: number
  busySessions: number
  byKind: Array<{ kind: string; share: number; waits: string }>
}

/**
 * Samples pg_stat_activity of `database` every 50 ms (while not paused): what its sessions were
 * doing, by kind, as a share of samples. Calling it stops it and gives the figures.
 */
function activitySampler(url: string): (() => Promise<Activity>) & { pause(): void; resume(): void } {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const name = new URL(url).pathname.slice(1)
  const counts = new Map<string, { n: number; waits: Map<string, number> }>()
  let samples = 0
  let stopped = false
  let paused = false
  const loop = (async () => {
    while (!stopped) {
      if (paused) {
        await Bun.sleep(20)
        continue
      }
      const rows = await sql<{ state: string; wait: string | null; query: string }[]>`
        select state, wait_event_type || ':' || wait_event as wait, left(query, 60) as query from pg_stat_activity
        where datname = ${name} and pid <> pg_backend_pid() and state not in ('idle') and backend_type = 'client backend'`
      samples++
      for (const row of rows) {
        const text = row.query.trim()
        const kind = row.state === 'active' ? (STATEMENTS.find(([pattern]) => pattern.test(text))?.[1] ?? `other: ${text.slice(0, 30).replace(/\s+/g, ' ')}…`) : `${row.state} (waiting for the service)`
        const entry = counts.get(kind) ?? { n: 0, waits: new Map() }
        entry.n++
        if (row.state === 'active' && row.wait) entry.waits.set(row.wait, (entry.waits.get(row.wait) ?? 0) + 1)
        counts.set(kind, entry)
      }
      await Bun.sleep(50)
    }
  })()
  const finish = async (): Promise<Activity> => {
    stopped = true
    await loop
    await sql.end()
    const total = [...counts.values()].reduce((sum, entry) => sum + entry.n, 0)
    return {
      samples,
      busySessions: total / Math.max(1, samples),
      byKind: [...counts.entries()]
        .sort((a, b) => b[1].n - a[1].n)
        .map(([kind, entry]) => ({
          kind,
          share: entry.n / Math.max(1, total),
          waits: [...entry.waits.entries()]
            .sort((a, b) => b[1] - a[1])
            .slice(0, 2)
            .map(([wait, n]) => `${wait} ${round((n / entry.n) * 100)} %`)
            .join(', '),
        })),
    }
  }
  return Object.assign(finish, { pause: () => void (paused = true), resume: () => void (paused = false) })
}

/** The mean of CPU shares measured over several windows, weighted by their lengths. */
function mergeCpu(shares: CpuShare[]): CpuShare {
  const seconds = shares.reduce((sum, c) => sum + c.seconds, 0)
  const mean = (field: keyof CpuShare) => shares.reduce((sum, c) => sum + c[field] * c.seconds, 0) / seconds
  return { seconds, service: mean('service'), postgres: mean('postgres'), bench: mean('bench'), other: mean('other'), busy: mean('busy') }
}

/** A connection of the benchmark's own to the service's database (backlog, send times, drains). */
type Monitor = ReturnType<typeof postgres>

async function pendingDeliveries(monitor: Monitor): Promise<number> {
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
async function workerCounter(monitor: Monitor, receivers: Receiver[]): Promise<() => Promise<WorkerCounts>> {
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
async function drain(monitor: Monitor): Promise<{ seconds: number; left: number }> {
  const started = now()
  for (;;) {
    const left = await pendingDeliveries(monitor)
    const seconds = (now() - started) / 1000
    if (left === 0 || seconds >= DRAIN_CAP_SECONDS) return { seconds, left }
    await Bun.sleep(200)
  }
}

/** Send durations the service recorded for the succeeded deliveries (ms): mean and p99. */
async function sendDurations(monitor: Monitor): Promise<{ mean: number; p99: number }> {
  const [row] = await monitor<{ mean: number; p99: number }[]>`
    select coalesce(avg(last_duration_ms), 0)::float8 as mean, coalesce(percentile_cont(0.99) within group (order by last_duration_ms), 0)::float8 as p99
    from webhook_deliveries where status = 'succeeded'`
  return row!
}

/** Stops the service; one that does not exit within 20 s (a worker stuck) is killed, and that is an error. */
async function stopService(service: RunningProcess): Promise<void> {
  const stopped = await Promise.race([service.stop().then(() => true), Bun.sleep(20_000).then(() => false)])
  if (!stopped) {
    process.kill(service.pid, 'SIGKILL')
    throw new Error('the service did not stop within 20 s of SIGTERM (killed)')
  }
}

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]! : NaN)

// ---- A: delivery -------------------------------------------------------------------------------

type PacedRun = { figures: WebhooksPaced; cpu: CpuShare; activity: Activity; workers: WorkerCounts; maxInFlight: number }

async function benchDelivery(): Promise<{
  paced: PacedRun
  saturation: WebhooksSaturation
  steady: PacedRun & { rate: number }
  cpu: Record<'saturation' | 'drain', CpuShare>
  activity: Activity
  workers: WorkerCounts
  send: { mean: number; p99: number }
  peakRssMiB: number
  /** Peak RSS after the paced run and after the saturation run. */
  rss: { paced: number; saturation: number }
}> {
  const fixture = await seed('worktrack_bench_webhooks')
  const service = await startService(fixture.url)
  const receiver = startReceiver()
  const monitor = postgres(fixture.url, { max: 1, onnotice: () => {} })

  /** PATCHes paced at `rate` for `seconds`, then the backlog drains; latency matched per change. */
  const pacedRun = async (rate: number, seconds: number, label: string): Promise<PacedRun> => {
    receiver.parse = true
    receiver.events.clear()
    const duplicatesBefore = receiver.duplicates
    const counter = await workerCounter(monitor, [receiver])
    const cpu = cpuMeter(service)
    const activity = activitySampler(fixture.url)
    const run = await pace(fixture, rate, seconds, `${label} ${Date.now()}`)
    const sampled = await activity()
    const share = cpu()
    const backlogAtEnd = await pendingDeliveries(monitor)
    const delivered = arrivalsBetween([receiver], run.started, run.ended)
    const drained = await drain(monitor)
    const workers = await counter()
    const latencies: number[] = []
    const fromOccurred: number[] = []
    let missing = 0
    for (const [key, answeredAt] of run.answered) {
      const event = receiver.events.get(key)
      if (!event) {
        missing++
        continue
      }
      latencies.push(event.at - answeredAt)
      fromOccurred.push(event.at - event.occurredAt)
    }
    latencies.sort((a, b) => a - b)
    fromOccurred.sort((a, b) => a - b)
    const runSeconds = (run.ended - run.started) / 1000
    const figures: WebhooksPaced = {
      offeredPerSecond: run.sent / ((run.sendEnded - run.started) / 1000),
      changesPerSecond: run.ok / runSeconds,
      deliveredPerSecond: delivered / runSeconds,
      changes: run.ok,
      failed: run.failed,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      max: latencies.at(-1) ?? NaN,
      occurredP50: percentile(fromOccurred, 0.5),
      occurredP99: percentile(fromOccurred, 0.99),
      backlogAtEnd,
      drainSeconds: drained.seconds,
      missing,
      duplicates: receiver.duplicates - duplicatesBefore,
    }
    if (run.failed) console.warn(`webhooks: ${run.failed} paced PATCHes failed (first: ${run.firstFailure})`)
    console.log(`webhooks paced at ${rate}/s:`, figures, `(at most ${run.maxInFlight} in flight)`)
    return { figures, cpu: share, activity: sampled, workers, maxInFlight: run.maxInFlight }
  }

  try {
    await subscribe(fixture, [receiver])
    // Warm-up (not measured): the same pace, then its backlog drains.
    await pace(fixture, RATE, WARMUP_SECONDS, `Warm ${Date.now()}`)
    await drain(monitor)
    const paced = await pacedRun(RATE, PACED_SECONDS, 'Paced')
    // VmHWM only grows: read after each run, it tells which run set the peak.
    const rssAfterPaced = service.peakRssMiB()

    // Saturation: as fast as the service takes the PATCHes; the receiver only counts.
    receiver.parse = false
    const satDuplicatesBefore = receiver.duplicates
    const satCounter = await workerCounter(monitor, [receiver])
    const satCpu = cpuMeter(service)
    const satActivity = activitySampler(fixture.url)
    const started = now()
    const load = await patchLoad(fixture, `Saturate ${Date.now()}`, SATURATION_SECONDS)
    const ended = now()
    const saturationActivity = await satActivity()
    const saturationCpu = satCpu()
    const satBacklog = await pendingDeliveries(monitor)
    const drainCpu = cpuMeter(service)
    const satDrain = await drain(monitor)
    const drainEnded = now()
    const drainShare = drainCpu()
    const satWorkers = await satCounter()
    const saturation: WebhooksSaturation = {
      changesPerSecond: load.requestsPerSecond,
      deliveredPerSecond: arrivalsBetween([receiver], started, ended) / ((ended - started) / 1000),
      bestSecond: bestSecond([receiver], started, drainEnded),
      drainPerSecond: arrivalsBetween([receiver], ended, drainEnded) / Math.max(0.001, (drainEnded - ended) / 1000),
      backlogAtEnd: satBacklog,
      drainSeconds: satDrain.seconds,
      leftAfterDrain: satDrain.left,
      duplicates: receiver.duplicates - satDuplicatesBefore,
    }
    console.log('webhooks saturation:', saturation)
    const rssAfterSaturation = service.peakRssMiB()

    // Steady: half the rate the service committed when saturated, so neither side is overloaded.
    const steadyRate = Math.max(10, Math.floor((saturation.changesPerSecond * STEADY_SHARE) / 10) * 10)
    const steady = { rate: steadyRate, ...(await pacedRun(steadyRate, STEADY_SECONDS, 'Steady')) }
    return {
      paced,
      saturation,
      steady,
      cpu: { saturation: saturationCpu, drain: drainShare },
      activity: saturationActivity,
      workers: satWorkers,
      send: await sendDurations(monitor),
      peakRssMiB: service.peakRssMiB(),
      rss: { paced: rssAfterPaced, saturation: rssAfterSaturation },
    }
  } finally {
    await monitor.end()
    receiver.stop()
    await stopService(service)
  }
}

// ---- B: API writes with 5 webhooks vs none -----------------------------------------------------

/** One measured wrk run of B. */
interface WriteRun {
  hooks: number
  result: LoadResult
  /** Events that reached the receivers during it. */
  delivered: number
  seconds: number
}

/**
 * B, alternating so that a drift of the shared machine falls on both sides: none, 5 webhooks, none
 * (the webhooks deleted, their backlog with them), 5 new ones.
 */
async function benchWrites(): Promise<{ writes: WebhooksWrites; runs: WriteRun[]; recordingRuns: Array<{ enabled: boolean; result: LoadResult }>; cpu: Record<'none' | 'five' | 'recording', CpuShare>; activity: Record<'none' | 'five', Activity>; workers: WorkerCounts; peakRssMiB: number }> {
  const fixture = await seed('worktrack_bench_webhooks_writes')
  let service = await startService(fixture.url)
  const receivers = Array.from({ length: HOOKS }, () => startReceiver())
  const monitor = postgres(fixture.url, { max: 1, onnotice: () => {} })
  const samplers = { none: activitySampler(fixture.url), five: activitySampler(fixture.url) }
  samplers.five.pause()
  samplers.none.pause()
  const cpu: Record<'none' | 'five', CpuShare[]> = { none: [], five: [] }
  const workerWindows: WorkerCounts[] = []
  const runs: WriteRun[] = []
  let hookIds: string[] = []
  let backlogAtEnd = 0
  try {
    await patchLoad(fixture, `Warm none ${Date.now()}`, 3)
    for (let pass = 0; pass < WRITE_ROUNDS; pass++) {
      for (const hooks of [0, HOOKS]) {
        const side = hooks ? 'five' : 'none'
        if (hooks) hookIds = await subscribe(fixture, receivers)
        const counter = hooks ? await workerCounter(monitor, receivers) : undefined
        const meter = cpuMeter(service)
        samplers[side].resume()
        const started = now()
        const result = await patchLoad(fixture, `${side} ${pass} ${Date.now()}`, WRITES_SECONDS)
        const ended = now()
        samplers[side].pause()
        cpu[side].push(meter())
        runs.push({ hooks, result, delivered: arrivalsBetween(receivers, started, ended), seconds: (ended - started) / 1000 })
        if (hooks) backlogAtEnd = await pendingDeliveries(monitor)
        if (counter) workerWindows.push(await counter())
        // Deleted with their backlog: the next round starts as the first did, from no webhook at all.
        if (hooks && pass < WRITE_ROUNDS - 1) await unsubscribe(fixture, hookIds, receivers)
      }
    }
    const activity = { none: await samplers.none(), five: await samplers.five() }
    let peakRssMiB = service.peakRssMiB()

    // The same webhooks with the delivery workers off, disabled and enabled in turn: what recording
    // the events costs the writes alone.
    await stopService(service)
    service = await startService(fixture.url, false)
    await patchLoad(fixture, `Warm recording ${Date.now()}`, 3)
    const recordingRuns: Array<{ enabled: boolean; result: LoadResult }> = []
    const recordingCpu: CpuShare[] = []
    for (let pass = 0; pass < WRITE_ROUNDS; pass++)
      for (const enabled of [false, true]) {
        await setEnabled(fixture, monitor, hookIds, enabled)
        const meter = cpuMeter(service)
        recordingRuns.push({ enabled, result: await patchLoad(fixture, `Recording ${enabled} ${pass} ${Date.now()}`, RECORDING_SECONDS) })
        if (enabled) recordingCpu.push(meter())
      }
    peakRssMiB = Math.max(peakRssMiB, service.peakRssMiB())
    const meanOf = (list: LoadResult[]): Throughput => ({
      requestsPerSecond: list.reduce((sum, r) => sum + r.requestsPerSecond, 0) / list.length,
      p50: list.reduce((sum, r) => sum + r.p50, 0) / list.length,
      p99: Math.max(...list.map((r) => r.p99)),
    })
    const recordingOnly = meanOf(recordingRuns.filter((run) => run.enabled).map((run) => run.result))
    const recordingNone = meanOf(recordingRuns.filter((run) => !run.enabled).map((run) => run.result))

    const side = (hooks: number) => runs.filter((run) => run.hooks === hooks)
    const mean = (list: WriteRun[]): Throughput => ({
      requestsPerSecond: list.reduce((sum, run) => sum + run.result.requestsPerSecond, 0) / list.length,
      p50: list.reduce((sum, run) => sum + run.result.p50, 0) / list.length,
      p99: Math.max(...list.map((run) => run.result.p99)),
    })
    const none = mean(side(0))
    const five = mean(side(HOOKS))
    const delivered = side(HOOKS).reduce((sum, run) => sum + run.delivered, 0)
    const writes: WebhooksWrites = {
      none,
      five,
      ratio: five.requestsPerSecond / none.requestsPerSecond,
      delivered,
      deliveredPerSecond: delivered / side(HOOKS).reduce((sum, run) => sum + run.seconds, 0),
      queued: side(HOOKS).reduce((sum, run) => sum + run.result.requests, 0) * HOOKS,
      backlogAtEnd,
      duplicates: receivers.reduce((sum, r) => sum + r.duplicates, 0),
      recordingOnly,
      recordingNone,
    }
    console.log('webhooks writes:', writes, runs.map((run) => `${run.hooks}: ${round(run.result.requestsPerSecond)} req/s`).join(', '))
    const workers: WorkerCounts = {
      claimsPerSecond: workerWindows.reduce((sum, w) => sum + w.claimsPerSecond, 0) / workerWindows.length,
      recordsPerSecond: workerWindows.reduce((sum, w) => sum + w.recordsPerSecond, 0) / workerWindows.length,
      eventsPerClaim: workerWindows.reduce((sum, w) => sum + w.eventsPerClaim, 0) / workerWindows.length,
      eventsPerRecord: workerWindows.reduce((sum, w) => sum + w.eventsPerRecord, 0) / workerWindows.length,
    }
    return {
      writes,
      runs,
      recordingRuns,
      cpu: { none: mergeCpu(cpu.none), five: mergeCpu(cpu.five), recording: mergeCpu(recordingCpu) },
      activity,
      workers,
      peakRssMiB,
    }
  } finally {
    await monitor.end()
    for (const receiver of receivers) receiver.stop()
    await stopService(service)
  }
}

// ---- the section --------------------------------------------------------------------------------

/** A's target as read from issue 18: the service keeps up with the offered rate (commits it, delivers as fast, each event once). */
export function keepsUp(p: WebhooksPaced, rate: number): boolean {
  return p.changesPerSecond >= 0.95 * rate && p.deliveredPerSecond >= 0.95 * p.changesPerSecond && p.missing === 0 && p.duplicates === 0 && p.failed === 0
}

const cores = (value: number) => round(value, 2)
const cpuRow = (label: string, c: CpuShare) => `| ${label} | ${cores(c.service)} | ${cores(c.postgres)} | ${cores(c.bench)} | ${cores(c.other)} | ${cores(c.busy)} |`
const workerRow = (label: string, w: WorkerCounts) => `| ${label} | ${round(w.claimsPerSecond)} | ${round(w.recordsPerSecond)} | ${round(w.eventsPerClaim, 1)} | ${round(w.eventsPerRecord, 1)} |`
const pacedRow = (label: string, p: WebhooksPaced) =>
  `| ${label} | ${round(p.offeredPerSecond)} | ${round(p.changesPerSecond)} | ${round(p.deliveredPerSecond)} | ${round(p.p50, 1)} / ${round(p.p99, 1)} / ${round(p.max, 1)} | ${round(p.occurredP50, 1)} / ${round(p.occurredP99, 1)} | ${round(p.backlogAtEnd)} | ${round(p.drainSeconds, 1)} s | ${p.missing} | ${p.duplicates} |`

/** One table of what the database sessions did in each run: the kinds that mattered most, each run's share and its top wait. */
function activityTable(runs: Array<[string, Activity]>): string {
  const kinds = new Map<string, number>()
  for (const [, activity] of runs) for (const k of activity.byKind) kinds.set(k.kind, Math.max(kinds.get(k.kind) ?? 0, k.share))
  const top = [...kinds.entries()]
    .filter(([, share]) => share >= 0.01)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 9)
    .map(([kind]) => kind)
  const cell = (activity: Activity, kind: string) => {
    const k = activity.byKind.find((entry) => entry.kind === kind)
    return k ? `${round(k.share * 100, 1)} %${k.waits ? ` (${k.waits.split(', ')[0]})` : ''}` : '—'
  }
  return [
    `| statement | ${runs.map(([label]) => label).join(' | ')} |`,
    `|---|${runs.map(() => '---:').join('|')}|`,
    ...top.map((kind) => `| ${kind} | ${runs.map(([, activity]) => cell(activity, kind)).join(' | ')} |`),
    `| busy sessions on average (of the pool's 10) | ${runs.map(([, activity]) => round(activity.busySessions, 1)).join(' | ')} |`,
  ].join('\n')
}

export async function benchWebhooks(): Promise<void> {
  const delivery = await benchDelivery()
  const { writes, runs: writeRuns, recordingRuns, cpu: writesCpu, activity: writesActivity, workers: writesWorkers, peakRssMiB: writesRss } = await benchWrites()
  const { paced: pacedRun, saturation: s, steady } = delivery
  const p = pacedRun.figures
  const peakRssMiB = Math.max(delivery.peakRssMiB, writesRss)
  const date = new Date().toISOString()
  const command = 'npm run bench -- webhooks'
  const keeps = keepsUp(p, RATE)
  const steadyKeeps = keepsUp(steady.figures, steady.rate)
  const ratioMet = writes.ratio >= 0.8
  // Why A missed, in the run's own figures.
  const reasons: string[] = []
  if (p.changesPerSecond < 0.95 * RATE)
    reasons.push(
      `the service committed only ${round(p.changesPerSecond)} of the ${round(RATE)} changes/s offered (its write ceiling on this machine: ${round(writes.none.requestsPerSecond)} PATCHes/s with no webhook at all, B; ${round(s.changesPerSecond)}/s with one, saturated)`,
    )
  if (p.deliveredPerSecond < 0.95 * p.changesPerSecond)
    reasons.push(`the workers delivered ${round(p.deliveredPerSecond)} events/s while ${round(p.changesPerSecond)} changes/s were committed (${round(p.backlogAtEnd)} pending at the end), though they drain ${round(s.drainPerSecond)}/s once the API is idle`)
  if (p.missing) reasons.push(`${p.missing} committed changes never arrived`)
  if (p.duplicates) reasons.push(`${p.duplicates} events arrived twice`)
  if (p.failed) reasons.push(`${p.failed} PATCHes failed`)
  writeSection(
    'webhooks',
    `## Webhooks: delivery throughput and latency at 1,000 events/s; API writes with 5 webhooks vs none (issue 18)

- Date: ${date} · Machine: ${machine()}
- Command: \`${command}\` (one service process on the PostgreSQL server, a fresh database for A and another for B;
  config \`webhooks.allowPrivateTargets: true\`, \`auth.requestsPerMinute: 0\`, every other setting its default:
  \`webhooks.concurrency\` 4 workers × 16 streams per claim × batches of 50, the workers sharing the service's
  \`database.maxConnections\` 10 with the API; receivers are Bun.serve servers in the benchmark process answering 200 at once, on loopback)
- The change: \`PATCH /api/v1/projects/{p}/work-items/{id}\` with a new title each time (one \`work_item.updated\` event each),
  over ${PROJECTS} projects × ${ITEMS_PER_PROJECT} work items of one organization, the projects interleaved (${PROJECTS} streams per webhook); one API key (the per-key limit off).
- **A** — one webhook (\`events: ['*']\`). Paced: ${round(RATE)} PATCHes/s from the benchmark process for ${PACED_SECONDS} s after a
  ${WARMUP_SECONDS} s warm-up (at most ${IN_FLIGHT_CAP} in flight: past that it offers less, and the offered rate says so). Latency of an
  event = its arrival at the receiver − the moment the PATCH's 2xx answer reached the client, matched by work item id +
  \`updatedAt\` (it can be slightly negative: the worker may send before the answer is read); also from the payload's
  \`occurredAt\` (the transaction's start). Every run's backlog drains before the next (at most ${DRAIN_CAP_SECONDS} s waited).
  Saturation: wrk, ${CONNECTIONS} connections, ${SATURATION_SECONDS} s, as fast as the service takes them. Steady: paced again, ${STEADY_SECONDS} s at
  ${round(STEADY_SHARE * 100)} % of the rate the service committed when saturated (a load this machine carries).
- **B** — wrk, ${CONNECTIONS} connections, ${WRITES_SECONDS} s a run, after a 3 s warm-up, on a fresh database: ${WRITE_ROUNDS} rounds of (no webhook,
  then ${HOOKS} webhooks — \`*\`, each to its own receiver — the delivery workers running meanwhile); between rounds the webhooks are
  deleted, their backlog with them, so each round starts from no webhook and an empty queue. Ratio = mean req/s with ${HOOKS} ÷ mean without.

**A. Delivery, one webhook**

| run | offered changes/s | committed changes/s | delivered events/s (same window) | latency from the 2xx answer p50 / p99 / max ms | from occurredAt p50 / p99 ms | backlog at the end | drained in | missing | duplicates |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${pacedRow(`paced ${round(RATE)}/s, ${PACED_SECONDS} s`, p)}
${pacedRow(`steady ${round(steady.rate)}/s, ${STEADY_SECONDS} s`, steady.figures)}

**At ${round(RATE)} events/s: ${keeps ? 'kept up' : 'did not keep up — target missed'}**${keeps ? '' : `: ${reasons.join('; ')}`}.
(Kept up = ≥ 95 % of the offered rate committed, ≥ 95 % of that delivered in the same window, every event arrived, none twice.)
At the steady ${round(steady.rate)}/s: ${steadyKeeps ? 'kept up' : '**did not keep up**'}, p99 ${round(steady.figures.p99, 1)} ms from the answer to the arrival.

| saturation | committed changes/s (wrk) | delivered events/s during the run | delivered events/s while draining (no API load) | best second | backlog at the end | drained in | duplicates |
|---|---:|---:|---:|---:|---:|---:|---:|
| one webhook | ${round(s.changesPerSecond)} | ${round(s.deliveredPerSecond)} | ${round(s.drainPerSecond)} | ${round(s.bestSecond)} | ${round(s.backlogAtEnd)} | ${round(s.drainSeconds, 1)} s${s.leftAfterDrain ? ` (${round(s.leftAfterDrain)} left)` : ''} | ${s.duplicates} |

Send time of a delivery as the service recorded it (connection to answer, loopback): mean ${round(delivery.send.mean, 2)} ms, p99 ${round(delivery.send.p99, 1)} ms.

**B. API writes with ${HOOKS} webhooks vs none**

| run | webhooks | req/s | p50 / p99 ms | events delivered during the run (/s) |
|---|---|---:|---:|---:|
${writeRuns.map((run, i) => `| ${i + 1} | ${run.hooks ? `${run.hooks}` : 'none'} | ${round(run.result.requestsPerSecond)} | ${round(run.result.p50, 1)} / ${round(run.result.p99, 1)} | ${run.hooks ? `${round(run.delivered)} (${round(run.delivered / run.seconds)}/s)` : '—'} |`).join('\n')}
| mean | none | ${round(writes.none.requestsPerSecond)} | | |
| mean | ${HOOKS} | ${round(writes.five.requestsPerSecond)} | | ${round(writes.deliveredPerSecond)}/s; ${round(writes.queued)} deliveries queued by these runs, ${round(writes.backlogAtEnd)} pending at the end of the last |

**Ratio ${round(writes.ratio, 2)}** (target ≥ 0.8)${ratioMet ? ': met.' : ': **missed**.'} Duplicates at the receivers: ${writes.duplicates}.${deleteRetries ? ` Deleting the webhooks between rounds answered 500 (deadlock) ${deleteRetries} time(s) before it succeeded.` : ''}

Recording only — the same ${HOOKS} webhooks on a service restarted with \`webhooks.workers: false\` (events and deliveries recorded,
none sent), disabled and enabled in turn, ${RECORDING_SECONDS} s a run:

| run | webhooks | req/s | p50 / p99 ms |
|---|---|---:|---:|
${recordingRuns.map((run, i) => `| ${i + 1} | ${run.enabled ? `${HOOKS} (recorded, not sent)` : `${HOOKS} disabled (none)`} | ${round(run.result.requestsPerSecond)} | ${round(run.result.p50, 1)} / ${round(run.result.p99, 1)} |`).join('\n')}
| mean | none | ${round(writes.recordingNone!.requestsPerSecond)} | |
| mean | ${HOOKS}, recorded only | ${round(writes.recordingOnly!.requestsPerSecond)} | |

With the delivery workers off the writes ran at **${round(writes.recordingOnly!.requestsPerSecond / writes.recordingNone!.requestsPerSecond, 2)}** of none: that is what recording the event and its ${HOOKS} deliveries
in each change's transaction costs; the rest of the drop is the delivery (claims, sends, records) on the same cores.

Peak RSS of the service: ${round(peakRssMiB, 1)} MiB — A: ${round(delivery.rss.paced, 1)} MiB after the paced ${round(RATE)}/s run (up to ${round(pacedRun.maxInFlight)} PATCHes in flight), ${round(delivery.rss.saturation, 1)} after saturation, ${round(delivery.peakRssMiB, 1)} after the steady run; B: ${round(writesRss, 1)} MiB.

**Where the time goes.** Cores in use (CPU seconds per second; the machine has ${cpus().length}, shared by everything below):

| run | service | PostgreSQL | benchmark process (client, receivers) | other (wrk…) | machine busy |
|---|---:|---:|---:|---:|---:|
${cpuRow(`A paced ${round(RATE)}/s`, pacedRun.cpu)}
${cpuRow('A saturation', delivery.cpu.saturation)}
${cpuRow('A draining (workers only)', delivery.cpu.drain)}
${cpuRow(`A steady ${round(steady.rate)}/s`, steady.cpu)}
${cpuRow('B none', writesCpu.none)}
${cpuRow(`B ${HOOKS} webhooks`, writesCpu.five)}
${cpuRow(`B ${HOOKS} webhooks, workers off (recorded only)`, writesCpu.recording)}

The workers' statements (from PostgreSQL's statistics: claims = scans of the due index, which only the claim uses;
recorded batches = updates of the webhook's health row, one per batch; over the run and its drain; a worker idle between
wake-ups claims once a second):

| run | claims/s | recorded batches/s | events per claim | events per batch |
|---|---:|---:|---:|---:|
${workerRow(`A paced ${round(RATE)}/s`, pacedRun.workers)}
${workerRow('A saturation + drain', delivery.workers)}
${workerRow(`A steady ${round(steady.rate)}/s`, steady.workers)}
${workerRow(`B ${HOOKS} webhooks`, writesWorkers)}

What the database's sessions were doing (pg_stat_activity every 50 ms: share of the busy-session samples, and the
statement's top wait; "idle in transaction" = a transaction open while the service works or waits):

${activityTable([
  [`A paced ${round(RATE)}/s`, pacedRun.activity],
  ['A saturation', delivery.activity],
  [`A steady ${round(steady.rate)}/s`, steady.activity],
  ['B none', writesActivity.none],
  [`B ${HOOKS} webhooks`, writesActivity.five],
])}
`,
  )
  recordResult('webhooks', {
    date,
    machine: machine(),
    command,
    figures: { rate: RATE, paced: p, saturation: s, steady: { rate: steady.rate, ...steady.figures }, writes, peakRssMiB },
  })
}
