/**
 * Shared pieces of the benchmarks: a bench database on the PostgreSQL server, service processes,
 * wrk runs (C, one thread: the load generator leaves the cores to the service), pgbench runs, peak
 * RSS, and RESULTS.md sections.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import postgres from 'postgres'

const SERVER_URL = process.env.BENCH_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
export const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 10)
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64)

/** Creates (or recreates) a database on the server and returns its URL. */
export async function freshDatabase(name: string): Promise<string> {
  const admin = postgres(SERVER_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`drop database if exists "${name}" with (force)`)
  await admin.unsafe(`create database "${name}"`)
  await admin.end()
  const url = new URL(SERVER_URL)
  url.pathname = `/${name}`
  return url.toString()
}

export interface RunningProcess {
  pid: number
  port: number
  /** Peak resident set size so far, in MiB (VmHWM). */
  peakRssMiB(): number
  /** Resident set size now, in MiB (VmRSS). */
  rssMiB(): number
  stop(): Promise<void>
}

/**
 * The engine's heap sizing `npm start` and the container image give the service (package.json's
 * "start" script, the Dockerfile): JavaScriptCore collects as on a machine of 512 MiB.
 */
export const SERVICE_HEAP_ENV = { BUN_JSC_forceRAMSize: '536870912' }

/** Starts `command` with PORT set and waits for `readyPath` to answer 200 (with the service's heap sizing, unless the environment sets one). */
export async function startProcess(command: string[], env: Record<string, string>, port: number, readyPath = '/health'): Promise<RunningProcess> {
  const child = Bun.spawn(command, { env: { ...SERVICE_HEAP_ENV, ...process.env, LOG_LEVEL: 'warn', ...env, PORT: String(port) }, stdout: 'ignore', stderr: 'inherit' })
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${command.join(' ')} exited with ${child.exitCode}`)
    try {
      if ((await fetch(`http://127.0.0.1:${port}${readyPath}`)).ok) break
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${command.join(' ')} did not answer within 60 s`)
    await Bun.sleep(200)
  }
  return {
    pid: child.pid,
    port,
    peakRssMiB: () => statusMiB(child.pid, 'VmHWM'),
    rssMiB: () => statusMiB(child.pid, 'VmRSS'),
    async stop() {
      child.kill('SIGTERM')
      await child.exited
    },
  }
}

/** A memory figure of /proc/<pid>/status (VmRSS, VmHWM…) in MiB. */
function statusMiB(pid: number, field: string): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024
}

export interface LoadResult {
  requestsPerSecond: number
  /** Answers received during the run. */
  requests: number
  /** The run's length as wrk measured it, in seconds. */
  seconds: number
  p50: number
  p99: number
  /** Socket errors: connect, read, write and timeouts (a timed-out request is not in the latencies). */
  errors: number
  socketErrors: { connect: number; read: number; write: number; timeout: number }
  /** Answers with a status of 400 or more. */
  non2xx: number
  /** What the script counted with `count(name)` (the `tally` option), summed over wrk's threads. */
  counts: Record<string, number>
}

/** One request of a list that a wrk run cycles through. */
export interface WrkRequest {
  method: string
  path: string
  headers: Record<string, string>
  body?: string
}

/**
 * A Lua string literal holding `text` byte for byte: printable ASCII as is, every other byte (and
 * `"` and `\\`) as a three-digit decimal escape — wrk's Lua (5.1) knows no `\\u` escapes.
 */
export function luaString(text: string): string {
  let literal = '"'
  for (const byte of Buffer.from(text, 'utf8')) literal += byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c ? String.fromCharCode(byte) : `\\${String(byte).padStart(3, '0')}`
  return `${literal}"`
}

/** A Lua value (table constructor, string, number, boolean) of a JSON-like value. */
export function luaValue(value: unknown): string {
  if (typeof value === 'string') return luaString(value)
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (Array.isArray(value)) return `{${value.map(luaValue).join(',\n')}}`
  if (typeof value === 'object' && value !== null)
    return `{${Object.entries(value)
      .filter(([, field]) => field !== undefined)
      .map(([name, field]) => `[${luaString(name)}]=${luaValue(field)}`)
      .join(', ')}}`
  throw new Error(`no Lua value for ${String(value)}`)
}

/** wrk's text report (and whatever its script printed): runs `wrk ...args`, fails on a non-zero exit. */
export async function runWrk(args: string[]): Promise<string> {
  if (!Bun.which('wrk')) throw new Error('wrk is not installed: it is the Debian package wrk (apt-get install wrk)')
  const child = Bun.spawn(['wrk', ...args], { stdout: 'pipe', stderr: 'pipe' })
  const [output, errors] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
  if ((await child.exited) !== 0 || errors.trim()) throw new Error(`wrk ${args.join(' ')} failed: ${errors || output}`)
  return output
}

/**
 * Lua for counting in `response()`: each thread's script calls `count(name)`; `done()` (in wrk's
 * main state) sums the threads' tables and prints them as one JSON line for parseWrk.
 */
const TALLY = `local threads = {}
function setup(thread) table.insert(threads, thread) end
counts = {}
function count(name) counts[name] = (counts[name] or 0) + 1 end
function done(summary, latency, requests)
  local total, parts = {}, {}
  for _, thread in ipairs(threads) do
    for name, n in pairs(thread:get("counts")) do total[name] = (total[name] or 0) + n end
  end
  for name, n in pairs(total) do table.insert(parts, string.format("%q:%d", name, n)) end
  io.write("wrk-counts {" .. table.concat(parts, ",") .. "}\\n")
end`

/** Counts every answer by its status (`{"200": n, "409": m}`): cheap enough for wrk's one thread. */
export const COUNT_STATUSES = 'function response(status) count(tostring(status)) end'

/** The Lua of a run cycling through `requests` (in the generated script, pre-built once per thread). */
const rotation = (requests: WrkRequest[]) => `local list = ${luaValue(requests)}
local prepared, turn = {}, 0
function init(args)
  for i, r in ipairs(list) do prepared[i] = wrk.format(r.method, r.path, r.headers, r.body) end
end
function request()
  turn = turn % #prepared + 1
  return prepared[turn]
end`

export interface WrkOptions {
  headers?: Record<string, string>
  method?: string
  body?: string
  /** A list each thread cycles through (e.g. bodies for many accounts), prepared once. */
  requests?: WrkRequest[]
  duration?: number
  connections?: number
  threads?: number
  /** A request slower than this (seconds, default 10) is a timeout error and not in the latencies. */
  timeout?: number
  /** Lua of its own: `request()`, `response()`… (with `tally`, `response()` may call `count(name)`). */
  script?: string
  /** Gather what `count(name)` counted into the result's `counts` (defines `setup` and `done`). */
  tally?: boolean
}

/**
 * Runs wrk (Debian's package: C, one thread by default, so the load generator leaves the cores to
 * the service) and reads its figures. A method, headers and a body become a small Lua script;
 * `requests` a generated rotation; `script` adds Lua of its own.
 */
export async function wrk(url: string, options: WrkOptions = {}): Promise<LoadResult> {
  const lua: string[] = []
  if (options.method) lua.push(`wrk.method = ${luaString(options.method)}`)
  if (options.body !== undefined) lua.push(`wrk.body = ${luaString(options.body)}`)
  for (const [name, value] of Object.entries(options.headers ?? {})) lua.push(`wrk.headers[${luaString(name)}] = ${luaString(value)}`)
  if (options.requests) lua.push(rotation(options.requests))
  if (options.tally) lua.push(TALLY)
  if (options.script) lua.push(options.script)
  const file = `/tmp/worktrack-wrk-${process.pid}-${Math.random().toString(36).slice(2, 8)}.lua`
  writeFileSync(file, `${lua.join('\n')}\n`)
  try {
    const connections = options.connections ?? CONNECTIONS
    const args = ['--latency', '-t', String(options.threads ?? 1), '-c', String(connections), '-d', `${options.duration ?? DURATION_SECONDS}s`, '--timeout', `${options.timeout ?? 10}s`]
    return parseWrk(await runWrk([...args, '-s', file, url]))
  } finally {
    rmSync(file, { force: true })
  }
}

const WRK_UNITS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 }

