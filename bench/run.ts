/**
 * `npm run bench [-- name …]`: runs the named benchmarks (all by default) against the
 * PostgreSQL server and updates bench/RESULTS.md.
 */
import { benchAuthMe } from './auth-me'
import { benchDisplay } from './display'
import { benchMcp } from './mcp'
import { benchMembers } from './members'
import { benchPush } from './push'
import { benchWorkItems } from './work-items'

const benchmarks: Record<string, () => Promise<void>> = {
  'auth-me': benchAuthMe,
  members: benchMembers,
  'work-items': benchWorkItems,
  mcp: benchMcp,
  display: benchDisplay,
  push: benchPush,
}

const wanted = process.argv.slice(2)
for (const name of wanted) if (!(name in benchmarks)) throw new Error(`unknown benchmark "${name}" (known: ${Object.keys(benchmarks).join(', ')})`)
for (const [name, run] of Object.entries(benchmarks)) {
  if (wanted.length && !wanted.includes(name)) continue
  console.log(`running ${name} …`)
  await run()
}
