/**
 * Shared pieces of the benchmarks: a bench database on the PostgreSQL server, service processes,
 * autocannon runs (in a separate Node process), pgbench runs, peak RSS, and RESULTS.md sections.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
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

interface RunningProcess {
  pid: number
  port: number
  /** Peak resident set size so far, in MiB (VmHWM). */
  peakRssMiB(): number
  /** Resident set size now, in MiB (VmRSS). */
  rssMiB(): number
  stop(): Promise<void>
}

/** Starts `command` with PORT set and waits for `readyPath` to answer 200. */
export async function startProcess(command: string[], env: Record<string, string>, port: number, readyPath = '/health'): Promise<RunningProcess> {
  const child = Bun.spawn(command, { env: { ...process.env, LOG_LEVEL: 'warn', ...env, PORT: String(port) }, stdout: 'ignore', stderr: 'inherit' })
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
  p50: number
  p99: number
  errors: number
  non2xx: number
}

/** Runs a Node script (`node ...args`) that prints an autocannon JSON result, and reads the result. */
export async function nodeLoad(args: string[], stderr: 'ignore' | 'inherit' = 'ignore'): Promise<LoadResult> {
  const child = Bun.spawn(['node', ...args], { stdout: 'pipe', stderr })
  const output = await new Response(child.stdout).text()
  await child.exited
  const result = JSON.parse(output)
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  }
}

/** Runs autocannon from Node (so the load generator is not the runtime under test). */
export async function autocannon(url: string, options: { headers?: Record<string, string>; method?: string; body?: string; duration?: number; connections?: number } = {}): Promise<LoadResult> {
  const args = ['node_modules/autocannon/autocannon.js', '--json', '-c', String(options.connections ?? CONNECTIONS), '-d', String(options.duration ?? DURATION_SECONDS)]
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}=${value}`)
  if (options.method) args.push('-m', options.method)
  if (options.body) args.push('-b', options.body)
  args.push(url)
  return nodeLoad(args)
}

/**
 * Runs wrk (Debian's package: C, one thread by default, so the load generator leaves the cores to
 * the service) and reads its figures. A method, headers and a body become a small Lua script.
 */
export async function wrk(url: string, options: { headers?: Record<string, string>; method?: string; body?: string; duration?: number; connections?: number; threads?: number; script?: string } = {}): Promise<LoadResult> {
  const lua: string[] = []
  if (options.method) lua.push(`wrk.method = ${JSON.stringify(options.method)}`)
  if (options.body !== undefined) lua.push(`wrk.body = ${JSON.stringify(options.body)}`)
  for (const [name, value] of Object.entries(options.headers ?? {})) lua.push(`wrk.headers[${JSON.stringify(name)}] = ${JSON.stringify(value)}`)
  if (options.script) lua.push(options.script)
  const file = `/tmp/worktrack-wrk-${process.pid}-${Math.random().toString(36).slice(2, 8)}.lua`
  writeFileSync(file, `${lua.join('\n')}\n`)
  const connections = options.connections ?? CONNECTIONS
  const args = ['wrk', '--latency', '-t', String(options.threads ?? 1), '-c', String(connections), '-d', `${options.duration ?? DURATION_SECONDS}s`, '-s', file, url]
  const child = Bun.spawn(args, { stdout: 'pipe', stderr: 'pipe' })
  const [output, errors] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
  if ((await child.exited) !== 0) throw new Error(`wrk failed: ${errors || output}`)
  return parseWrk(output)
}

const WRK_UNITS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 }

/** wrk's text report → requests per second, p50/p99 in ms, errors and non-2xx/3xx answers. */
export function parseWrk(output: string): LoadResult {
  const percentile = (label: string) => {
    const match = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(output)
    return match ? Number(match[1]) * WRK_UNITS[match[2]!]! : NaN
  }
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output)
  return {
    requestsPerSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? 0),
    p50: percentile('50'),
    p99: percentile('99'),
    errors: socket ? socket.slice(1).reduce((sum, count) => sum + Number(count), 0) : 0,
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0),
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
  return `${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${process.platform}; Bun ${Bun.version}, Node ${nodeVersion()}, PostgreSQL ${pgVersion()}`
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

Written by \`npm run bench\` (how to run it: README, "Benchmarks"). Each section records the machine, the date
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

/** What each benchmark records, in the units its section shows (req/s, TPS, ms, MiB, messages/s). */
interface Figures {
  'auth-me': { endpoint: Throughput; hello: Throughput; peakRssMiB: number; helloPeakRssMiB: number; errors: number }
  members: { endpoint: Throughput; peakRssMiB: number; pgbench64: number; pgbench10: number; errors: number }
  'work-items': {
    list: Throughput
    peakRssMiB: number
    pgbench10: number
    pgbench64: number
    /** Search at 1 client, the smaller size first. */
    search: Array<{ label: string; rows: number; p50: number; p99: number }>
  }
  mcp: { rest: Throughput; mcp: Throughput; peakRssMiB: number; errors: number }
  'sign-in': {
    idleRssMiB: number
    /** `GET /users/me` alone, then during each storm. */
    quiet: Throughput
    storms: Array<{ concurrency: number; usersMe: Throughput; peakRssMiB: number; answers: Record<string, number>; missingRetryAfter: number; hashedPerSecond: number }>
  }
  display: { spread: Throughput & { pgbench: number }; single: Throughput & { pgbench: number }; peakRssMiB: number; errors: number }
  push: { devices: number; perRun: number[]; median: number; best: number; exactlyOnce: boolean; peakRssMiB: number | null }
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
