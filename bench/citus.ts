/**
 * Issue 26 item 6: the hot paths on a Citus cluster (a coordinator and its workers) against one
 * PostgreSQL server, in one run, shape by shape back to back — `POST /api/component` (calls spread
 * over 50 display accounts of one organization), `GET /api/v1/users/me` (the Bearer check), the
 * work-item list (`size=100`) repeated (list cache on, 1 request in 10 renames one of its items)
 * and cold (list cache off: every read reads and encodes the rows), and project search at 100k
 * rows (realistic corpus, 1 client). Each shape runs the same wrk script against a service on
 * each database (the single server's first); the table gives both and the ratio cluster ÷
 * single. No speed target: the only target is that every hot-path statement runs on one shard.
 *
 * Databases: a fresh one on the PostgreSQL server (BENCH_SERVER_URL, as every bench) and a fresh
 * one on the cluster. BENCH_CITUS_URL names a database on the coordinator with the citus
 * extension and its workers added (as a deployment makes one); the bench makes its own database
 * on the coordinator and on every worker that database lists (tests/helpers/citus-cluster.ts),
 * and drops it at the end. Unset: the bench is skipped. Both databases are migrated as the
 * service migrates at start (`applyMigrations` with the manifests' placements: on the cluster,
 * every table is placed as declared), then seeded alike.
 *
 * Single-shard share: Citus's own counters (`citus_stat_counters`, Citus ≥ 13.1, kept while
 * `citus.enable_stat_counters` is on, set for the bench database) count every statement and
 * subplan Citus executes as single-shard (one task) or multi-shard; the bench reads them before
 * and after each run. Which statements were multi-shard: `citus.multi_task_query_log_level =
 * 'log'` with `log_min_error_statement = 'log'` makes the coordinator log each multi-task
 * statement with its text; the bench reads the coordinator's server log (BENCH_CITUS_LOG, or the
 * file its backend writes to, found through /proc/<pid>/fd/2 or pg_current_logfile() when the
 * coordinator runs on this machine) between the runs' boundaries. Statements touching no
 * distributed or reference table (pg_notify, advisory locks, coordinator-local tables) never
 * reach Citus's executor and are in neither count.
 */
import { closeSync, existsSync, openSync, readFileSync, readlinkSync, readSync, statSync } from 'node:fs'
import { isAbsolute, join } from 'node:path'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { registry } from '../plugins'
import { createOrganization } from '../plugins/auth/service'
import { createChangeFeed } from '../src/changes'
import { declaredPlacements } from '../src/citus'
import { openDatabase, queryText } from '../src/db'
import { applyMigrations } from '../src/migrate'
import { createWrites } from '../src/writes'
import { createClusterDatabase } from '../tests/helpers/citus-cluster'
import { searchQueries } from './corpus'
import { componentBody, componentCalls, seedDisplayAccounts, type Account } from './display'
import { CONNECTIONS, COUNT_STATUSES, DURATION_SECONDS, freshDatabase, machine, recordResult, round, wrk, writeSection, type LoadResult, type RunningProcess, type Throughput } from './lib'
import { operator, seedOrganization, type Seeded } from './seed'
import { seedRealisticWork, withoutTextIndexes } from './seed-work'
import { LIST_CACHE_BYTES, repeatedReads, startService } from './work-items'

const DISPLAY_ACCOUNTS = 50
/** Search corpus: 50k work items + 50k comments in one project (BENCH_CITUS_SEARCH_ROWS: the total, half each). */
const SEARCH_ROWS = Number(process.env.BENCH_CITUS_SEARCH_ROWS ?? 100_000)
const SEARCH_WARMUP_SECONDS = 5
const WARMUP_SECONDS = 2
const PORTS = { single: 3881, cluster: 3882 } as const

type Side = keyof typeof PORTS
export type CitusShapeName = 'display' | 'users-me' | 'list-repeated' | 'list-cold' | 'search'

/** Executions Citus counted (citus_stat_counters): one task, or more. */
export interface ShardCounts {
  single: number
  multi: number
}

/** One side of one shape. */
export interface SideFigures extends Throughput {
  /** Socket errors and answers ≥ 400 (display: 409 stale updates apart). */
  errors: number
  /** Answers by status. */
  statuses: Record<string, number>
}

