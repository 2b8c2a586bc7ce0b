/**
 * The leak check: the service under a fixed mix of everything it serves — API v1 reads (work
 * items, members, teams) and writes (work items, entries), project search, `POST /api/component`
 * and MCP tool calls — for BENCH_MIXED_MINUTES (default 30), sampled every
 * BENCH_MIXED_SAMPLE_SECONDS (default 60): the service's RSS (read every second, averaged over
 * the window), and the req/s, p50 and p99 of that window. The verdict on memory is computed: the
 * least-squares slope of RSS over the second half of the run and the ratio of the last quarter's
 * mean RSS to the first quarter's. Timing is
 * never judged; any 5xx answer or transport error fails the run (exit code 1), so a short run
 * in CI catches breakage.
 */
import { sql } from 'drizzle-orm'
import { openDatabase, queryRows } from '../src/db'
import { migrate } from '../src/migrate'
import { componentBody, seedDisplayAccounts } from './display'
import { CONNECTIONS, freshDatabase, luaValue, machine, recordResult, round, startProcess, wrk, writeSection, type LoadResult, type RunningProcess } from './lib'
import { seedOrganization } from './seed'
import { seedWork, VOCABULARY } from './seed-work'

const MINUTES = Number(process.env.BENCH_MIXED_MINUTES ?? 30)
const SAMPLE_SECONDS = Number(process.env.BENCH_MIXED_SAMPLE_SECONDS ?? 60)
const WARMUP_SECONDS = 10
const PORT = 3891
/**
 * "No growth trend" needs the second half's RSS slope below this (60 MiB an hour: a leak that
 * fills a 1 GiB container in a working day). The garbage collector's sawtooth moves a window's
 * mean RSS by ~±10 MiB, which alone gives a 15-sample slope a standard error of ~0.5 MiB/min;
 * a tighter threshold would cry wolf. The standard error is printed next to the slope.
 */
export const SLOPE_THRESHOLD_MIB_PER_MINUTE = 1
/** …and the last quarter's mean RSS at most this multiple of the first quarter's. */
export const QUARTER_RATIO_THRESHOLD = 1.2
/** Shorter runs are reported, but not judged: a trend needs time (and at least 8 samples). */
export const MINIMUM_JUDGED_MINUTES = 10

const SCOPES = ['work_items:read', 'work_items:write', 'entries:read', 'entries:write', 'relationships:read', 'project_access:read', 'teams:read']

interface Fixture {
  secret: string
  readProject: string
  writeProject: string
  /** Work items of the read project (reads), of the write project (updates), and one entry on each of the latter. */
  readItems: string[]
  writeItems: string[]
  writeEntries: Array<{ workItemId: string; entryId: string }>
  displayBodies: string[]
}

