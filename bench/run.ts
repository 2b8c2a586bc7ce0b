/**
 * `npm run bench [-- name …]`: runs the named benchmarks (all by default, in the summary's
 * order) against the PostgreSQL server, updates their sections of bench/RESULTS.md and their
 * figures in bench/results.json, then regenerates the summary at the top of RESULTS.md from
 * results.json. A failing benchmark does not stop the others; the exit code is 1 if any failed.
 * `citus` also needs BENCH_CITUS_URL (a Citus coordinator database, see bench/citus.ts); without it, it is skipped.
 */
import { benchAlerts } from './alerts'
import { benchAnswers } from './answers'
import { benchAuthMe } from './auth-me'
import { benchCitus } from './citus'
import { benchDisplay } from './display'
import { benchDriver } from './driver'
import { benchGrowth } from './growth'
import { benchMcp } from './mcp'
import { benchMembers } from './members'
import { benchMixed } from './mixed'
import { markBenchmarkStart } from './lib'
import { benchPages } from './pages'
import { benchPush } from './push'
import { benchSignIn } from './sign-in'
import { BENCHMARKS, writeSummary, type SummaryName } from './summary'
import { benchWebhooks } from './webhooks'
import { benchWorkItems } from './work-items'

const benchmarks: Record<SummaryName, () => Promise<void>> = {
  'auth-me': benchAuthMe,
  members: benchMembers,
  'work-items': benchWorkItems,
  mcp: benchMcp,
  display: benchDisplay,
  alerts: benchAlerts,
  pages: benchPages,
  push: benchPush,
  webhooks: benchWebhooks,
  'sign-in': benchSignIn,
  mixed: benchMixed,
  citus: benchCitus,
  growth: benchGrowth,
  answers: benchAnswers,
  driver: benchDriver,
}

const wanted = process.argv.slice(2)
for (const name of wanted) if (!(name in benchmarks)) throw new Error(`unknown benchmark "${name}" (known: ${BENCHMARKS.join(', ')})`)
const failed: string[] = []
for (const name of BENCHMARKS) {
  if (wanted.length && !wanted.includes(name)) continue
  console.log(`running ${name} …`)
  markBenchmarkStart()
  try {
    await benchmarks[name]()
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
