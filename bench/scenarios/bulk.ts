/**
 * Set-based bulk create and PATCH of work items (`POST` / `PATCH …/work-items/bulk`, up to 100
 * items a request, one transaction), through the real service (entries/bun.ts) on a fresh database
 * of the PostgreSQL server, three empty projects of one organization, in one run:
 * - latency, sequential from one client (BENCH_BULK_SAMPLES rounds after BENCH_BULK_WARMUP
 *   untimed ones): each round one single `POST …/work-items` of one plain item, one `POST …/bulk`
 *   of 100 plain items (titles only), one `PATCH …/bulk` of those 100 to `in_progress`; median,
 *   p90, and bulk ÷ single of the medians;
 * - throughput: wrk, 4 connections, bulk creates of 100 into one project (distinct titles), 2 s
 *   warm-up then BENCH_DURATION s: work items created per second, with what the database sessions
 *   were doing (pg_stat_activity samples) and where the cores went; beside it pgbench, 4 clients,
 *   running the database's part alone (the number reservation, the 100-row insert, the count
 *   move) into a fourth project;
 * - robustness: wrk, 8 connections, the same into another project: answers by status (5xx, non-200),
 *   then, the service stopped, every project's numbers checked 1..N without a gap (and its counter
 *   at N) and its maintained counts against its rows.
 */
import { cpuMeter, type CpuShare } from '../lib/cpu'
import { seededDatabase, withClient } from '../lib/database'
import { activitySampler, activityTable, type Activity } from '../lib/pg-activity'
import { pgbench } from '../lib/pgbench'
import { startService } from '../lib/processes'
import { recordResult, sectionHead, serviceCommit, writeSection } from '../lib/results'
import { DURATION_SECONDS } from '../lib/settings'
import { percentile, round } from '../lib/stats'
import { turnScript, wrk, type LoadResult } from '../lib/wrk'
import type { BulkLatency, BulkLoad } from '../figures'
import { countDifferences } from '../seed/growth'
import { seedOrganization, seedProject } from '../seed/organization'
import { TARGETS } from '../targets'

export const name = 'bulk'
export const target = TARGETS[name]

const SAMPLES = Number(process.env.BENCH_BULK_SAMPLES ?? 50)
const WARMUP = Number(process.env.BENCH_BULK_WARMUP ?? 10)
const BATCH = 100
const THROUGHPUT_CLIENTS = 4
const ROBUSTNESS_CLIENTS = 8
const PORT = 3876

