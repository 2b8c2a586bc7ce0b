/**
 * Growth within one project (issue 27): what a work-item list read and a work-item write cost as
 * one project grows by SQL to 10k, 100k and 1M work items, through the real service (list cache
 * on, 64 MiB as in work-items). Per size, on a fresh database:
 * - cold reads: each timed `GET …/work-items?size=100` is the first read after a `PATCH` of one
 *   work item of the project (the project's version moves, so the cached pages are stale): page 0,
 *   the middle page and the last page by cursor (the cursors are reached, untimed, by walking
 *   `meta.nextCursor` from page 0: a page at or past 10,000 rows in may not be asked by `page`),
 *   and page 0 filtered by `status=in_progress` (25 % of rows) and by `assigneeId` (1 %);
 *   sequential requests, shapes interleaved, p50 / p99 over BENCH_GROWTH_SAMPLES (default 100) each;
 * - `page=5000` (offset 500,000, past the offset bound at every size): each answer checked to be a
 *   400 naming `page`, timed like the cold reads (it reads no rows, so it must stay fast);
 * - cached reads of page 0 (the same page again, no write between) for comparison;
 * - `PATCH` throughput on work items of the project (wrk, 64 connections, 10 s after a warm-up):
 *   renames (the before run's shape) and status changes (which move the maintained counts), in
 *   turn, twice each, so their ratio comes from one run;
 * - the maintained counts checked against the rows (after the writes);
 * - EXPLAIN ANALYZE of the statements the service runs for each shape (captured from the
 *   service's own list code, run as the plan cache runs them), to show where the time goes.
 * The "before" of issue 27 (OFFSET pages, `count(*) over ()`) is the section `growth` of
 * RESULTS.md and `growth-before` of results.json; this run writes `growth-after` beside it and
 * compares with it.
 */
import { loadavg } from 'node:os'
import { sql as sqlText } from 'drizzle-orm'
import postgres from 'postgres'
import { openDatabase, queryText, type Database } from '../src/db'
import type { ListCache } from '../src/http/list-cache'
import { migrate } from '../src/migrate'
import type { Actor } from '../src/services/identity'
import type { ProjectAccessService } from '../plugins/projects/api'
import { createWorkItems } from '../plugins/work-items/service'
import { MAX_OFFSET_ROWS, offsetAllowed } from '../src/http/pagination'
import { CONNECTIONS, DURATION_SECONDS, freshDatabase, luaValue, machine, readResults, recordResult, round, wrk, writeSection, type LoadResult, type Throughput } from './lib'
import { seedOrganization, type Seeded } from './seed'
import { seedWork, withoutTextIndexes } from './seed-work'
import { LIST_CACHE_BYTES, startService } from './work-items'

const SIZES = (process.env.BENCH_GROWTH_SIZES ?? '10000,100000,1000000').split(',').map(Number)
const SAMPLES = Number(process.env.BENCH_GROWTH_SAMPLES ?? 100)
/** Keep the bench databases (default: each is dropped once measured). */
const KEEP = process.env.BENCH_GROWTH_KEEP === '1'
const PAGE_SIZE = 100
const PORT = 3841
/**
 * The deep page the issue reports at 1M rows (offset 500,000). Since offsets are bounded
 * (src/http/pagination.ts MAX_OFFSET_ROWS) it is refused at every size: the run checks that.
 */
const DEEP_PAGE = 5000
const STATUSES = ['todo', 'in_progress', 'done', 'cancelled'] as const

/** Latency of sequential requests, in ms (nearest-rank percentiles). */
export interface Latency {
  p50: number
  p99: number
  max: number
  samples: number
}

// ---- the before run (issue 27, before): its figures as recorded, read by the after run and the summary ----

export type BeforeShapeName = 'page0' | 'middle' | 'last' | 'deep' | 'status' | 'assignee'

