/**
 * `POST /api/component` under load: wrk's Lua for calls cycling through display accounts, and one
 * measured run on a service of its own with its stale answers and the calls it grouped per commit.
 */
import { CHART, componentBody, type Account } from '../seed/display'
import { withClient } from './database'
import { commits } from './pg-activity'
import { startService } from './processes'
import { luaString, wrk, type LoadResult } from './wrk'

/**
 * wrk's Lua for `POST /api/component` calls cycling through `accounts`, each call one microsecond
 * newer than the one before (Unix seconds from the next second on), as a device reporting in
 * order would: an update is stale (409) only when a later call overtook it on the way. One
 * counter per wrk thread: the benchmarks run one.
 */
export function componentCalls(accounts: Account[]): string {
  const second = Math.floor(Date.now() / 1000) + 1
  // Each body around its timestamp, fields in componentBody's order.
  const heads = accounts.map((account) => `${JSON.stringify({ componentId: account.componentId, apiKey: account.apiKey }).slice(0, -1)},"timestamp":`)
  return `local heads = {${heads.map(luaString).join(', ')}}
local tail = ${luaString(`,"data":${JSON.stringify(CHART)}}`)}
local headers = {["content-type"] = "application/json"}
local sent = 0
function request()
  sent = sent + 1
  local timestamp = string.format("%d.%06d", ${second} + math.floor(sent / 1000000), sent % 1000000)
  return wrk.format("POST", "/api/component", headers, heads[sent % #heads + 1] .. timestamp .. tail)
end`
}

/** Calls `POST /api/component` once for the first account (a current timestamp): throws unless it answered 200. */
export async function probeComponentCall(base: string, account: Account): Promise<void> {
  const probe = await fetch(`${base}/api/component`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: componentBody(account, Math.floor(Date.now() / 1000)) })
  if (probe.status !== 200) throw new Error(`POST /api/component answered ${probe.status}: ${await probe.text()}`)
}

/** Commits in the database and display calls counted so far (pg_stat_database, display_usage). */
const activity = (url: string) =>
  withClient(url, async (sql) => {
    const [row] = await sql<Array<{ calls: string }>>`select coalesce(sum(calls), 0) as calls from display_usage`
    return { commits: await commits(sql), calls: Number(row!.calls) }
  })

export interface CallsResult extends LoadResult {
  /** Answers 409: an update overtaken by a later one. */
  stale: number
  /** Display calls counted per commit over the service's life (NOTIFY flushes and start-up included). */
  callsPerCommit: number
  peakRssMiB: number
}

/**
 * One run of calls on a service of its own: a probe, a 2 s warm-up, then the measured run. The
 * service is stopped before the database's commit count is read: its connections' statistics
 * reach pg_stat_database when they close.
 */
export async function measureCalls(url: string, accounts: Account[], port = 3871): Promise<CallsResult> {
  const before = await activity(url)
  const service = await startService(url, port)
  const base = `http://127.0.0.1:${port}`
  let result: LoadResult, peakRssMiB: number
  try {
    await probeComponentCall(base, accounts[0]!)
    await wrk(`${base}/api/component`, { script: componentCalls(accounts), duration: 2 })
    result = await wrk(`${base}/api/component`, { script: componentCalls(accounts), statuses: true })
    peakRssMiB = service.peakRssMiB()
  } finally {
    await service.stop()
  }
  await Bun.sleep(1000)
  const after = await activity(url)
  const stale = result.counts['409'] ?? 0
  return { ...result, non2xx: result.non2xx - stale, stale, callsPerCommit: (after.calls - before.calls) / (after.commits - before.commits), peakRssMiB }
}
