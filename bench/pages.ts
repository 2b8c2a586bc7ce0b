/**
 * Issue 17: the live page is assembled from cached fragments, so `GET /pages/{name}` with 20
 * components stays within 2× the time of the same request with 1 component. Two pages made through
 * API v1 (one line chart; 20 components of all five types, placed by the API's defaults), every
 * component fed once through `POST /api/component`, read with the `wt_session` cookie of a real
 * sign-in through the form. Target: rps(1) / rps(20) ≤ 2.0 (the p50 ratio is shown beside it).
 *
 * The fragment cache's counters are not among the service's metrics, so the service process runs
 * with a preload (a file written to /tmp, `bun --preload`) that finds the plugin's FragmentCache at
 * its first use and writes its stats() to a file on SIGUSR2: the renders before and after the
 * measured runs must be equal. The rest is the service as `entries/bun.ts` starts it, with a
 * metrics token so the per-route answer counts show that every request was a 200.
 */
import { rmSync, writeFileSync, existsSync, readFileSync } from 'node:fs'
import { sql } from 'drizzle-orm'
import { createDisplayAccount } from '../plugins/display/accounts'
import { openDatabase, queryRows } from '../src/db'
import { migrate } from '../src/migrate'
import { seedOrganization } from './seed'
import { CONNECTIONS, DURATION_SECONDS, freshDatabase, machine, recordResult, round, startProcess, wrk, writeSection, type LoadResult, type RunningProcess } from './lib'

const PORT = 3861
const BASE = `http://127.0.0.1:${PORT}`
const PASSWORD = 'bench password'
const METRICS_TOKEN = 'bench-pages-metrics-token'
const ONE = 'one-component'
const TWENTY = 'twenty-components'

type ComponentType = 'horizontalBox' | 'verticalBox' | 'barChart' | 'lineChart' | 'pieChart'
interface Seeded {
  type: ComponentType
  title: string
  data: Record<string, unknown>
}

const text = (value: string, size: number, color: string) => ({ value, size, color })
const horizontal = (title: string, left: string, middle: string, right: string, rightColor = '#4ade80'): Seeded => ({
  type: 'horizontalBox',
  title,
  data: { type: 'horizontalBox', backgroundColor: '#1e293b', leftText: text(left, 18, '#f8fafc'), middleText: text(middle, 32, '#38bdf8'), rightText: text(right, 18, rightColor) },
})
const vertical = (title: string, top: string, bottom: string, background = '#fff7ed', color = '#ea580c'): Seeded => ({
  type: 'verticalBox',
  title,
  data: { type: 'verticalBox', backgroundColor: background, topText: text(top, 16, '#334155'), bottomText: text(bottom, 28, color) },
})
/** A deterministic wave around `base` (no randomness: every run posts the same data). */
const wave = (count: number, base: number, swing: number, step = 0.7) => Array.from({ length: count }, (_, i) => Math.round((base + swing * Math.sin(i * step) + (swing / 3) * Math.cos(i * 1.9)) * 10) / 10)
const bars = (title: string, labels: string[], values: number[], color: string): Seeded => ({
  type: 'barChart',
  title,
  data: { type: 'barChart', backgroundColor: '#f8fafc', xNumber: false, height: 220, points: labels.map((x, i) => ({ x, y: values[i]!, color })) },
})
const line = (title: string, values: number[], color: string, fill: string, xNumber = true): Seeded => ({
  type: 'lineChart',
  title,
  data: {
    type: 'lineChart',
    backgroundColor: '#ecfeff',
    cubic: true,
    xNumber,
    fillColor: fill,
    height: 200,
    points: values.map((y, i) => ({ x: xNumber ? String(i) : `${String(i).padStart(2, '0')}:00`, y, color })),
  },
})
const pie = (title: string, slices: Array<[string, number, string]>): Seeded => ({
  type: 'pieChart',
  title,
  data: { type: 'pieChart', backgroundColor: '#fefce8', height: 240, points: slices.map(([x, y, color]) => ({ x, y, color })) },
})

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun']
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const HOURS = Array.from({ length: 24 }, (_, i) => `${String(i).padStart(2, '0')}h`)

/** The single component of the small page: a 24-point line chart (response time p95 over a day). */
const SINGLE: Seeded = line('Response time p95 (ms), last 24 h', wave(24, 180, 60), '#0e7490', '#67e8f9', false)