/** wrk's text report → requests per second, p50/p99 in ms, errors, non-2xx/3xx answers and the script's counts. */
export function parseWrk(output: string): LoadResult {
  const percentile = (label: string) => {
    const match = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(output)
    return match ? Number(match[1]) * WRK_UNITS[match[2]!]! : NaN
  }
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output)
  const total = /(\d+) requests in ([\d.]+)(us|ms|s|m),/.exec(output)
  const counts = /^wrk-counts (\{.*\})$/m.exec(output)
  return {
    requestsPerSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? 0),
    requests: Number(total?.[1] ?? 0),
    seconds: total ? (Number(total[2]) * WRK_UNITS[total[3]!]!) / 1000 : NaN,
    p50: percentile('50'),
    p99: percentile('99'),
    errors: socket ? socket.slice(1).reduce((sum, count) => sum + Number(count), 0) : 0,
    socketErrors: { connect: Number(socket?.[1] ?? 0), read: Number(socket?.[2] ?? 0), write: Number(socket?.[3] ?? 0), timeout: Number(socket?.[4] ?? 0) },
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0),
    counts: counts ? (JSON.parse(counts[1]!) as Record<string, number>) : {},
  }
}

/** Runs pgbench with a custom script and returns transactions per second. */
export async function pgbench(databaseUrl: string, script: string, options: { clients?: number; threads?: number; duration?: number; variables?: Record<string, string> } = {}): Promise<number> {
  const file = `/tmp/worktrack-pgbench-${process.pid}.sql`
  writeFileSync(file, script)
  const url = new URL(databaseUrl)
  const args = ['pgbench', '-n', '-M', 'prepared', '-h', url.hostname, '-p', url.port || '5432', '-U', url.username || 'postgres', '-c', String(options.clients ?? CONNECTIONS), '-j', String(options.threads ?? 2), '-T', String(options.duration ?? DURATION_SECONDS), '-f', file]
  for (const [name, value] of Object.entries(options.variables ?? {})) args.push('-D', `${name}=${value}`)
  args.push(url.pathname.slice(1))
  const child = Bun.spawn(args, { stdout: 'pipe', stderr: 'pipe' })
  const [output, errors] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
  if ((await child.exited) !== 0) throw new Error(`pgbench failed: ${errors}`)
  const tps = /tps = ([\d.]+)/.exec(output)
  if (!tps) throw new Error(`pgbench printed no tps: ${output}`)
  return Number(tps[1])
}

