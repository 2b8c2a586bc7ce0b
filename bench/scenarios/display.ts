/**
 * `POST /api/component` against pgbench running the per-call statement (key check + counter row
 * update with the limit check + component update, one transaction per call), in two shapes: calls
 * spread over 50 accounts (pgbench: one script per account, its key and component baked in, 32
 * clients), and all calls from one account (one counter row, one component). The service groups
 * the calls that arrive while a statement runs (`display.groupCalls`), so it may beat the per-call
 * ceiling.
 */
import { displayCallStatement } from '../../plugins/display/api'
import { hashSecret } from '../../src/secrets'
import { measureCalls, type CallsResult } from '../lib/component-calls'
import { asPgbench, pgbench, pgbenchCeiling } from '../lib/pgbench'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS, DURATION_SECONDS } from '../lib/settings'
import { round } from '../lib/stats'
import { CHART, DISPLAY_ACCOUNTS, seedDisplayBench, type Account } from '../seed/display'
import { LIMITS, TARGETS } from '../targets'

export const name = 'display'
export const target = TARGETS[name]

/** The spread shape's pgbench: its clients (the target's) and threads. */
const SPREAD_CLIENTS = LIMITS.displaySpreadPgbenchClients
const SPREAD_THREADS = 2
/**
 * Seconds the spread shape's pgbench runs before its measured ones, on the same connections: each
 * client prepares each account's script and PostgreSQL plans it anew on its first 5 runs (about
 * 3 ms each) before keeping a generic plan, 32 × 50 × 5 plans that take the first 10 to 15 s of a
 * run on 2 cores. The service's statements settle within its 2 s warm-up (one group statement
 * per pooled connection).
 */
const SPREAD_WARMUP_SECONDS = 20

export async function run(): Promise<void> {
  const { url, organizationId, accounts } = await seedDisplayBench('worktrack_bench_display')
  const spread = await measureCalls(url, accounts)
  const one = await measureCalls(url, [accounts[0]!])

  // The ceilings: the per-call statement (the plugin's own, its placeholders named), one
  // transaction per call. They run after the service, with a timestamp newer than any the service
  // wrote, so every update is applied, as in the runs.
  const update = { data: JSON.stringify(CHART), timestamp: 4_000_000_000, type: 'barChart' }
  const call = (account: Account) => displayCallStatement(hashSecret(account.apiKey), organizationId, { componentId: account.componentId, ...update })
  const first = call(accounts[0]!)
  const values = Object.fromEntries(first.parameters.map((parameter, i) => [parameter, String(first.values[i])]))
  // Spread: one script per account, its key hash and component baked in as literals, equal
  // weights (each transaction runs one account's call, picked at random), the other values the
  // same for every account (`-D`); measured for the endpoint's duration after a warm-up.
  const { key: _, component: __, ...shared } = values
  const spreadScripts = accounts.map((account) => asPgbench(call(account), { key: hashSecret(account.apiKey), component: account.componentId }))
  const spreadCeiling = await pgbench(url, spreadScripts, { clients: SPREAD_CLIENTS, threads: SPREAD_THREADS, variables: shared, warmup: SPREAD_WARMUP_SECONDS })
  // One account: the better of 64 clients (the load's connections) and 10 (the service's pool).
  const singleCeiling = (await pgbenchCeiling(url, asPgbench(first), values)).best

  const ratio = (result: CallsResult, ceiling: number) => result.requestsPerSecond / ceiling
  const met = (result: CallsResult, ceiling: number, least: number) => (ratio(result, ceiling) >= least && result.p99 <= LIMITS.displayP99Ms ? 'met' : '**missed**')
  const row = (label: string, result: CallsResult, ceiling: number, least: number) =>
    `| ${label} | ${round(result.requestsPerSecond)} | ${result.p50} / ${result.p99} | ${round(ceiling)} | **${round(ratio(result, ceiling), 2)}** | ≥ ${least.toFixed(1)} ×: ${met(result, ceiling, least)} | ${round(result.callsPerCommit, 1)} | ${round(result.stale)} | ${result.errors + result.non2xx} | ${round(result.peakRssMiB, 1)} |`
  writeSection(
    name,
    `## Display API: \`POST /api/component\` vs pgbench running the per-call statement

${sectionHead(`\`npm run bench -- display\` (wrk, 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s after a 2 s warm-up, a fresh service process per shape; each call's body made by wrk's Lua script with a timestamp one microsecond newer than the call before, so updates are applied in order — one is stale, 409, only when a later call overtook it; pgbench runs the per-call statement — key check, counter row update with the limit check, component update, the organization a parameter as the service sends it — one transaction per call, after the service, with a timestamp newer than any it wrote. Spread: \`pgbench -n -M prepared -c ${SPREAD_CLIENTS} -j ${SPREAD_THREADS} -T ${SPREAD_WARMUP_SECONDS + DURATION_SECONDS} -P 1 -f account-1.sql@1 … -f account-${accounts.length}.sql@1 -D organization=… -D data=… -D timestamp=… -D type=…\`, one script per account, its key hash and component baked in as literals, equal weights; TPS = the mean of the last ${DURATION_SECONDS} progress lines, after a ${SPREAD_WARMUP_SECONDS} s warm-up in which each client's 50 prepared statements settle on their plans. One account: \`pgbench -n -M prepared -c ${CONNECTIONS} -j 2 -T ${DURATION_SECONDS} -f call.sql -D key=… -D component=… …\` and the same with \`-c 10\`, the better of the two)`)}
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
