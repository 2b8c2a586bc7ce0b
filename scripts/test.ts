/**
 * `npm test`: `bun test` with the arguments given, and its progress. At the start, how many files
 * will run and how long they are expected to take; then, as each file finishes, a line
 * `── file 37 of 214 done · 2m10s so far · ~6 min left`. The expectation is the per-file durations
 * of the --timings files given, or of .ci/test-timings.json (what CI measures), scheduled on the
 * workers of --parallel the way bun test starts them (the slowest first), and corrected by how fast
 * the finished files went on this machine. A file without a measure counts as the median of those
 * with one.
 *
 *   bun scripts/test.ts [bun test's arguments…]   # what `npm test` runs, with --timeout 30000
 *
 * Everything bun test prints passes through (its colours too, on a terminal); the progress lines go
 * to stderr beside its per-file results, which bun test writes as each file ends under --parallel
 * and as each starts otherwise. Its exit status is this script's. Reporters (--reporter=junit) and
 * every other flag are bun test's own.
 */
import { existsSync, readFileSync } from 'node:fs'
import { availableParallelism, constants } from 'node:os'

const DEFAULT_TIMINGS = '.ci/test-timings.json'
/** bun test's flags that take a value as the next argument when not written `--flag=value`. */
const VALUE_FLAGS = new Set(['--timeout', '--rerun-each', '--retry', '--seed', '--coverage-reporter', '--coverage-dir', '-t', '--test-name-pattern', '--reporter', '--reporter-outfile', '--max-concurrency', '--path-ignore-patterns', '--parallel-delay', '--shard', '--timings', '--preload', '-r', '--tsconfig-override', '--define', '-d', '--env-file', '--cwd', '--config', '-c'])
/** Flags whose value is optional: the next argument is theirs only when it is a number. */
const NUMBER_FLAGS = new Set(['--parallel', '--bail'])
const TEST_FILE = /(?:\.test|_test|\.spec|_spec)\.(?:[cm]?[jt]sx?)$/

export interface Plan {
  /** The test files bun test will run, as it names them (paths from the working directory), or null when they cannot be known here (--shard, --changed). */
  files: string[] | null
  /** Worker processes: --parallel's, 1 without it. */
  workers: number
  /** Expected milliseconds of each file. */
  expected: Map<string, number>
  /** How many files had a measure, and where the measures come from. */
  measured: number
  source: string
}

/** What the arguments of bun test say about the run: its filters, workers and timings files. */
export function readArguments(args: readonly string[], cpus = availableParallelism()) {
  const filters: string[] = []
  const timings: string[] = []
  const ignore: string[] = []
  let workers = 1
  let parallel = false
  let unknowable = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined]
    let value = inline
    if (value === undefined && VALUE_FLAGS.has(flag)) value = args[++i]
    if (value === undefined && NUMBER_FLAGS.has(flag) && /^\d+$/.test(args[i + 1] ?? '')) value = args[++i]
    if (flag === '--parallel') {
      parallel = true
      workers = value ? Math.max(1, Number(value)) : cpus
    }
    else if (flag === '--timings' && value) timings.push(...value.split(','))
    else if (flag === '--path-ignore-patterns' && value) ignore.push(...value.split(','))
    else if (flag === '--shard' || flag === '--changed') unknowable = true
    else if (!arg.startsWith('-')) filters.push(arg.replace(/^\.\//, ''))
  }
  return { filters, timings, ignore, workers, parallel, unknowable }
}

/** The test files under `cwd` as bun test finds them (not in node_modules or hidden folders), kept by the filters (a substring of the path). */
export function findTestFiles(cwd: string, filters: readonly string[], ignore: readonly string[] = []): string[] {
  const ignored = ignore.map((pattern) => new Bun.Glob(pattern))
  return [...new Bun.Glob('**/*').scanSync({ cwd, onlyFiles: true })]
    .filter((path) => TEST_FILE.test(path) && !path.split('/').some((part) => part === 'node_modules' || part.startsWith('.')))
    .filter((path) => filters.length === 0 || filters.some((filter) => path.includes(filter) || `${cwd}/${path}`.includes(filter)))
    .filter((path) => !ignored.some((glob) => glob.match(path)))
    .sort()
}

/** Per-file durations (ms) of timings files (`{"files": {path: ms}}`), merged; missing files are skipped. */
export function readTimings(paths: readonly string[]): Map<string, number> {
  const merged = new Map<string, number>()
  for (const path of paths) {
    if (!existsSync(path)) continue
    const files = (JSON.parse(readFileSync(path, 'utf8')) as { files?: Record<string, number> }).files ?? {}
    for (const [file, ms] of Object.entries(files)) if (typeof ms === 'number') merged.set(file, ms)
  }
  return merged
}

export function makePlan(files: string[] | null, workers: number, timings: Map<string, number>, source = 'the timings'): Plan {
  const known = (files ?? []).flatMap((file) => (timings.has(file) ? [timings.get(file)!] : [])).sort((a, b) => a - b)
  const fallback = known.length ? known[Math.floor(known.length / 2)]! : 1000
  return { files, workers, expected: new Map((files ?? []).map((file) => [file, timings.get(file) ?? fallback])), measured: known.length, source }
}

