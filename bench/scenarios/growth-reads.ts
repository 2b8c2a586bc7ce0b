/**
 * Growth within one project, reads: what a work-item list read costs as one project grows by SQL
 * to 10k, 100k and 1M work items, through the real service (list cache on). Per size, on a fresh
 * database (bench/seed/growth.ts):
 * - cold reads: each timed `GET …/work-items?size=100` is the first read after a `PATCH` of one
 *   work item of the project (the project's version moves, so the cached pages are stale): page 0,
 *   the middle page and the last page by cursor (reached, untimed, by walking `meta.nextCursor`
 *   from page 0: a page past the offset bound may not be asked by `page`), and page 0 filtered by
 *   `status=in_progress` (25 % of rows) and by `assigneeId` (1 %); sequential requests, shapes
 *   interleaved, p50 / p99 over BENCH_GROWTH_SAMPLES (default 100) each;
 * - `page=5000` (offset 500,000, past the offset bound at every size): each answer checked to be a
 *   400 naming `page`, timed like the cold reads (it reads no rows, so it must stay fast);
 * - cached reads of page 0 (the same page again, no write between) for comparison;
 * - EXPLAIN ANALYZE of the statement the service runs for each shape (bench/lib/explain.ts).
 */
import { loadavg } from 'node:os'
import { MAX_OFFSET_ROWS, offsetAllowed } from '../../src/http/pagination'
import type { GrowthReadSize, GrowthShapeName } from '../figures'
import { dropDatabase } from '../lib/database'
import { explainPrepared } from '../lib/explain'
import { listStatement } from '../lib/list-statement'
import { LIST_CACHE_BYTES, startService } from '../lib/processes'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { latency, round, type Latency } from '../lib/stats'
import { countDifferences, growProject, label, SIZES } from '../seed/growth'
import { TARGETS } from '../targets'

export const name = 'growth-reads'
export const target = TARGETS[name]

const SAMPLES = Number(process.env.BENCH_GROWTH_SAMPLES ?? 100)
/** Keep the bench databases (default: each is dropped once measured). */
const KEEP = process.env.BENCH_GROWTH_KEEP === '1'
const PAGE_SIZE = 100
const PORT = 3841
/** A page past the offset bound (src/http/pagination.ts) at every size: refused. */
const DEEP_PAGE = 5000

/** A request of one shape: its query string (after `size`), the page its rows are at, what it must answer. */
interface ShapeRequest {
  name: GrowthShapeName
  page: number
  query: string
  /** The list's query as the service parses it (for the EXPLAIN of its statement). */
  input: Record<string, string>
  cursor?: string
  expectTotal: number
  /** The position of the page's first row, where the shape has a known one. */
  firstPosition: number | null
}

type Body = { data: Array<{ position: number }>; meta: { page?: number; totalItems: number; nextCursor: string | null } }

