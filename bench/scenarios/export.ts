/**
 * A project's export (`GET /api/v1/projects/{projectId}/export`, NDJSON streamed from one
 * REPEATABLE READ snapshot, pages of 200, about a MiB queued for the client) through the real
 * service (entries/bun.ts) on a fresh database of the PostgreSQL server, one project of
 * BENCH_EXPORT_ITEMS work items (default 1,000,000; bench/seed/export.ts), in one run:
 * - the export read as fast as curl can (its output counted by grep, no other work on the cores):
 *   seconds, work items/s, bytes, and the service's VmRSS every 100 ms meanwhile (before, peak,
 *   right after, 5 s later) with VmHWM; where the cores went and what the database sessions were
 *   doing (pg_stat_activity every 50 ms);
 * - a slow reader: curl `--limit-rate 200k` for 10 s, the service's VmRSS every 100 ms (it must stay
 *   flat: the export waits for its client), then curl killed and the time until the snapshot's
 *   transaction is given back;
 * - the database ceiling, the service stopped: psql reading the same rows with the export's
 *   work-item statement (its columns built from the plugins' code, checked against the statement
 *   pg_stat_activity showed during the export) in one `\copy (…) to '/dev/null'`, no pages, twice.
 */
import { readFileSync, rmSync, statSync } from 'node:fs'
import { sql } from 'drizzle-orm'
import { fieldsColumn } from '../../plugins/custom-fields/api'
import { labelsColumn } from '../../plugins/labels/api'
import { columnsOf, type WorkItemExtension } from '../../plugins/work-items/api'
import { toQuery } from '../../src/statements'
import type { ExportCeiling, RssTrace } from '../figures'
import { cpuMeter } from '../lib/cpu'
import { dropDatabase, seededDatabase, withClient } from '../lib/database'
import { activitySampler, activityTable } from '../lib/pg-activity'
import { startService, type RunningProcess } from '../lib/processes'
import { perSecond, rssSampler } from '../lib/rss'
import { recordResult, sectionHead, serviceCommit, writeSection } from '../lib/results'
import { fitSlope, round } from '../lib/stats'
import { EXPORT_SCOPES, seedExportProject } from '../seed/export'
import { LIMITS, TARGETS } from '../targets'

export const name = 'export'
export const target = TARGETS[name]

const ITEMS = Number(process.env.BENCH_EXPORT_ITEMS ?? 1_000_000)
/** BENCH_EXPORT_KEEP=1 keeps the seeded database (about 2.5 GB at a million work items) after the run. */
const KEEP = process.env.BENCH_EXPORT_KEEP === '1'
const PORT = 3878
const SAMPLE_MS = 100
const SLOW_RATE = '200k'
const SLOW_SECONDS = 10
const SLOW_FILE = `/tmp/worktrack-bench-export-${process.pid}.ndjson`
const MiB = 1024 * 1024

/** What the sessions' statements are, by how their text begins (pg_stat_activity keeps 60 characters here). */
const STATEMENTS: Array<[RegExp, string]> = [
  [/^select w\.id, w\.project_id/i, 'a page of 200 work items'],
  [/^(begin|commit|rollback)/i, 'begin / commit'],
]


function traceOf(samples: Array<[number, number]>): RssTrace {
  return {
    firstMiB: samples[0]![1],
    peakMiB: Math.max(...samples.map(([, mib]) => mib)),
    lastMiB: samples.at(-1)![1],
    slopeMiBPerSecond: fitSlope(samples).slope,
    samples: samples.length,
  }
}

/**
 * The export's work-item statement (plugins/work-items/service.ts `exportSection`, the extensions
 * labels and custom fields registered in the registry's order) without its keyset and limit: every
 * row of the project in one statement. Its text and the values of its `$n`.
 */
