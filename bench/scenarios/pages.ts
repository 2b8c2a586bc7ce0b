/**
 * The live page is assembled from cached fragments: `GET /pages/{name}` with 20 components against
 * the same request with 1 component. Two pages made through API v1 (bench/seed/pages.ts), every
 * component fed once through `POST /api/component`, read with the `wt_session` cookie of a real
 * sign-in through the form; the p50 ratio is shown beside the req/s ratio. The service runs with a
 * metrics token: its `/metrics` gives the fragment cache's renders, which must be equal before and
 * after the measured runs, and the per-route answer counts, which show that every request was a 200.
 */
import { seededDatabase } from '../lib/database'
import { startService } from '../lib/processes'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS, DURATION_SECONDS } from '../lib/settings'
import { best, round } from '../lib/stats'
import { wrk, type LoadResult } from '../lib/wrk'
import { displayKey } from '../seed/display'
import { seedOrganization } from '../seed/organization'
import { createPage, signIn, SINGLE, WALL } from '../seed/pages'
import { LIMITS, TARGETS } from '../targets'

export const name = 'pages'
export const target = TARGETS[name]

const PORT = 3861
const BASE = `http://127.0.0.1:${PORT}`
const METRICS_TOKEN = 'bench-pages-metrics-token'
const ONE = 'one-component'
const TWENTY = 'twenty-components'

/** The fragment cache's counters in `/metrics`. */
interface FragmentStats {
  renders: number
  hits: number
  entries: number
  bytes: number
}