export interface CitusFigures {
  shapes: Array<{
    name: CitusShapeName
    label: string
    /** The better of two runs on each side (errors: both runs'). */
    single: SideFigures
    cluster: SideFigures
    /** req/s of each run, in order. */
    runs: Record<'single' | 'cluster', number[]>
    /** cluster req/s ÷ single req/s. */
    ratio: number
    /** cluster p99 ÷ single p99 (latency: above 1 is slower). */
    p99Ratio: number
    /** Citus executions during the cluster's two measured runs, and during its warm-up (the shape's first requests). */
    measured: PhaseCounts
    warmup: PhaseCounts
    /** Citus executions per request in the cluster's measured runs (background work included). */
    executionsPerRequest: number
  }>
  /** The measured runs' executions, all shapes. */
  hotPaths: PhaseCounts
  /** Executions over the cluster services' whole lives (start-up, runs, idle moments, stop). */
  wholeRun: ShardCounts
  /** Each multi-task statement the coordinator logged, by phase (null: the log was not readable). */
  multiShard: MultiShardStatement[] | null
  workers: number
  citusVersion: string
  /** The commit the services ran (and whether src/plugins had uncommitted changes). */
  commit: string
  /** The machine's 1-minute load average at the start of each shape (other sessions' work included). */
  loads: number[]
  peakRssMiB: number
}

interface Seeds {
  auth: Seeded
  list: Seeded & { itemIds: string[] }
  display: Account[]
  search: Seeded
  seconds: number
}

/** The same data on either database: an organization per shape, each with its own key. */
async function seed(url: string): Promise<Seeds> {
  const started = performance.now()
  const database = await openDatabase(url)
  try {
    const { db } = database
    await applyMigrations(db, { placements: declaredPlacements(registry) })
    const scopes = ['work_items:read', 'work_items:write', 'entries:read', 'relationships:read']
    const auth = await seedOrganization(db, { scopes: ['users:read'] })
    const list = await seedOrganization(db, { scopes })
    const search = await seedOrganization(db, { scopes })
    // The realistic corpus for the list too: Citus cannot run seedWork's synthetic insert (a CTE of an array beside generate_series).
    await seedRealisticWork(db, list, { workItems: 100, entries: 0 })
    const items = await queryText<{ id: string }>(db, 'select id from work_items where organization_id = $1 and project_id = $2 order by number', [list.organizationId, list.projectId])
    const organization = await createOrganization(createWrites(db, createChangeFeed([])), operator, { name: 'Bench displays' })
    const display = await seedDisplayAccounts(db, organization.id, DISPLAY_ACCOUNTS)
    await withoutTextIndexes(db, () => seedRealisticWork(db, search, { workItems: Math.ceil(SEARCH_ROWS / 2), entries: Math.floor(SEARCH_ROWS / 2) }))
    await db.execute(sql`analyze`)
    return { auth, list: { ...list, itemIds: items.map((item) => item.id) }, display, search, seconds: (performance.now() - started) / 1000 }
  } finally {
    await database.close()
  }
}

interface Shape {
  name: CitusShapeName
  label: string
  /** Runs on the service with the list cache off (the rest: on, 64 MiB, the default). */
  uncached?: boolean
  warmupSeconds?: number
  /** A wrk run of `duration` seconds against the service on `port`, answers counted by status. */
  run(port: number, seeds: Seeds, duration?: number): Promise<LoadResult>
}

const tallied = (script: string) => ({ script: `${script}\n${COUNT_STATUSES}`, tally: true })
const bearer = (seeded: Seeded) => ({ authorization: `Bearer ${seeded.secret}` })
const listPath = (seeds: Seeds) => `/api/v1/projects/${seeds.list.projectId}/work-items?size=100`

