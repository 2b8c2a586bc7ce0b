/**
 * What a Citus coordinator says of a benchmark's statements. Citus's own counters
 * (`citus_stat_counters`, Citus ≥ 13.1, kept while `citus.enable_stat_counters` is on, set for the
 * bench database) count every statement and subplan Citus executes as single-shard (one task) or
 * multi-shard. Which statements were multi-shard: `citus.multi_task_query_log_level = 'log'` with
 * `log_min_error_statement = 'log'` makes the coordinator log each multi-task statement with its
 * text, read from the coordinator's server log (BENCH_CITUS_LOG, or the file its backend writes
 * to, found through /proc/<pid>/fd/2 or pg_current_logfile() when the coordinator runs on this
 * machine) between a phase's boundaries. Statements touching no distributed or reference table
 * (pg_notify, advisory locks, coordinator-local tables) never reach Citus's executor and are in
 * neither count.
 */
import { closeSync, existsSync, openSync, readlinkSync, readSync, statSync } from 'node:fs'
import { isAbsolute, join } from 'node:path'
import postgres from 'postgres'
import type { CitusFigures, CitusShape, CitusSide } from '../figures'
import { best, round } from './stats'
import type { LoadResult } from './wrk'

/** Executions Citus counted (citus_stat_counters): one task, or more. */
export interface ShardCounts {
  single: number
  multi: number
}

/**
 * The coordinator's view of the bench database: Citus's execution counters and the server log
 * holding the multi-task statements it logs.
 */
export interface Coordinator {
  counters(): Promise<ShardCounts>
  /** The server log's size now (null: no readable log). */
  logOffset(): number | null
  /** The multi-task statements logged between two offsets, by text, with their counts. */
  multiTaskStatements(from: number, to: number): Map<string, number>
  end(): Promise<void>
}

export async function watchCoordinator(url: string, database: string): Promise<Coordinator> {
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  // New sessions of the bench database count executions and log every multi-task statement with its text.
  for (const setting of ["citus.enable_stat_counters = on", "citus.multi_task_query_log_level = 'log'", "log_min_error_statement = 'log'"])
    await admin.unsafe(`alter database "${database}" set ${setting}`)
  const logPath = await findLog(admin, url)
  const counters = async () => {
    const [row] = await admin<Array<{ single: string; multi: string }>>`select query_execution_single_shard as single, query_execution_multi_shard as multi
      from citus_stat_counters where name = current_database()`
    return { single: Number(row?.single ?? 0), multi: Number(row?.multi ?? 0) }
  }
  return {
    counters,
    logOffset: () => (logPath ? statSync(logPath).size : null),
    multiTaskStatements(from, to) {
      const found = new Map<string, number>()
      if (!logPath || to <= from) return found
      const bytes = Buffer.alloc(to - from)
      const file = openSync(logPath, 'r')
      try {
        readSync(file, bytes, 0, bytes.length, from)
      } finally {
        closeSync(file)
      }
      const text = bytes.toString('utf8')
      // A record starts at a line not indented (continuation lines of a statement start with a tab).
      const records = text.split(/\n(?=\S)/)
      records.forEach((record, i) => {
        if (!record.includes('multi-task query about to be executed')) return
        const statement = records.slice(i + 1, i + 4).find((next) => /\bSTATEMENT: {2}/.test(next))
        const key = statement ? oneLine(statement.slice(statement.search(/\bSTATEMENT: {2}/) + 'STATEMENT:  '.length)) : '(statement text not logged)'
        found.set(key, (found.get(key) ?? 0) + 1)
      })
      return found
    },
    async end() {
      await admin.end()
    },
  }
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim()

/**
 * The coordinator's server log: BENCH_CITUS_LOG, else the logging collector's current file, else
 * the file the backend's stderr goes to (a server started with `pg_ctl -l FILE` on this machine).
 */
async function findLog(admin: postgres.Sql, url: string): Promise<string | null> {
  if (process.env.BENCH_CITUS_LOG) return process.env.BENCH_CITUS_LOG
  const [row] = await admin<Array<{ pid: number; collector: string | null; directory: string }>>`select pg_backend_pid() as pid, pg_current_logfile() as collector, current_setting('data_directory') as directory`
  if (row?.collector) {
    const path = isAbsolute(row.collector) ? row.collector : join(row.directory, row.collector)
    return existsSync(path) ? path : null
  }
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname)) return null
  try {
    const path = readlinkSync(`/proc/${row!.pid}/fd/2`)
    return isAbsolute(path) && existsSync(path) && statSync(path).isFile() ? path : null
  } catch {
    return null
  }
}

