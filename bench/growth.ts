/**
 * Growth within one project (issue 27): what a work-item list read and a work-item write cost as
 * one project grows by SQL to 10k, 100k and 1M work items, through the real service (list cache
 * on, 64 MiB as in work-items). Per size, on a fresh database:
 * - cold reads: each timed `GET …/work-items?size=100` is the first read after a `PATCH` of one
 *   work item of the project (the project's version moves, so the cached pages are stale): page 0,
 *   the middle page, the last page, `page=5000` where the project has that many pages, and page 0
 *   filtered by `status=in_progress` (25 % of rows) and by `assigneeId` (1 %); sequential
 *   requests, shapes interleaved, p50 / p99 over BENCH_GROWTH_SAMPLES (default 100) each;
 * - cached reads of page 0 (the same page again, no write between) for comparison;
 * - `PATCH` throughput on work items of the project (wrk, 64 connections, 10 s after a warm-up),
 *   the "writes vs today" figure;
 * - EXPLAIN ANALYZE of the list statement (page 0, last page) and of the total alone, to show
 *   where the time goes.
 * Reported, not judged here against a before/after ratio: this run is the "before" of issue 27.
 */
import { loadavg } from 'node:os'
import postgres from 'postgres'
import { openDatabase, queryText } from '../src/db'
import { migrate } from '../src/migrate'
import { WORK_ITEM_COLUMNS } from '../plugins/work-items/model'
import { CONNECTIONS, DURATION_SECONDS, freshDatabase, luaValue, machine, recordResult, round, wrk, writeSection, type Throughput } from './lib'
import { seedOrganization, type Seeded } from './seed'
import { seedWork, withoutTextIndexes } from './seed-work'
import { LIST_CACHE_BYTES, startService } from './work-items'

const SIZES = (process.env.BENCH_GROWTH_SIZES ?? '10000,100000,1000000').split(',').map(Number)
const SAMPLES = Number(process.env.BENCH_GROWTH_SAMPLES ?? 100)
/** Keep the bench databases (default: each is dropped once measured). */
const KEEP = process.env.BENCH_GROWTH_KEEP === '1'
const PAGE_SIZE = 100
const PORT = 3841
/** The deep page the issue reports at 1M rows (offset 500,000). */
const DEEP_PAGE = 5000

/** Latency of sequential requests, in ms (nearest-rank percentiles). */
export interface Latency {
  p50: number
  p99: number
  max: number
  samples: number
}

export type ShapeName = 'page0' | 'middle' | 'last' | 'deep' | 'status' | 'assignee'

export interface GrowthSize {
  label: string
  rows: number
  seedSeconds: number
  /** Cold reads by shape (`deep`: page 5000, only where the project has more pages; at 1M it is also the middle page). */
  cold: Partial<Record<ShapeName, Latency & { page: number }>>
  /** Page 0 read again with no write between (a list-cache hit). */
  cached: Latency
  /** `PATCH …/work-items/{id}` under wrk. */
  patch: Throughput
  /** EXPLAIN ANALYZE execution times (ms) of the service's list statement and of the total alone. */
  sql: { page0: number; last: number; countOnly: number; page0Plan: string }
  /** 1-minute load average before and after this size's measurements (the machine is shared). */
  load: [number, number]
  peakRssMiB: number
}

export interface GrowthFigures {
  samples: number
  sizes: GrowthSize[]
  peakRssMiB: number
}

export interface GrowthRecord {
  date: string
  machine: string
  command: string
  figures: GrowthFigures
}

/**
 * lib.ts's `Figures` has no `growth` entry (this benchmark leaves lib.ts alone): recordResult
 * stores any name the same way, so it is called through a wider type.
 */
const recordGrowth = (record: GrowthRecord) => (recordResult as unknown as (name: string, result: GrowthRecord) => void)('growth', record)

const label = (rows: number) => (rows >= 1_000_000 ? `${round(rows / 1_000_000, 1)}M` : rows >= 1000 ? `${round(rows / 1000, 1)}k` : String(rows))

function latency(values: number[]): Latency {
  const sorted = [...values].sort((a, b) => a - b)
  const rank = (p: number) => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!
  return { p50: rank(0.5), p99: rank(0.99), max: sorted.at(-1)!, samples: sorted.length }
}

