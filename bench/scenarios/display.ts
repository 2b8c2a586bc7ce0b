/**
 * `POST /api/component` against pgbench running the per-call statement (key check + counter
 * upsert + component update, one transaction per call), in two shapes: calls spread over 50
 * accounts, and all calls from one account (one counter row, one component). The service groups
 * the calls that arrive while a statement runs (`display.groupCalls`), so it may beat the per-call
 * ceiling.
 */
import { displayCallStatement } from '../../plugins/display/api'
import { hashSecret } from '../../src/secrets'
import { measureCalls, type CallsResult } from '../lib/component-calls'
import { asPgbench, pgbenchCeiling } from '../lib/pgbench'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS, DURATION_SECONDS } from '../lib/settings'
import { round } from '../lib/stats'
import { CHART, DISPLAY_ACCOUNTS, seedDisplayBench } from '../seed/display'
import { LIMITS, TARGETS } from '../targets'

export const name = 'display'
export const target = TARGETS[name]

export async function run(): Promise<void> {
  const { url, organizationId, accounts } = await seedDisplayBench('worktrack_bench_display')
  const spread = await measureCalls(url, accounts)
  const one = await measureCalls(url, [accounts[0]!])

  // The ceiling: the per-call statement (the plugin's own, its placeholders named), one
  // transaction per call, at the better of 64 clients (the load's connections) and 10 (the
  // service's pool). It runs after the service, with a timestamp newer than any the service
  // wrote, so every update is applied, as in the runs.
  const call = displayCallStatement(hashSecret(accounts[0]!.apiKey), organizationId, { componentId: accounts[0]!.componentId, data: JSON.stringify(CHART), timestamp: 4_000_000_000, type: 'barChart' })
  const statement = asPgbench(call)
  const single = Object.fromEntries(call.parameters.map((parameter, i) => [parameter, String(call.values[i])]))
  // Spread: pgbench picks an account by number first, its key hash and component as the statement's `key` and `component`.
  const { key: _, component: __, ...fixed } = single
  const spreadScript = `\\set n random(1, ${DISPLAY_ACCOUNTS})\nselect key_hash as key, component_id as component from bench_display where n = :n \\gset\n${statement}`
  const spreadCeiling = (await pgbenchCeiling(url, spreadScript, fixed)).best
  const singleCeiling = (await pgbenchCeiling(url, statement, single)).best

  const ratio = (result: CallsResult, ceiling: number) => result.requestsPerSecond / ceiling
  const met = (result: CallsResult, ceiling: number, least: number) => (ratio(result, ceiling) >= least && result.p99 <= LIMITS.displayP99Ms ? 'met' : '**missed**')
  const row = (label: string, result: CallsResult, ceiling: number, least: number) =>
    `| ${label} | ${round(result.requestsPerSecond)} | ${result.p50} / ${result.p99} | ${round(ceiling)} | **${round(ratio(result, ceiling), 2)}** | ≥ ${least.toFixed(1)} ×: ${met(result, ceiling, least)} | ${round(result.callsPerCommit, 1)} | ${round(result.stale)} | ${result.errors + result.non2xx} | ${round(result.peakRssMiB, 1)} |`
  writeSection(
    name,
    `## Display API: \`POST /api/component\` vs pgbench running the per-call statement

${sectionHead(`\`npm run bench -- display\` (wrk, 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s after a 2 s warm-up, a fresh service process per shape; each call's body made by wrk's Lua script with a timestamp one microsecond newer than the call before, so updates are applied in order — one is stale, 409, only when a later call overtook it; pgbench \`-M prepared\`, the better of ${CONNECTIONS} and 10 clients, running the per-call statement — key check, counter upsert with the limit check, component update, the organization a parameter as the service sends it — one transaction per call; for the spread shape pgbench first looks the account up by number, one indexed select)`)}
- The service groups the calls that arrive while a statement runs into one statement and one commit (\`display.groupCalls\`); calls per commit = display calls counted ÷ commits in the database over the service's life (pg_stat_database; start-up and the NOTIFY flushes to live viewers count as commits too).
- ${target.spread} ${target.single}

| shape | endpoint req/s | p50 / p99 ms | pgbench TPS | ratio | target (and p99 ≤ ${LIMITS.displayP99Ms} ms) | calls per commit | stale (409) | errors or other non-2xx | peak RSS MiB |
|---|---:|---:|---:|---:|---|---:|---:|---:|---:|
${row(`spread over ${DISPLAY_ACCOUNTS} accounts`, spread, spreadCeiling, LIMITS.displaySpreadOfPgbench)}
${row('one account', one, singleCeiling, LIMITS.displaySingleOfPgbench)}`,
  )
  const figures = (result: CallsResult, ceiling: number) => ({ requestsPerSecond: result.requestsPerSecond, p50: result.p50, p99: result.p99, pgbench: ceiling, stale: result.stale, callsPerCommit: result.callsPerCommit })
  recordResult(name, {
    spread: figures(spread, spreadCeiling),
    single: figures(one, singleCeiling),
    peakRssMiB: Math.max(spread.peakRssMiB, one.peakRssMiB),
    errors: spread.errors + spread.non2xx + one.errors + one.non2xx,
  })
  console.log(
    `display: spread ${round(spread.requestsPerSecond)} req/s (p99 ${spread.p99} ms, ${round(spread.callsPerCommit, 1)} calls/commit) vs ${round(spreadCeiling)} TPS = ${round(ratio(spread, spreadCeiling), 2)}; one account ${round(one.requestsPerSecond)} req/s (p99 ${one.p99} ms, ${round(one.callsPerCommit, 1)} calls/commit) vs ${round(singleCeiling)} TPS = ${round(ratio(one, singleCeiling), 2)}`,
  )
}
