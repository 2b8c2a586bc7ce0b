/**
 * Where the benchmarks' results go: each benchmark's section of bench/RESULTS.md (Markdown between
 * `<!-- bench:name -->` markers, replaced in place) and its headline figures in bench/results.json,
 * from which bench/summary.ts generates the summary at the top of RESULTS.md.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import type { Figures } from '../figures'
import { stolenShare } from './cpu'

const RESULTS = 'bench/RESULTS.md'
const RESULTS_JSON = 'bench/results.json'
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

export type BenchName = keyof Figures

export interface RecordedResult<Name extends BenchName = BenchName> {
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

/** Stores (replaces) the figures of benchmark `name` in bench/results.json, dated now, with this machine and `command` (default `npm run bench -- name`). */
export function recordResult<Name extends BenchName>(name: Name, figures: Figures[Name], command = `npm run bench -- ${name}`): void {
  const all = readResults() as Record<string, unknown>
  all[name] = { date: new Date().toISOString(), machine: machine(), command, figures } satisfies RecordedResult<Name>
  writeFileSync(RESULTS_JSON, `${JSON.stringify(all, null, 2)}\n`)
}

/** The first lines of every section: its date, machine and command. */
export function sectionHead(command: string, machineNote = ''): string {
  return `- Date: ${new Date().toISOString()} · Machine: ${machine()}${machineNote}\n- Command: ${command}`
}

/** One line describing this machine, for every section (with the share of CPU time the host stole during the benchmark). */
export function machine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU'
  const stolen = stolenShare()
  return `${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${process.platform}; Bun ${Bun.version}, Node ${nodeVersion()}, PostgreSQL ${pgVersion()}${stolen === undefined ? '' : `; CPU time stolen by the host during this benchmark: ${stolen} %`}`
}

/** The commit the service runs from, and whether the work tree has changes beside it. */
export function serviceCommit(): string {
  const head = Bun.spawnSync(['git', 'rev-parse', '--short', 'HEAD']).stdout.toString().trim()
  const changed = Bun.spawnSync(['git', 'status', '--porcelain', '--untracked-files=no', '--', 'src', 'plugins', 'entries', 'migrations']).stdout.toString().trim()
  return head ? `${head}${changed ? ' with uncommitted changes in src/plugins' : ''}` : 'unknown'
}

function nodeVersion(): string {
  return Bun.spawnSync(['node', '--version']).stdout.toString().trim()
}

function pgVersion(): string {
  return /(\d+\.\d+)/.exec(Bun.spawnSync(['psql', '--version']).stdout.toString())?.[1] ?? '?'
}