/** What the sessions' statements are, by how their text begins (pg_stat_activity keeps 60 characters). */
const STATEMENTS: Array<[RegExp, string]> = [
  [/^insert into work_item_counters/i, 'number reservation (`work_item_counters` upsert)'],
  [/^insert into "work_items"/i, 'insert of the 100 rows'],
  [/^select coalesce\(max\(position\)/i, 'next position (`max(position)`)'],
  [/work_item_counts/i, 'count move (`work_item_counts`)'],
  [/audit_log/i, 'audit records'],
  [/^(begin|commit)/i, 'begin / commit'],
]

const latencyOf = (values: number[]): BulkLatency => ({ p50: percentile(values, 0.5), p90: percentile(values, 0.9), max: Math.max(...values), samples: values.length })

/** wrk Lua: bulk creates of BATCH plain items into `path`, each request's titles new (`Bulk <tag> <n>.<i>`). */
function bulkCreates(path: string, secret: string, tag: string): string {
  return `local function bulkBody(n)
  local parts = {}
  for i = 1, ${BATCH} do parts[i] = '{"title":"Bulk ${tag} ' .. n .. '.' .. i .. '"}' end
  return '{"items":[' .. table.concat(parts, ',') .. ']}'
end
${turnScript('POST', [path], { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, 'bulkBody(n)')}`
}

/** A wrk run's figures as the benchmark records them. */
function loadOf(clients: number, result: LoadResult): BulkLoad {
  const statuses = result.counts
  const count = (test: (status: number) => boolean) => Object.entries(statuses).reduce((sum, [status, n]) => sum + (test(Number(status)) ? n : 0), 0)
  return {
    clients,
    seconds: result.seconds,
    requests: result.requests,
    statuses,
    itemsPerSecond: ((statuses['200'] ?? 0) * BATCH) / result.seconds,
    requestsPerSecond: result.requestsPerSecond,
    p50: result.p50,
    p99: result.p99,
    serverErrors: count((status) => status >= 500),
    non200: count((status) => status !== 200),
    socketErrors: result.errors,
  }
}

/** A project's rows against its numbers, counter and maintained counts. */
interface ProjectCheck {
  label: string
  rows: number
  first: number
  last: number
  distinct: number
  counter: number
  gapless: boolean
  differences: string[]
}

/** pgbench: the database's part of a bulk create of BATCH plain items, as the service runs it (numbers reserved at once, one insert, the count moved once). */
const PGBENCH_SCRIPT = `begin;
insert into work_item_counters (project_id, organization_id, last_number) values (:project::uuid, :org::uuid, ${BATCH}) on conflict (project_id, organization_id) do update set last_number = work_item_counters.last_number + ${BATCH} returning last_number as last \\gset
insert into work_items (id, organization_id, project_id, number, title, status, priority, position, created_by) select gen_random_uuid(), :org::uuid, :project::uuid, (:last)::int - ${BATCH} + g, 'pgbench ' || g, 'todo', 0, (:last)::int - ${BATCH} + g, :user::uuid from generate_series(1, ${BATCH}) as g;
insert into work_item_counts (project_id, status, organization_id, items) values (:project::uuid, 'todo', :org::uuid, ${BATCH}) on conflict (project_id, status, organization_id) do update set items = work_item_counts.items + ${BATCH};
commit;
`

export async function run(): Promise<void> {
  const { url, seeded } = await seededDatabase('worktrack_bench_bulk', async (db) => {
    const seeded = await seedOrganization(db, { scopes: ['work_items:read', 'work_items:write'] })
    const throughputProject = await seedProject(db, seeded.organizationId, seeded.userId, 'Bulk throughput')
    const robustnessProject = await seedProject(db, seeded.organizationId, seeded.userId, 'Bulk robustness')
    const pgbenchProject = await seedProject(db, seeded.organizationId, seeded.userId, 'Bulk pgbench')
    return { ...seeded, throughputProject, robustnessProject, pgbenchProject }
  })
  const projects = { latency: seeded.projectId, throughput: seeded.throughputProject, robustness: seeded.robustnessProject }
  const server = `http://127.0.0.1:${PORT}`
  const headers = { authorization: `Bearer ${seeded.secret}`, 'content-type': 'application/json' }
  /** One request, timed from its sending to the last byte of its answer (the body encoded before, parsed after). */
  const call = async (method: string, path: string, body: unknown, expected: number): Promise<{ body: any; ms: number }> => {
    const text = JSON.stringify(body)
    const started = performance.now()
    const answer = await fetch(`${server}/api/v1/projects/${path}`, { method, headers, body: text })
    const answered = await answer.text()
    const ms = performance.now() - started
    if (answer.status !== expected) throw new Error(`bulk: ${method} ${path} answered ${answer.status}, not ${expected}: ${answered.slice(0, 500)}`)
    return { body: JSON.parse(answered), ms }
  }
  const titles = (turn: number) => Array.from({ length: BATCH }, (_, i) => ({ title: `Bulk ${turn}.${i}` }))

  const timings = { single: [] as number[], create: [] as number[], patch: [] as number[] }
  const loads: Record<'throughput' | 'robustness', LoadResult | undefined> = { throughput: undefined, robustness: undefined }
  const answered200 = { latency: 0, throughput: 0, robustness: 0 }
  const activity: Record<'throughput' | 'robustness', Activity | undefined> = { throughput: undefined, robustness: undefined }
  const cpu: Record<'throughput' | 'robustness', CpuShare | undefined> = { throughput: undefined, robustness: undefined }
  let peakRssMiB = 0
  const service = await startService(url, PORT)
  try {
    // Latency: one client, rounds of single create, bulk create, bulk PATCH of what it created.
    for (let sample = -WARMUP; sample < SAMPLES; sample++) {
      const single = await call('POST', `${projects.latency}/work-items`, { title: `Single ${sample}` }, 201)
      const created = await call('POST', `${projects.latency}/work-items/bulk`, { items: titles(sample) }, 200)
      const ids = (created.body.data as Array<{ id: string; title: string }>).map((item) => item.id)
      if (ids.length !== BATCH || created.body.data[BATCH - 1].title !== `Bulk ${sample}.${BATCH - 1}`) throw new Error(`bulk: the bulk create answered ${ids.length} items, or out of order`)
      const patched = await call('PATCH', `${projects.latency}/work-items/bulk`, { items: ids.map((id) => ({ id, status: 'in_progress' })) }, 200)
      if ((patched.body.data as Array<{ status: string }>).filter((item) => item.status === 'in_progress').length !== BATCH) throw new Error('bulk: the bulk PATCH did not answer every item in_progress')
      answered200.latency += 1 + BATCH
      if (sample < 0) continue
      timings.single.push(single.ms)
      timings.create.push(created.ms)
      timings.patch.push(patched.ms)
    }
    console.log(`bulk: single p50 ${round(percentile(timings.single, 0.5), 2)} ms, bulk create p50 ${round(percentile(timings.create, 0.5), 2)} ms, bulk PATCH p50 ${round(percentile(timings.patch, 0.5), 2)} ms`)

    // Throughput (4 clients) and robustness (8 clients): each into its own project, a 2 s warm-up first for the former.
    const tag = Math.random().toString(36).slice(2, 8)
    const script = (project: string) => bulkCreates(`/api/v1/projects/${project}/work-items/bulk`, seeded.secret, tag)
    const warm = await wrk(server, { script: script(projects.throughput), connections: THROUGHPUT_CLIENTS, duration: 2, statuses: true })
    answered200.throughput += warm.counts['200'] ?? 0
    for (const [kind, clients] of [['throughput', THROUGHPUT_CLIENTS], ['robustness', ROBUSTNESS_CLIENTS]] as const) {
      const sampler = activitySampler(url, STATEMENTS)
      const meter = cpuMeter(service.pid)
      const result = await wrk(server, { script: script(projects[kind]), connections: clients, statuses: true })
      cpu[kind] = meter()
      activity[kind] = await sampler()
      loads[kind] = result
      answered200[kind] += result.counts['200'] ?? 0
      console.log(`bulk: ${clients} clients: ${round(((result.counts['200'] ?? 0) * BATCH) / result.seconds)} items/s, answers ${JSON.stringify(result.counts)}, socket errors ${result.errors}`)
    }
    peakRssMiB = service.peakRssMiB()
  } finally {
    await service.stop()
  }

  // The database's part alone, same clients as the throughput run, into its own project.
  const tps = await pgbench(url, PGBENCH_SCRIPT, { clients: THROUGHPUT_CLIENTS, variables: { project: seeded.pgbenchProject, org: seeded.organizationId, user: seeded.userId } })
  const pgbenchItemsPerSecond = tps * BATCH

  // Every project, the service stopped (requests in flight when wrk stopped have committed or rolled back).
  const checks: ProjectCheck[] = []
  for (const [label, projectId] of [...Object.entries(projects), ['pgbench', seeded.pgbenchProject]] as Array<[string, string]>) {
    const [row] = await withClient(url, (sql) =>
      sql.unsafe(
        `select count(*)::int as rows, coalesce(min(number), 0)::int as first, coalesce(max(number), 0)::int as last, count(distinct number)::int as distinct,
           coalesce((select last_number from work_item_counters where project_id = $1), 0)::int as counter
         from work_items where project_id = $1`,
        [projectId],
      ),
    )
    const [rows, first, last, distinct, counter] = [row!.rows, row!.first, row!.last, row!.distinct, row!.counter].map(Number) as [number, number, number, number, number]
    const gapless = distinct === rows && counter === rows && (rows === 0 || (first === 1 && last === rows))
    checks.push({ label, rows, first, last, distinct, counter, gapless, differences: await countDifferences(url, { ...seeded, projectId }) })
  }
  const checkOf = (label: string) => checks.find((check) => check.label === label)!
  const latencyRows = checkOf('latency').rows
  if (latencyRows !== answered200.latency) throw new Error(`bulk: the latency project has ${latencyRows} work items, ${answered200.latency} were answered`)

  const single = latencyOf(timings.single)
  const create = latencyOf(timings.create)
  const patch = latencyOf(timings.patch)
  const ratio = create.p50 / single.p50
  const throughputLoad = loadOf(THROUGHPUT_CLIENTS, loads.throughput!)
  const robustnessCheck = checkOf('robustness')
  const robustnessLoad = { ...loadOf(ROBUSTNESS_CLIENTS, loads.robustness!), rows: robustnessCheck.rows, numbersGapless: robustnessCheck.gapless, countsExact: robustnessCheck.differences.length === 0 }
  const commit = serviceCommit()

  const ms = (value: number) => round(value, 2)
  const latencyRow = (label: string, l: BulkLatency, perItem: boolean) => `| ${label} | ${ms(l.p50)} | ${ms(l.p90)} | ${ms(l.max)} | ${perItem ? ms(l.p50 / BATCH) : ms(l.p50)} |`
  const statuses = (load: BulkLoad) =>
    Object.entries(load.statuses)
      .sort()
      .map(([status, n]) => `${status}: ${round(n)}`)
      .join(', ') || 'none'
  const loadRow = (load: BulkLoad, c: CpuShare) =>
    `| ${load.clients} | ${round(load.requestsPerSecond, 1)} | **${round(load.itemsPerSecond)}** | ${ms(load.p50)} / ${ms(load.p99)} | ${statuses(load)} | ${load.serverErrors} | ${load.non200} | ${load.socketErrors} | ${round(c.service, 2)} / ${round(c.postgres, 2)} / ${round(c.busy, 2)} |`
  const checkRow = (check: ProjectCheck) =>
    `| ${check.label} | ${round(check.rows)} | ${check.first}..${check.last} (${round(check.distinct)} distinct) | ${check.counter} | ${check.gapless ? 'yes' : '**NO**'} | ${check.differences.length ? `**${check.differences.join('; ')}**` : 'yes'} |`
  const inFlight = (kind: 'throughput' | 'robustness') => checkOf(kind).rows - answered200[kind] * BATCH
  writeSection(
    name,
    `## Bulk create and PATCH of work items (100 a request)

${sectionHead(`\`npm run bench -- bulk\` (BENCH_BULK_SAMPLES=${SAMPLES}, BENCH_BULK_WARMUP=${WARMUP}, BENCH_DURATION=${DURATION_SECONDS}; service on the PostgreSQL server)`, ' — **2 cores, shared**')}
- The service (entries/bun.ts, default configuration, commit ${commit}) on a fresh database: one organization, one user with an API key (\`work_items:read\`, \`work_items:write\`), four empty projects (latency, throughput, robustness, pgbench). A "plain item" is a title only.
- **Latency**, one client (the benchmark's \`fetch\`, from sending to the last byte of the answer), ${WARMUP} untimed rounds then ${SAMPLES}, each round: a single \`POST …/work-items\` of one item, a \`POST …/work-items/bulk\` of ${BATCH} items, a \`PATCH …/work-items/bulk\` of those ${BATCH} to \`in_progress\` (each moves the maintained counts). Nearest-rank percentiles.
- **Throughput and robustness**: wrk (1 thread), each request a \`POST …/work-items/bulk\` of ${BATCH} new titles into one project, ${DURATION_SECONDS} s: ${THROUGHPUT_CLIENTS} connections (after a 2 s warm-up into the same project), then ${ROBUSTNESS_CLIENTS} connections into another project. Items/s: the 200 answers × ${BATCH} over wrk's run time. CPU in cores (/proc) during each run.
- **Database ceiling** (reported, not judged): pgbench (\`-M prepared\`, ${THROUGHPUT_CLIENTS} clients, ${DURATION_SECONDS} s) of the database's part alone of a bulk create, one transaction each: the \`work_item_counters\` upsert reserving ${BATCH} numbers, one \`insert … select … from generate_series\` of ${BATCH} rows, the \`work_item_counts\` upsert — none of the service's access check, \`max(position)\`, audit records, change feed or read-back.
- ${target.latency} ${target.ratio} ${target.throughput} ${target.robustness}

| one client, ${SAMPLES} samples | median ms | p90 ms | max ms | median ms per item |
|---|---:|---:|---:|---:|
${latencyRow('single `POST …/work-items` (1 item)', single, false)}
${latencyRow(`\`POST …/work-items/bulk\` (${BATCH} items)`, create, true)}
${latencyRow(`\`PATCH …/work-items/bulk\` (${BATCH} status changes)`, patch, true)}

