/**
 * What dashboard alerts cost `POST /api/component`: calls spread over 50 display accounts (the
 * display benchmark's shape), first with no rule, then with a rule on every component (one that
 * never fires, so every batch of updates is evaluated and finds nothing to change: the common
 * case), alternating twice in one run so that the machine's drift falls on both.
 */
import { sql } from 'drizzle-orm'
import { openDatabase, queryText } from '../../src/db'
import { measureCalls, type CallsResult } from '../lib/component-calls'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS, DURATION_SECONDS } from '../lib/settings'
import { mean, round } from '../lib/stats'
import { seedDisplayBench } from '../seed/display'
import { LIMITS, TARGETS } from '../targets'

export const name = 'alerts'
export const target = TARGETS[name]

async function setRules(url: string, on: boolean): Promise<number> {
  const database = await openDatabase(url)
  try {
    if (!on) {
      await database.db.execute(sql`delete from component_alerts`)
      return 0
    }
    // A threshold no chart reaches: evaluated on every update, never a transition.
    await database.db.execute(sql`insert into component_alerts (id, organization_id, page_id, component_id, kind, value, for_seconds, created_by)
      select gen_random_uuid(), c.organization_id, c.page_id, c.id, 'above', 1e12, 0, p.created_by from components c join pages p on p.id = c.page_id and p.organization_id = c.organization_id`)
    const [row] = await queryText<{ n: number }>(database.db, 'select count(*)::int as n from component_alerts', [])
    return row?.n ?? 0
  } finally {
    await database.close()
  }
}

export async function run(): Promise<void> {
  const { url, accounts } = await seedDisplayBench('worktrack_bench_alerts')
  const without: CallsResult[] = []
  const withRules: CallsResult[] = []
  let rules = 0
  for (let round = 0; round < 2; round++) {
    await setRules(url, false)
    without.push(await measureCalls(url, accounts))
    rules = await setRules(url, true)
    withRules.push(await measureCalls(url, accounts))
  }
  const rates = (results: CallsResult[]) => results.map((each) => each.requestsPerSecond)
  const ratio = mean(rates(withRules)) / mean(rates(without))
  const errors = [...without, ...withRules].reduce((sum, each) => sum + each.errors + each.non2xx, 0)
  const peakRssMiB = Math.max(...[...without, ...withRules].map((each) => each.peakRssMiB))
  const cell = (results: CallsResult[]) => results.map((each) => `${round(each.requestsPerSecond)} (p99 ${each.p99} ms)`).join(', ')
  writeSection(
    name,
    `## Dashboard alerts: \`POST /api/component\` with a rule on every component

${sectionHead(`\`npm run bench -- alerts\` (the display benchmark's spread shape: wrk, 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s after a 2 s warm-up, 50 accounts with one bar chart each, a fresh service process per run; without rules, then with one \`above\` rule per component that never fires, twice, alternating)`)}
- Each batch of committed updates is evaluated with one read per organization (\`alerts\`' NEEDING_CHANGE); a rule that does not change opens no transaction.
- ${target.rules}

| runs | without rules, req/s | with ${rules} rules, req/s | ratio (means) | target ≥ ${LIMITS.alertsShareOfWithout} | errors or non-2xx | peak RSS MiB |
|---|---|---|---:|---|---:|---:|
| 2 + 2 | ${cell(without)} | ${cell(withRules)} | **${round(ratio, 3)}** | ${ratio >= LIMITS.alertsShareOfWithout ? 'met' : '**missed**'} | ${errors} | ${round(peakRssMiB, 1)} |`,
  )
  recordResult(name, { without: rates(without), withRules: rates(withRules), rules, ratio, errors, peakRssMiB })
  console.log(`alerts: without rules ${cell(without)}; with ${rules} rules ${cell(withRules)}; ratio ${round(ratio, 3)}`)
}