async function measureSize(rows: number): Promise<GrowthReadSize> {
  const loadBefore = loadavg()[0]!
  console.log(`growth-reads: seeding ${round(rows)} work items …`)
  const prepared = await growProject('worktrack_bench_growth', rows)
  const { seeded } = prepared
  const base = `http://127.0.0.1:${PORT}/api/v1/projects/${seeded.projectId}/work-items`
  const headers = { authorization: `Bearer ${seeded.secret}` }
  const pages = Math.ceil(rows / PAGE_SIZE)
  if (pages < 2) throw new Error(`growth-reads: ${round(rows)} work items make ${pages} page of ${PAGE_SIZE}: the middle and last pages need at least 2`)
  const middle = Math.floor(pages / 2)
  const service = await startService(prepared.url, PORT, { config: { server: { listCacheBytes: LIST_CACHE_BYTES } } })
  try {
    const get = async (query: string) => {
      const started = performance.now()
      const answer = await fetch(`${base}?size=${PAGE_SIZE}${query}`, { headers })
      const text = await answer.text()
      const elapsed = performance.now() - started
      if (answer.status !== 200) throw new Error(`GET ?size=${PAGE_SIZE}${query}: ${answer.status} ${text.slice(0, 2000)}`)
      return { elapsed, body: JSON.parse(text) as Body, etag: answer.headers.get('etag') ?? '' }
    }
    const first = await get('&page=0')
    if (first.body.meta.totalItems !== rows) throw new Error(`growth-reads: page 0 of ${round(rows)} seeded work items says totalItems ${first.body.meta.totalItems}: the maintained counts are wrong`)
    // The cursors of the middle and last pages, untimed, as a client reaches them (each page checked to start at its position).
    const walkStarted = performance.now()
    const cursors = new Map<number, string>()
    let cursor = first.body.meta.nextCursor
    for (let page = 1; page < pages; page++) {
      if (!cursor) throw new Error(`growth-reads: page ${page - 1} of ${pages} has no nextCursor`)
      if (page === middle || page === pages - 1) cursors.set(page, cursor)
      if (page === pages - 1) break
      const { body } = await get(`&cursor=${cursor}`)
      if (body.data.length !== PAGE_SIZE || body.data[0]?.position !== page * PAGE_SIZE)
        throw new Error(`growth-reads: the cursor walk's page ${page} has ${body.data.length} items from position ${body.data[0]?.position}, not ${PAGE_SIZE} from ${page * PAGE_SIZE}`)
      cursor = body.meta.nextCursor
    }
    const walk = { pages: pages - 2, seconds: (performance.now() - walkStarted) / 1000 }
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
    /** A rename of the next of the project's 100 work items (untimed): the next read is cold. */
    const patch = async () => {
      const id = prepared.itemIds[renames++ % prepared.itemIds.length]
      const answer = await fetch(`${base}/${id}`, { method: 'PATCH', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ title: `Cold ${tag} ${renames}` }) })
      if (answer.status !== 200) throw new Error(`PATCH answered ${answer.status}: ${await answer.text()}`)
      await answer.arrayBuffer()
    }
    const etags = new Map<GrowthShapeName, string>()
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
    /** `page=5000`: a 400 naming `page`, answered before any row is read. */
    const refuse = async () => {
      const started = performance.now()
      const answer = await fetch(`${base}?size=${PAGE_SIZE}&page=${DEEP_PAGE}`, { headers })
      const text = await answer.text()
      const elapsed = performance.now() - started
      const field = answer.status === 400 ? (JSON.parse(text) as { errors?: Array<{ field?: string }> }).errors?.[0]?.field : undefined
      if (field !== 'page') throw new Error(`GET ?size=${PAGE_SIZE}&page=${DEEP_PAGE}: ${answer.status} ${text.slice(0, 2000)} (expected 400 naming page)`)
      return elapsed
    }
    // Warm-up rounds of every shape (connections, the service's statements, the buffers), then the samples.
    const times = new Map<GrowthShapeName, number[]>(shapes.map((shape) => [shape.name, []]))
    const refusedTimes: number[] = []
    for (let i = -3; i < SAMPLES; i++) {
      for (const shape of shapes) {
        await patch()
        const elapsed = await read(shape, true)
        if (i >= 0) times.get(shape.name)!.push(elapsed)
      }
      // In the same rounds, without a PATCH before it: it reads no list.
      const refused = await refuse()
      if (i >= 0) refusedTimes.push(refused)
    }
    const cold: GrowthReadSize['cold'] = {}
    for (const shape of shapes) cold[shape.name] = { page: shape.page, ...latency(times.get(shape.name)!) }
    // Cached: page 0 again and again, no write between (the first read stores it).
    await read(shapes[0]!, false)
    const cachedTimes: number[] = []
    for (let i = 0; i < SAMPLES; i++) cachedTimes.push(await read(shapes[0]!, false))
    const peakRssMiB = service.peakRssMiB()
    await service.stop()
    const differences = await countDifferences(prepared.url, seeded)
    if (differences.length) throw new Error(`growth-reads: after the PATCHes the maintained counts differ from the rows: ${differences.join('; ')}`)
    const statements = []
    for (const shape of shapes) {
      const request = { organizationId: seeded.organizationId, userId: seeded.userId, projectId: seeded.projectId, query: shape.input, size: PAGE_SIZE }
      statements.push({ name: shape.name, ...(await listStatement(shape.cursor === undefined ? { ...request, page: shape.page } : { ...request, cursor: shape.cursor })) })
    }
    const size: GrowthReadSize = {
      label: label(rows),
      rows,
      seedSeconds: prepared.seconds,
      cold,
      refused: { page: DEEP_PAGE, ...latency(refusedTimes) },
      walk,
      cached: latency(cachedTimes),
      sql: await explainPrepared(prepared.url, statements),
      load: [loadBefore, loadavg()[0]!],
      peakRssMiB,
    }
    console.log(`growth-reads: ${size.label}: cold page 0 p50 ${ms(cold.page0!.p50)} ms, middle cursor ${ms(cold.middleCursor!.p50)} ms, last cursor ${ms(cold.lastCursor!.p50)} ms, refused ${ms(size.refused!.p50)} ms, cached ${ms(size.cached.p50)} ms`)
    return size
  } finally {
    await service.stop()
    if (!KEEP) await dropDatabase(prepared.url)
  }
}

const ms = (value: number) => round(value, 1)
const pair = (l: Latency | undefined) => (l ? `${ms(l.p50)} / ${ms(l.p99)}` : '—')
const times = (value: number) => `${round(value, 2)}×`