async function seed(url: string): Promise<Fixture> {
  const database = await openDatabase(url)
  await migrate(database.db)
  const db = database.db
  const seeded = await seedOrganization(db, { scopes: SCOPES })
  // The read project: 2,000 work items and 2,000 entries to list and search, 50 members, and
  // 20 teams in the organization. It never changes during the run, so its reads cost the same
  // at the end as at the start.
  await seedWork(db, seeded, { workItems: 2_000, entries: 2_000 })
  await db.execute(sql`insert into users (id, organization_id, email, username, display_name, password_hash)
    select gen_random_uuid(), ${seeded.organizationId}, 'member' || i || '@bench.example', 'member' || i, 'Member ' || i, 'scrypt$none'
    from generate_series(1, 49) as i`)
  await db.execute(sql`insert into project_members (project_id, user_id, organization_id, access_level)
    select ${seeded.projectId}, id, ${seeded.organizationId}, 'viewer' from users where username like 'member%'`)
  await db.execute(sql`insert into teams (id, organization_id, name) select gen_random_uuid(), ${seeded.organizationId}, 'Team ' || i from generate_series(1, 20) as i`)
  // The write project: every create lands here, updates go to its first 20 work items.
  const [write] = await queryRows<{ id: string }>(
    db,
    sql`insert into projects (id, organization_id, name, created_by) values (gen_random_uuid(), ${seeded.organizationId}, 'Bench writes', ${seeded.userId}) returning id`,
  )
  await db.execute(sql`insert into project_members (project_id, user_id, organization_id, access_level) values (${write!.id}, ${seeded.userId}, ${seeded.organizationId}, 'owner')`)
  await seedWork(db, { ...seeded, projectId: write!.id }, { workItems: 20, entries: 20 })
  const readItems = await queryRows<{ id: string }>(db, sql`select id from work_items where project_id = ${seeded.projectId} order by number limit 20`)
  const writeEntries = await queryRows<{ workItemId: string; entryId: string }>(
    db,
    sql`select distinct on (e.work_item_id) e.work_item_id as "workItemId", e.id as "entryId" from entries e where e.project_id = ${write!.id} order by e.work_item_id, e.position`,
  )
  const display = await seedDisplayAccounts(db, seeded.organizationId, 8)
  await db.execute(sql`analyze`)
  await database.close()
  return {
    secret: seeded.secret,
    readProject: seeded.projectId,
    writeProject: write!.id,
    readItems: readItems.map((row) => row.id),
    writeItems: writeEntries.map((row) => row.workItemId),
    writeEntries,
    displayBodies: display.map(componentBody),
  }
}

interface RequestSpec {
  kind: string
  method: 'GET' | 'POST' | 'PATCH'
  path: string
  headers: Record<string, string>
  body?: string
  paths?: string[]
  bodies?: string[]
  mcp?: boolean
}

/** The same words, prefixes and pairs on every run. */
function searchTerms(count: number): string[] {
  let seed = 7
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  const word = () => VOCABULARY[Math.floor(next() * VOCABULARY.length)]!
  return Array.from({ length: count }, (_, i) => (i % 3 === 0 ? word() : i % 3 === 1 ? `${word()} ${word()}` : word().slice(0, 4)))
}