/** What a phase of the cluster's services did on the coordinator. */
export interface Phase {
  label: string
  counts: ShardCounts
  statements: Map<string, number>
}

export type MultiShardKind = 'lookup' | 'background' | 'unexplained'

/**
 * The statements that may run on every shard, and why: lookups that cannot know the organization
 * yet (a credential by its hash, once per instance and credential, on a cache miss: one indexed
 * probe per shard), and the services' background work that looks across organizations for work
 * (not a request's statement). Anything else multi-shard is a finding: `unexplained`.
 */
const KNOWN_MULTI_SHARD: Array<{ kind: Exclude<MultiShardKind, 'unexplained'>; why: string; matches: (text: string) => boolean }> = [
  { kind: 'lookup', why: 'API key by the hash of its secret (Bearer check, cache miss)', matches: (text) => /from "api_keys"/.test(text) && /"api_keys"\."secret_hash" = \$1/.test(text) },
  { kind: 'lookup', why: 'session by the hash of its token (session check, cache miss)', matches: (text) => /from "sessions"/.test(text) && /"sessions"\."token_hash" = \$1/.test(text) },
  { kind: 'lookup', why: "a display key's organization by the key's hash (once per key and instance: display/key-organizations.ts)", matches: (text) => /from display_accounts where key_hash = \$1$/.test(text) },
  { kind: 'background', why: 'webhook workers: which organizations have deliveries due (then claimed per organization)', matches: (text) => /from webhook_deliveries d join webhooks w/.test(text) && /d\.status = 'pending'/.test(text) },
  { kind: 'background', why: "webhook workers: the enabled webhooks, read at start", matches: (text) => /from webhooks where enabled$/.test(text) },
  { kind: 'background', why: 'push upkeep: devices not seen for the retention period are deleted (a sweep)', matches: (text) => /delete from devices where last_seen_at </.test(text) },
  { kind: 'background', why: 'push delivery workers: which organizations have deliveries due (then claimed per organization)', matches: (text) => /from deliveries where/.test(text) && /group by organization_id/.test(text) },
  { kind: 'background', why: "alerts' sweep: which organizations have rules pending past their delay (then evaluated per organization)", matches: (text) => /from component_alerts a where a\.state = 'ok'/.test(text) },
]

/** A multi-task statement the coordinator logged, with how many times: during the shapes' warm-ups, their measured runs, and elsewhere (start-up, stop, between phases). */
export interface MultiShardStatement {
  statement: string
  kind: MultiShardKind
  why: string
  warmups: number
  runs: number
  elsewhere: number
}

export function classify(statement: string): { kind: MultiShardKind; why: string } {
  const known = KNOWN_MULTI_SHARD.find((entry) => entry.matches(statement))
  return known ? { kind: known.kind, why: known.why } : { kind: 'unexplained', why: 'not a known lookup or background statement' }
}

/** A phase's counters with its logged multi-task statements by kind. */
export interface PhaseCounts extends ShardCounts {
  /** Multi-task statements logged, by kind (lookups and unexplained ones are the requests'; background ones are not). */
  lookups: number
  background: number
  unexplained: number
}

export const phaseCounts = (counts: ShardCounts, statements: Array<{ kind: MultiShardKind; count: number }>): PhaseCounts => {
  const of = (kind: MultiShardKind) => statements.filter((s) => s.kind === kind).reduce((sum, s) => sum + s.count, 0)
  return { ...counts, lookups: of('lookup'), background: of('background'), unexplained: of('unexplained') }
}

export const addCounts = (a: PhaseCounts, b: PhaseCounts): PhaseCounts => ({
  single: a.single + b.single,
  multi: a.multi + b.multi,
  lookups: a.lookups + b.lookups,
  background: a.background + b.background,
  unexplained: a.unexplained + b.unexplained,
})
export const NO_COUNTS: PhaseCounts = { single: 0, multi: 0, lookups: 0, background: 0, unexplained: 0 }

/** The requests' statements single-shard: single ÷ (single + the requests' multi-task statements: lookups and unexplained ones). */
export const hotPathShare = (c: PhaseCounts) => (c.single + c.lookups + c.unexplained ? c.single / (c.single + c.lookups + c.unexplained) : NaN)

