/**
 * `npm run bench [-- name …]`: runs the named benchmarks (all by default, in the order of
 * bench/targets.ts) against the PostgreSQL server, updates their sections of bench/RESULTS.md and
 * their figures in bench/results.json, then regenerates the summary at the top of RESULTS.md from
 * results.json. A benchmark is a module bench/scenarios/<name>.ts exporting `name`, `target` (its
 * sentences in bench/targets.ts) and `run()`; a name also runs every benchmark named `name-…`
 * (`webhooks`: webhooks-delivery and webhooks-writes). Only the modules run are loaded; one that
 * fails to load or run does not stop the others, and the exit code is 1 if any failed. `citus`
 * also needs BENCH_CITUS_URL (a Citus coordinator database, see bench/scenarios/citus.ts);
 * without it, it is skipped.
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { markBenchmarkStart } from './lib/cpu'
import { writeSummary } from './summary'
import { SCENARIOS, TARGETS, type ScenarioName } from './targets'

export interface Scenario {
  name: ScenarioName
  target: Record<string, string>
  run(): Promise<void>
}

const DIR = join(import.meta.dir, 'scenarios')

/** The scenarios' names, from bench/scenarios/: each file must have its target in bench/targets.ts, and each target its file. */
export function scenarioNames(): ScenarioName[] {
  const files = readdirSync(DIR).filter((file) => file.endsWith('.ts')).map((file) => file.slice(0, -3))
  for (const file of files) if (!(file in TARGETS)) throw new Error(`bench/scenarios/${file}.ts has no target in bench/targets.ts`)
  for (const name of SCENARIOS) if (!files.includes(name)) throw new Error(`bench/targets.ts names "${name}", which no bench/scenarios/${name}.ts runs`)
  return SCENARIOS
}

/** Loads bench/scenarios/<name>.ts and checks its shape: `{name, target, run}`, the name its own, the target its sentences. */
export async function loadScenario(name: ScenarioName): Promise<Scenario> {
  const module = (await import(join(DIR, `${name}.ts`))) as Partial<Scenario>
  if (module.name !== name || typeof module.run !== 'function' || module.target !== TARGETS[name]) throw new Error(`bench/scenarios/${name}.ts does not export {name: '${name}', target: TARGETS['${name}'], run}`)
  return module as Scenario
}

if (import.meta.main) {
  const names = scenarioNames()
  const wanted = process.argv.slice(2)
  const matches = (name: string, asked: string) => name === asked || name.startsWith(`${asked}-`)
  for (const asked of wanted) if (!names.some((name) => matches(name, asked))) throw new Error(`unknown benchmark "${asked}" (known: ${names.join(', ')})`)
  const failed: string[] = []
  for (const name of names.filter((each) => !wanted.length || wanted.some((asked) => matches(each, asked)))) {
    console.log(`running ${name} …`)
    markBenchmarkStart()
    try {
      await (await loadScenario(name)).run()
    } catch (error) {
      console.error(`${name} failed:`, error)
      failed.push(name)
    }
  }
  writeSummary()
  if (failed.length) {
    console.error(`failed: ${failed.join(', ')}`)
    process.exit(1)
  }
}