/** The fixed cycle every connection runs through: 20 requests, in this order. */
function requestMix(fixture: Fixture): RequestSpec[] {
  const v1 = { authorization: `Bearer ${fixture.secret}` }
  const json = { ...v1, 'content-type': 'application/json' }
  const mcpHeaders = { ...json, accept: 'application/json, text/event-stream' }
  const terms = searchTerms(60)
  const rpc = (name: string, args: Record<string, unknown>) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } })
  const list: RequestSpec = {
    kind: 'v1 list work items',
    method: 'GET',
    path: `/api/v1/projects/${fixture.readProject}/work-items?size=20`,
    paths: [`/api/v1/projects/${fixture.readProject}/work-items?size=20`, `/api/v1/projects/${fixture.readProject}/work-items?size=20&status=todo`, `/api/v1/projects/${fixture.readProject}/work-items?size=20&page=3`],
    headers: v1,
  }
  const members: RequestSpec = { kind: 'v1 list members', method: 'GET', path: `/api/v1/projects/${fixture.readProject}/members?size=20`, headers: v1 }
  const teams: RequestSpec = { kind: 'v1 list teams', method: 'GET', path: '/api/v1/teams?size=20', headers: v1 }
  const searchPaths = terms.map((q) => `/api/v1/projects/${fixture.readProject}/search?q=${encodeURIComponent(q)}&limit=20`)
  const search: RequestSpec = { kind: 'search', method: 'GET', path: searchPaths[0]!, paths: searchPaths, headers: v1 }
  const component: RequestSpec = { kind: 'POST /api/component', method: 'POST', path: '/api/component', headers: { 'content-type': 'application/json' }, body: fixture.displayBodies[0], bodies: fixture.displayBodies }
  const titles = terms.map((q, i) => JSON.stringify({ title: `Mixed ${i}: ${q}`, description: `Created under the mixed load (${q}).`, priority: i % 5 }))
  const createItem: RequestSpec = { kind: 'v1 create work item', method: 'POST', path: `/api/v1/projects/${fixture.writeProject}/work-items`, headers: json, body: titles[0], bodies: titles }
  const itemPaths = fixture.writeItems.map((id) => `/api/v1/projects/${fixture.writeProject}/work-items/${id}`)
  const patches = [{ status: 'in_progress' }, { status: 'todo', priority: 2 }, { title: 'Renamed under load', status: 'done' }].map((patch) => JSON.stringify(patch))
  const updateItem: RequestSpec = { kind: 'v1 update work item', method: 'PATCH', path: itemPaths[0]!, paths: itemPaths, headers: json, body: patches[0], bodies: patches }
  const entryBodies = terms.map((q) => JSON.stringify({ body: `A comment about ${q}.` }))
  const createEntry: RequestSpec = {
    kind: 'v1 create entry',
    method: 'POST',
    path: `/api/v1/work-items/${fixture.writeItems[0]}/entries`,
    paths: fixture.writeItems.map((id) => `/api/v1/work-items/${id}/entries`),
    headers: json,
    body: entryBodies[0],
    bodies: entryBodies,
  }
  const entryPaths = fixture.writeEntries.map((entry) => `/api/v1/work-items/${entry.workItemId}/entries/${entry.entryId}`)
  const entryPatches = [JSON.stringify({ body: 'Edited under load.' }), JSON.stringify({ kind: 'note' }), JSON.stringify({ body: 'Edited again.', kind: 'comment' })]
  const updateEntry: RequestSpec = { kind: 'v1 update entry', method: 'PATCH', path: entryPaths[0]!, paths: entryPaths, headers: json, body: entryPatches[0], bodies: entryPatches }
  const mcp = (kind: string, bodies: string[]): RequestSpec => ({ kind: `MCP ${kind}`, method: 'POST', path: '/mcp', headers: mcpHeaders, body: bodies[0], bodies, mcp: true })
  const mcpList = mcp('list_work_items', [rpc('list_work_items', { projectId: fixture.readProject, size: 20 }), rpc('list_work_items', { projectId: fixture.readProject, size: 20, status: 'done' })])
  const mcpSearch = mcp('search_project', terms.map((q) => rpc('search_project', { projectId: fixture.readProject, q, limit: 10 })))
  const mcpGet = mcp('get_work_item', fixture.readItems.map((id) => rpc('get_work_item', { projectId: fixture.readProject, workItemId: id })))
  const mcpUpdate = mcp(
    'update_work_item',
    fixture.writeItems.map((id, i) => rpc('update_work_item', { projectId: fixture.writeProject, workItemId: id, priority: i % 5 })),
  )
  return [list, component, members, mcpList, createItem, search, component, teams, updateItem, mcpSearch, list, component, createEntry, mcpGet, search, updateEntry, component, members, mcpUpdate, list]
}

interface KindCounts {
  count: number
  non2xx: number
  server: number
  toolErrors: number
}

interface Window {
  window: number
  seconds: number
  /** VmRSS at the end of the window, and the mean, minimum and maximum of its 1 s readings. */
  rssMiB: number
  rssMeanMiB: number
  rssMinMiB: number
  rssMaxMiB: number
  hwmMiB: number
  responses: number
  p50: number
  p99: number
  transportErrors: number
  errorSamples: string[]
  kinds: Record<string, KindCounts>
}

/** Least-squares slope of y over x, with its standard error (NaN below 3 points). */
function fitSlope(points: Array<[number, number]>): { slope: number; standardError: number } {
  const n = points.length
  if (n < 2) return { slope: 0, standardError: Number.NaN }
  const mx = points.reduce((sum, [x]) => sum + x, 0) / n
  const my = points.reduce((sum, [, y]) => sum + y, 0) / n
  const sxy = points.reduce((sum, [x, y]) => sum + (x - mx) * (y - my), 0)
  const sxx = points.reduce((sum, [x]) => sum + (x - mx) ** 2, 0)
  if (sxx === 0) return { slope: 0, standardError: Number.NaN }
  const slope = sxy / sxx
  const residuals = points.reduce((sum, [x, y]) => sum + (y - (my + slope * (x - mx))) ** 2, 0)
  return { slope, standardError: n > 2 ? Math.sqrt(residuals / (n - 2) / sxx) : Number.NaN }
}

