/**
 * The hot paths on a Citus cluster (a coordinator and its workers) against one PostgreSQL server,
 * in one run, shape by shape back to back — `POST /api/component` (calls spread over 50 display
 * accounts of one organization), `GET /api/v1/users/me` (the Bearer check), the work-item list
 * (`size=100`) repeated (list cache on, 1 request in 10 renames one of its items) and cold (list
 * cache off), and project search at 100k rows (realistic corpus, 1 client). Each shape runs the
 * same wrk script against a service on each database (the single server's first); the table gives
 * both and the ratio cluster ÷ single, and the coordinator says which statements ran on one shard
 * (bench/lib/citus.ts).
 *
 * Databases: a fresh one on the PostgreSQL server (BENCH_SERVER_URL) and a fresh one on the
 * cluster. BENCH_CITUS_URL names a database on the coordinator with the citus extension and its
 * workers added (as a deployment makes one); the bench makes its own database on the coordinator
 * and on every worker (tests/helpers/citus-cluster.ts) and drops it at the end. Unset: the bench
 * is skipped. Both databases are migrated as the service migrates at start (`applyMigrations` with
 * the manifests' placements), then seeded alike.
 */
import { readFileSync } from 'node:fs'
import { sql } from 'drizzle-orm'
import { registry } from '../../plugins'
import { declaredPlacements } from '../../src/citus'
import { openDatabase } from '../../src/db'
import { applyMigrations } from '../../src/migrate'
import { createClusterDatabase } from '../../tests/helpers/citus-cluster'
import type { CitusFigures, CitusShape, CitusShapeName } from '../figures'
import { addCounts, multiShardStatements, NO_COUNTS, phaseRecorder, shardReport, sideFigures, watchCoordinator, type Coordinator } from '../lib/citus'
import { componentCalls, probeComponentCall } from '../lib/component-calls'
import { freshDatabase, withClient } from '../lib/database'
import { LIST_CACHE_BYTES, startService, type RunningProcess } from '../lib/processes'
import { recordResult, sectionHead, serviceCommit, writeSection } from '../lib/results'
import { CONNECTIONS, DURATION_SECONDS } from '../lib/settings'
import { round } from '../lib/stats'
import { wrk, type LoadResult } from '../lib/wrk'
import { searchQueries } from '../seed/corpus'
import { DISPLAY_ACCOUNTS, seedDisplayAccounts, type Account } from '../seed/display'
import { seedBareOrganization, seedOrganization, type Seeded } from '../seed/organization'
import { firstItems, repeatedReads, seedRealisticWork, withoutTextIndexes } from '../seed/work'
import { TARGETS } from '../targets'

export const name = 'citus'
export const target = TARGETS[name]

/** Search corpus: 50k work items + 50k comments in one project (BENCH_CITUS_SEARCH_ROWS: the total, half each). */
const SEARCH_ROWS = Number(process.env.BENCH_CITUS_SEARCH_ROWS ?? 100_000)
const SEARCH_WARMUP_SECONDS = 5
const WARMUP_SECONDS = 2
const PORTS = { single: 3881, cluster: 3882 } as const
const COMMAND = 'BENCH_CITUS_URL=postgres://…/coordinator-database npm run bench -- citus'

type Side = keyof typeof PORTS

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
  const { db, close } = await openDatabase(url)
  try {
    await applyMigrations(db, { placements: declaredPlacements(registry) })
    const scopes = ['work_items:read', 'work_items:write', 'entries:read', 'relationships:read']
    const auth = await seedOrganization(db, { scopes: ['users:read'] })
    const list = await seedOrganization(db, { scopes })
    const search = await seedOrganization(db, { scopes })
    // The realistic corpus for the list too: Citus cannot run seedWork's synthetic insert (a CTE of an array beside generate_series).
    await seedRealisticWork(db, list, { workItems: 100, entries: 0 })
    const display = await seedDisplayAccounts(db, await seedBareOrganization(db, 'Bench displays'), DISPLAY_ACCOUNTS)
    await withoutTextIndexes(db, () => seedRealisticWork(db, search, { workItems: Math.ceil(SEARCH_ROWS / 2), entries: Math.floor(SEARCH_ROWS / 2) }))
    await db.execute(sql`analyze`)
    return { auth, list: { ...list, itemIds: await firstItems(db, list.projectId) }, display, search, seconds: (performance.now() - started) / 1000 }
  } finally {
    await close()
  }
}

interface Shape {
  name: CitusShapeName
  label: string
  /** Runs on the service with the list cache off (the rest: on, 64 MiB). */
  uncached?: boolean
  warmupSeconds?: number
  /** A wrk run of `duration` seconds against the service on `port`, answers counted by status. */
  run(port: number, seeds: Seeds, duration?: number): Promise<LoadResult>
}

const bearer = (seeded: Seeded) => ({ authorization: `Bearer ${seeded.secret}` })
const listPath = (seeds: Seeds) => `/api/v1/projects/${seeds.list.projectId}/work-items?size=100`