/** One scrape of `/metrics`: the count of `GET /pages/:pageName` answers by status, and the fragment cache's counters. */
async function scrape(): Promise<{ answers: Record<string, number>; fragments: FragmentStats }> {
  const text = await (await fetch(`${BASE}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
  const answers: Record<string, number> = {}
  for (const match of text.matchAll(/^worktrack_http_requests_total\{([^}]*)\} (\d+)/gm)) {
    const labels = Object.fromEntries([...match[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((label) => [label[1], label[2]]))
    if (labels.route === '/pages/:pageName' && labels.method === 'GET') answers[labels.status!] = (answers[labels.status!] ?? 0) + Number(match[2])
  }
  const value = (name: string) => {
    const sample = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)
    if (!sample) throw new Error(`/metrics has no ${name}`)
    return Number(sample[1])
  }
  const fragments = {
    renders: value('worktrack_display_fragment_renders_total'),
    hits: value('worktrack_display_fragment_hits_total'),
    entries: value('worktrack_display_fragment_cache_entries'),
    bytes: value('worktrack_display_fragment_cache_bytes'),
  }
  return { answers, fragments }
}

/**
 * wrk's mean latency and bytes read: its report's `Latency` line is not among parseWrk's figures,
 * so `done()` prints them on the `wrk-counts` line parseWrk reads into `counts`.
 */
const MEAN = `function done(summary, latency, requests)
  io.write(string.format('wrk-counts {"meanMicroseconds":%.1f,"bytes":%d,"requests":%d}\\n', latency.mean, summary.bytes, summary.requests))
end`

interface PageRun extends LoadResult {
  meanMs: number
  /** Bytes read per answer, headers included. */
  bytesPerAnswer: number
}

async function measure(name: string, cookie: string, duration?: number): Promise<PageRun> {
  const result = await wrk(`${BASE}/pages/${name}`, { headers: { cookie }, script: MEAN, duration })
  const { meanMicroseconds = NaN, bytes = 0, requests = 0 } = result.counts
  return { ...result, meanMs: meanMicroseconds / 1000, bytesPerAnswer: requests ? bytes / requests : 0 }
}

export async function run(): Promise<void> {
  const { url, seeded } = await seededDatabase('worktrack_bench_pages', async (db) => {
    const seeded = await seedOrganization(db, { scopes: ['dashboards:read', 'dashboards:write'] })
    return { ...seeded, displayKey: await displayKey(db, { id: seeded.userId, organizationId: seeded.organizationId }, 1_000_000) }
  })
  const service = await startService(url, PORT, { config: { server: { metricsToken: METRICS_TOKEN } } })
  const runs: { one: PageRun[]; twenty: PageRun[] } = { one: [], twenty: [] }
  let peakRssMiB = 0
  let sizes: { one: number; twenty: number }
  let cells: { one: number; twenty: number }
  let before: FragmentStats, after: FragmentStats
  let answers: Record<string, number>
  try {
    await createPage(BASE, seeded.secret, seeded.displayKey, ONE, 'One component', [SINGLE])
    await createPage(BASE, seeded.secret, seeded.displayKey, TWENTY, 'Twenty components', WALL)
    const cookie = await signIn(BASE, seeded.email)
    const page = async (name: string) => {
      const response = await fetch(`${BASE}/pages/${name}`, { headers: { cookie } })
      const body = await response.text()
      if (response.status !== 200) throw new Error(`GET /pages/${name} answered ${response.status}`)
      return { bytes: Buffer.byteLength(body), cells: body.match(/<section class="component"/g)?.length ?? 0 }
    }
    const [one, twenty] = [await page(ONE), await page(TWENTY)]
    if (one.cells !== 1 || twenty.cells !== WALL.length) throw new Error(`the pages show ${one.cells} and ${twenty.cells} components, not 1 and ${WALL.length}`)
    sizes = { one: one.bytes, twenty: twenty.bytes }
    cells = { one: one.cells, twenty: twenty.cells }
    // Warm-up: code paths compiled, every fragment cached (the first GETs above rendered them).
    await measure(ONE, cookie, 2)
    await measure(TWENTY, cookie, 2)
    const start = await scrape()
    before = start.fragments
    // Alternate the two pages so drift on a shared machine hits both alike.
    for (let round = 0; round < 2; round++) {
      runs.one.push(await measure(ONE, cookie))
      runs.twenty.push(await measure(TWENTY, cookie))
    }
    const end = await scrape()
    after = end.fragments
    answers = end.answers
    for (const [status, count] of Object.entries(start.answers)) answers[status] = (answers[status] ?? 0) - count
    peakRssMiB = service.peakRssMiB()
  } finally {
    await service.stop()
  }

  const one = best(runs.one)
  const twenty = best(runs.twenty)
  const ratio = one.requestsPerSecond / twenty.requestsPerSecond
  const p50Ratio = twenty.p50 / one.p50
  const renders = after.renders - before.renders
  const measured = [...runs.one, ...runs.twenty].reduce((sum, run) => sum + run.requests, 0)
  const notOk = Object.entries(answers).filter(([status]) => status !== '200').reduce((sum, [, count]) => sum + count, 0)
  const errors = [...runs.one, ...runs.twenty].reduce((sum, run) => sum + run.errors + run.non2xx, 0) + notOk
  const met = ratio <= LIMITS.pagesTimeRatio && renders === 0 && errors === 0
  const row = (label: string, run: PageRun, bytes: number) =>
    `| ${label} | ${round(run.requestsPerSecond)} | ${run.p50} | ${run.p99} | ${round(run.meanMs, 2)} | ${round(bytes)} | ${round(run.bytesPerAnswer)} |`
  writeSection(
    name,
    `## Live page: \`GET /pages/{name}\` with 20 components vs 1

${sectionHead(`\`npm run bench -- pages\` (wrk, 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s per run after a 2 s warm-up of each page, 2 alternating runs each, best shown; service on the PostgreSQL server, signed in through the form: \`wt_session\` cookie)`)}
- Pages made through API v1 with the default placement: \`${ONE}\` holds one 24-point line chart; \`${TWENTY}\` holds ${cells.twenty} components — 4 horizontal boxes, 4 vertical boxes, 4 bar charts (7–24 bars), 4 line charts (24–30 points, cubic), 4 pie charts (3–5 slices) — each fed once through \`POST /api/component\`.
- Fragment cache (the service's \`/metrics\`): renders ${before.renders} before the measured runs, ${after.renders} after (**${renders} during ${round(measured)} requests**); hits ${round(before.hits)} → ${round(after.hits)}; ${after.entries} fragments, ${round(after.bytes / 1024, 1)} KiB cached.
- Answers of \`GET /pages/:pageName\` during the runs (the service's \`/metrics\`): ${Object.entries(answers).map(([status, count]) => `${status}: ${round(count)}`).join(', ') || 'none'}.

| page | req/s | p50 ms | p99 ms | mean ms | HTML bytes | bytes read per answer (with headers) |
|---|---:|---:|---:|---:|---:|---:|
${row(`\`${ONE}\` (1 component)`, one, sizes.one)}
${row(`\`${TWENTY}\` (${cells.twenty} components)`, twenty, sizes.twenty)}

**Time of 20 over time of 1: ${round(ratio, 2)}× by req/s** (rps(1) / rps(20); p50 ratio ${round(p50Ratio, 2)}×), ${met ? 'met' : '**missed**'}: ${target.twenty} Peak RSS ${round(peakRssMiB, 1)} MiB. Errors or non-200 answers: ${errors}.
Per-run req/s — 1 component: ${runs.one.map((run) => round(run.requestsPerSecond)).join(', ')}; 20 components: ${runs.twenty.map((run) => round(run.requestsPerSecond)).join(', ')}.`,
  )
  const figures = (run: PageRun, bytes: number, components: number) => ({ requestsPerSecond: run.requestsPerSecond, p50: run.p50, p99: run.p99, meanMs: run.meanMs, bytes, components })
  recordResult(name, {
    one: figures(one, sizes.one, cells.one),
    twenty: figures(twenty, sizes.twenty, cells.twenty),
    ratio,
    p50Ratio,
    rendersBefore: before.renders,
    rendersAfter: after.renders,
    requests: measured,
    peakRssMiB,
    errors,
  })
  console.log(`pages: 1 component ${round(one.requestsPerSecond)} req/s, 20 components ${round(twenty.requestsPerSecond)} req/s = ${round(ratio, 2)}× the time (p50 ${round(p50Ratio, 2)}×); renders during the runs: ${renders}`)
}