/** A database grown to `rows` work items in one project: 25 % of each status, 1 % assigned to the seeded user. */
async function prepare(rows: number): Promise<{ url: string; seeded: Seeded; seconds: number; itemIds: string[] }> {
  const url = await freshDatabase(`worktrack_bench_growth_${label(rows).toLowerCase().replace('.', '_')}`)
  const database = await openDatabase(url)
  try {
    await migrate(database.db)
    const seeded = await seedOrganization(database.db, { scopes: ['work_items:read', 'work_items:write'] })
    const started = performance.now()
    await withoutTextIndexes(database.db, async () => {
      await seedWork(database.db, seeded, { workItems: rows, entries: 0 })
      await queryText(database.db, 'update work_items set assignee_id = $1 where project_id = $2 and number % 100 = 0', [seeded.userId, seeded.projectId])
    })
    await queryText(database.db, 'analyze work_items', [])
    const seconds = (performance.now() - started) / 1000
    // 100 work items spread over the project: the ones the PATCHes rename.
    const step = Math.max(1, Math.floor(rows / 100))
    const items = await queryText<{ id: string }>(database.db, 'select id from work_items where project_id = $1 and number % $2 = 0 order by number limit 100', [seeded.projectId, step])
    return { url, seeded, seconds, itemIds: items.map((item) => item.id) }
  } finally {
    await database.close()
  }
}

async function dropDatabase(url: string): Promise<void> {
  const admin = new URL(url)
  const name = admin.pathname.slice(1)
  admin.pathname = '/postgres'
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`drop database if exists "${name}" with (force)`)
  await sql.end()
}

/** Execution times of the list statement as the service runs it (page 0, last page) and of the total alone. */
async function explain(url: string, seeded: Seeded, lastPage: number): Promise<GrowthSize['sql']> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const where = `w.project_id = '${seeded.projectId}' and w.organization_id = '${seeded.organizationId}'`
    const list = (page: number) =>
      `select ${WORK_ITEM_COLUMNS}, count(*) over () as total from work_items w where ${where} order by w.position, w.created_at, w.id limit ${PAGE_SIZE} offset ${page * PAGE_SIZE}`
    const run = async (text: string) => {
      const lines = (await sql.unsafe(`explain (analyze, buffers) ${text}`)).map((row) => String(row['QUERY PLAN']))
      const time = Number(/Execution Time: ([\d.]+) ms/.exec(lines.join('\n'))?.[1] ?? NaN)
      // The plan's nodes, outermost first, without their figures: "Limit → WindowAgg → Index Scan using …".
      const nodes = lines
        .filter((line, i) => i === 0 || /^\s*->/.test(line))
        .map((line) => line.replace(/^\s*->\s*/, '').replace(/\s+\(cost=.*$/, '').trim())
      return { time, plan: nodes.join(' → ') }
    }
    // Once to warm the buffers, then measured.
    await run(list(0))
    const page0 = await run(list(0))
    const last = await run(list(lastPage))
    const countOnly = await run(`select count(*) from work_items w where ${where}`)
    return { page0: page0.time, last: last.time, countOnly: countOnly.time, page0Plan: page0.plan }
  } finally {
    await sql.end()
  }
}

/** wrk Lua: PATCHes renaming the work items in turn, a title never used before each time. */
function patches(itemPaths: string[], secret: string): string {
  const tag = Math.random().toString(36).slice(2, 8)
  return `local items = ${luaValue(itemPaths)}
local headers, n
function init(args)
  headers = ${luaValue({ authorization: `Bearer ${secret}`, 'content-type': 'application/json' })}
  n = 0
end
function request()
  n = n + 1
  return wrk.format("PATCH", items[n % #items + 1], headers, '{"title":"Growth ${tag} ' .. n .. '"}')
end`
}