const SHAPES: Shape[] = [
  {
    name: 'display',
    label: `\`POST /api/component\`, spread over ${DISPLAY_ACCOUNTS} accounts`,
    run: (port, seeds, duration) => wrk(`http://127.0.0.1:${port}/api/component`, { ...tallied(componentCalls(seeds.display)), duration }),
  },
  {
    name: 'users-me',
    label: '`GET /api/v1/users/me` (Bearer check)',
    run: (port, seeds, duration) => wrk(`http://127.0.0.1:${port}/api/v1/users/me`, { headers: bearer(seeds.auth), ...tallied(''), duration }),
  },
  {
    name: 'list-repeated',
    label: '`GET …/work-items?size=100`, repeated reads, 1 in 10 after a write (list cache on)',
    run: (port, seeds, duration) => {
      const itemPaths = seeds.list.itemIds.map((id) => `/api/v1/projects/${seeds.list.projectId}/work-items/${id}`)
      return wrk(`http://127.0.0.1:${port}`, { ...tallied(repeatedReads(listPath(seeds), itemPaths, seeds.list.secret)), duration })
    },
  },
  {
    name: 'list-cold',
    label: '`GET …/work-items?size=100`, cold reads (list cache off)',
    uncached: true,
    run: (port, seeds, duration) => wrk(`http://127.0.0.1:${port}${listPath(seeds)}`, { headers: bearer(seeds.list), ...tallied(''), duration }),
  },
  {
    name: 'search',
    label: `project search at ${round(SEARCH_ROWS / 1000)}k rows (realistic corpus, 1 client)`,
    warmupSeconds: SEARCH_WARMUP_SECONDS,
    run: (port, seeds, duration) => {
      const headers = bearer(seeds.search)
      const requests = searchQueries('realistic', 600).map((q) => ({ method: 'GET', path: `/api/v1/projects/${seeds.search.projectId}/search?q=${encodeURIComponent(q)}&limit=20`, headers }))
      return wrk(`http://127.0.0.1:${port}`, { requests, connections: 1, ...tallied(''), duration })
    },
  },
]

/**
 * The coordinator's view of the bench database: Citus's execution counters and the server log
 * holding the multi-task statements it logs.
 */
interface Coordinator {
  counters(): Promise<ShardCounts>
  /** The server log's size now (null: no readable log). */
  logOffset(): number | null
  /** The multi-task statements logged between two offsets, by text, with their counts. */
  multiTaskStatements(from: number, to: number): Map<string, number>
  end(): Promise<void>
}

async function watchCoordinator(url: string, database: string): Promise<Coordinator> {
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  // New sessions of the bench database count executions and log every multi-task statement with its text.
  for (const setting of ["citus.enable_stat_counters = on", "citus.multi_task_query_log_level = 'log'", "log_min_error_statement = 'log'"])
    await admin.unsafe(`alter database "${database}" set ${setting}`)
  const logPath = await findLog(admin, url)
  const counters = async () => {
    const [row] = await admin<Array<{ single: string; multi: string }>>`select query_execution_single_shard as single, query_execution_multi_shard as multi
      from citus_stat_counters where name = current_database()`
    return { single: Number(row?.single ?? 0), multi: Number(row?.multi ?? 0) }
  }
  return {
    counters,
    logOffset: () => (logPath ? statSync(logPath).size : null),
    multiTaskStatements(from, to) {
      const found = new Map<string, number>()
      if (!logPath || to <= from) return found
      const bytes = Buffer.alloc(to - from)
      const file = openSync(logPath, 'r')
      try {
        readSync(file, bytes, 0, bytes.length, from)
      } finally {
        closeSync(file)
      }
      const text = bytes.toString('utf8')
      // A record starts at a line not indented (continuation lines of a statement start with a tab).
      const records = text.split(/\n(?=\S)/)
      records.forEach((record, i) => {
        if (!record.includes('multi-task query about to be executed')) return
        const statement = records.slice(i + 1, i + 4).find((next) => /\bSTATEMENT: {2}/.test(next))
        const key = statement ? oneLine(statement.slice(statement.search(/\bSTATEMENT: {2}/) + 'STATEMENT:  '.length)) : '(statement text not logged)'
        found.set(key, (found.get(key) ?? 0) + 1)
      })
      return found
    },
    async end() {
      await admin.end()
    },
  }
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim()

/**
 * The coordinator's server log: BENCH_CITUS_LOG, else the logging collector's current file, else
 * the file the backend's stderr goes to (a server started with `pg_ctl -l FILE` on this machine).
 */
async function findLog(admin: postgres.Sql, url: string): Promise<string | null> {
  if (process.env.BENCH_CITUS_LOG) return process.env.BENCH_CITUS_LOG
  const [row] = await admin<Array<{ pid: number; collector: string | null; directory: string }>>`select pg_backend_pid() as pid, pg_current_logfile() as collector, current_setting('data_directory') as directory`
  if (row?.collector) {
    const path = isAbsolute(row.collector) ? row.collector : join(row.directory, row.collector)
    return existsSync(path) ? path : null
  }
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname)) return null
  try {
    const path = readlinkSync(`/proc/${row!.pid}/fd/2`)
    return isAbsolute(path) && existsSync(path) && statSync(path).isFile() ? path : null
  } catch {
    return null
  }
}