const SHAPES: Shape[] = [
  {
    name: 'display',
    label: `\`POST /api/component\`, spread over ${DISPLAY_ACCOUNTS} accounts`,
    run: (port, seeds, duration) => wrk(`http://127.0.0.1:${port}/api/component`, { script: componentCalls(seeds.display), statuses: true, duration }),
  },
  {
    name: 'users-me',
    label: '`GET /api/v1/users/me` (Bearer check)',
    run: (port, seeds, duration) => wrk(`http://127.0.0.1:${port}/api/v1/users/me`, { headers: bearer(seeds.auth), statuses: true, duration }),
  },
  {
    name: 'list-repeated',
    label: '`GET …/work-items?size=100`, repeated reads, 1 in 10 after a write (list cache on)',
    run: (port, seeds, duration) => {
      const itemPaths = seeds.list.itemIds.map((id) => `/api/v1/projects/${seeds.list.projectId}/work-items/${id}`)
      return wrk(`http://127.0.0.1:${port}`, { script: repeatedReads(listPath(seeds), itemPaths, seeds.list.secret), statuses: true, duration })
    },
  },
  {
    name: 'list-cold',
    label: '`GET …/work-items?size=100`, cold reads (list cache off)',
    uncached: true,
    run: (port, seeds, duration) => wrk(`http://127.0.0.1:${port}${listPath(seeds)}`, { headers: bearer(seeds.list), statuses: true, duration }),
  },
  {
    name: 'search',
    label: `project search at ${round(SEARCH_ROWS / 1000)}k rows (realistic corpus, 1 client)`,
    warmupSeconds: SEARCH_WARMUP_SECONDS,
    run: (port, seeds, duration) => {
      const headers = bearer(seeds.search)
      const requests = searchQueries('realistic', 600).map((q) => ({ method: 'GET', path: `/api/v1/projects/${seeds.search.projectId}/search?q=${encodeURIComponent(q)}&limit=20`, headers }))
      return wrk(`http://127.0.0.1:${port}`, { requests, connections: 1, statuses: true, duration })
    },
  },
]

