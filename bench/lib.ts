/**
 * Shared pieces of the benchmarks: a bench database on the PostgreSQL server, service processes,
 * autocannon runs (in a separate Node process), pgbench runs, peak RSS, and RESULTS.md sections.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import postgres from 'postgres'

export const SERVER_URL = process.env.BENCH_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
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
    peakRssMiB: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
      return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024
    },
    async stop() {
      child.kill('SIGTERM')
      await child.exited
    },
  }
}

export interface LoadResult {
  requestsPerSecond: number
  p50: number
  p99: number
  errors: number
  non2xx: number
}

/** Runs autocannon from Node (so the load generator is not the runtime under test). */
export async function autocannon(url: string, options: { headers?: Record<string, string>; method?: string; body?: string; duration?: number; connections?: number } = {}): Promise<LoadResult> {
  const args = ['node_modules/autocannon/autocannon.js', '--json', '-c', String(options.connections ?? CONNECTIONS), '-d', String(options.duration ?? DURATION_SECONDS)]
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}=${value}`)
  if (options.method) args.push('-m', options.method)
  if (options.body) args.push('-b', options.body)
  args.push(url)
  const child = Bun.spawn(['node', ...args], { stdout: 'pipe', stderr: 'ignore' })
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

/** Replaces (or appends) the section `name` of bench/RESULTS.md. */
export function writeSection(name: string, markdown: string): void {
  let text = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : HEADER
  const start = `<!-- bench:${name} -->`
  const end = `<!-- /bench:${name} -->`
  const block = `${start}\n${markdown.trim()}\n${end}`
  const pattern = new RegExp(`${start}[\\s\\S]*?${end}`)
  text = pattern.test(text) ? text.replace(pattern, block) : `${text.trimEnd()}\n\n${block}\n`
  writeFileSync(RESULTS, text)
}