/** The 20 components of the large page: four of each type, charts of 7 to 30 points. */
const WALL: Seeded[] = [
  horizontal('Orders today', 'Orders', '1,204', '+4%'),
  horizontal('Revenue today', 'Revenue', '$48.2k', '+2.1%'),
  vertical('Uptime', 'Uptime', '99.98%'),
  vertical('Error rate', 'Errors', '0.12%', '#fef2f2', '#dc2626'),
  vertical('Deploys', 'Deploys', '14', '#f0fdf4', '#16a34a'),
  vertical('Queue depth', 'Queue', '82', '#eff6ff', '#2563eb'),
  bars('Deployments per weekday', WEEKDAYS, [12, 19, 15, 22, 9, 2, 1], '#2563eb'),
  SINGLE,
  pie('Work items', [
    ['Done', 58, '#16a34a'],
    ['In progress', 27, ''],
    ['Todo', 15, '#94a3b8'],
  ]),
  bars('Tickets closed per month', MONTHS, wave(12, 140, 35), '#7c3aed'),
  line('CPU %, last 30 min', wave(30, 42, 18, 0.4), '#b45309', '#fde68a'),
  pie('Traffic sources', [
    ['Direct', 41, '#2563eb'],
    ['Search', 28, '#16a34a'],
    ['Social', 14, '#db2777'],
    ['Referral', 11, '#f59e0b'],
    ['Email', 6, '#64748b'],
  ]),
  bars('Builds per hour', HOURS, wave(24, 30, 20, 0.5), '#0891b2'),
  line('Orders per day, last 30 days', wave(30, 1100, 250, 0.3), '#1d4ed8', '#bfdbfe'),
  pie('Browsers', [
    ['Chrome', 63, '#4e79a7'],
    ['Safari', 19, '#f28e2b'],
    ['Firefox', 8, '#e15759'],
    ['Edge', 6, '#76b7b2'],
    ['Other', 4, ''],
  ]),
  bars('Incidents per month', MONTHS, [3, 1, 4, 2, 0, 5, 2, 1, 3, 2, 1, 0], '#dc2626'),
  line('Memory MiB, last 24 h', wave(24, 620, 90, 0.35), '#6d28d9', '#ddd6fe'),
  pie('Plans', [
    ['Free', 1200, '#94a3b8'],
    ['Team', 430, '#2563eb'],
    ['Business', 120, '#7c3aed'],
    ['Enterprise', 18, '#0f172a'],
  ]),
  horizontal('Open tickets', 'Tickets', '37', '−5', '#f87171'),
  horizontal('Signups today', 'Signups', '312', '+11%'),
]

/** The preload of the service process: the fragment cache's stats to `BENCH_FRAGMENT_STATS` on SIGUSR2. */
const probeSource = (fragmentsModule: string) => `import { writeFileSync } from 'node:fs'
import { FragmentCache } from ${JSON.stringify(fragmentsModule)}
const caches = new Set()
const cached = FragmentCache.prototype.cached
// Catches the plugin's instance at its first use, then puts the method back untouched.
FragmentCache.prototype.cached = function (...args) {
  caches.add(this)
  FragmentCache.prototype.cached = cached
  return cached.apply(this, args)
}
process.on('SIGUSR2', () => writeFileSync(process.env.BENCH_FRAGMENT_STATS, JSON.stringify([...caches].map((cache) => cache.stats()))))
`

interface FragmentStats {
  entries: number
  bytes: number
  hits: number
  renders: number
}

/** The service's fragment-cache counters now (summed over its caches: it has one). */
async function fragmentStats(service: RunningProcess, file: string): Promise<FragmentStats> {
  rmSync(file, { force: true })
  process.kill(service.pid, 'SIGUSR2')
  const deadline = Date.now() + 5000
  while (!existsSync(file) || !readFileSync(file, 'utf8')) {
    if (Date.now() > deadline) throw new Error('the service wrote no fragment-cache stats within 5 s')
    await Bun.sleep(20)
  }
  const all = JSON.parse(readFileSync(file, 'utf8')) as FragmentStats[]
  if (!all.length) throw new Error('the probe saw no fragment cache in use')
  return all.reduce((a, b) => ({ entries: a.entries + b.entries, bytes: a.bytes + b.bytes, hits: a.hits + b.hits, renders: a.renders + b.renders }))
}