/** One side's figures over its runs: the best run's throughput, errors and statuses summed (`allowed` statuses are no errors). */
export function sideFigures(runs: LoadResult[], allowed: string[]): CitusSide {
  const errors = (run: LoadResult) => run.errors + run.non2xx - allowed.reduce((sum, status) => sum + (run.counts[status] ?? 0), 0)
  const statuses: Record<string, number> = {}
  for (const run of runs) for (const [status, n] of Object.entries(run.counts)) statuses[status] = (statuses[status] ?? 0) + n
  const top = best(runs)
  return { requestsPerSecond: top.requestsPerSecond, p50: top.p50, p99: top.p99, errors: runs.reduce((sum, run) => sum + errors(run), 0), statuses }
}

/** A run's phases on the cluster: each one's Citus executions and logged multi-task statements. */
export function phaseRecorder(coordinator: Coordinator) {
  const phases: Phase[] = []
  /** Runs `work` as a phase of the cluster's services: the counters and the logged statements between its ends. */
  const phase = async <T>(label: string, work: () => Promise<T>): Promise<{ value: T; counts: PhaseCounts }> => {
    const before = await coordinator.counters()
    const offset = coordinator.logOffset()
    const value = await work()
    await Bun.sleep(200) // the last statements' log lines
    const after = await coordinator.counters()
    const end = coordinator.logOffset()
    const counts = { single: after.single - before.single, multi: after.multi - before.multi }
    const statements = offset === null || end === null ? new Map<string, number>() : coordinator.multiTaskStatements(offset, end)
    phases.push({ label, counts, statements })
    return { value, counts: phaseCounts(counts, [...statements].map(([statement, count]) => ({ count, ...classify(statement) }))) }
  }
  return { phases, phase }
}

/** Whether a phase is one of a shape's (`<shape>, warm-up`, `<shape>, run n`) rather than a start-up or stop. */
const ofShape = (label: string, shapes: readonly string[]) => shapes.some((shape) => label.startsWith(`${shape},`))

/**
 * Every multi-task statement the coordinator logged between `from` and `to`, with how many times
 * it ran in the shapes' warm-ups, their measured runs, and elsewhere (start-up, stop, and the
 * services' background work while the single server's runs went on).
 */
export function multiShardStatements(coordinator: Coordinator, phases: Phase[], shapes: readonly string[], from: number, to: number): MultiShardStatement[] {
  const byText = new Map<string, MultiShardStatement>()
  const entry = (statement: string) => byText.get(statement) ?? byText.set(statement, { statement, ...classify(statement), warmups: 0, runs: 0, elsewhere: 0 }).get(statement)!
  for (const p of phases)
    for (const [statement, count] of p.statements) {
      const where = !ofShape(p.label, shapes) ? 'elsewhere' : p.label.endsWith('warm-up') ? 'warmups' : 'runs'
      entry(statement)[where] += count
    }
  for (const [statement, count] of coordinator.multiTaskStatements(from, to)) {
    const found = entry(statement)
    found.elsewhere += Math.max(0, count - found.warmups - found.runs - found.elsewhere)
  }
  return [...byText.values()]
}

const percent = (value: number) => (Number.isNaN(value) ? '—' : `${round(100 * value, 2)} %`)
const counted = (counts: ShardCounts) => `${round(counts.single)} / ${round(counts.multi)}`
/** "lookups / background / unexplained" of a phase's multi-task statements. */
const kinds = (c: PhaseCounts) => `${c.lookups} / ${c.background} / ${c.unexplained ? `**${c.unexplained}**` : 0}`