async function measureSize(rows: number): Promise<GrowthSize> {
  const loadBefore = loadavg()[0]!
  console.log(`growth: seeding ${round(rows)} work items …`)
  const prepared = await prepare(rows)
  console.log(`growth: seeded ${round(rows)} in ${round(prepared.seconds)} s`)
  const { seeded } = prepared
  const base = `http://127.0.0.1:${PORT}/api/v1/projects/${seeded.projectId}/work-items`
  const headers = { authorization: `Bearer ${seeded.secret}` }
  const pages = Math.ceil(rows / PAGE_SIZE)
  const shapes: Array<{ name: ShapeName; page: number; query: string; expectTotal: number | null }> = [
    { name: 'page0', page: 0, query: '', expectTotal: rows },
    { name: 'middle', page: Math.floor(pages / 2), query: '', expectTotal: rows },
    { name: 'last', page: pages - 1, query: '', expectTotal: rows },
    ...(DEEP_PAGE < pages ? [{ name: 'deep' as const, page: DEEP_PAGE, query: '', expectTotal: rows }] : []),
    { name: 'status', page: 0, query: '&status=in_progress', expectTotal: null },
    { name: 'assignee', page: 0, query: `&assigneeId=${seeded.userId}`, expectTotal: Math.floor(rows / 100) },
  ]
  // At 1M rows the middle page is page 5000: measured once, reported under both names.
  const measured = shapes.filter((shape) => shape.name !== 'deep' || shape.page !== shapes[1]!.page)
  const service = await startService(prepared.url, PORT, LIST_CACHE_BYTES)
  try {
    let renames = 0
    const tag = Math.random().toString(36).slice(2, 8)
    const patch = async () => {
      const id = prepared.itemIds[renames % prepared.itemIds.length]
      renames++
      const answer = await fetch(`${base}/${id}`, { method: 'PATCH', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ title: `Cold ${tag} ${renames}` }) })
      if (answer.status !== 200) throw new Error(`PATCH answered ${answer.status}: ${await answer.text()}`)
      await answer.arrayBuffer()
    }
    const etags = new Map<ShapeName, string>()
    const read = async (shape: (typeof shapes)[number], cold: boolean) => {
      const started = performance.now()
      const answer = await fetch(`${base}?size=${PAGE_SIZE}&page=${shape.page}${shape.query}`, { headers })
      const body = (await answer.json()) as { data: unknown[]; meta: { page: number; totalItems: number } }
      const elapsed = performance.now() - started
      if (answer.status !== 200) throw new Error(`${shape.name}: ${answer.status} ${JSON.stringify(body)}`)
      if (body.meta.page !== shape.page || (shape.expectTotal !== null && body.meta.totalItems !== shape.expectTotal) || body.data.length === 0)
        throw new Error(`${shape.name}: unexpected page ${JSON.stringify(body.meta)} with ${body.data.length} items`)
      // A cold read answers a new version of the list: its ETag is not the one of the read before.
      const etag = answer.headers.get('etag') ?? ''
      if (cold && etag && etags.get(shape.name) === etag) throw new Error(`${shape.name}: the read after a PATCH had the previous ETag (not cold)`)
      etags.set(shape.name, etag)
      return elapsed
    }
    // Warm-up: a few rounds of every shape (connections, the service's statements, the buffers).
    for (let i = 0; i < 3; i++)
      for (const shape of measured) {
        await patch()
        await read(shape, true)
      }
    const times = new Map<ShapeName, number[]>(measured.map((shape) => [shape.name, []]))
    const loop = performance.now()
    for (let i = 0; i < SAMPLES; i++) {
      for (const shape of measured) {
        await patch()
        times.get(shape.name)!.push(await read(shape, true))
      }
      if (i === 4) console.log(`growth: ${label(rows)}: ${round((performance.now() - loop) / 5)} ms per round of ${measured.length} cold reads, ~${round(((performance.now() - loop) / 5) * SAMPLES / 1000)} s for ${SAMPLES}`)
    }
    const cold: GrowthSize['cold'] = {}
    for (const shape of shapes) cold[shape.name] = { page: shape.page, ...latency(times.get(shape.name === 'deep' && !times.has('deep') ? 'middle' : shape.name)!) }
    // Cached: page 0 again and again, no write between (the first read stores it).
    await read(shapes[0]!, false)
    const cachedTimes: number[] = []
    for (let i = 0; i < SAMPLES; i++) cachedTimes.push(await read(shapes[0]!, false))
    // Writes: PATCH throughput on the project's work items.
    const itemPaths = prepared.itemIds.map((id) => `/api/v1/projects/${seeded.projectId}/work-items/${id}`)
    await wrk(`http://127.0.0.1:${PORT}`, { script: patches(itemPaths, seeded.secret), duration: 2 })
    const writes = await wrk(`http://127.0.0.1:${PORT}`, { script: patches(itemPaths, seeded.secret) })
    if (writes.errors || writes.non2xx) throw new Error(`PATCH under wrk: ${writes.errors} socket errors, ${writes.non2xx} answers ≥ 400`)
    const peakRssMiB = service.peakRssMiB()
    await service.stop()
    const sql = await explain(prepared.url, seeded, pages - 1)
    const size: GrowthSize = {
      label: label(rows),
      rows,
      seedSeconds: prepared.seconds,
      cold,
      cached: latency(cachedTimes),
      patch: { requestsPerSecond: writes.requestsPerSecond, p50: writes.p50, p99: writes.p99 },
      sql,
      load: [loadBefore, loadavg()[0]!],
      peakRssMiB,
    }
    console.log(
      `growth: ${size.label}: cold page 0 p50 ${round(cold.page0!.p50, 1)} / p99 ${round(cold.page0!.p99, 1)} ms, last ${round(cold.last!.p50, 1)} ms, cached ${round(size.cached.p50, 1)} ms; PATCH ${round(writes.requestsPerSecond)} req/s`,
    )
    return size
  } finally {
    await service.stop().catch(() => {})
    if (!KEEP) await dropDatabase(prepared.url)
  }
}