/** What a phase of the cluster's services did on the coordinator. */
interface Phase {
  label: string
  counts: ShardCounts
  statements: Map<string, number>
}

type MultiShardKind = 'lookup' | 'background' | 'unexplained'

/**
 * The statements that may run on every shard, and why: lookups that cannot know the organization
 * yet (a credential by its hash, once per instance and credential, on a cache miss: one indexed
 * probe per shard), and the services' background work that looks across organizations for work
 * (not a request's statement). Anything else multi-shard is a finding: `unexplained`.
 */
const KNOWN_MULTI_SHARD: Array<{ kind: Exclude<MultiShardKind, 'unexplained'>; why: string; matches: (text: string) => boolean }> = [
  { kind: 'lookup', why: 'API key by the hash of its secret (Bearer check, cache miss)', matches: (text) => /from "api_keys"/.test(text) && /"api_keys"\."secret_hash" = \$1/.test(text) },
  { kind: 'lookup', why: 'session by the hash of its token (session check, cache miss)', matches: (text) => /from "sessions"/.test(text) && /"sessions"\."token_hash" = \$1/.test(text) },
  { kind: 'lookup', why: "a display key's organization by the key's hash (once per key and instance: display/key-organizations.ts)", matches: (text) => /from display_accounts where key_hash = \$1$/.test(text) },
  { kind: 'background', why: 'webhook workers: which organizations have deliveries due (then claimed per organization)', matches: (text) => /from webhook_deliveries d join webhooks w/.test(text) && /d\.status = 'pending'/.test(text) },
  { kind: 'background', why: "webhook workers: the enabled webhooks, read at start", matches: (text) => /from webhooks where enabled$/.test(text) },
  { kind: 'background', why: 'push upkeep: devices not seen for the retention period are deleted (a sweep)', matches: (text) => /delete from devices where last_seen_at </.test(text) },
]

/** A multi-task statement the coordinator logged, with how many times: during the shapes' warm-ups, their measured runs, and elsewhere (start-up, stop, between phases). */
export interface MultiShardStatement {
  statement: string
  kind: MultiShardKind
  why: string
  warmups: number
  runs: number
  elsewhere: number
}

function classify(statement: string): { kind: MultiShardKind; why: string } {
  const known = KNOWN_MULTI_SHARD.find((entry) => entry.matches(statement))
  return known ? { kind: known.kind, why: known.why } : { kind: 'unexplained', why: 'not a known lookup or background statement' }
}

/** A phase's counters with its logged multi-task statements by kind. */
export interface PhaseCounts extends ShardCounts {
  /** Multi-task statements logged, by kind (lookups and unexplained ones are the requests'; background ones are not). */
  lookups: number
  background: number
  unexplained: number
}

const phaseCounts = (counts: ShardCounts, statements: Array<{ kind: MultiShardKind; count: number }>): PhaseCounts => {
  const of = (kind: MultiShardKind) => statements.filter((s) => s.kind === kind).reduce((sum, s) => sum + s.count, 0)
  return { ...counts, lookups: of('lookup'), background: of('background'), unexplained: of('unexplained') }
}

const addCounts = (a: PhaseCounts, b: PhaseCounts): PhaseCounts => ({
  single: a.single + b.single,
  multi: a.multi + b.multi,
  lookups: a.lookups + b.lookups,
  background: a.background + b.background,
  unexplained: a.unexplained + b.unexplained,
})
const NO_COUNTS: PhaseCounts = { single: 0, multi: 0, lookups: 0, background: 0, unexplained: 0 }

/** The requests' statements single-shard: single ÷ (single + the requests' multi-task statements: lookups and unexplained ones). */
export const hotPathShare = (c: PhaseCounts) => (c.single + c.lookups + c.unexplained ? c.single / (c.single + c.lookups + c.unexplained) : NaN)

const figuresOf = (result: LoadResult, allowed: string[] = []): SideFigures => ({
  requestsPerSecond: result.requestsPerSecond,
  p50: result.p50,
  p99: result.p99,
  errors: result.errors + result.non2xx - allowed.reduce((sum, status) => sum + (result.counts[status] ?? 0), 0),
  statuses: result.counts,
})

const best = (runs: LoadResult[]) => runs.reduce((a, b) => (b.requestsPerSecond > a.requestsPerSecond ? b : a))

