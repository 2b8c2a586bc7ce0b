/**
 * Growth within one project, writes: `PATCH …/work-items/{id}` throughput on a project grown by SQL
 * to 10k, 100k and 1M work items (bench/seed/growth.ts), through the real service (list cache on):
 * renames and status changes (each moves two of the project's maintained counts), in turn, twice
 * each, wrk 64 connections, 10 s after a warm-up, so their ratio comes from one run; then the
 * maintained counts checked against the rows.
 */
import { loadavg } from 'node:os'
import type { GrowthWriteSize, PatchFigure } from '../figures'
import { dropDatabase, withClient } from '../lib/database'
import { LIST_CACHE_BYTES, startService } from '../lib/processes'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS, DURATION_SECONDS } from '../lib/settings'
import { mean, round } from '../lib/stats'
import { checkAnswers, luaValue, throughput, turnScript, wrk, type Throughput } from '../lib/wrk'
import { countDifferences, growProject, label, SIZES } from '../seed/growth'
import { TARGETS } from '../targets'

export const name = 'growth-writes'
export const target = TARGETS[name]

const KEEP = process.env.BENCH_GROWTH_KEEP === '1'
const PORT = 3842
const STATUSES = ['todo', 'in_progress', 'done', 'cancelled'] as const

/**
 * wrk Lua: PATCHes moving the work items in turn to their next status (todo → in_progress → done
 * → cancelled → todo), from the statuses they have now: every PATCH changes a status.
 */
function statusPatches(itemPaths: string[], current: number[], secret: string): string {
  return `local items = ${luaValue(itemPaths)}
local statuses = ${luaValue([...STATUSES])}
local current = ${luaValue(current)}
local headers, n
function init(args)
  headers = ${luaValue({ authorization: `Bearer ${secret}`, 'content-type': 'application/json' })}
  n = 0
end
function request()
  n = n + 1
  local i = n % #items + 1
  current[i] = current[i] % #statuses + 1
  return wrk.format("PATCH", items[i], headers, '{"status":"' .. statuses[current[i]] .. '"}')
end`
}

/** The status of each work item now, as its 1-based index in STATUSES (for statusPatches). */
const statusesOf = (url: string, ids: string[]) =>
  withClient(url, async (sql) => {
    const rows = await sql.unsafe('select id::text as id, status from work_items where id = any($1::uuid[])', [ids])
    const byId = new Map(rows.map((row) => [String(row.id), String(row.status)]))
    return ids.map((id) => STATUSES.indexOf(byId.get(id) as (typeof STATUSES)[number]) + 1)
  })

const meanOf = (runs: Throughput[]): PatchFigure => ({ requestsPerSecond: mean(runs.map((r) => r.requestsPerSecond)), p50: mean(runs.map((r) => r.p50)), p99: mean(runs.map((r) => r.p99)), runs })

async function measureSize(rows: number): Promise<GrowthWriteSize & { load: [number, number] }> {
  const loadBefore = loadavg()[0]!
  console.log(`growth-writes: seeding ${round(rows)} work items …`)
  const prepared = await growProject('worktrack_bench_growth_writes', rows)
  const { seeded } = prepared
  const service = await startService(prepared.url, PORT, { config: { server: { listCacheBytes: LIST_CACHE_BYTES } } })
  try {
    const itemPaths = prepared.itemIds.map((id) => `/api/v1/projects/${seeded.projectId}/work-items/${id}`)
    const server = `http://127.0.0.1:${PORT}`
    const tag = Math.random().toString(36).slice(2, 8)
    const headers = { authorization: `Bearer ${seeded.secret}`, 'content-type': 'application/json' }
    const runs: Record<'title' | 'status', Throughput[]> = { title: [], status: [] }
    for (let turn = 0; turn < 2; turn++)
      for (const kind of ['title', 'status'] as const) {
        const script = async () =>
          kind === 'title' ? turnScript('PATCH', itemPaths, headers, `'{"title":"Growth ${tag} ' .. n .. '"}'`) : statusPatches(itemPaths, await statusesOf(prepared.url, prepared.itemIds), seeded.secret)
        await wrk(server, { script: await script(), duration: 2 })
        const result = await wrk(server, { script: await script() })
        checkAnswers(`PATCH (${kind}) under wrk`, result)
        runs[kind].push(throughput(result))
        console.log(`growth-writes: ${label(rows)}: PATCH ${kind} ${round(result.requestsPerSecond)} req/s`)
      }
    const peakRssMiB = service.peakRssMiB()
    await service.stop()
    const differences = await countDifferences(prepared.url, seeded)
    if (differences.length) throw new Error(`growth-writes: after the PATCHes the maintained counts differ from the rows: ${differences.join('; ')}`)
    const [title, status] = [meanOf(runs.title), meanOf(runs.status)]
    return { label: label(rows), rows, patch: { title, status, statusOverTitle: status.requestsPerSecond / title.requestsPerSecond }, countsExact: true, peakRssMiB, load: [loadBefore, loadavg()[0]!] }
  } finally {
    await service.stop()
    if (!KEEP) await dropDatabase(prepared.url)
  }
}

export async function run(): Promise<void> {
  const sizes: Array<GrowthWriteSize & { load: [number, number] }> = []
  for (const rows of SIZES) sizes.push(await measureSize(rows))
  const ms = (value: number) => round(value, 1)
  const runsOf = (f: PatchFigure) => f.runs.map((run) => round(run.requestsPerSecond)).join(', ')
  writeSection(
    name,
    `## Growth within one project: \`PATCH\` by project size

${sectionHead(`\`npm run bench -- growth-writes\` (sizes ${SIZES.map((n) => round(n)).join(', ')})`, ' — **2 cores, shared** (the 1-minute load average before → after each size is in the table)')}
- One project per size, grown by SQL as for the reads (bench/seed/growth.ts); the service is entries/bun.ts with the list cache on.
- \`PATCH …/work-items/{id}\` on 100 work items spread over the project, wrk 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s after a 2 s warm-up each: **rename** (a new title each time) and **status** (each PATCH moves the item to its next status: two maintained counts move), in turn rename, status, rename, status; req/s is the mean of the two runs of each (runs in brackets). After the writes of each size the maintained counts are checked to equal the rows per status.
- ${target.rename} ${target.status}

| rows | rename req/s | status change req/s | status / rename (same run) | rename p50 / p99 ms | status p50 / p99 ms | load avg |
|---:|---:|---:|---:|---:|---:|---:|
${sizes.map((s) => `| ${round(s.rows)} | ${round(s.patch.title.requestsPerSecond)} (${runsOf(s.patch.title)}) | ${round(s.patch.status.requestsPerSecond)} (${runsOf(s.patch.status)}) | **${round(s.patch.statusOverTitle, 2)}×** | ${ms(s.patch.title.p50)} / ${ms(s.patch.title.p99)} | ${ms(s.patch.status.p50)} / ${ms(s.patch.status.p99)} | ${round(s.load[0], 1)} → ${round(s.load[1], 1)} |`).join('\n')}`,
  )
  recordResult(name, { sizes: sizes.map(({ load: _, ...size }) => size), peakRssMiB: Math.max(...sizes.map((s) => s.peakRssMiB)) })
}