/** A service statement (with $1…) as a pgbench command with named variables (`:project`…). */
export function asPgbench(text: string, variables: string[]): string {
  return `${text.replace(/\$(\d+)/g, (_, n) => `:${variables[Number(n) - 1]}`)};`
}

/** One line describing this machine, for every section. */
export function machine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU'
  const stolen = stolenShare()
  return `${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${process.platform}; Bun ${Bun.version}, Node ${nodeVersion()}, PostgreSQL ${pgVersion()}${stolen === undefined ? '' : `; CPU time stolen by the host during this benchmark: ${stolen} %`}`
}

/** The machine's CPU time so far (/proc/stat's first line, in ticks): all of it, and what the hypervisor took (steal). */
function cpuTicks(): { total: number; steal: number } | undefined {
  if (!existsSync('/proc/stat')) return undefined
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  return { total: fields.slice(0, 8).reduce((sum, each) => sum + each, 0), steal: fields[7] ?? 0 }
}

let benchStart = cpuTicks()

/** Marks the start of a benchmark (bench/run.ts): `machine()` then says how much CPU time the host stole since. */
export function markBenchmarkStart(): void {
  benchStart = cpuTicks()
}

/** The share (%) of the machine's CPU time the hypervisor took since the benchmark began: a shared host's noise, said beside the figures. */
function stolenShare(): number | undefined {
  const now = cpuTicks()
  if (!now || !benchStart || now.total <= benchStart.total) return undefined
  return Math.round(((now.steal - benchStart.steal) / (now.total - benchStart.total)) * 100)
}

function nodeVersion(): string {
  return Bun.spawnSync(['node', '--version']).stdout.toString().trim()
}

function pgVersion(): string {
  return /(\d+\.\d+)/.exec(Bun.spawnSync(['psql', '--version']).stdout.toString())?.[1] ?? '?'
}

export const round = (value: number, digits = 0) => Number(value.toFixed(digits)).toLocaleString('en-US', { maximumFractionDigits: digits })

const RESULTS = 'bench/RESULTS.md'
const HEADER = `# Benchmark results

Written by \`npm run bench\` (how to run it: docs/performance.md, "Benchmarks"). Each section records the machine, the date
and the exact command; figures inside one section come from one run, so their ratios hold even on a shared,
noisy machine. Benchmarks never run as timed tests in CI.
`

/**
 * Replaces the section `name` of bench/RESULTS.md in place, or adds it: at the end, or with
 * `first` right after the header (before every other section — the summary goes there).
 */
export function writeSection(name: string, markdown: string, options: { first?: boolean } = {}): void {
  let text = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : HEADER
  const start = `<!-- bench:${name} -->`
  const end = `<!-- /bench:${name} -->`
  const block = `${start}\n${markdown.trim()}\n${end}`
  const pattern = new RegExp(`${start}[\\s\\S]*?${end}`)
  const firstSection = text.indexOf('<!-- bench:')
  if (pattern.test(text)) text = text.replace(pattern, () => block)
  else if (options.first && firstSection >= 0) text = `${text.slice(0, firstSection)}${block}\n\n${text.slice(firstSection)}`
  else text = `${text.trimEnd()}\n\n${block}\n`
  writeFileSync(RESULTS, text)
}

/**
 * The headline figures of every benchmark, by name, as each one last recorded them: the summary
 * at the top of RESULTS.md is generated from this file (bench/summary.ts), so re-running one
 * benchmark updates its line and keeps the others' figures.
 */
const RESULTS_JSON = 'bench/results.json'

/** Throughput and latency of one target (latencies in ms). */
export interface Throughput {
  requestsPerSecond: number
  p50: number
  p99: number
}