/** Statuses summed over runs. */
const sumStatuses = (runs: LoadResult[]) => {
  const counts: Record<string, number> = {}
  for (const run of runs) for (const [status, n] of Object.entries(run.counts)) counts[status] = (counts[status] ?? 0) + n
  return counts
}

export async function benchCitus(): Promise<void> {
  const citusUrl = process.env.BENCH_CITUS_URL
  if (!citusUrl) {
    console.log('citus: skipped (BENCH_CITUS_URL names no Citus coordinator database)')
    return
  }
  const date = new Date().toISOString()
  const singleUrl = await freshDatabase('worktrack_bench_citus')
  const clusterName = `worktrack_bench_citus_${Date.now().toString(36)}`
  const cluster = await createClusterDatabase(citusUrl, clusterName)
  let coordinator: Coordinator | undefined
  const services: RunningProcess[] = []
  try {
    const info = postgres(cluster.url, { max: 1, onnotice: () => {} })
    const [about] = await info<Array<{ version: string; workers: number }>>`select (select extversion from pg_extension where extname = 'citus') as version,
      (select count(*)::int from citus_get_active_worker_nodes()) as workers`
    await info.end()
    const seeds = { single: await seed(singleUrl), cluster: await seed(cluster.url) }
    console.log(`citus: seeded in ${round(seeds.single.seconds)} s (single) and ${round(seeds.cluster.seconds)} s (cluster)`)
    coordinator = await watchCoordinator(cluster.url, clusterName)
    const readable = coordinator.logOffset() !== null
    const phases: Phase[] = []
    /** Runs `work` as a phase of the cluster's services: the counters and the logged statements between its ends. */
    const phase = async <T>(label: string, work: () => Promise<T>): Promise<{ value: T; counts: PhaseCounts }> => {
      const before = await coordinator!.counters()
      const offset = coordinator!.logOffset()
      const value = await work()
      await Bun.sleep(200) // the last statements' log lines
      const after = await coordinator!.counters()
      const end = coordinator!.logOffset()
      const counts = { single: after.single - before.single, multi: after.multi - before.multi }
      const statements = offset === null || end === null ? new Map<string, number>() : coordinator!.multiTaskStatements(offset, end)
      phases.push({ label, counts, statements })
      return { value, counts: phaseCounts(counts, [...statements].map(([statement, count]) => ({ count, ...classify(statement) }))) }
    }
    const wholeBefore = await coordinator.counters()
    const wholeOffset = coordinator.logOffset()

    const shapes: CitusFigures['shapes'] = []
    const loads: number[] = []
    let peakRssMiB = 0
    for (const uncached of [false, true]) {
      const cacheBytes = uncached ? 0 : LIST_CACHE_BYTES
      const single = await startService(singleUrl, PORTS.single, cacheBytes)
      services.push(single)
      const { value: clustered } = await phase(`start-up (list cache ${uncached ? 'off' : 'on'})`, () => startService(cluster.url, PORTS.cluster, cacheBytes))
      services.push(clustered)
      for (const shape of SHAPES.filter((s) => Boolean(s.uncached) === uncached)) {
        loads.push(loadAverage())
        const warmup = async (side: Side) => {
          if (shape.name === 'display') {
            const probe = await fetch(`http://127.0.0.1:${PORTS[side]}/api/component`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: componentBody(seeds[side].display[0]!, Math.floor(Date.now() / 1000)),
            })
            if (probe.status !== 200) throw new Error(`${side}: POST /api/component answered ${probe.status}: ${await probe.text()}`)
          }
          await shape.run(PORTS[side], seeds[side], shape.warmupSeconds ?? WARMUP_SECONDS)
        }
        await warmup('single')
        const warmed = await phase(`${shape.name}, warm-up`, () => warmup('cluster'))
        // Two measured runs each, in the order single, cluster, cluster, single: drift on a shared machine hits both alike.
        const runs: Record<Side, LoadResult[]> = { single: [], cluster: [] }
        let measured = NO_COUNTS
        for (const [i, side] of (['single', 'cluster', 'cluster', 'single'] as const).entries()) {
          if (side === 'single') runs.single.push(await shape.run(PORTS.single, seeds.single))
          else {
            const run = await phase(`${shape.name}, run ${i}`, () => shape.run(PORTS.cluster, seeds.cluster))
            runs.cluster.push(run.value)
            measured = addCounts(measured, run.counts)
          }
        }
        const allowed = shape.name === 'display' ? ['409'] : []
        const side = (list: LoadResult[]): SideFigures => {
          const figures = figuresOf(best(list), allowed)
          const statuses = sumStatuses(list)
          return { ...figures, errors: list.reduce((sum, run) => sum + figuresOf(run, allowed).errors, 0), statuses }
        }
        const [singleSide, clusterSide] = [side(runs.single), side(runs.cluster)]
        const clusterRequests = runs.cluster.reduce((sum, run) => sum + run.requests, 0)
        shapes.push({
          name: shape.name,
          label: shape.label,
          single: singleSide,
          cluster: clusterSide,
          runs: { single: runs.single.map((run) => run.requestsPerSecond), cluster: runs.cluster.map((run) => run.requestsPerSecond) },
          ratio: clusterSide.requestsPerSecond / singleSide.requestsPerSecond,
          p99Ratio: clusterSide.p99 / singleSide.p99,
          measured,
          warmup: warmed.counts,
          executionsPerRequest: clusterRequests ? (measured.single + measured.multi) / clusterRequests : 0,
        })
        console.log(
          `citus: ${shape.name}: single ${round(singleSide.requestsPerSecond)} req/s (p99 ${singleSide.p99} ms), cluster ${round(clusterSide.requestsPerSecond)} req/s (p99 ${clusterSide.p99} ms) = ${round(clusterSide.requestsPerSecond / singleSide.requestsPerSecond, 2)}; Citus executions ${measured.single} single-shard, ${measured.multi} multi-shard (${measured.lookups} lookups, ${measured.background} background, ${measured.unexplained} unexplained)`,
        )
      }
      peakRssMiB = Math.max(peakRssMiB, single.peakRssMiB(), clustered.peakRssMiB())
      await single.stop()
      await phase(`stop (list cache ${uncached ? 'off' : 'on'})`, () => clustered.stop())
      services.length = 0
    }
    await Bun.sleep(500)
    const wholeAfter = await coordinator.counters()
    const wholeEnd = coordinator.logOffset()
    const wholeRun = { single: wholeAfter.single - wholeBefore.single, multi: wholeAfter.multi - wholeBefore.multi }
    const hotPaths = shapes.reduce((sum, s) => addCounts(sum, s.measured), NO_COUNTS)
    let multiShard: MultiShardStatement[] | null = null
    if (readable && wholeOffset !== null && wholeEnd !== null) {
      const byText = new Map<string, MultiShardStatement>()
      const entry = (statement: string) => byText.get(statement) ?? byText.set(statement, { statement, ...classify(statement), warmups: 0, runs: 0, elsewhere: 0 }).get(statement)!
      for (const p of phases)
        for (const [statement, count] of p.statements) {
          const where = !SHAPES.some((shape) => p.label.startsWith(`${shape.name},`)) ? 'elsewhere' : p.label.endsWith('warm-up') ? 'warmups' : 'runs'
          entry(statement)[where] += count
        }
      // What ran outside every phase: the services' background work while the single server's runs went on.
      for (const [statement, count] of coordinator.multiTaskStatements(wholeOffset, wholeEnd)) {
        const found = entry(statement)
        found.elsewhere += Math.max(0, count - found.warmups - found.runs - found.elsewhere)
      }
      multiShard = [...byText.values()]
    }
    const figures: CitusFigures = { shapes, hotPaths, wholeRun, multiShard, workers: about!.workers, citusVersion: about!.version, peakRssMiB, commit: commitOf(), loads }
    writeCitusSection(date, figures, phases, { single: seeds.single.seconds, cluster: seeds.cluster.seconds })
    recordResult('citus', { date, machine: machine(), command: COMMAND, figures })
  } finally {
    for (const service of services) await service.stop().catch(() => {})
    await coordinator?.end()
    await cluster.drop()
  }
}