export async function run(): Promise<void> {
  if (offsetAllowed(DEEP_PAGE, PAGE_SIZE)) throw new Error(`growth-reads: page ${DEEP_PAGE} of ${PAGE_SIZE} is within the offset bound (${MAX_OFFSET_ROWS} rows): the check of its refusal means nothing`)
  const started = performance.now()
  const sizes: GrowthReadSize[] = []
  for (const rows of SIZES) sizes.push(await measureSize(rows))
  const minutes = (performance.now() - started) / 60_000
  const [small, large] = [sizes[0]!, sizes.at(-1)!]
  const shapes: GrowthShapeName[] = ['page0', 'middleCursor', 'lastCursor', 'status', 'assignee']
  const pageOf = (s: GrowthReadSize, shape: GrowthShapeName) => (shape === 'middleCursor' || shape === 'lastCursor' ? ` (p. ${s.cold[shape]?.page})` : '')
  const coldTable = sizes.map((s) => `| ${round(s.rows)} | ${shapes.map((shape) => `${pair(s.cold[shape])}${pageOf(s, shape)}`).join(' | ')} | ${pair(s.refused)} | ${pair(s.cached)} |`).join('\n')
  const grew = (shape: GrowthShapeName) => {
    const [a, b] = [small.cold[shape], large.cold[shape]]
    return a && b ? `${shape} p50 ${times(b.p50 / a.p50)}, p99 ${times(b.p99 / a.p99)}` : `${shape} —`
  }
  const sqlTable = sizes.map((s) => `| ${round(s.rows)} | ${shapes.map((shape) => (s.sql[shape] ? `${ms(s.sql[shape]!.ms)}${s.sql[shape]!.generic ? ' (g)' : ''}` : '—')).join(' | ')} | ${round(s.seedSeconds)} s | ${s.walk ? `${round(s.walk.pages)} in ${round(s.walk.seconds, 1)} s` : '—'} | ${round(s.peakRssMiB, 1)} MiB | ${round(s.load[0], 1)} → ${round(s.load[1], 1)} |`).join('\n')
  const plan = (shape: GrowthShapeName) => {
    const e = large.sql[shape]
    return e ? `\`${shape}\` (${e.generic ? 'generic plan' : 'custom plan'}, ${ms(e.ms)} ms):\n\n\`\`\`sql\n${e.statement}\n\`\`\`\n\n\`\`\`\n${e.plan}\n\`\`\`` : ''
  }
  writeSection(
    name,
    `## Growth within one project: list reads by project size

${sectionHead(`\`npm run bench -- growth-reads\` (sizes ${SIZES.map((n) => round(n)).join(', ')}; ${SAMPLES} samples per shape; whole run ${round(minutes, 1)} min)`, ' — **2 cores, shared** (other work may run on it; the 1-minute load average before → after each size is in the last table)')}
- One project per size on a fresh database of the PostgreSQL server, grown by SQL (bench/seed/growth.ts: synthetic corpus, no entries, statuses in turn — 25 % \`in_progress\` —, 1 % of the work items assigned to the caller, maintained counts recomputed and checked, vacuumed); the service is entries/bun.ts with the list cache on (${round(LIST_CACHE_BYTES / 2 ** 20)} MiB). Pages continue from a cursor (keyset after the cursor's row); \`totalItems\` comes from the counts maintained in each writing transaction.
- **Cold** read: each timed \`GET …/work-items?size=${PAGE_SIZE}\` is the first read after a \`PATCH\` (a rename) of one of 100 work items spread over the project (checked: every cold answer has a new ETag); the PATCH is not timed. Shapes interleaved, one request at a time (Bun \`fetch\`, \`performance.now\`, after 3 warm-up rounds); p50 / p99 nearest-rank over ${SAMPLES} requests each. The **middle** and **last** pages are read by cursor: a page at or past ${round(MAX_OFFSET_ROWS)} rows in may not be asked by \`page\` (src/http/pagination.ts), so their cursors are reached by walking \`meta.nextCursor\` from page 0, untimed (each page checked to start at its position). **\`page=${DEEP_PAGE}\`** (offset ${round(DEEP_PAGE * PAGE_SIZE)}) must be refused: every answer is checked to be a 400 naming \`page\`, timed in the same rounds without a PATCH before it. **Cached**: page 0 again with no write between.

Cold reads (first read after a PATCH) and the cached page 0, \`size=${PAGE_SIZE}\`, p50 / p99 ms:

| rows in the project | page 0 | middle page, cursor | last page, cursor | page 0, \`status=in_progress\` (25 %) | page 0, \`assigneeId=…\` (1 %) | \`page=${DEEP_PAGE}\` refused (400) | page 0, cached |
|---:|---:|---:|---:|---:|---:|---:|---:|
${coldTable}

Growth ${small.label} → ${large.label} (cold): ${shapes.map(grew).join('; ')}.

EXPLAIN (ANALYZE, BUFFERS) execution time, ms, of the statement the service runs for each shape (taken from the work-items plugin's list code; prepared and executed 6 times first, as the service's driver prepares it: "(g)" where the plan cache chose the generic plan):

| rows | page 0 | middle, cursor | last, cursor | \`status\` | \`assigneeId\` | seeding | cursor walk (pages, untimed) | peak RSS | load avg |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${sqlTable}

Plans at ${large.label}:

${shapes.map(plan).filter(Boolean).join('\n\n')}

Targets, judged in the summary on a 10k → 1M run: ${Object.values(target).join(' ')}`,
  )
  recordResult(name, { samples: SAMPLES, sizes, peakRssMiB: Math.max(...sizes.map((s) => s.peakRssMiB)) })
}
