/**
 * wrk runs (Debian's package: C, one thread by default, so the load generator leaves the cores to
 * the service) and their figures: a method, headers and a body become a small Lua script, a list
 * of requests a generated rotation, and a scenario's own Lua (`script`) can count answers by name.
 */
import { rmSync, writeFileSync } from 'node:fs'
import { CONNECTIONS, DURATION_SECONDS } from './settings'

/** Throughput and latency of one target (latencies in ms). */
export interface Throughput {
  requestsPerSecond: number
  p50: number
  p99: number
}

export const throughput = (result: Throughput): Throughput => ({ requestsPerSecond: result.requestsPerSecond, p50: result.p50, p99: result.p99 })

export interface LoadResult extends Throughput {
  /** Answers received during the run. */
  requests: number
  /** The run's length as wrk measured it, in seconds. */
  seconds: number
  /** Socket errors: connect, read, write and timeouts (a timed-out request is not in the latencies). */
  errors: number
  socketErrors: { connect: number; read: number; write: number; timeout: number }
  /** Answers with a status of 400 or more. */
  non2xx: number
  /** What the script counted with `count(name)` (the `tally` option), summed over wrk's threads. */
  counts: Record<string, number>
}

/** Throws when a run had socket errors or answers of 400 or more. */
export function checkAnswers(label: string, result: LoadResult): void {
  if (result.errors || result.non2xx) throw new Error(`${label}: ${result.errors} socket errors, ${result.non2xx} answers ≥ 400 (${JSON.stringify(result.counts)})`)
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

/**
 * wrk Lua: requests to the paths in turn (`method`, `headers`), each with the body `body(n)` — a
 * Lua expression of the request's number `n`, e.g. a title never used before.
 */
export function turnScript(method: string, paths: string[], headers: Record<string, string>, body: string): string {
  return `local paths = ${luaValue(paths)}
local headers, n
function init(args)
  headers = ${luaValue(headers)}
  n = 0
end
function request()
  n = n + 1
  return wrk.format(${luaString(method)}, paths[n % #paths + 1], headers, ${body})
end`
}

/** wrk's text report (and whatever its script printed): runs `wrk ...args`, fails on a non-zero exit. */
async function runWrk(args: string[]): Promise<string> {
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
  /** Count every answer by status into `counts` (implies `tally`; the script must not define `response`). */
  statuses?: boolean
}

/** Runs wrk against `url` and reads its figures. */
export async function wrk(url: string, options: WrkOptions = {}): Promise<LoadResult> {
  const lua: string[] = []
  if (options.method) lua.push(`wrk.method = ${luaString(options.method)}`)
  if (options.body !== undefined) lua.push(`wrk.body = ${luaString(options.body)}`)
  for (const [name, value] of Object.entries(options.headers ?? {})) lua.push(`wrk.headers[${luaString(name)}] = ${luaString(value)}`)
  if (options.requests) lua.push(rotation(options.requests))
  if (options.tally || options.statuses) lua.push(TALLY)
  if (options.script) lua.push(options.script)
  if (options.statuses) lua.push(COUNT_STATUSES)
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