/** The 1-minute load average (/proc/loadavg). */
const loadAverage = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0])

/** The commit the service ran from, and whether the work tree had changes beside it. */
function commitOf(): string {
  const head = Bun.spawnSync(['git', 'rev-parse', '--short', 'HEAD']).stdout.toString().trim()
  const changed = Bun.spawnSync(['git', 'status', '--porcelain', '--untracked-files=no', '--', 'src', 'plugins', 'entries', 'migrations']).stdout.toString().trim()
  return head ? `${head}${changed ? ' with uncommitted changes in src/plugins' : ''}` : 'unknown'
}

const COMMAND = 'BENCH_CITUS_URL=postgres://…/coordinator-database npm run bench -- citus'

const percent = (value: number) => (Number.isNaN(value) ? '—' : `${round(100 * value, 2)} %`)
const counted = (counts: ShardCounts) => `${round(counts.single)} / ${round(counts.multi)}`
/** "lookups / background / unexplained" of a phase's multi-task statements. */
const kinds = (c: PhaseCounts) => `${c.lookups} / ${c.background} / ${c.unexplained ? `**${c.unexplained}**` : 0}`

function writeCitusSection(date: string, f: CitusFigures, phases: Phase[], seedSeconds: Record<Side, number>): void {
  const throughputRow = (s: CitusFigures['shapes'][number]) =>
    `| ${s.label} | ${round(s.single.requestsPerSecond)} | ${round(s.single.p50, 2)} / ${round(s.single.p99, 2)} | ${round(s.cluster.requestsPerSecond)} | ${round(s.cluster.p50, 2)} / ${round(s.cluster.p99, 2)} | **${round(s.ratio, 2)}** | ${round(s.p99Ratio, 2)} | ${s.single.errors} / ${s.cluster.errors} | ${s.runs.single.map((r) => round(r)).join(', ')} · ${s.runs.cluster.map((r) => round(r)).join(', ')} |`
  const shardRow = (s: CitusFigures['shapes'][number]) =>
    `| ${s.label} | ${counted(s.measured)} | ${kinds(s.measured)} | ${round(s.executionsPerRequest, 2)} | **${percent(hotPathShare(s.measured))}** | ${counted(s.warmup)} (${kinds(s.warmup)}) |`
  const otherPhases = phases.filter((p) => !SHAPES.some((shape) => p.label.startsWith(`${shape.name},`)))
  const clip = (text: string) => (text.length > 240 ? `${text.slice(0, 240)}…` : text)
  const statementRows = (f.multiShard ?? []).map((m) => `| \`${clip(m.statement)}\` | ${m.kind === 'unexplained' ? '**unexplained**' : m.kind}: ${m.why} | ${m.warmups} | ${m.runs} | ${m.elsewhere} |`)
  const unexplained = (f.multiShard ?? []).filter((m) => m.kind === 'unexplained' && m.warmups + m.runs > 0)
  const display = f.shapes.find((s) => s.name === 'display')
  writeSection(
    'citus',
    `## Citus: the hot paths on a coordinator and two workers vs one PostgreSQL (issue 26)

- Date: ${date} · Machine: ${machine()}; Citus ${f.citusVersion}, a coordinator and ${f.workers} workers, all three PostgreSQL servers on this same machine; service at ${f.commit}
- Command: \`${COMMAND}\` (BENCH_CITUS_URL: a coordinator database with the citus extension and the workers added; the bench makes its own database on every node and drops it afterwards; the single server: BENCH_SERVER_URL, default 127.0.0.1:5432)
- Each shape runs the same wrk script (1 thread; ${CONNECTIONS} connections, search 1; ${DURATION_SECONDS} s per run) against a service on a fresh database of the single server and one on a fresh database of the cluster, seeded alike (an organization per shape; the list's 100 work items and search's ${round(SEARCH_ROWS)} rows — work items and comments in one project — from the realistic corpus; seeding took ${round(seedSeconds.single)} s and ${round(seedSeconds.cluster)} s). Per shape: a warm-up on each (${WARMUP_SECONDS} s, search ${SEARCH_WARMUP_SECONDS} s), then runs in the order single, cluster, cluster, single; the better run of each side is shown. One pair of services with the list cache on (64 MiB, the default) for every shape but the cold list, which has its own pair with it off.
- The machine has 2 cores, shared by wrk, the service and — on the cluster side — all three PostgreSQL servers, and with other sessions' test runs (1-minute load average at the start of each shape: ${f.loads.map((l) => round(l, 1)).join(', ')}): ratios come from one run, and no figure is repeatable to the percent.

| shape | single req/s | single p50 / p99 ms | cluster req/s | cluster p50 / p99 ms | req/s cluster ÷ single | p99 cluster ÷ single | errors single / cluster | runs req/s: single · cluster |
|---|---:|---:|---:|---:|---:|---:|---:|---|
${f.shapes.map(throughputRow).join('\n')}

${display ? `Display: answers 409 (an update overtaken by a later one) are not errors: ${display.single.statuses['409'] ?? 0} on the single server, ${display.cluster.statuses['409'] ?? 0} on the cluster.\n\n` : ''}**Single-shard share.** Citus's \`citus_stat_counters\` count every statement and subplan Citus executes as single-shard (one task) or multi-shard; statements touching no distributed or reference table (\`pg_notify\`, advisory locks, coordinator-local tables) never reach Citus's executor and are in neither count. Each multi-shard one is named from the coordinator's log (\`citus.multi_task_query_log_level = 'log'\`) and sorted: a **lookup** that cannot know the organization yet (allowed, once per credential and instance), **background** work of the service running meanwhile (not a request's), or **unexplained**. Hot-path share = single ÷ (single + lookups + unexplained). Log and counters are read at the same moments; a statement at a phase's edge may fall on either side.

| shape (cluster) | measured runs: single- / multi-shard executions | multi-shard: lookups / background / unexplained | executions per request | hot-path single-shard share | warm-up: single / multi (lookups / background / unexplained) |
|---|---:|---:|---:|---:|---|
${f.shapes.map(shardRow).join('\n')}
| **all measured runs** | **${counted(f.hotPaths)}** | **${kinds(f.hotPaths)}** | | **${percent(hotPathShare(f.hotPaths))}** | |
${otherPhases.map((p) => `| ${p.label} (no request) | ${counted(p.counts)} | | | | |`).join('\n')}
| whole life of the cluster's services | ${counted(f.wholeRun)} | | | | |

${
  f.multiShard === null
    ? "The multi-shard statements could not be named: the coordinator's server log was not readable (set BENCH_CITUS_LOG to its path)."
    : f.multiShard.length
      ? `Every multi-task statement the coordinator logged during the run, with how many times it ran in the warm-ups, in the measured runs, and elsewhere (the services' start-up and stop, and the background work while the single server's runs went on):\n\n| statement | kind: why | warm-ups | measured runs | elsewhere |\n|---|---|---:|---:|---:|\n${statementRows.join('\n')}`
      : 'The coordinator logged no multi-task statement during the whole run.'
}
${unexplained.length ? `\n**Unexplained multi-shard statements while requests ran (a service finding):** ${unexplained.map((m) => `\`${clip(m.statement)}\` (${m.warmups} in warm-ups, ${m.runs} in measured runs)`).join('; ')}.\n` : ''}
${EXPLANATION}`,
  )
}