export interface GrowthBeforeSize {
  label: string
  rows: number
  seedSeconds: number
  /** Cold reads by shape (`deep`: page 5000, only where the project has more pages; at 1M it is also the middle page). */
  cold: Partial<Record<BeforeShapeName, Latency & { page: number }>>
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

export interface GrowthBeforeRecord {
  date: string
  machine: string
  command: string
  figures: { samples: number; sizes: GrowthBeforeSize[]; peakRssMiB: number }
}

// ---- the after run -------------------------------------------------------------------------

/**
 * Cold shapes: page 0, the middle and last pages by cursor, two filters; `deep` (`page=5000` by
 * OFFSET) only in the records of runs before offsets were bounded (now it is `refused`).
 */
export type ShapeName = 'page0' | 'middleCursor' | 'lastCursor' | 'deep' | 'status' | 'assignee'

/** The before run's shape each after shape compares with (the same rows: the middle page by offset then, by cursor now). */
export const BEFORE_SHAPE: Record<ShapeName, BeforeShapeName> = { page0: 'page0', middleCursor: 'middle', lastCursor: 'last', deep: 'deep', status: 'status', assignee: 'assignee' }

/** One shape's EXPLAIN ANALYZE: execution time, whether the plan cache chose its generic plan, the plan. */
export interface Explained {
  ms: number
  generic: boolean
  /** The plan's nodes, outermost first, without their figures. */
  nodes: string
  /** The whole EXPLAIN (ANALYZE, BUFFERS) text. */
  plan: string
  /** The statement as the service sends it. */
  statement: string
}

/** PATCH throughput of one shape: the mean of its runs, and each run. */
export interface PatchFigure extends Throughput {
  runs: Throughput[]
}

export interface GrowthSize {
  label: string
  rows: number
  seedSeconds: number
  /**
   * Cold reads by shape (`page`: the page the rows are at). `deep` (page 5000 by OFFSET, where the
   * project had more than 5,000 pages) only in records of runs before offsets were bounded.
   */
  cold: Partial<Record<ShapeName, Latency & { page: number }>>
  /** `page=5000` answered 400 naming `page` (offset past the bound), timed like the cold reads; absent from runs before the bound. */
  refused?: Latency & { page: number }
  /** The untimed walk by `meta.nextCursor` from page 0 to the last page's cursor: pages read, seconds; absent from runs before the bound. */
  walk?: { pages: number; seconds: number }
  /** Page 0 read again with no write between (a list-cache hit). */
  cached: Latency
  /** `PATCH …/work-items/{id}` under wrk: renames (the before run's shape) and status changes (they move the counts). */
  patch: { title: PatchFigure; status: PatchFigure; statusOverTitle: number }
  /** The maintained counts equal the rows, per status, after every write of this size. */
  countsExact: boolean
  /** EXPLAIN ANALYZE of the service's statement of each shape. */
  sql: Partial<Record<ShapeName, Explained>>
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
  /** This run measures issue 27's after (the before is `growth-before`). */
  phase: 'after'
  date: string
  machine: string
  command: string
  figures: GrowthFigures
}

/** Whether a recorded `growth` is this run's kind (an after) or the before run's. */
export const isAfter = (record: GrowthRecord | GrowthBeforeRecord | undefined): record is GrowthRecord => (record as GrowthRecord | undefined)?.phase === 'after'

/**
 * lib.ts's `Figures` has no `growth` entries (this benchmark leaves lib.ts alone): recordResult
 * stores any name the same way, so it is called through a wider type.
 */
const record = (name: 'growth' | 'growth-before', result: GrowthRecord | GrowthBeforeRecord) => (recordResult as unknown as (name: string, result: unknown) => void)(name, result)

/** The before run's figures: `growth-before`, or a `growth` that is still the before run's (kept as `growth-before` before it is replaced). */
function beforeRecord(): GrowthBeforeRecord | undefined {
  const results = readResults() as Record<string, GrowthRecord | GrowthBeforeRecord | undefined>
  const kept = results['growth-before'] as GrowthBeforeRecord | undefined
  if (kept) return kept
  const growth = results.growth
  if (growth && !isAfter(growth)) {
    record('growth-before', growth)
    return growth
  }
  return undefined
}

const label = (rows: number) => (rows >= 1_000_000 ? `${round(rows / 1_000_000, 1)}M` : rows >= 1000 ? `${round(rows / 1000, 1)}k` : String(rows))

function latency(values: number[]): Latency {
  const sorted = [...values].sort((a, b) => a - b)
  const rank = (p: number) => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!
  return { p50: rank(0.5), p99: rank(0.99), max: sorted.at(-1)!, samples: sorted.length }
}

interface Prepared {
  url: string
  seeded: Seeded
  seconds: number
  itemIds: string[]
  /** Rows in `in_progress` and rows assigned to the caller, as seeded. */
  inProgress: number
  assigned: number
}

/** A database grown to `rows` work items in one project: 25 % of each status, 1 % assigned to the seeded user. */
async function prepare(rows: number): Promise<Prepared> {
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
    // Vacuumed as autovacuum would have done to a table of this age (and so that it does not start
    // during the measurements): visibility map and statistics in their steady state.
    await database.db.execute(sqlText.raw('vacuum (analyze) work_items'))
    const seconds = (performance.now() - started) / 1000
    const [counted] = await queryText<{ rows: string; inProgress: string; assigned: string; maintained: string }>(
      database.db,
      `select count(*) as rows, count(*) filter (where status = 'in_progress') as "inProgress", count(*) filter (where assignee_id = $2) as assigned,
         (select coalesce(sum(items), 0) from work_item_counts where project_id = $1) as maintained
       from work_items where project_id = $1`,
      [seeded.projectId, seeded.userId],
    )
    if (Number(counted!.rows) !== rows || Number(counted!.maintained) !== rows)
      throw new Error(`seeding: ${counted!.rows} work items and maintained counts of ${counted!.maintained}, not ${rows}`)
    // 100 work items spread over the project: the ones the PATCHes change.
    const step = Math.max(1, Math.floor(rows / 100))
    const items = await queryText<{ id: string }>(database.db, 'select id from work_items where project_id = $1 and number % $2 = 0 order by number limit 100', [seeded.projectId, step])
    return { url, seeded, seconds, itemIds: items.map((item) => item.id), inProgress: Number(counted!.inProgress), assigned: Number(counted!.assigned) }
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

/** The maintained counts of the project differ from its rows: the statuses where they do (empty: exact). */
async function countDifferences(url: string, seeded: Seeded): Promise<string[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql.unsafe(
      `select coalesce(r.status, c.status) as status, coalesce(r.items, 0) as rows, coalesce(c.items, 0) as maintained
         from (select status, count(*)::int as items from work_items where project_id = $1 group by status) r
         full join (select status, items from work_item_counts where project_id = $1) c on c.status = r.status
        where coalesce(r.items, 0) <> coalesce(c.items, 0)`,
      [seeded.projectId],
    )
    return rows.map((row) => `${row.status}: ${row.rows} rows, counted ${row.maintained}`)
  } finally {
    await sql.end()
  }
}

/** A request of one shape: its query string (after `size`) and the page its rows are at. */
interface ShapeRequest {
  name: ShapeName
  page: number
  query: string
  /** The list request as the service parses it (for the EXPLAIN of its statement). */
  input: Record<string, string>
  cursor?: string
  expectTotal: number
  /** The position of the page's first row, where the shape has a known one. */
  firstPosition: number | null
}

/**
 * The statement the service runs for one list request: the work-items plugin's own list code,
 * with a stand-in database that records the statement instead of running it (and a list cache
 * that always loads).
 */
async function statementOf(seeded: Seeded, shape: ShapeRequest): Promise<{ text: string; parameters: unknown[] }> {
  const captured: Array<{ text: string; parameters: unknown[] }> = []
  const db = { session: { client: { unsafe: async (text: string, parameters: unknown[]) => (captured.push({ text, parameters }), []) } } } as unknown as Database
  const lists = { page: (_key: string, _version: string, load: () => Promise<unknown>) => load() } as unknown as ListCache
  const access = { listAccess: async () => ({ version: '0' }) } as unknown as ProjectAccessService
  const service = createWorkItems({ db, lists, access, writes: undefined as never, users: undefined as never, extensions: [] })
  const actor = { organizationId: seeded.organizationId, userId: seeded.userId } as Actor
  await service.list(actor, seeded.projectId, shape.input, shape.cursor === undefined ? { page: shape.page, size: PAGE_SIZE } : { page: 0, size: PAGE_SIZE, cursor: shape.cursor })
  if (!captured.length) throw new Error(`${shape.name}: the list ran no statement`)
  return captured[0]!
}

/** A parameter as an SQL literal, for EXECUTE of a prepared statement. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'null'
  if (typeof value === 'number') return String(value)
  const text = Array.isArray(value) ? `{${value.map((item) => `"${String(item).replace(/["\\]/g, '\\$&')}"`).join(',')}}` : String(value)
  return `'${text.replace(/'/g, "''")}'`
}

/**
 * EXPLAIN (ANALYZE, BUFFERS) of each shape's statement as the service runs it: prepared (the
 * service's driver prepares every statement) and executed 6 times first, so the plan is the one
 * the plan cache settles on (a generic plan when PostgreSQL finds it no dearer: its conditions
 * then show `$n`).
 */
async function explain(url: string, seeded: Seeded, shapes: ShapeRequest[]): Promise<GrowthSize['sql']> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const explained: GrowthSize['sql'] = {}
  try {
    for (const [index, shape] of shapes.entries()) {
      const { text, parameters } = await statementOf(seeded, shape)
      const name = `growth_${index}`
      await sql.unsafe(`prepare ${name} as ${text}`)
      const execute = `execute ${name}(${parameters.map(literal).join(', ')})`
      for (let i = 0; i < 6; i++) await sql.unsafe(execute)
      const lines = (await sql.unsafe(`explain (analyze, buffers) ${execute}`)).map((row) => String(row['QUERY PLAN']))
      await sql.unsafe(`deallocate ${name}`)
      const plan = lines.join('\n')
      const nodes = lines
        .filter((line, i) => i === 0 || /^\s*->/.test(line))
        .map((line) => line.replace(/^\s*->\s*/, '').replace(/\s+\(cost=.*$/, '').trim())
        .join(' → ')
      explained[shape.name] = {
        ms: Number(/Execution Time: ([\d.]+) ms/.exec(plan)?.[1] ?? NaN),
        // A generic plan compares with the parameters themselves (`project_id = $1`); InitPlans' `returns $0` are no parameters.
        generic: lines.some((line) => /(Cond|Filter): .*\$\d/.test(line)),
        nodes,
        plan,
        statement: text.replace(/\s+/g, ' ').trim(),
      }
    }
  } finally {
    await sql.end()
  }
  return explained
}

/** wrk Lua: PATCHes renaming the work items in turn, a title never used before each time (the before run's shape). */
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

/**
 * wrk Lua: PATCHes moving the work items in turn to their next status (todo → in_progress → done
 * → cancelled → todo), from the statuses they have now: every PATCH changes a status, so moves
 * two of the project's maintained counts.
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
async function statusesOf(url: string, ids: string[]): Promise<number[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql.unsafe('select id::text as id, status from work_items where id = any($1::uuid[])', [ids])
    const byId = new Map(rows.map((row) => [String(row.id), String(row.status)]))
    return ids.map((id) => STATUSES.indexOf(byId.get(id) as (typeof STATUSES)[number]) + 1)
  } finally {
    await sql.end()
  }
}

const throughput = (result: LoadResult): Throughput => ({ requestsPerSecond: result.requestsPerSecond, p50: result.p50, p99: result.p99 })
const mean = (runs: Throughput[]): PatchFigure => ({
  requestsPerSecond: runs.reduce((sum, run) => sum + run.requestsPerSecond, 0) / runs.length,
  p50: runs.reduce((sum, run) => sum + run.p50, 0) / runs.length,
  p99: runs.reduce((sum, run) => sum + run.p99, 0) / runs.length,
  runs,
})

async function measureSize(rows: number): Promise<GrowthSize> {
  const loadBefore = loadavg()[0]!
  console.log(`growth: seeding ${round(rows)} work items …`)
  const prepared = await prepare(rows)
  console.log(`growth: seeded ${round(rows)} in ${round(prepared.seconds)} s`)
  const { seeded } = prepared
  const base = `http://127.0.0.1:${PORT}/api/v1/projects/${seeded.projectId}/work-items`
  const headers = { authorization: `Bearer ${seeded.secret}` }
  const pages = Math.ceil(rows / PAGE_SIZE)
  if (pages < 2) throw new Error(`growth: ${round(rows)} work items make ${pages} page of ${PAGE_SIZE}: the middle and last pages need at least 2`)
  const middle = Math.floor(pages / 2)
  const service = await startService(prepared.url, PORT, LIST_CACHE_BYTES)
  try {
    type Body = { data: Array<{ position: number }>; meta: { page?: number; totalItems: number; nextCursor: string | null } }
    const get = async (query: string) => {
      const started = performance.now()
      const answer = await fetch(`${base}?size=${PAGE_SIZE}${query}`, { headers })
      const text = await answer.text()
      const elapsed = performance.now() - started
      if (answer.status !== 200) throw new Error(`GET ?size=${PAGE_SIZE}${query}: ${answer.status} ${text.slice(0, 2000)}`)
      return { elapsed, body: JSON.parse(text) as Body, etag: answer.headers.get('etag') ?? '' }
    }
    // The first answer's total is the rows seeded (the counts were recomputed after the SQL seeding).
    const first = await get('&page=0')
    if (first.body.meta.totalItems !== rows) throw new Error(`growth: page 0 of ${round(rows)} seeded work items says totalItems ${first.body.meta.totalItems}: the maintained counts are wrong; stopping`)
    // The cursors of the middle and last pages, untimed: a page at or past MAX_OFFSET_ROWS rows in
    // may not be asked by `page`, so they are reached as a client reaches them, by walking
    // `meta.nextCursor` from page 0 (one request per page; each page checked to start at its position).
    const walkStarted = performance.now()
    const cursors = new Map<number, string>()
    let cursor = first.body.meta.nextCursor
    for (let page = 1; page < pages; page++) {
      if (!cursor) throw new Error(`growth: page ${page - 1} of ${pages} has no nextCursor`)
      if (page === middle || page === pages - 1) cursors.set(page, cursor)
      if (page === pages - 1) break
      const { body } = await get(`&cursor=${cursor}`)
      if (body.data.length !== PAGE_SIZE || body.data[0]?.position !== page * PAGE_SIZE)
        throw new Error(`growth: the cursor walk's page ${page} has ${body.data.length} items from position ${body.data[0]?.position}, not ${PAGE_SIZE} from ${page * PAGE_SIZE}`)
      cursor = body.meta.nextCursor
    }
    const walk = { pages: pages - 2, seconds: (performance.now() - walkStarted) / 1000 }
    console.log(`growth: ${label(rows)}: walked ${round(walk.pages)} cursor pages to the last page in ${round(walk.seconds, 1)} s`)
    const [middleCursor, lastCursor] = [cursors.get(middle)!, cursors.get(pages - 1)!]
    const shapes: ShapeRequest[] = [
      { name: 'page0', page: 0, query: '&page=0', input: {}, expectTotal: rows, firstPosition: 0 },
      { name: 'middleCursor', page: middle, query: `&cursor=${middleCursor}`, input: {}, cursor: middleCursor, expectTotal: rows, firstPosition: middle * PAGE_SIZE },
      { name: 'lastCursor', page: pages - 1, query: `&cursor=${lastCursor}`, input: {}, cursor: lastCursor, expectTotal: rows, firstPosition: (pages - 1) * PAGE_SIZE },
      { name: 'status', page: 0, query: '&page=0&status=in_progress', input: { status: 'in_progress' }, expectTotal: prepared.inProgress, firstPosition: null },
      { name: 'assignee', page: 0, query: `&page=0&assigneeId=${seeded.userId}`, input: { assigneeId: seeded.userId }, expectTotal: prepared.assigned, firstPosition: null },
    ]
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
    const read = async (shape: ShapeRequest, cold: boolean) => {
      const { elapsed, body, etag } = await get(shape.query)
      const expectedLength = Math.min(PAGE_SIZE, shape.expectTotal - shape.page * PAGE_SIZE)
      if (
        (shape.cursor === undefined && body.meta.page !== shape.page) ||
        body.meta.totalItems !== shape.expectTotal ||
        body.data.length !== expectedLength ||
        (shape.firstPosition !== null && body.data[0]?.position !== shape.firstPosition)
      )
        throw new Error(`${shape.name}: unexpected page ${JSON.stringify(body.meta)} with ${body.data.length} items from position ${body.data[0]?.position}`)
      // A cold read answers a new version of the list: its ETag is not the one of the read before.
      if (cold && etag && etags.get(shape.name) === etag) throw new Error(`${shape.name}: the read after a PATCH had the previous ETag (not cold)`)
      etags.set(shape.name, etag)
      return elapsed
    }
    // `page=5000` (offset 500,000, past the bound at every size): a 400 naming `page`, answered
    // before any row is read. It replaces the OFFSET read of page 5000 the runs before the bound timed.
    const refuse = async () => {
      const query = `&page=${DEEP_PAGE}`
      const started = performance.now()
      const answer = await fetch(`${base}?size=${PAGE_SIZE}${query}`, { headers })
      const text = await answer.text()
      const elapsed = performance.now() - started
      const field = answer.status === 400 ? (JSON.parse(text) as { errors?: Array<{ field?: string }> }).errors?.[0]?.field : undefined
      if (field !== 'page') throw new Error(`GET ?size=${PAGE_SIZE}${query}: ${answer.status} ${text.slice(0, 2000)} (expected 400 naming page)`)
      return elapsed
    }
    // Warm-up: a few rounds of every shape (connections, the service's statements, the buffers).
    for (let i = 0; i < 3; i++) {
      for (const shape of shapes) {
        await patch()
        await read(shape, true)
      }
      await refuse()
    }
    const times = new Map<ShapeName, number[]>(shapes.map((shape) => [shape.name, []]))
    const refusedTimes: number[] = []
    const loop = performance.now()
    for (let i = 0; i < SAMPLES; i++) {
      for (const shape of shapes) {
        await patch()
        times.get(shape.name)!.push(await read(shape, true))
      }
      // In the same rounds, without a PATCH before it: it reads no list.
      refusedTimes.push(await refuse())
      if (i === 4) console.log(`growth: ${label(rows)}: ${round((performance.now() - loop) / 5)} ms per round of ${shapes.length} cold reads and a refused page, ~${round(((performance.now() - loop) / 5) * SAMPLES / 1000)} s for ${SAMPLES}`)
    }
    const cold: GrowthSize['cold'] = {}
    for (const shape of shapes) cold[shape.name] = { page: shape.page, ...latency(times.get(shape.name)!) }
    const refused = { page: DEEP_PAGE, ...latency(refusedTimes) }
    // Cached: page 0 again and again, no write between (the first read stores it).
    await read(shapes[0]!, false)
    const cachedTimes: number[] = []
    for (let i = 0; i < SAMPLES; i++) cachedTimes.push(await read(shapes[0]!, false))
    // Writes: renames (the before run's shape) and status changes in turn, twice each, each after a warm-up of its own.
    const itemPaths = prepared.itemIds.map((id) => `/api/v1/projects/${seeded.projectId}/work-items/${id}`)
    const server = `http://127.0.0.1:${PORT}`
    const runs: Record<'title' | 'status', Throughput[]> = { title: [], status: [] }
    for (let turn = 0; turn < 2; turn++)
      for (const kind of ['title', 'status'] as const) {
        const script = async () => (kind === 'title' ? patches(itemPaths, seeded.secret) : statusPatches(itemPaths, await statusesOf(prepared.url, prepared.itemIds), seeded.secret))
        await wrk(server, { script: await script(), duration: 2 })
        const result = await wrk(server, { script: await script() })
        if (result.errors || result.non2xx) throw new Error(`PATCH (${kind}) under wrk: ${result.errors} socket errors, ${result.non2xx} answers ≥ 400`)
        runs[kind].push(throughput(result))
        console.log(`growth: ${label(rows)}: PATCH ${kind} ${round(result.requestsPerSecond)} req/s`)
      }
    const peakRssMiB = service.peakRssMiB()
    await service.stop()
    const differences = await countDifferences(prepared.url, seeded)
    if (differences.length) throw new Error(`growth: after the PATCHes the maintained counts differ from the rows: ${differences.join('; ')}`)
    const sql = await explain(prepared.url, seeded, shapes)
    const [title, status] = [mean(runs.title), mean(runs.status)]
    const size: GrowthSize = {
      label: label(rows),
      rows,
      seedSeconds: prepared.seconds,
      cold,
      refused,
      walk,
      cached: latency(cachedTimes),
      patch: { title, status, statusOverTitle: status.requestsPerSecond / title.requestsPerSecond },
      countsExact: true,
      sql,
      load: [loadBefore, loadavg()[0]!],
      peakRssMiB,
    }
    console.log(
      `growth: ${size.label}: cold page 0 p50 ${ms(cold.page0!.p50)} / p99 ${ms(cold.page0!.p99)} ms, middle cursor ${ms(cold.middleCursor!.p50)} ms, last cursor ${ms(cold.lastCursor!.p50)} ms, page=${DEEP_PAGE} refused ${ms(refused.p50)} ms, cached ${ms(size.cached.p50)} ms; PATCH title ${round(title.requestsPerSecond)} / status ${round(status.requestsPerSecond)} req/s`,
    )
    return size
  } finally {
    await service.stop().catch(() => {})
    if (!KEEP) await dropDatabase(prepared.url)
  }
}

const ms = (value: number) => round(value, 1)
const pair = (l: Latency | undefined) => (l ? `${ms(l.p50)} / ${ms(l.p99)}` : '—')
const times = (value: number) => `${round(value, 2)}×`

/** What the targets of issue 27 say of a run (judged at 1M rows and more). */
export function judge(sizes: GrowthSize[], before: GrowthBeforeSize[] | undefined) {
  const [small, large] = [sizes[0]!, sizes.at(-1)!]
  const cold = large.cold
  const within = (l: Latency | undefined, p50: number, p99 = Infinity) => !!l && l.p50 <= p50 && l.p99 <= p99
  const grew = (shape: ShapeName) => {
    const [a, b] = [small.cold[shape], large.cold[shape]]
    return a && b ? { p50: b.p50 / a.p50, p99: b.p99 / a.p99 } : undefined
  }
  const growth = { page0: grew('page0'), middleCursor: grew('middleCursor'), lastCursor: grew('lastCursor') }
  const beforeOf = (size: GrowthSize) => before?.find((b) => b.rows === size.rows)
  const patchVsBefore = sizes.map((size) => {
    const b = beforeOf(size)
    return { label: size.label, ratio: b ? size.patch.title.requestsPerSecond / b.patch.requestsPerSecond : undefined }
  })
  return {
    judged: large.rows >= 1_000_000 && small !== large,
    page0: within(cold.page0, 15, 40),
    cursor: within(cold.middleCursor, 15, 40) && within(cold.lastCursor, 15, 40),
    growth,
    growthMet: Object.values(growth).every((g) => !!g && g.p50 <= 1.5 && g.p99 <= 1.5),
    filtered: within(cold.status, 20) && within(cold.assignee, 20),
    // A refused page reads no rows: at every size no dearer than a cold page may be.
    refused: sizes.every((size) => within(size.refused, 15, 40)),
    patchVsBefore,
    patchVsBeforeMet: patchVsBefore.every((p) => p.ratio !== undefined && p.ratio >= 0.9),
    statusOverTitleMet: sizes.every((size) => size.patch.statusOverTitle >= 0.9),
  }
}

export async function benchGrowth(): Promise<void> {
  if (offsetAllowed(DEEP_PAGE, PAGE_SIZE)) throw new Error(`growth: page ${DEEP_PAGE} of ${PAGE_SIZE} is within the offset bound (${MAX_OFFSET_ROWS} rows): the check of its refusal means nothing`)
  const started = performance.now()
  const sizes: GrowthSize[] = []
  for (const rows of SIZES) sizes.push(await measureSize(rows))
  const minutes = (performance.now() - started) / 60_000
  const date = new Date().toISOString()
  const before = beforeRecord()
  const [small, large] = [sizes[0]!, sizes.at(-1)!]
  const beforeOf = (size: GrowthSize) => before?.figures.sizes.find((b) => b.rows === size.rows)
  const verdict = judge(sizes, before?.figures.sizes)
  const status = (met: boolean) => (verdict.judged ? (met ? 'met' : '**missed**') : 'not judged (not a 10k → 1M run)')
  // The tables' columns: the cold shapes, with `page=5000` (now refused) between the pages and the filters.
  const [pageNames, filterNames]: ShapeName[][] = [['page0', 'middleCursor', 'lastCursor'], ['status', 'assignee']]
  const columns = (cell: (shape: ShapeName) => string, refused: string) => [...pageNames.map(cell), refused, ...filterNames.map(cell)].join(' | ')
  const pageOf = (s: GrowthSize, shape: ShapeName) => (shape === 'middleCursor' || shape === 'lastCursor' ? ` (p. ${s.cold[shape]?.page})` : '')
  const afterTable = sizes.map((s) => `| ${round(s.rows)} | ${columns((shape) => `${pair(s.cold[shape])}${pageOf(s, shape)}`, pair(s.refused))} | ${pair(s.cached)} |`).join('\n')
  const compare = (b: Latency | undefined, a: Latency | undefined) => (a && b ? `${ms(b.p50)} → ${ms(a.p50)} (${times(a.p50 / b.p50)})` : a ? `— → ${ms(a.p50)}` : '—')
  const compareRefused = (b: Latency | undefined, a: Latency | undefined) => `${b ? ms(b.p50) : '—'} → ${a ? `400 in ${ms(a.p50)}` : '—'}`
  const compareTable = sizes
    .map((s) => {
      const b = beforeOf(s)
      return `| ${round(s.rows)} | ${columns((shape) => compare(b?.cold[BEFORE_SHAPE[shape]], s.cold[shape]), compareRefused(b?.cold.deep, s.refused))} | ${compare(b?.cached, s.cached)} |`
    })
    .join('\n')
  const patchTable = sizes
    .map((s) => {
      const b = beforeOf(s)
      const runs = (f: PatchFigure) => f.runs.map((run) => round(run.requestsPerSecond)).join(', ')
      return `| ${round(s.rows)} | ${b ? round(b.patch.requestsPerSecond) : '—'} | ${round(s.patch.title.requestsPerSecond)} (${runs(s.patch.title)}) | ${b ? times(s.patch.title.requestsPerSecond / b.patch.requestsPerSecond) : '—'} | ${round(s.patch.status.requestsPerSecond)} (${runs(s.patch.status)}) | **${times(s.patch.statusOverTitle)}** | ${ms(s.patch.title.p50)} / ${ms(s.patch.title.p99)} | ${ms(s.patch.status.p50)} / ${ms(s.patch.status.p99)} |`
    })
    .join('\n')
  const beforeSql = (size: GrowthBeforeSize | undefined) => (size ? `${ms(size.sql.page0)} / ${ms(size.sql.last)}` : '—')
  const sqlTable = sizes.map((s) => `| ${round(s.rows)} | ${[...pageNames, ...filterNames].map((shape) => (s.sql[shape] ? `${ms(s.sql[shape]!.ms)}${s.sql[shape]!.generic ? ' (g)' : ''}` : '—')).join(' | ')} | ${beforeSql(beforeOf(s))} | ${round(s.seedSeconds)} s | ${s.walk ? `${round(s.walk.pages)} in ${round(s.walk.seconds, 1)} s` : '—'} | ${round(s.peakRssMiB, 1)} MiB | ${round(s.load[0], 1)} → ${round(s.load[1], 1)} |`).join('\n')
  const fromTop = SAMPLES - Math.max(1, Math.ceil(0.99 * SAMPLES)) + 1
  const p99Rank = fromTop === 1 ? 'the slowest' : fromTop === 2 ? 'the second-slowest' : fromTop === 3 ? 'the third-slowest' : `the ${fromTop}th-slowest`
  const g = verdict.growth
  const growthText = (name: string, r: { p50: number; p99: number } | undefined) => (r ? `${name} p50 ${times(r.p50)}, p99 ${times(r.p99)}` : `${name} —`)
  const plan = (shape: ShapeName) => {
    const e = large.sql[shape]
    return e ? `\`${shape}\` (${e.generic ? 'generic plan' : 'custom plan'}, ${ms(e.ms)} ms):\n\n\`\`\`sql\n${e.statement}\n\`\`\`\n\n\`\`\`\n${e.plan}\n\`\`\`` : ''
  }
  writeSection(
    'growth-after',
    `## Growth within one project: after (issue 27)

- Date: ${date} · Machine: ${machine()} — **2 cores, shared** (other work may run on it; the 1-minute load average before → after each size is in the last table)
- Command: \`npm run bench -- growth\` (sizes ${SIZES.map((n) => round(n)).join(', ')}; ${SAMPLES} samples per shape; whole run ${round(minutes, 1)} min)
- Before: the section "Growth within one project: cost by project size (issue 27, before)" above${before ? ` (run ${before.date.slice(0, 16).replace('T', ' ')} UTC, ${before.figures.samples} samples per shape, same machine type and method)` : ' (**not recorded**: no before figures in results.json)'}. Its pages were \`page\`/OFFSET and every total \`count(*) over ()\`; now pages continue from a cursor (keyset after the cursor's row) and \`totalItems\` comes from the counts maintained in each writing transaction (\`work_item_counts\`; a filter other than \`status\` counts over its index).
- Set-up as before: one project per size on a fresh database of the PostgreSQL server, grown by SQL (bench/seed-work.ts \`seedWork\`, synthetic corpus, no entries), statuses in turn (25 % \`in_progress\`), 1 % of the work items assigned to the caller; the service is entries/bun.ts with the list cache on (${round(LIST_CACHE_BYTES / 2 ** 20)} MiB). New: seedWork recomputes the project's maintained counts after its SQL inserts (checked: the first page-0 answer's \`totalItems\` is the number of rows seeded, and after all the writes of a size the counts equal the rows per status), and the table is vacuumed after seeding (\`vacuum (analyze)\`, as autovacuum would; the before run only analyzed it).
- **Cold** read: each timed \`GET …/work-items?size=${PAGE_SIZE}\` is the first read after a \`PATCH\` (a rename) of one of 100 work items spread over the project (checked: every cold answer has a new ETag); the PATCH is not timed. Shapes interleaved, one request at a time (Bun \`fetch\`, \`performance.now\`, after 3 warm-up rounds); p50 / p99 nearest-rank over ${SAMPLES} requests each (p99 is ${p99Rank} of ${SAMPLES}). The **middle** and **last** pages are read by cursor: a page at or past ${round(MAX_OFFSET_ROWS)} rows in may not be asked by \`page\` (src/http/pagination.ts), so their cursors are reached as a client reaches them, by walking \`meta.nextCursor\` from page 0, untimed (one request per page, each checked to start at its position; pages walked and seconds in the last table), and are the rows of the before run's middle and last pages (checked: the first row's position). **\`page=${DEEP_PAGE}\`** (offset ${round(DEEP_PAGE * PAGE_SIZE)}), which the runs before the bound read by OFFSET (at 1M the middle page, expected to grow), is now refused: every answer is checked to be a 400 naming \`page\`, timed in the same rounds without a PATCH before it (it reads no list), at every size. **Cached**: page 0 again with no write between.
- Writes: \`PATCH …/work-items/{id}\` on those 100 work items, wrk 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s after a 2 s warm-up each: **rename** (a new title each time: the before run's shape) and **status** (each PATCH moves the item to its next status: two maintained counts move), in turn rename, status, rename, status; req/s is the mean of the two runs of each (runs in brackets). The status/rename ratio is from one run, so the machine's noise touches both.

Cold reads (first read after a PATCH) and the cached page 0, \`size=${PAGE_SIZE}\`, p50 / p99 ms, after:

| rows in the project | page 0 | middle page, cursor | last page, cursor | \`page=${DEEP_PAGE}\` refused (400) | page 0, \`status=in_progress\` (25 %) | page 0, \`assigneeId=…\` (1 %) | page 0, cached |
|---:|---:|---:|---:|---:|---:|---:|---:|
${afterTable}

Before → after, p50 ms (after / before); before's middle and last pages were \`page=\` (OFFSET) reads of the same rows, and its \`page=${DEEP_PAGE}\` an OFFSET read that is now a 400:

| rows | page 0 | middle page | last page | \`page=${DEEP_PAGE}\` | \`status=in_progress\` | \`assigneeId=…\` | cached page 0 |
|---:|---:|---:|---:|---:|---:|---:|---:|
${compareTable}

Growth ${small.label} → ${large.label} (cold, after): ${growthText('page 0', g.page0)}; ${growthText('middle page (cursor)', g.middleCursor)}; ${growthText('last page (cursor)', g.lastCursor)}${(['status', 'assignee'] as const).map((shape) => (small.cold[shape] && large.cold[shape] ? `; \`${shape}\` p50 ${times(large.cold[shape]!.p50 / small.cold[shape]!.p50)}` : '')).join('')}.