export async function run(): Promise<void> {
  const citusUrl = process.env.BENCH_CITUS_URL
  if (!citusUrl) {
    console.log('citus: skipped (BENCH_CITUS_URL names no Citus coordinator database)')
    return
  }
  const singleUrl = await freshDatabase('worktrack_bench_citus')
  const clusterName = `worktrack_bench_citus_${Date.now().toString(36)}`
  const cluster = await createClusterDatabase(citusUrl, clusterName)
  let coordinator: Coordinator | undefined
  const services: RunningProcess[] = []
  try {
    const about = await withClient(cluster.url, async (info) => {
      const [row] = await info<Array<{ version: string; workers: number }>>`select (select extversion from pg_extension where extname = 'citus') as version,
        (select count(*)::int from citus_get_active_worker_nodes()) as workers`
      return row!
    })
    const seeds = { single: await seed(singleUrl), cluster: await seed(cluster.url) }
    console.log(`citus: seeded in ${round(seeds.single.seconds)} s (single) and ${round(seeds.cluster.seconds)} s (cluster)`)
    coordinator = await watchCoordinator(cluster.url, clusterName)
    const { phases, phase } = phaseRecorder(coordinator)
    const wholeBefore = await coordinator.counters()
    const wholeOffset = coordinator.logOffset()
    const shapes: CitusShape[] = []
    const loads: number[] = []
    let peakRssMiB = 0
    for (const uncached of [false, true]) {
      const config = { server: { listCacheBytes: uncached ? 0 : LIST_CACHE_BYTES } }
      const single = await startService(singleUrl, PORTS.single, { config })
      services.push(single)
      const { value: clustered } = await phase(`start-up (list cache ${uncached ? 'off' : 'on'})`, () => startService(cluster.url, PORTS.cluster, { config }))
      services.push(clustered)
      for (const shape of SHAPES.filter((s) => Boolean(s.uncached) === uncached)) {
        loads.push(Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]))
        const warmup = async (side: Side) => {
          if (shape.name === 'display') await probeComponentCall(`http://127.0.0.1:${PORTS[side]}`, seeds[side].display[0]!)
          await shape.run(PORTS[side], seeds[side], shape.warmupSeconds ?? WARMUP_SECONDS)
        }
        await warmup('single')
        const warmed = await phase(`${shape.name}, warm-up`, () => warmup('cluster'))
        // Two measured runs each, in the order single, cluster, cluster, single: drift on a shared machine hits both alike.
        const runs: Record<Side, LoadResult[]> = { single: [], cluster: [] }
        let measured = NO_COUNTS
        for (const [i, on] of (['single', 'cluster', 'cluster', 'single'] as const).entries()) {
          if (on === 'single') runs.single.push(await shape.run(PORTS.single, seeds.single))
          else {
            const run = await phase(`${shape.name}, run ${i}`, () => shape.run(PORTS.cluster, seeds.cluster))
            runs.cluster.push(run.value)
            measured = addCounts(measured, run.counts)
          }
        }
        const allowed = shape.name === 'display' ? ['409'] : []
        const [singleSide, clusterSide] = [sideFigures(runs.single, allowed), sideFigures(runs.cluster, allowed)]
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
        console.log(`citus: ${shape.name}: single ${round(singleSide.requestsPerSecond)} req/s, cluster ${round(clusterSide.requestsPerSecond)} req/s; Citus executions ${measured.single} single-shard, ${measured.multi} multi-shard (${measured.lookups} lookups, ${measured.background} background, ${measured.unexplained} unexplained)`)
      }
      peakRssMiB = Math.max(peakRssMiB, single.peakRssMiB(), clustered.peakRssMiB())
      await single.stop()
      await phase(`stop (list cache ${uncached ? 'off' : 'on'})`, () => clustered.stop())
      services.length = 0
    }
    await Bun.sleep(500)
    const wholeAfter = await coordinator.counters()
    const wholeEnd = coordinator.logOffset()
    const readable = wholeOffset !== null && wholeEnd !== null
    const figures: CitusFigures = {
      shapes,
      hotPaths: shapes.reduce((sum, s) => addCounts(sum, s.measured), NO_COUNTS),
      wholeRun: { single: wholeAfter.single - wholeBefore.single, multi: wholeAfter.multi - wholeBefore.multi },
      multiShard: readable ? multiShardStatements(coordinator, phases, SHAPES.map((s) => s.name), wholeOffset, wholeEnd) : null,
      workers: about.workers,
      citusVersion: about.version,
      peakRssMiB,
      commit: serviceCommit(),
      loads,
    }
    const throughputRow = (s: CitusShape) =>
      `| ${s.label} | ${round(s.single.requestsPerSecond)} | ${round(s.single.p50, 2)} / ${round(s.single.p99, 2)} | ${round(s.cluster.requestsPerSecond)} | ${round(s.cluster.p50, 2)} / ${round(s.cluster.p99, 2)} | **${round(s.ratio, 2)}** | ${round(s.p99Ratio, 2)} | ${s.single.errors} / ${s.cluster.errors} | ${s.runs.single.map((r) => round(r)).join(', ')} · ${s.runs.cluster.map((r) => round(r)).join(', ')} |`
    const display = shapes.find((s) => s.name === 'display')
    writeSection(
      name,
      `## Citus: the hot paths on a coordinator and two workers vs one PostgreSQL

${sectionHead(`\`${COMMAND}\` (BENCH_CITUS_URL: a coordinator database with the citus extension and the workers added; the bench makes its own database on every node and drops it afterwards; the single server: BENCH_SERVER_URL, default 127.0.0.1:5432)`, `; Citus ${figures.citusVersion}, a coordinator and ${figures.workers} workers, all three PostgreSQL servers on this same machine; service at ${figures.commit}`)}
- Each shape runs the same wrk script (1 thread; ${CONNECTIONS} connections, search 1; ${DURATION_SECONDS} s per run) against a service on a fresh database of the single server and one on a fresh database of the cluster, seeded alike (an organization per shape; the list's 100 work items and search's ${round(SEARCH_ROWS)} rows — work items and comments in one project — from the realistic corpus; seeding took ${round(seeds.single.seconds)} s and ${round(seeds.cluster.seconds)} s). Per shape: a warm-up on each (${WARMUP_SECONDS} s, search ${SEARCH_WARMUP_SECONDS} s), then runs in the order single, cluster, cluster, single; the better run of each side is shown. One pair of services with the list cache on (64 MiB) for every shape but the cold list, which has its own pair with it off.
- The machine has 2 cores, shared by wrk, the service and — on the cluster side — all three PostgreSQL servers, and with other sessions' test runs (1-minute load average at the start of each shape: ${loads.map((l) => round(l, 1)).join(', ')}): ratios come from one run, and no figure is repeatable to the percent.
- ${target.throughput} ${target.singleShard}

| shape | single req/s | single p50 / p99 ms | cluster req/s | cluster p50 / p99 ms | req/s cluster ÷ single | p99 cluster ÷ single | errors single / cluster | runs req/s: single · cluster |
|---|---:|---:|---:|---:|---:|---:|---:|---|
${shapes.map(throughputRow).join('\n')}

${display ? `Display: answers 409 (an update overtaken by a later one) are not errors: ${display.single.statuses['409'] ?? 0} on the single server, ${display.cluster.statuses['409'] ?? 0} on the cluster.\n\n` : ''}${shardReport(figures, phases)}`,
    )
    recordResult(name, figures, COMMAND)
  } finally {
    for (const service of services) await service.stop().catch(() => {})
    await coordinator?.end()
    await cluster.drop()
  }
}