const EXPLANATION = `**What the ratios mean.** This measures what Citus costs, not what it scales to: the coordinator
and both workers are PostgreSQL servers on the same 2 cores as the service and wrk, so the cluster
gains no core and pays, for every statement, a second backend and a second round trip. On the single
server a statement is planned and run by one backend; on the cluster the coordinator's backend plans
it (Citus's router planner finds the shard from the organization named in it), sends the shard's
statement over a connection to the worker holding it, whose backend plans and runs it again, and the
rows come back through the coordinator. So a shape loses in proportion to how much of a request is
database work — compare the ratio with the executions per request: \`GET /users/me\` sends no
statement once its key is cached (the key and the user are held by the instance), so its two sides
run the same code doing the same work and its ratio shows only this shared machine's noise; the
repeated list answers most reads from its cache (a write, 1 request in 10, makes the next read load
the page again) but still checks project access, with its versions, on every read; the cold list and
search run all their statements on every request; the display call groups the calls that
arrive together into one statement per organization (few executions per call), a statement that is
large (counter, components, page rights in one) and planned anew on the worker for every group.
On separate machines the same routing is what lets throughput grow with workers: each request's
statements touch one worker, so organizations spread over workers add capacity instead of fan-out.

**Single-shard.** Every statement of a request names the caller's organization (issue 26 item 2;
tests/architecture/citus-hot-paths.test.ts checks it statement by statement with \`EXPLAIN\`). The
only multi-shard statements of requests are the lookups that cannot know the organization yet — an
API key by the hash of its secret, a display key's organization by the key's hash — each once per
credential and instance, on a cache miss (one indexed probe per shard), so they appear in the
warm-ups and not in the measured runs. The other multi-shard statements are the service's own
background work running meanwhile, which looks across organizations by design: the webhook
workers' poll for organizations with deliveries due (about once a second per instance, then
claimed per organization), the enabled webhooks read at start, and push's sweep of devices past
their retention. On a large cluster each of those polls visits every shard; they are not hot paths.`