\`PATCH\` throughput, req/s (mean of two runs; the runs) and latency (p50 / p99 ms, mean of the runs):

| rows | rename, before | rename, after | after / before | status change, after | status / rename (same run) | rename p50 / p99 | status p50 / p99 |
|---:|---:|---:|---:|---:|---:|---:|---:|
${patchTable}

EXPLAIN (ANALYZE, BUFFERS) execution time, ms, of the statement the service runs for each shape (captured from the work-items plugin's list code; prepared and executed 6 times first, as the service's driver prepares it: "(g)" where the plan cache chose the generic plan; a refused \`page=${DEEP_PAGE}\` runs none), and the before run's page 0 / last page:

| rows | page 0 | middle, cursor | last, cursor | \`status\` | \`assigneeId\` | before: page 0 / last | seeding | cursor walk (pages, untimed) | peak RSS | load avg |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${sqlTable}

Plans at ${large.label}:

${(['page0', 'middleCursor', 'lastCursor', 'status', 'assignee'] as const).map(plan).filter(Boolean).join('\n\n')}

Targets (issue 27; judged on a 10k → 1M run):

| target | figure at ${large.label} | status |
|---|---|---|
| cold page 0 p50 ≤ 15 ms, p99 ≤ 40 ms | ${pair(large.cold.page0)} ms | ${status(verdict.page0)} |
| any cursor page p50 ≤ 15 ms, p99 ≤ 40 ms | middle ${pair(large.cold.middleCursor)}, last ${pair(large.cold.lastCursor)} ms | ${status(verdict.cursor)} |
| growth ${small.label} → ${large.label} ≤ 1.5× (p50 and p99) | ${growthText('page 0', g.page0)}; ${growthText('middle', g.middleCursor)}; ${growthText('last', g.lastCursor)} | ${status(verdict.growthMet)} |
| filtered cold reads p50 ≤ 20 ms | \`status\` ${pair(large.cold.status)}, \`assigneeId\` ${pair(large.cold.assignee)} ms | ${status(verdict.filtered)} |
| \`page=${DEEP_PAGE}\` refused (400 naming \`page\`, checked on every answer) at every size, p50 ≤ 15 ms, p99 ≤ 40 ms | ${sizes.map((s) => `${s.label} ${pair(s.refused)}`).join(', ')} ms | ${status(verdict.refused)} |
| PATCH ≥ 0.9× before (rename, across runs) | ${verdict.patchVsBefore.map((p) => `${p.label} ${p.ratio === undefined ? '—' : times(p.ratio)}`).join(', ')} | ${status(verdict.patchVsBeforeMet)} |
| PATCH moving the counts ≥ 0.9× one that does not (status / rename, same run) | ${sizes.map((s) => `${s.label} ${times(s.patch.statusOverTitle)}`).join(', ')} | ${status(verdict.statusOverTitleMet)} |`,
  )
  record('growth', {
    phase: 'after',
    date,
    machine: machine(),
    command: 'npm run bench -- growth',
    figures: { samples: SAMPLES, sizes, peakRssMiB: Math.max(...sizes.map((s) => s.peakRssMiB)) },
  })
  console.log(`growth: cold page 0 ${small.label} → ${large.label}: p50 ${ms(small.cold.page0!.p50)} → ${ms(large.cold.page0!.p50)} ms in ${round(minutes, 1)} min`)
}