function workItemStatement(organizationId: string, projectId: string): { text: string; values: unknown[] } {
  const extensions = [
    { property: 'labels', column: labelsColumn },
    { property: 'fields', column: fieldsColumn },
  ] as unknown as WorkItemExtension[]
  const { sql: text, params } = toQuery(sql`select ${columnsOf(extensions, sql`${organizationId}`)}, w.number::text as after from work_items w
                 where w.organization_id = ${organizationId} and w.project_id = ${projectId}
                 order by w.number`)
  return { text, values: params }
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim()

/** The statement with its values written in (UUIDs, as literals) on one line, for psql's `\copy`. */
function inlined(statement: { text: string; values: unknown[] }): string {
  return oneLine(statement.text.replace(/\$(\d+)/g, (_, n: string) => `'${String(statement.values[Number(n) - 1]).replace(/'/g, "''")}'`))
}

/** The first text of the service's work-item page statement pg_stat_activity shows, polled until `done` resolves. */
async function watchStatement(url: string, done: Promise<unknown>): Promise<string | null> {
  let finished = false
  void done.finally(() => (finished = true))
  return withClient(url, async (client) => {
    while (!finished) {
      const [row] = await client`select query from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and query like 'select w.id, w.project_id%' limit 1`
      if (row) return String(row.query)
      await Bun.sleep(100)
    }
    return null
  })
}

/** Seconds until no session of the database (but ours) has a transaction open; null past `timeoutSeconds`. */
function releaseSeconds(url: string, timeoutSeconds = 45): Promise<number | null> {
  return withClient(url, async (client) => {
    const started = performance.now()
    while ((performance.now() - started) / 1000 < timeoutSeconds) {
      const [row] = await client`select count(*)::int as open from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend' and xact_start is not null`
      if (row!.open === 0) return (performance.now() - started) / 1000
      await Bun.sleep(50)
    }
    return null
  })
}

/** psql reading every row of the statement to /dev/null: rows and seconds. */
async function ceilingRun(url: string, statement: string): Promise<ExportCeiling> {
  const started = performance.now()
  const psql = Bun.spawn(['psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', `\\copy (${statement}) to '/dev/null'`], { stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(psql.stdout).text(), new Response(psql.stderr).text(), psql.exited])
  const seconds = (performance.now() - started) / 1000
  if (code !== 0) throw new Error(`export: psql \\copy exited ${code}: ${err.slice(0, 500)}`)
  const rows = Number(/COPY (\d+)/.exec(out)?.[1] ?? NaN)
  return { rows, seconds, itemsPerSecond: rows / seconds }
}

export async function run(): Promise<void> {
  const seedStarted = performance.now()
  const { url, seeded } = await seededDatabase('worktrack_bench_export', (db) => seedExportProject(db, ITEMS))
  const seedSeconds = (performance.now() - seedStarted) / 1000
  console.log(`export: seeded ${round(ITEMS)} work items (${round(seeded.labelled)} labels on them) in ${round(seedSeconds)} s`)
  const exportUrl = `http://127.0.0.1:${PORT}/api/v1/projects/${seeded.projectId}/export`
  const statement = workItemStatement(seeded.organizationId, seeded.projectId)

  let fast: { status: number; bytes: number; firstByteSeconds: number; seconds: number; lines: number; curlExit: number }
  let rss: ReturnType<typeof traceOf> & { afterMiB: number; settledMiB: number; hwmBeforeMiB: number; hwmMiB: number }
  let cpu: ReturnType<ReturnType<typeof cpuMeter>>
  let activity: Awaited<ReturnType<ReturnType<typeof activitySampler>>>
  let seen: string | null
  let slow: RssTrace & { bytes: number; lines: number; releaseSeconds: number | null }
  let traces: { fast: string; slow: string }
  let peakRssMiB: number
  let runs: ExportCeiling[]
  try {
    const service = await startService(url, PORT)
    try {
      await Bun.sleep(1000)
      const hwmBeforeMiB = service.peakRssMiB()
      // As fast as the client can: curl into grep counting the work-item lines; curl's figures on stderr.
      const script = `curl -sS -H "authorization: Bearer $KEY" -w '%{stderr}%{http_code} %{size_download} %{time_starttransfer} %{time_total}\\n' "$URL" | grep -c '^{"type":"work_item",'; echo "curl-exit \${PIPESTATUS[0]}" >&2`
      const sampler = activitySampler(url, STATEMENTS)
      const meter = cpuMeter(service.pid)
      const stopRss = rssSampler(service, SAMPLE_MS)
      const curl = Bun.spawn(['bash', '-c', script], { env: { ...process.env, KEY: seeded.secret, URL: exportUrl }, stdout: 'pipe', stderr: 'pipe' })
      const outputs = Promise.all([new Response(curl.stdout).text(), new Response(curl.stderr).text(), curl.exited])
      const watched = watchStatement(url, outputs)
      const [out, err] = await outputs
      const samples = stopRss()
      cpu = meter()
      activity = await sampler()
      seen = await watched
      const hwmMiB = service.peakRssMiB()
      const afterMiB = service.rssMiB()
      await Bun.sleep(5000)
      const settledMiB = service.rssMiB()
      const figures = /^(\d+) (\d+) ([\d.]+) ([\d.]+)$/m.exec(err)
      if (!figures) throw new Error(`export: curl said ${err.slice(0, 500)}`)
      fast = {
        status: Number(figures[1]),
        bytes: Number(figures[2]),
        firstByteSeconds: Number(figures[3]),
        seconds: Number(figures[4]),
        lines: Number(out.trim()),
        curlExit: Number(/curl-exit (\d+)/.exec(err)?.[1] ?? NaN),
      }
      rss = { ...traceOf(samples), afterMiB, settledMiB, hwmBeforeMiB, hwmMiB }
      console.log(
        `export: ${round(fast.lines)} work items, ${round(fast.bytes / MiB, 1)} MiB in ${round(fast.seconds, 2)} s (${round(ITEMS / fast.seconds)} items/s; status ${fast.status}, curl exit ${fast.curlExit}); RSS ${round(rss.firstMiB, 1)} → peak ${round(rss.peakMiB, 1)} → ${round(afterMiB, 1)} MiB, VmHWM ${round(hwmMiB, 1)} MiB`,
      )

      // A slow reader, then gone.
      const stopSlowRss = rssSampler(service, SAMPLE_MS)
      const reader = Bun.spawn(['curl', '-sS', '--limit-rate', SLOW_RATE, '-H', `authorization: Bearer ${seeded.secret}`, '-o', SLOW_FILE, exportUrl], { stdout: 'ignore', stderr: 'ignore' })
      await Bun.sleep(SLOW_SECONDS * 1000)
      const slowSamples = stopSlowRss()
      reader.kill('SIGTERM')
      await reader.exited
      const released = await releaseSeconds(url)
      const text = readFileSync(SLOW_FILE, 'utf8')
      traces = { fast: perSecond(samples), slow: perSecond(slowSamples) }
      slow = { ...traceOf(slowSamples), bytes: statSync(SLOW_FILE).size, lines: text.split('\n').length - 1, releaseSeconds: released }
      rmSync(SLOW_FILE, { force: true })
      if (!(await fetch(`http://127.0.0.1:${PORT}/health`)).ok) throw new Error('export: the service stopped answering /health after the slow reader')
      console.log(
        `export: slow reader (${SLOW_RATE}/s, ${SLOW_SECONDS} s): ${round(slow.bytes / 1024)} KiB, RSS ${round(slow.firstMiB, 1)} → peak ${round(slow.peakMiB, 1)} → ${round(slow.lastMiB, 1)} MiB; snapshot given back ${released === null ? 'NOT within 45 s' : `${round(released, 2)} s`} after it went away`,
      )
      peakRssMiB = service.peakRssMiB()
    } finally {
      rmSync(SLOW_FILE, { force: true })
      await service.stop()
    }

    // The database's part alone, the service stopped: the same rows by the same statement, no pages.
    const ceilingText = inlined(statement)
    runs = [await ceilingRun(url, ceilingText), await ceilingRun(url, ceilingText)]
  } finally {
    // The seeded database goes (BENCH_EXPORT_KEEP=1 keeps it).
    if (!KEEP) await dropDatabase(url)
  }
  const best = runs.reduce((a, b) => (b.itemsPerSecond > a.itemsPerSecond ? b : a))
  if (best.rows !== ITEMS) throw new Error(`export: psql read ${best.rows} rows, not ${ITEMS}`)
  // pg_stat_activity keeps the first 1 kB of the text, and shows a later page's (its keyset condition taken out here).
  const shown = seen === null ? null : oneLine(seen).replace(/ and w\.number > \$\d+/, '')
  const cut = shown?.lastIndexOf(' order by w.number') ?? -1
  const statementMatches = shown === null ? null : oneLine(statement.text).startsWith(cut >= 0 ? shown.slice(0, cut) : shown.slice(0, -8))
  const itemsPerSecond = ITEMS / fast.seconds
  const ratio = itemsPerSecond / best.itemsPerSecond
  const complete = fast.status === 200 && fast.curlExit === 0 && fast.lines === ITEMS
  const commit = serviceCommit()
  const slowReader = { rate: SLOW_RATE, seconds: SLOW_SECONDS, bytes: slow.bytes, releaseSeconds: slow.releaseSeconds, firstMiB: slow.firstMiB, peakMiB: slow.peakMiB, lastMiB: slow.lastMiB, slopeMiBPerSecond: slow.slopeMiBPerSecond, samples: slow.samples }

  const mib = (value: number) => round(value, 1)
  const judged = ITEMS >= 1_000_000
  // The kernel folds a process's RSS into VmHWM lazily: the judged peak is the higher of it and the sampled VmRSS.
  const peakMiB = Math.max(rss.hwmMiB, rss.peakMiB)
  const memoryMet = peakMiB < LIMITS.exportPeakRssMiB
  const slowTrend = slow.slopeMiBPerSecond * SLOW_SECONDS
  const slowMet = slowTrend <= LIMITS.exportSlowReaderGrowthMiB && slow.releaseSeconds !== null
  writeSection(
    name,
    `## Project export (NDJSON, one snapshot, ${round(ITEMS)} work items)

${sectionHead(`\`npm run bench -- export\` (BENCH_EXPORT_ITEMS=${ITEMS}; service on the PostgreSQL server)`, ' — **2 cores, shared**')}
- The service (entries/bun.ts, default configuration, engine heap sized as for 512 MiB, commit ${commit}) on a fresh database: one organization, its owner's API key (${EXPORT_SCOPES.map((scope) => `\`${scope}\``).join(', ')}), one project of ${round(ITEMS)} work items seeded by SQL in ${round(seedSeconds)} s (bench/seed/export.ts: titles of 100 characters, one in seven with quotes and accented letters, descriptions of 200 with a line break, statuses and priorities in turn, 1 % assigned, one in five with a due date), 5 labels of the organization carried ${round(seeded.labelled)} times (one work item in ten, a second label on one in twenty-five); no entries, relationships or custom field values.
- **Fast reader**: \`curl\` of \`GET /api/v1/projects/{projectId}/export\` into \`grep -c\` counting the work-item lines (nothing else on the cores). Seconds: curl's \`time_total\`. The service's VmRSS every ${SAMPLE_MS} ms from just before the request to its end (${rss.samples} samples), then right after and 5 s later; VmHWM (the kernel's peak) before and right after. CPU in cores (/proc) during the export.
- **Slow reader**: \`curl --limit-rate ${SLOW_RATE}\` for ${SLOW_SECONDS} s, VmRSS every ${SAMPLE_MS} ms, then curl killed and the time until no session of the database has a transaction open (the export's snapshot given back).
- **Database ceiling** (reported, not judged), the service stopped: psql \`\\copy (…) to '/dev/null'\` of the export's work-item statement (the same columns: the work item's, its key, labels and field values as JSON; \`order by w.number\`) without its keyset and limit: every row in one statement, in the database's text format — no pages, no JSON encoding, no HTTP. Twice; the better run. The statement's text ${statementMatches === null ? 'was not seen in pg_stat_activity during the export' : statementMatches ? 'begins as the service\'s did in pg_stat_activity during the export' : '**differs from** the one pg_stat_activity showed during the export'}.
- ${target.memory} ${target.throughput} ${target.slowReader}

| fast reader | |
|---|---:|
| work-item lines counted / expected | ${round(fast.lines)} / ${round(ITEMS)}${complete ? '' : ' **(incomplete)**'} |
| status, curl exit code | ${fast.status}, ${fast.curlExit} |
| bytes | ${round(fast.bytes)} (${mib(fast.bytes / MiB)} MiB, ${round(fast.bytes / ITEMS)} per work item) |
| first byte / last byte | ${round(fast.firstByteSeconds * 1000, 1)} ms / **${round(fast.seconds, 2)} s** |
| work items/s | **${round(itemsPerSecond)}** (${mib(fast.bytes / MiB / fast.seconds)} MiB/s) |
| service VmRSS before / peak during / right after / 5 s later | ${mib(rss.firstMiB)} / **${mib(rss.peakMiB)}** / ${mib(rss.afterMiB)} / ${mib(rss.settledMiB)} MiB |
| service VmHWM before / right after | ${mib(rss.hwmBeforeMiB)} / **${mib(rss.hwmMiB)} MiB** (peak judged: ${mib(peakMiB)} MiB, the higher of it and the sampled VmRSS; target < ${LIMITS.exportPeakRssMiB} MiB${judged ? `: ${memoryMet ? 'met' : '**missed**'}` : ': not judged, fewer than 1M work items'}) |
| VmRSS slope during the export | ${round(rss.slopeMiBPerSecond, 3)} MiB/s |
| cores: service / PostgreSQL / the rest (curl, grep, anything else on the machine) / machine | ${round(cpu.service, 2)} / ${round(cpu.postgres, 2)} / ${round(cpu.other + cpu.bench, 2)} / ${round(cpu.busy, 2)} |

Service VmRSS during the export, the highest sample of each second (MiB): ${traces.fast}.

psql \`\\copy\` of the same rows: ${runs.map((r) => `${round(r.seconds, 2)} s`).join(', ')} = **${round(best.itemsPerSecond)} items/s**; the export reaches **${round(ratio, 2)}×** that.

What the database sessions were doing during the export (pg_stat_activity every 50 ms; share of the busy-session samples, top wait; "idle in transaction" is the snapshot's session waiting while the service decodes, encodes and queues a page: the next page is read only after it):

${activityTable([['export', activity]])}

Slow reader (${SLOW_RATE}/s, ${SLOW_SECONDS} s, ${slow.samples} samples): it got ${round(slow.bytes / 1024)} KiB (${round(slow.lines)} lines); the service's VmRSS ${mib(slow.firstMiB)} MiB at its start, peak **${mib(slow.peakMiB)}**, ${mib(slow.lastMiB)} at its end (least-squares trend ${round(slowTrend, 1)} MiB over the ${SLOW_SECONDS} s, ${slowMet ? 'flat' : '**growing**'}; each second's highest sample: ${traces.slow}); the snapshot was given back ${slow.releaseSeconds === null ? '**not within 45 s**' : `${round(slow.releaseSeconds, 2)} s`} after curl was killed. Peak RSS of the service over the whole run (VmHWM): ${mib(peakRssMiB)} MiB.`,
  )
  recordResult(name, {
    items: ITEMS,
    labelled: seeded.labelled,
    seedSeconds,
    status: fast.status,
    bytes: fast.bytes,
    lines: fast.lines,
    curlExit: fast.curlExit,
    firstByteSeconds: fast.firstByteSeconds,
    seconds: fast.seconds,
    itemsPerSecond,
    mibPerSecond: fast.bytes / MiB / fast.seconds,
    complete,
    rss,
    cpu,
    activity,
    ceiling: { ...best, runs: runs.map((r) => r.seconds) },
    ratio,
    statementMatches,
    slowReader,
    peakRssMiB,
  })
  console.log(
    `export: ${round(itemsPerSecond)} items/s (${round(ratio, 2)}× psql's ${round(best.itemsPerSecond)}), peak RSS ${mib(peakMiB)} MiB (< ${LIMITS.exportPeakRssMiB}: ${memoryMet}); slow reader trend ${round(slowTrend, 1)} MiB over ${SLOW_SECONDS} s, released ${slow.releaseSeconds === null ? 'never' : `${round(slow.releaseSeconds, 2)} s`}`,
  )
  if (!complete) throw new Error(`export: the export was incomplete (status ${fast.status}, curl exit ${fast.curlExit}, ${fast.lines} of ${ITEMS} work items) (recorded)`)
}