const ms = (value: number) => round(value, 1)
const cell = (l: (Latency & { page: number }) | undefined) => (l ? `${ms(l.p50)} / ${ms(l.p99)}` : '—')

export async function benchGrowth(): Promise<void> {
  const started = performance.now()
  const sizes: GrowthSize[] = []
  for (const rows of SIZES) sizes.push(await measureSize(rows))
  const minutes = (performance.now() - started) / 60_000
  const date = new Date().toISOString()
  const [small, large] = [sizes[0]!, sizes.at(-1)!]
  const growth = (shape: ShapeName, p: 'p50' | 'p99') => {
    const a = small.cold[shape]
    const b = large.cold[shape]
    return a && b ? `${round(b[p] / a[p], 1)}×` : '—'
  }
  const shapeNames: ShapeName[] = ['page0', 'middle', 'last', 'deep', 'status', 'assignee']
  const pageOf = (s: GrowthSize, shape: ShapeName) => (shape === 'middle' || shape === 'last' ? ` (p. ${s.cold[shape]?.page})` : '')
  const table = sizes.map((s) => `| ${round(s.rows)} | ${shapeNames.map((shape) => `${cell(s.cold[shape])}${pageOf(s, shape)}`).join(' | ')} | ${ms(s.cached.p50)} / ${ms(s.cached.p99)} |`).join('\n')
  const fromTop = SAMPLES - Math.max(1, Math.ceil(0.99 * SAMPLES)) + 1
  const p99Rank = fromTop === 1 ? 'the slowest' : fromTop === 2 ? 'the second-slowest' : fromTop === 3 ? 'the third-slowest' : `the ${fromTop}th-slowest`
  const deep = large.cold.deep
  const sameAsMiddle = deep && deep.page === large.cold.middle?.page
  writeSection(
    'growth',
    `## Growth within one project: cost by project size (issue 27, before)

- Date: ${date} · Machine: ${machine()} — **2 cores, shared** (other work may run on it; the 1-minute load average before → after each size is in the last table)
- Command: \`npm run bench -- growth\` (sizes ${SIZES.map((n) => round(n)).join(', ')}; ${SAMPLES} samples per shape; whole run ${round(minutes, 1)} min)
- One project per size on a fresh database of the PostgreSQL server, grown by SQL (bench/seed-work.ts \`seedWork\`, synthetic corpus, no entries): statuses in turn (25 % \`in_progress\`), 1 % of the work items assigned to the caller. The service is entries/bun.ts with the list cache on (${round(LIST_CACHE_BYTES / 2 ** 20)} MiB).
- **Cold** read: each timed \`GET …/work-items?size=${PAGE_SIZE}\` is the first read after a \`PATCH\` (a rename) of one of 100 work items spread over the project, so the project's version has moved and the cached page is stale (checked: every cold answer has a new ETag); the PATCH is not timed. Shapes interleaved, one request at a time (a Bun loop with \`fetch\` and \`performance.now\`, after 3 warm-up rounds); p50 / p99 are nearest-rank over ${SAMPLES} requests each (so p99 is ${p99Rank} of ${SAMPLES}). **Cached**: page 0 again with no write between (a list-cache hit).
- The filters \`status\` and \`assigneeId\` exist on main (\`WorkItemQuery\`): they are measured as they are today (\`where … and w.status = $3\`, the same \`count(*) over ()\`; the index \`(project_id, assignee_id)\` exists, none on status). Cursor pages and maintained counts do not exist yet (issue 27 adds them): every page here is \`page\`/\`size\` with OFFSET, every total \`count(*) over ()\`.${sameAsMiddle ? `\n- \`page=${DEEP_PAGE}\` at ${large.label} is the middle page: one measurement, shown under both names.` : ''}
- Writes: \`PATCH …/work-items/{id}\` renaming those 100 work items in turn (a new title each time), wrk 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s after a 2 s warm-up: today's figure for the target "writes with maintained counts ≥ 0.9× today".

Cold reads (first read after a PATCH) and the cached page 0, \`size=${PAGE_SIZE}\`, p50 / p99 ms:

| rows in the project | page 0 | middle page | last page | \`page=${DEEP_PAGE}\` | page 0, \`status=in_progress\` (25 %) | page 0, \`assigneeId=…\` (1 %) | page 0, cached |
|---:|---:|---:|---:|---:|---:|---:|---:|
${table}

Growth ${small.label} → ${large.label} (cold): page 0 p50 ${growth('page0', 'p50')}, p99 ${growth('page0', 'p99')}; middle page p50 ${growth('middle', 'p50')}; last page p50 ${growth('last', 'p50')}; \`status=in_progress\` p50 ${growth('status', 'p50')}; \`assigneeId\` p50 ${growth('assignee', 'p50')}. Cached page 0: ${ms(small.cached.p50)} → ${ms(large.cached.p50)} ms p50.

| rows | seeding | PATCH req/s | PATCH p50 / p99 ms | SQL page 0 / last page / \`count(*)\` alone, ms (EXPLAIN ANALYZE) | peak RSS | load avg |
|---:|---:|---:|---:|---:|---:|---:|
${sizes.map((s) => `| ${round(s.rows)} | ${round(s.seedSeconds)} s | ${round(s.patch.requestsPerSecond)} | ${ms(s.patch.p50)} / ${ms(s.patch.p99)} | ${ms(s.sql.page0)} / ${ms(s.sql.last)} / ${ms(s.sql.countOnly)} | ${round(s.peakRssMiB, 1)} MiB | ${round(s.load[0], 1)} → ${round(s.load[1], 1)} |`).join('\n')}

Plan of the page-0 statement at ${large.label}: ${large.sql.page0Plan}.

Targets (issue 27, judged on the after run): cold page 0 and any cursor page at 1M p50 ≤ 15 ms, p99 ≤ 40 ms, growth 10k → 1M ≤ 1.5×; filtered cold reads at 1M p50 ≤ 20 ms; \`page=${DEEP_PAGE}\` reported${deep ? ` (here ${cell(deep)} ms)` : ''}; PATCH throughput ≥ 0.9× the figures above.`,
  )
  recordGrowth({
    date,
    machine: machine(),
    command: 'npm run bench -- growth',
    figures: { samples: SAMPLES, sizes, peakRssMiB: Math.max(...sizes.map((s) => s.peakRssMiB)) },
  })
  console.log(`growth: cold page 0 ${small.label} → ${large.label}: p50 ${ms(small.cold.page0!.p50)} → ${ms(large.cold.page0!.p50)} ms (${growth('page0', 'p50')}) in ${round(minutes, 1)} min`)
}