/** `/metrics`' count of `GET /pages/:pageName` answers by status. */
async function pageAnswers(): Promise<Record<string, number>> {
  const text = await (await fetch(`${BASE}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
  const answers: Record<string, number> = {}
  for (const match of text.matchAll(/^worktrack_http_requests_total\{([^}]*)\} (\d+)/gm)) {
    const labels = Object.fromEntries([...match[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((label) => [label[1], label[2]]))
    if (labels.route === '/pages/:pageName' && labels.method === 'GET') answers[labels.status!] = (answers[labels.status!] ?? 0) + Number(match[2])
  }
  return answers
}

/** API v1 with the bench key; fails on anything but 2xx. */
async function v1(secret: string, method: string, path: string, body?: unknown): Promise<{ id: string; name: string }> {
  const response = await fetch(`${BASE}${path}`, { method, headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`)
  return (JSON.parse(text) as { data: { id: string; name: string } }).data
}

let timestamp = 1_800_000_000

/** A page with `components`, placed by the API's defaults (no x/y/width/height), each fed once. */
async function createPage(secret: string, displayKey: string, name: string, title: string, components: Seeded[]): Promise<void> {
  const page = await v1(secret, 'POST', '/api/v1/pages', { name, title })
  for (const component of components) {
    const { id } = await v1(secret, 'POST', `/api/v1/pages/${page.id}/components`, { type: component.type, title: component.title })
    const response = await fetch(`${BASE}/api/component`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ componentId: id, apiKey: displayKey, timestamp: ++timestamp, data: component.data }),
    })
    if (response.status !== 200) throw new Error(`POST /api/component (${component.type}) answered ${response.status}: ${await response.text()}`)
  }
}

/** The `name=value` of a Set-Cookie named `name` among a response's cookies. */
function cookieOf(response: Response, name: string): string {
  const found = response.headers.getSetCookie().find((cookie) => cookie.startsWith(`${name}=`))
  if (!found) throw new Error(`${response.url} set no ${name} cookie (status ${response.status})`)
  return found.split(';')[0]!
}