const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length

/** A window's failures: transport errors, non-2xx answers and MCP tool errors. */
const failuresOf = (window: Window) => window.transportErrors + Object.values(window.kinds).reduce((sum, kind) => sum + kind.non2xx + kind.toolErrors, 0)

/** Every request kind answers 2xx (and MCP without a tool error) before the load starts. */
async function probe(base: string, specs: RequestSpec[]): Promise<void> {
  const seen = new Set<string>()
  for (const spec of specs) {
    if (seen.has(spec.kind)) continue
    seen.add(spec.kind)
    const response = await fetch(`${base}${spec.path}`, { method: spec.method, headers: spec.headers, body: spec.body })
    const text = await response.text()
    const refused = spec.mcp && (text.includes('"isError":true') || !text.includes('"result":'))
    if (!response.ok || refused) throw new Error(`${spec.kind}: ${spec.method} ${spec.path} answered ${response.status}: ${text.slice(0, 300)}`)
  }
}

/**
 * wrk's Lua for the mix: the requests of the cycle in turn, each position with its own turn
 * through its paths and bodies. Every request carries `X-Request-Id: bench-kind-<n>`, which the
 * service echoes, so `response()` can tally each answer under its kind — wrk's own figures do not
 * tell kinds apart. An MCP answer that is a tool refusal (`isError`) or no result is a tool error,
 * and a server error when it is no result (a JSON-RPC error) or its status is 5xx.
 */
function mixScript(specs: RequestSpec[], kinds: string[]): string {
  const mix = specs.map((spec) => ({
    method: spec.method,
    headers: { ...spec.headers, 'x-request-id': `bench-kind-${kinds.indexOf(spec.kind)}` },
    paths: spec.paths ?? [spec.path],
    bodies: spec.bodies ?? (spec.body === undefined ? undefined : [spec.body]),
  }))
  const mcpKinds = kinds.flatMap((kind, i) => (specs.some((spec) => spec.kind === kind && spec.mcp) ? [`["${i}"] = true`] : []))
  return `local mix = ${luaValue(mix)}
local mcp = {${mcpKinds.join(', ')}}
local turns, position = {}, 0
function request()
  position = position % #mix + 1
  local spec, turn = mix[position], turns[position] or 0
  turns[position] = turn + 1
  local body = spec.bodies and spec.bodies[turn % #spec.bodies + 1]
  return wrk.format(spec.method, spec.paths[turn % #spec.paths + 1], spec.headers, body)
end
function response(status, headers, body)
  local kind = string.match(headers["x-request-id"] or headers["X-Request-Id"] or "", "^bench%-kind%-(%d+)$") or "unknown"
  count(kind .. " " .. status)
  if mcp[kind] and status >= 200 and status < 300 then
    local result = string.find(body, '"result":', 1, true)
    if string.find(body, '"isError":true', 1, true) or not result then
      count(kind .. " tool")
      if not result or string.find(body, '"status":5%d%d') then count(kind .. " server") end
    end
  end
end`
}

/** The tallies of one wrk run (`<kind> <status>`, `<kind> tool`, `<kind> server`) by kind name. */
function kindsOf(counts: Record<string, number>, kinds: string[]): Record<string, KindCounts> {
  const result: Record<string, KindCounts> = {}
  for (const [name, n] of Object.entries(counts)) {
    const [index, what] = name.split(' ') as [string, string]
    const kind = (result[kinds[Number(index)] ?? 'unknown: no X-Request-Id of the mix in the answer'] ??= { count: 0, non2xx: 0, server: 0, toolErrors: 0 })
    if (what === 'tool') kind.toolErrors += n
    else if (what === 'server') kind.server += n
    else {
      const status = Number(what)
      kind.count += n
      if (status < 200 || status >= 300) kind.non2xx += n
      if (status >= 500) kind.server += n
    }
  }
  return result
}