/** The section's account of single-shard execution: the share per shape, every multi-shard statement named, and what the ratios mean. */
export function shardReport(f: CitusFigures, phases: Phase[]): string {
  const shardRow = (s: CitusShape) =>
    `| ${s.label} | ${counted(s.measured)} | ${kinds(s.measured)} | ${round(s.executionsPerRequest, 2)} | **${percent(hotPathShare(s.measured))}** | ${counted(s.warmup)} (${kinds(s.warmup)}) |`
  const otherPhases = phases.filter((p) => !ofShape(p.label, f.shapes.map((s) => s.name)))
  const clip = (text: string) => (text.length > 240 ? `${text.slice(0, 240)}…` : text)
  const statementRows = (f.multiShard ?? []).map((m) => `| \`${clip(m.statement)}\` | ${m.kind === 'unexplained' ? '**unexplained**' : m.kind}: ${m.why} | ${m.warmups} | ${m.runs} | ${m.elsewhere} |`)
  const unexplained = (f.multiShard ?? []).filter((m) => m.kind === 'unexplained' && m.warmups + m.runs > 0)
  return `**Single-shard share.** Citus's \`citus_stat_counters\` count every statement and subplan Citus executes as single-shard (one task) or multi-shard; statements touching no distributed or reference table (\`pg_notify\`, advisory locks, coordinator-local tables) never reach Citus's executor and are in neither count. Each multi-shard one is named from the coordinator's log (\`citus.multi_task_query_log_level = 'log'\`) and sorted: a **lookup** that cannot know the organization yet (allowed, once per credential and instance), **background** work of the service running meanwhile (not a request's), or **unexplained**. Hot-path share = single ÷ (single + lookups + unexplained). Log and counters are read at the same moments; a statement at a phase's edge may fall on either side.

| shape (cluster) | measured runs: single- / multi-shard executions | multi-shard: lookups / background / unexplained | executions per request | hot-path single-shard share | warm-up: single / multi (lookups / background / unexplained) |
|---|---:|---:|---:|---:|---|
${f.shapes.map(shardRow).join('\n')}
| **all measured runs** | **${counted(f.hotPaths)}** | **${kinds(f.hotPaths)}** | | **${percent(hotPathShare(f.hotPaths))}** | |
${otherPhases.map((p) => `| ${p.label} (no request) | ${counted(p.counts)} | | | | |`).join('\n')}
| whole life of the cluster's services | ${counted(f.wholeRun)} | | | | |

${
  f.multiShard === null
    ? "The multi-shard statements could not be named: the coordinator's server log was not readable (set BENCH_CITUS_LOG to its path)."
    : f.multiShard.length
      ? `Every multi-task statement the coordinator logged during the run, with how many times it ran in the warm-ups, in the measured runs, and elsewhere (the services' start-up and stop, and the background work while the single server's runs went on):\n\n| statement | kind: why | warm-ups | measured runs | elsewhere |\n|---|---|---:|---:|---:|\n${statementRows.join('\n')}`
      : 'The coordinator logged no multi-task statement during the whole run.'
}
${unexplained.length ? `\n**Unexplained multi-shard statements while requests ran (a service finding):** ${unexplained.map((m) => `\`${clip(m.statement)}\` (${m.warmups} in warm-ups, ${m.runs} in measured runs)`).join('; ')}.\n` : ''}
${EXPLANATION}`
}

const EXPLANATION = `**What the ratios mean.** This measures what Citus costs, not what it scales to: the coordinator
and both workers are PostgreSQL servers on the same 2 cores as the service and wrk, so the cluster
gains no core and pays, for every statement, a second backend and a second round trip. On the single
server a statement is planned and run by one backend; on the cluster the coordinator's backend plans
it (Citus's router planner finds the shard from the organization named in it), sends the shard's
statement over a connection to the worker holding it, whose backend plans and runs it again, and the
rows come back through the coordinator. So a shape loses in proportion to how much of a request is
database work — compare the ratio with the executions per request: \`GET /users/me\` sends no
statement once its key is cached (the key and the user are held by the instance), so its two sides
run the same code doing the same work and its ratio shows only this shared machine's noise; the
repeated list answers most reads from its cache (a write, 1 request in 10, makes the next read load
the page again) but still checks project access, with its versions, on every read; the cold list and
search run all their statements on every request; the display call groups the calls that
arrive together into one statement per organization (few executions per call), a statement that is
large (counter, components, page rights in one) and planned anew on the worker for every group.
On separate machines the same routing is what lets throughput grow with workers: each request's
statements touch one worker, so organizations spread over workers add capacity instead of fan-out.

**Single-shard.** Every statement of a request names the caller's organization
(tests/architecture/citus-hot-paths.test.ts checks it statement by statement with \`EXPLAIN\`). The
only multi-shard statements of requests are the lookups that cannot know the organization yet — an
API key by the hash of its secret, a display key's organization by the key's hash — each once per
credential and instance, on a cache miss (one indexed probe per shard), so they appear in the
warm-ups and not in the measured runs. The other multi-shard statements are the service's own
background work running meanwhile, which looks across organizations by design: the webhook
workers' poll for organizations with deliveries due (about once a second per instance, then
claimed per organization), the enabled webhooks read at start, and push's sweep of devices past
their retention. On a large cluster each of those polls visits every shard; they are not hot paths.`