**Bulk create of ${BATCH} ÷ single create (medians, same run): ${round(ratio, 2)}×** (${BATCH} single creates one after the other would take about ${round(BATCH / ratio, 1)}× the bulk's time). Bulk PATCH of ${BATCH} ÷ single create: ${round(patch.p50 / single.p50, 2)}×.

| clients | req/s | items/s | p50 / p99 ms | answers by status | 5xx | non-200 | socket errors | cores: service / PostgreSQL / machine |
|---:|---:|---:|---:|---|---:|---:|---:|---:|
${loadRow(throughputLoad, cpu.throughput!)}
${loadRow(robustnessLoad, cpu.robustness!)}

pgbench of the database's part alone, ${THROUGHPUT_CLIENTS} clients: ${round(tps, 1)} TPS = **${round(pgbenchItemsPerSecond)} items/s**; the service at ${THROUGHPUT_CLIENTS} clients reaches ${round(throughputLoad.itemsPerSecond / pgbenchItemsPerSecond, 2)}× that.

What the database sessions were doing during each run (pg_stat_activity every 50 ms; share of the busy-session samples, top wait):

${activityTable([[`${THROUGHPUT_CLIENTS} clients`, activity.throughput!], [`${ROBUSTNESS_CLIENTS} clients`, activity.robustness!]])}

Each project after the runs, the service stopped (numbers, the \`work_item_counters\` counter, the \`work_item_counts\` rows against the rows by status):

| project | work items | numbers | counter | 1..N without a gap | counts equal the rows |
|---|---:|---|---:|---|---|
${checks.map(checkRow).join('\n')}

Work items beyond the 200 answers × ${BATCH}: throughput ${inFlight('throughput')}, robustness ${inFlight('robustness')} (requests in flight when wrk stopped, committed after it closed its connections). Peak RSS of the service: ${round(peakRssMiB, 1)} MiB.`,
  )
  recordResult(name, { single, create, patch, ratio, throughput: throughputLoad, robustness: robustnessLoad, pgbenchItemsPerSecond, peakRssMiB })
  console.log(
    `bulk: create ${ms(create.p50)} ms median (${round(ratio, 2)}× a single ${ms(single.p50)} ms), PATCH ${ms(patch.p50)} ms; ${round(throughputLoad.itemsPerSecond)} items/s at ${THROUGHPUT_CLIENTS} clients (pgbench ${round(pgbenchItemsPerSecond)}); ${ROBUSTNESS_CLIENTS} clients: 5xx ${robustnessLoad.serverErrors}, non-200 ${robustnessLoad.non200}, gapless ${robustnessLoad.numbersGapless}, counts exact ${robustnessLoad.countsExact}`,
  )
  const broken = checks.filter((check) => !check.gapless || check.differences.length)
  if (broken.length) throw new Error(`bulk: projects with gaps or counts unlike their rows: ${broken.map((check) => check.label).join(', ')} (recorded)`)
}