/** One window: one wrk run of `seconds`, the service's VmRSS read every second meanwhile. */
async function runWindow(index: number, seconds: number, service: RunningProcess, script: string, kinds: string[]): Promise<Window> {
  const readings: number[] = []
  const sampler = setInterval(() => readings.push(service.rssMiB()), 1000)
  let load: LoadResult
  try {
    load = await wrk(`http://127.0.0.1:${PORT}/`, { script, tally: true, duration: seconds, timeout: 10 })
  } finally {
    clearInterval(sampler)
  }
  const rss = [...readings, service.rssMiB()]
  const socket = load.socketErrors
  return {
    window: index,
    seconds: load.seconds,
    rssMiB: rss.at(-1)!,
    rssMeanMiB: mean(rss),
    rssMinMiB: Math.min(...rss),
    rssMaxMiB: Math.max(...rss),
    hwmMiB: service.peakRssMiB(),
    responses: load.requests,
    p50: load.p50,
    p99: load.p99,
    transportErrors: load.errors,
    errorSamples: load.errors ? [`socket errors: connect ${socket.connect}, read ${socket.read}, write ${socket.write}, timeout ${socket.timeout}`] : [],
    kinds: kindsOf(load.counts, kinds),
  }
}

/** The warm-up (window 0), then the samples, back to back: one wrk run each. */
async function runLoad(service: RunningProcess, specs: RequestSpec[]): Promise<Window[]> {
  const windows = Math.max(1, Math.round((MINUTES * 60) / SAMPLE_SECONDS))
  const kinds = [...new Set(specs.map((spec) => spec.kind))]
  const script = mixScript(specs, kinds)
  const results: Window[] = []
  for (let index = 0; index <= windows; index++) {
    const window = await runWindow(index, index === 0 ? WARMUP_SECONDS : SAMPLE_SECONDS, service, script, kinds)
    results.push(window)
    console.log(
      `mixed: ${index === 0 ? 'warm-up' : `sample ${index}/${windows}`}: RSS ${round(window.rssMeanMiB, 1)} MiB (mean), ${round(window.responses / window.seconds)} req/s, p50 ${round(window.p50, 1)} ms, p99 ${round(window.p99, 1)} ms, errors ${failuresOf(window)}`,
    )
  }
  return results
}