/** One shape of the display benchmark: the endpoint, its pgbench ceiling, stale answers and calls per commit. */
interface DisplayShape extends Throughput {
  pgbench: number
  /** 409 answers: an update a later call overtook (absent before the wrk runs). */
  stale?: number
  /** Display calls counted per database commit over the service's life (absent before the wrk runs). */
  callsPerCommit?: number
}

/** One page of the pages benchmark: its best run, mean latency (ms), HTML size (bytes) and components. */
interface PageShape extends Throughput {
  meanMs: number
  bytes: number
  components: number
}

/** What each benchmark records, in the units its section shows (req/s, TPS, ms, MiB, messages/s). */
interface Figures {
  'auth-me': { endpoint: Throughput; hello: Throughput; peakRssMiB: number; helloPeakRssMiB: number; errors: number }
  members: { endpoint: Throughput; peakRssMiB: number; pgbench64: number; pgbench10: number; errors: number }
  'work-items': {
    /** The list with its cache: 9 in 10 requests read the page, 1 in 10 changes a work item of it. */
    listRepeated: Throughput
    /** The list with its cache off: every read reads and encodes the rows. */
    listCold: Throughput
    /** Reads only with the cache on (for comparison; absent before it was measured). */
    listHot?: Throughput
    /** Whether the service took `server.listCacheBytes` (false: it has no list cache, both shapes are uncached). */
    listCache: boolean
    /** The highest of the benchmark's service processes (list and search). */
    peakRssMiB: number
    pgbench10: number
    pgbench64: number
    /** Search latency by corpus (bench/corpus.ts), the smaller size first; the target is judged on the realistic one. */
    search: Record<'realistic' | 'synthetic', Array<{ label: string; rows: number; one: Throughput; eight: Throughput }>>
  }
  mcp: { rest: Throughput; mcp: Throughput; peakRssMiB: number; errors: number }
  'sign-in': {
    idleRssMiB: number
    /** `GET /users/me` alone, then during each storm. */
    quiet: Throughput
    storms: Array<{ concurrency: number; usersMe: Throughput; peakRssMiB: number; answers: Record<string, number>; missingRetryAfter: number; hashedPerSecond: number }>
  }
  display: { spread: DisplayShape; single: DisplayShape; peakRssMiB: number; errors: number }
  /** Requests per second of the alternating runs; ratio: mean with rules over mean without. */
  alerts: { without: number[]; withRules: number[]; rules: number; ratio: number; errors: number; peakRssMiB: number }
  push: { devices: number; perRun: number[]; median: number; best: number; exactlyOnce: boolean; peakRssMiB: number | null }
  pages: {
    one: PageShape
    twenty: PageShape
    /** Time of the 20-component page over that of the 1-component one by req/s: rps(1) / rps(20). */
    ratio: number
    /** p50(20) / p50(1). */
    p50Ratio: number
    /** The service's fragment renders before and after the measured runs (equal: every page came from the cache). */
    rendersBefore: number
    rendersAfter: number
    /** Requests of the measured runs. */
    requests: number
    peakRssMiB: number
    /** Socket errors and non-200 answers. */
    errors: number
  }
  mixed: {
    minutes: number
    samples: number
    requestsPerSecond: number
    worstP99: number
    firstRssMiB: number
    lastRssMiB: number
    peakRssMiB: number
    /** Least-squares slope of RSS over the second half of the samples, MiB per minute. */
    slopeMiBPerMinute: number
    /** Its standard error (null with fewer than 3 samples in the second half). */
    slopeStandardError: number | null
    /** Mean RSS of the last quarter of the samples over that of the first quarter. */
    quarterRatio: number
    /** null: the run was too short to judge. */
    growthTrend: boolean | null
    errors: number
    serverErrors: number
  }
  webhooks: import('./webhooks').WebhooksFigures
  citus: import('./citus').CitusFigures
  answers: import('./answers').AnswerFigures
  driver: import('./driver').DriverFigures
}

export type BenchName = keyof Figures

interface RecordedResult<Name extends BenchName = BenchName> {
  /** ISO date of the run. */
  date: string
  machine: string
  command: string
  figures: Figures[Name]
}

export type RecordedResults = { [Name in BenchName]?: RecordedResult<Name> }

export function readResults(): RecordedResults {
  return existsSync(RESULTS_JSON) ? (JSON.parse(readFileSync(RESULTS_JSON, 'utf8')) as RecordedResults) : {}
}

/** Stores (replaces) the figures of benchmark `name` in bench/results.json. */
export function recordResult<Name extends BenchName>(name: Name, result: RecordedResult<Name>): void {
  const all = readResults()
  ;(all as Record<string, unknown>)[name] = result
  writeFileSync(RESULTS_JSON, `${JSON.stringify(all, null, 2)}\n`)
}