/** Signs in through the form (GET for the CSRF cookie and field, POST form-encoded): the `wt_session=…` cookie. */
async function signIn(email: string): Promise<string> {
  const form = await fetch(`${BASE}/account/sign-in`)
  const signInCookie = cookieOf(form, 'wt_signin')
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1]
  if (!csrf) throw new Error('the sign-in form has no csrf field')
  const answer = await fetch(`${BASE}/account/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: signInCookie },
    body: new URLSearchParams({ email, password: PASSWORD, csrf }).toString(),
  })
  if (answer.status !== 303) throw new Error(`sign-in answered ${answer.status}: ${await answer.text()}`)
  return cookieOf(answer, 'wt_session')
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

export async function benchPages(): Promise<void> {
  const url = await freshDatabase('worktrack_bench_pages')
  const database = await openDatabase(url)
  await migrate(database.db)
  const seeded = await seedOrganization(database.db, { scopes: ['dashboards:read', 'dashboards:write'] })
  const displayKey = await createDisplayAccount(database.db, { id: seeded.userId, organizationId: seeded.organizationId }, 1_000_000)
  const [user] = await queryRows<{ email: string }>(database.db, sql`select email from users where id = ${seeded.userId}`)
  await database.close()

  const probe = `/tmp/worktrack-bench-pages-probe-${process.pid}.ts`
  const statsFile = `/tmp/worktrack-bench-pages-stats-${process.pid}.json`
  const config = `/tmp/worktrack-bench-pages-${process.pid}.json`
  writeFileSync(probe, probeSource(new URL('../plugins/display/fragments.ts', import.meta.url).pathname))
  writeFileSync(config, JSON.stringify({ server: { metricsToken: METRICS_TOKEN } }))
  const service = await startProcess([process.execPath, '--preload', probe, 'entries/bun.ts'], { DATABASE_URL: url, SERVICE_CONFIG: config, BENCH_FRAGMENT_STATS: statsFile }, PORT)
  const runs: { one: PageRun[]; twenty: PageRun[] } = { one: [], twenty: [] }
  let peakRssMiB = 0
  let sizes: { one: number; twenty: number }
  let cells: { one: number; twenty: number }
  let before: FragmentStats, after: FragmentStats
  let answers: Record<string, number>, answersBefore: Record<string, number>
  try {
    await createPage(seeded.secret, displayKey, ONE, 'One component', [SINGLE])
    await createPage(seeded.secret, displayKey, TWENTY, 'Twenty components', WALL)
    const cookie = await signIn(user!.email)
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
    before = await fragmentStats(service, statsFile)
    answersBefore = await pageAnswers()
    // Alternate the two pages so drift on a shared machine hits both alike.
    for (let round = 0; round < 2; round++) {
      runs.one.push(await measure(ONE, cookie))
      runs.twenty.push(await measure(TWENTY, cookie))
    }
    after = await fragmentStats(service, statsFile)
    answers = await pageAnswers()
    for (const [status, count] of Object.entries(answersBefore)) answers[status] = (answers[status] ?? 0) - count
    peakRssMiB = service.peakRssMiB()
  } finally {
    await service.stop()
    for (const file of [probe, statsFile, config]) rmSync(file, { force: true })
  }

  const best = (list: PageRun[]) => list.reduce((a, b) => (b.requestsPerSecond > a.requestsPerSecond ? b : a))
  const one = best(runs.one)
  const twenty = best(runs.twenty)
  const ratio = one.requestsPerSecond / twenty.requestsPerSecond
  const p50Ratio = twenty.p50 / one.p50
  const renders = after.renders - before.renders
  const measured = [...runs.one, ...runs.twenty].reduce((sum, run) => sum + run.requests, 0)
  const notOk = Object.entries(answers).filter(([status]) => status !== '200').reduce((sum, [, count]) => sum + count, 0)
  const errors = [...runs.one, ...runs.twenty].reduce((sum, run) => sum + run.errors + run.non2xx, 0) + notOk
  const met = ratio <= 2 && renders === 0 && errors === 0
  const row = (label: string, run: PageRun, bytes: number) =>
    `| ${label} | ${round(run.requestsPerSecond)} | ${run.p50} | ${run.p99} | ${round(run.meanMs, 2)} | ${round(bytes)} | ${round(run.bytesPerAnswer)} |`
  const date = new Date().toISOString()
  writeSection(
    'pages',
    `## Live page: \`GET /pages/{name}\` with 20 components vs 1 (issue 17)

- Date: ${date} · Machine: ${machine()}
- Command: \`npm run bench -- pages\` (wrk, 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s per run after a 2 s warm-up of each page, 2 alternating runs each, best shown; service on the PostgreSQL server, signed in through the form: \`wt_session\` cookie)
- Pages made through API v1 with the default placement: \`${ONE}\` holds one 24-point line chart; \`${TWENTY}\` holds ${cells.twenty} components — 4 horizontal boxes, 4 vertical boxes, 4 bar charts (7–24 bars), 4 line charts (24–30 points, cubic), 4 pie charts (3–5 slices) — each fed once through \`POST /api/component\`.
- Fragment cache (read from the service process by a \`bun --preload\` probe: its counters are not in \`/metrics\`): renders ${before.renders} before the measured runs, ${after.renders} after (**${renders} during ${round(measured)} requests**); hits ${round(before.hits)} → ${round(after.hits)}; ${after.entries} fragments, ${round(after.bytes / 1024, 1)} KiB cached.
- Answers of \`GET /pages/:pageName\` during the runs (the service's \`/metrics\`): ${Object.entries(answers).map(([status, count]) => `${status}: ${round(count)}`).join(', ') || 'none'}.

| page | req/s | p50 ms | p99 ms | mean ms | HTML bytes | bytes read per answer (with headers) |
|---|---:|---:|---:|---:|---:|---:|
${row(`\`${ONE}\` (1 component)`, one, sizes.one)}
${row(`\`${TWENTY}\` (${cells.twenty} components)`, twenty, sizes.twenty)}

**Time of 20 over time of 1: ${round(ratio, 2)}× by req/s** (rps(1) / rps(20); p50 ratio ${round(p50Ratio, 2)}×), target ≤ 2.0×: ${met ? 'met' : '**missed**'}. Peak RSS ${round(peakRssMiB, 1)} MiB. Errors or non-200 answers: ${errors}.
Per-run req/s — 1 component: ${runs.one.map((run) => round(run.requestsPerSecond)).join(', ')}; 20 components: ${runs.twenty.map((run) => round(run.requestsPerSecond)).join(', ')}.`,
  )
  const figures = (run: PageRun, bytes: number, components: number) => ({ requestsPerSecond: run.requestsPerSecond, p50: run.p50, p99: run.p99, meanMs: run.meanMs, bytes, components })
  recordResult('pages', {
    date,
    machine: machine(),
    command: 'npm run bench -- pages',
    figures: {
      one: figures(one, sizes.one, cells.one),
      twenty: figures(twenty, sizes.twenty, cells.twenty),
      ratio,
      p50Ratio,
      rendersBefore: before.renders,
      rendersAfter: after.renders,
      requests: measured,
      peakRssMiB,
      errors,
    },
  })
  console.log(`pages: 1 component ${round(one.requestsPerSecond)} req/s, 20 components ${round(twenty.requestsPerSecond)} req/s = ${round(ratio, 2)}× the time (p50 ${round(p50Ratio, 2)}×); renders during the runs: ${renders}`)
}