/** Wall time of `durations` on `workers`, started the slowest first, each on the first free worker. */
export function wallTime(durations: number[], workers: number): number {
  const loads = new Array<number>(Math.max(1, workers)).fill(0)
  for (const duration of [...durations].sort((a, b) => b - a)) {
    const least = loads.indexOf(Math.min(...loads))
    loads[least]! += duration
  }
  return Math.max(...loads)
}

/** A duration to come, roughly: `under a second`, `~40 s`, `~6 min`, `~1 h 5 min`. */
export const about = (ms: number) => {
  const seconds = Math.round(ms / 1000)
  if (seconds < 1) return 'under a second'
  if (seconds < 90) return `~${seconds} s`
  if (seconds < 3600) return `~${Math.round(seconds / 60)} min`
  return `~${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`
}

const clock = (ms: number) => {
  const seconds = Math.floor(ms / 1000)
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`
}

/** The line printed before the run. */
export function startLine(plan: Plan): string {
  if (!plan.files) return '── bun test: which files run is known to bun test alone here (--shard or --changed): progress counts files as they end'
  const total = wallTime([...plan.expected.values()], plan.workers)
  const source = plan.measured ? `${plan.measured === plan.files.length ? 'each' : `${plan.measured} of them`} as measured in ${plan.source}` : `none of them measured in ${plan.source}: each counted as 1 s`
  const count = plan.files.length === 1 ? '1 file' : `${plan.files.length} files`
  return `── bun test: ${count}${plan.workers > 1 ? ` on ${plan.workers} workers` : ''}, expected to take ${about(total)} (${source})`
}

/** Follows the files as they end and says where the run stands. */
export class Progress {
  private readonly done = new Set<string>()
  constructor(
    private readonly plan: Plan,
    private readonly started = performance.now(),
  ) {}

  /** The line for `file` having finished `now`. */
  finished(file: string, now = performance.now()): string {
    this.done.add(file)
    const elapsed = now - this.started
    const files = this.plan.files
    if (!files) return `── file ${this.done.size} done · ${clock(elapsed)} so far`
    const total = Math.max(files.length, this.done.size)
    const expected = (list: string[]) => wallTime(list.map((name) => this.plan.expected.get(name) ?? 1000), this.plan.workers)
    const remaining = files.filter((name) => !this.done.has(name))
    // This machine's pace against the measures, damped while little has run (half a minute of weight).
    const pace = (elapsed + 30_000) / (expected([...this.done].filter((name) => this.plan.expected.has(name))) + 30_000)
    const left = remaining.length ? ` · ${about(expected(remaining) * pace)} left` : ''
    return `── file ${this.done.size} of ${total} done · ${clock(elapsed)} so far${left}`
  }
}

const ANSI = /\x1b\[[0-9;]*m/g
/** bun test's heading of a file's results: its path and a colon, alone on the line. */
export const fileHeading = (line: string) => /^(\S[^:]*):$/.exec(line.replace(ANSI, ''))?.[1]
/** The first line of bun test's summary (` 12 pass`). */
const summaryStart = (line: string) => /^\s*\d+ pass\s*$/.test(line.replace(ANSI, ''))

/**
 * Reads bun test's stderr, passing it through, and returns the progress lines to print before each
 * line: under --parallel a heading is printed when its file has ended; otherwise when it starts,
 * so the file before it has ended (the last one, when the summary starts).
 */
export function progressLines(progress: Progress, parallel: boolean) {
  let running: string | undefined
  return (line: string): string[] => {
    const heading = fileHeading(line)
    if (heading && TEST_FILE.test(heading)) {
      if (parallel) return [progress.finished(heading)]
      const before = running
      running = heading
      return before ? [progress.finished(before)] : []
    }
    if (!parallel && running && summaryStart(line)) {
      const last = running
      running = undefined
      return [progress.finished(last)]
    }
    return []
  }
}

async function main(args: string[]) {
  const read = readArguments(args)
  const files = read.unknowable ? null : findTestFiles(process.cwd(), read.filters, read.ignore)
  const timings = read.timings.length ? read.timings : [DEFAULT_TIMINGS]
  const plan = makePlan(files, read.workers, readTimings(timings), timings.join(', '))
  const color = process.stderr.isTTY ? '\x1b[2m' : ''
  const reset = color ? '\x1b[0m' : ''
  const say = (line: string) => process.stderr.write(`${color}${line}${reset}\n`)
  say(startLine(plan))

  const child = Bun.spawn([process.execPath, 'test', ...args], {
    stdio: ['inherit', 'inherit', 'pipe'],
    env: { ...process.env, ...(process.stderr.isTTY && !process.env.NO_COLOR ? { FORCE_COLOR: '1' } : {}) },
  })
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => child.kill(signal))
  const before = progressLines(new Progress(plan), read.parallel)
  const decoder = new TextDecoder()
  let partial = ''
  const reader = child.stderr.getReader()
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    const lines = (partial + decoder.decode(chunk.value, { stream: true })).split('\n')
    partial = lines.pop()!
    let out = ''
    for (const line of lines) {
      const notes = before(line)
      if (notes.length) {
        process.stderr.write(out)
        out = ''
        notes.forEach(say)
      }
      out += `${line}\n`
    }
    process.stderr.write(out)
  }
  if (partial) process.stderr.write(partial)
  const code = await child.exited
  process.exit(child.signalCode ? 128 + (constants.signals[child.signalCode as keyof typeof constants.signals] ?? 1) : code)
}

if (import.meta.main) await main(process.argv.slice(2))