export async function benchMixed(): Promise<void> {
  if (!(MINUTES > 0) || !(SAMPLE_SECONDS > 0)) throw new Error('BENCH_MIXED_MINUTES and BENCH_MIXED_SAMPLE_SECONDS must be positive numbers')
  const url = await freshDatabase('worktrack_bench_mixed')
  const seedStarted = performance.now()
  const fixture = await seed(url)
  const seedSeconds = (performance.now() - seedStarted) / 1000
  const specs = requestMix(fixture)

  const service = await startProcess([process.execPath, 'entries/bun.ts'], { DATABASE_URL: url, SERVICE_CONFIG: '' }, PORT)
  const startRss = service.rssMiB()
  let windows: Window[]
  let peakRss: number
  try {
    await probe(`http://127.0.0.1:${PORT}`, specs)
    windows = await runLoad(service, specs)
    peakRss = service.peakRssMiB()
  } finally {
    await service.stop()
  }

  const warmup = windows[0]!
  const samples = windows.slice(1)
  const minuteOf = (index: number) => ((index + 1) * SAMPLE_SECONDS) / 60

  // The memory trend: slope over the second half, last quarter against the first.
  const rss = samples.map((sample, i) => [minuteOf(i), sample.rssMeanMiB] as [number, number])
  const secondHalf = rss.slice(Math.floor(rss.length / 2))
  const { slope: slopePerMinute, standardError } = fitSlope(secondHalf)
  const quarter = Math.max(1, Math.floor(rss.length / 4))
  const firstQuarter = mean(rss.slice(0, quarter).map(([, y]) => y))
  const lastQuarter = mean(rss.slice(-quarter).map(([, y]) => y))
  const quarterRatio = lastQuarter / firstQuarter
  const judged = MINUTES >= MINIMUM_JUDGED_MINUTES && samples.length >= 8
  const growth = slopePerMinute >= SLOPE_THRESHOLD_MIB_PER_MINUTE || quarterRatio > QUARTER_RATIO_THRESHOLD
  const verdict = !judged
    ? `**Memory trend: not judged** — ${round(MINUTES, 2)} min with ${samples.length} samples is too short for a trend (the verdict needs ≥ ${MINIMUM_JUDGED_MINUTES} min and ≥ 8 samples); the figures are shown for the record.`
    : growth
      ? '**Memory trend: growth trend** — RSS keeps rising under a steady load: look for a leak.'
      : '**Memory trend: no growth trend.**'

  // Totals per kind, warm-up included (a failure during the warm-up is a failure).
  const totals = new Map<string, KindCounts>()
  for (const spec of specs) if (!totals.has(spec.kind)) totals.set(spec.kind, { count: 0, non2xx: 0, server: 0, toolErrors: 0 })
  for (const window of windows)
    for (const [kind, counts] of Object.entries(window.kinds)) {
      const total = totals.get(kind) ?? { count: 0, non2xx: 0, server: 0, toolErrors: 0 }
      total.count += counts.count
      total.non2xx += counts.non2xx
      total.server += counts.server
      total.toolErrors += counts.toolErrors
      totals.set(kind, total)
    }
  const transportErrors = windows.reduce((sum, window) => sum + window.transportErrors, 0)
  const serverErrors = [...totals.values()].reduce((sum, total) => sum + total.server, 0)
  const allFailures = windows.reduce((sum, window) => sum + failuresOf(window), 0)
  const errorSamples = [...new Set(windows.flatMap((window) => window.errorSamples))].slice(0, 5)
  const rank = (kind: string) => (kind.startsWith('v1 list') ? 0 : kind === 'search' ? 1 : kind.startsWith('v1') ? 2 : kind.startsWith('MCP') ? 4 : 3)
  const shareOf = (kind: string) => specs.filter((spec) => spec.kind === kind).length / specs.length
  const measuredSeconds = samples.reduce((sum, sample) => sum + sample.seconds, 0)
  const meanRate = samples.reduce((sum, sample) => sum + sample.responses, 0) / measuredSeconds
  const worstP99 = Math.max(...samples.map((sample) => sample.p99))
  const date = new Date().toISOString()

  writeSection(
    'mixed',
    `## Mixed load: RSS and latency over ${round(MINUTES, 2)} min of everything at once (the leak check)

- Date: ${date} · Machine: ${machine()}
- Command: \`BENCH_MIXED_MINUTES=${MINUTES} BENCH_MIXED_SAMPLE_SECONDS=${SAMPLE_SECONDS} npm run bench -- mixed\` (wrk, 1 thread, ${CONNECTIONS} connections taking turns through one cycle of the same ${specs.length} requests, each answer tallied under its kind by wrk's Lua; ${WARMUP_SECONDS} s warm-up, then one wrk run of ${SAMPLE_SECONDS} s per sample, back to back — the connections reopen at each window; service on the PostgreSQL server, seeded in ${round(seedSeconds)} s)
- Data: a read project with 2,000 work items, 2,000 entries and 50 members, 20 teams, 8 display accounts; every create goes to a separate write project, so the reads cost the same at the end as at the start.
- RSS: the service's VmRSS read every second, mean (and min–max) over each window — a single reading lands anywhere on the garbage collector's sawtooth; the trend is computed on the means. req/s, p50 and p99 are wrk's figures for that window's answers (all statuses); errors = transport errors + non-2xx + MCP tool errors.

| t (min) | RSS MiB (mean) | RSS min–max MiB | req/s | p50 ms | p99 ms | errors |
|---:|---:|---:|---:|---:|---:|---:|
${samples.map((sample, i) => `| ${round(minuteOf(i), 2)} | ${round(sample.rssMeanMiB, 1)} | ${round(sample.rssMinMiB, 1)}–${round(sample.rssMaxMiB, 1)} | ${round(sample.responses / sample.seconds)} | ${round(sample.p50, 1)} | ${round(sample.p99, 1)} | ${failuresOf(sample)} |`).join('\n')}

RSS at start (idle, before the warm-up): ${round(startRss, 1)} MiB; mean over the warm-up: ${round(warmup.rssMeanMiB, 1)} MiB; peak (VmHWM): ${round(peakRss, 1)} MiB.
Mean ${round(meanRate)} req/s; worst window p99 ${round(worstP99, 1)} ms (timing is recorded, never judged).

${verdict} Slope of RSS over the second half (${secondHalf.length} samples, least squares): **${slopePerMinute >= 0 ? '+' : ''}${round(slopePerMinute, 2)} MiB/min**${Number.isNaN(standardError) ? '' : ` (± ${round(standardError, 2)} standard error)`} (threshold < ${SLOPE_THRESHOLD_MIB_PER_MINUTE} MiB/min); last-quarter / first-quarter mean RSS (${quarter} sample${quarter === 1 ? '' : 's'} each): **${round(quarterRatio, 3)}** (threshold ≤ ${QUARTER_RATIO_THRESHOLD}). "No growth trend" is stated only when both hold on a run of ≥ ${MINIMUM_JUDGED_MINUTES} min.

| kind | share of the mix | answers | non-2xx | 5xx (MCP: 5xx refusals) | MCP tool errors |
|---|---:|---:|---:|---:|---:|
${[...totals.entries()].sort(([a], [b]) => rank(a) - rank(b)).map(([kind, total]) => `| ${kind} | ${round(shareOf(kind) * 100)} % | ${round(total.count)} | ${total.non2xx} | ${total.server} | ${total.toolErrors} |`).join('\n')}

Transport errors (wrk's socket errors: connect, read — e.g. a connection the server closed —, write, and 10 s timeouts): ${transportErrors}${errorSamples.length ? ` (${errorSamples.join('; ')})` : ''}. The run fails on any 5xx or transport error.`,
  )
  recordResult('mixed', {
    date,
    machine: machine(),
    command: `BENCH_MIXED_MINUTES=${MINUTES} BENCH_MIXED_SAMPLE_SECONDS=${SAMPLE_SECONDS} npm run bench -- mixed`,
    figures: {
      minutes: MINUTES,
      samples: samples.length,
      requestsPerSecond: meanRate,
      worstP99,
      firstRssMiB: samples[0]!.rssMeanMiB,
      lastRssMiB: samples.at(-1)!.rssMeanMiB,
      peakRssMiB: peakRss,
      slopeMiBPerMinute: slopePerMinute,
      slopeStandardError: Number.isNaN(standardError) ? null : standardError,
      quarterRatio,
      growthTrend: judged ? growth : null,
      errors: allFailures,
      serverErrors: serverErrors + transportErrors,
    },
  })
  console.log(
    `mixed: ${round(meanRate)} req/s mean, RSS ${round(samples[0]!.rssMeanMiB, 1)} → ${round(samples.at(-1)!.rssMeanMiB, 1)} MiB, slope ${round(slopePerMinute, 2)} MiB/min, ratio ${round(quarterRatio, 3)}: ${judged ? (growth ? 'growth trend' : 'no growth trend') : 'not judged (short run)'}; 5xx ${serverErrors}, transport errors ${transportErrors}, all failures ${allFailures}`,
  )
  if (serverErrors > 0 || transportErrors > 0) throw new Error(`mixed: ${serverErrors} 5xx answers and ${transportErrors} transport errors under the mixed load`)
}
