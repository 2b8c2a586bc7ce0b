/**
 * Notifications about work at scale: a project 10,000 users watch. (1) The fan-out: one comment
 * on a work item of it, from the writer's answer to the last of the 10,000 threads written by the
 * service's fan-out workers (the work item's creation makes the threads, three comments one after
 * another update them); the threads are checked to be written once per change and watcher. (2) What the
 * watchers cost the writer: the same `POST …/entries` load from wrk on a work item of the watched
 * project and on one of a project nobody watches, with the fan-out workers off (a service started
 * with `notifications.workers: false`), so that both measure the request alone: the change is
 * queued in its transaction either way, and fanned out elsewhere.
 */
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import type { Figures } from '../figures'
import { seededDatabase } from '../lib/database'
import { startService } from '../lib/processes'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { round } from '../lib/stats'
import { checkAnswers, throughput, wrk } from '../lib/wrk'
import { seedMembers, seedOrganization, seedProject } from '../seed/organization'
import { TARGETS } from '../targets'

export const name = 'notifications'
export const target = TARGETS[name]

const WATCHERS = Number(process.env.BENCH_NOTIFICATION_WATCHERS ?? 10_000)
const RUNS = 3
const PORT = 3885
const WRITE_SECONDS = Number(process.env.BENCH_NOTIFICATIONS_WRITE_SECONDS ?? 8)
const WRITE_CONNECTIONS = 16

/** A writer with a key, a project WATCHERS viewers watch, and a project nobody watches. */
const seed = () =>
  seededDatabase('worktrack_bench_notifications', async (db) => {
    const writer = await seedOrganization(db, { scopes: ['work_items:read', 'work_items:write', 'entries:read', 'entries:write'] })
    await seedMembers(db, writer.organizationId, WATCHERS, writer.projectId, 'watcher')
    await db.execute(sql`insert into project_subscriptions (project_id, user_id, organization_id)
      select ${writer.projectId}, id, ${writer.organizationId} from users where organization_id = ${writer.organizationId} and username like 'watcher%'`)
    const quiet = await seedProject(db, writer.organizationId, writer.userId, 'Unwatched')
    await db.execute(sql`analyze`)
    return { ...writer, quiet }
  })

async function call(method: string, path: string, key: string, body?: unknown): Promise<any> {
  const response = await fetch(`http://127.0.0.1:${PORT}${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}`)
  return (await response.json()).data
}

export async function run(): Promise<void> {
  const { url, seeded } = await seed()
  const monitor = postgres(url, { max: 1, onnotice: () => {} })
  const runs: Array<{ seconds: number; perSecond: number; postMs: number }> = []
  let exactlyOnce = true
  let peakRssMiB = 0
  let watched: Figures['notifications']['watched'] | undefined
  let unwatched: Figures['notifications']['unwatched'] | undefined
  try {
    // (1) The fan-out, with the default configuration.
    let service = await startService(url, PORT)
    try {
      const written = async () => Number((await monitor`select n_tup_ins + n_tup_upd as n from pg_stat_user_tables where relname = 'notification_threads'`)[0]?.n ?? 0)
      const before = await written()
      /** Sends a change, then waits until every watcher's thread of the work item shows it (its excerpt). */
      const measure = async (send: () => Promise<{ itemId: string }>, excerpt: string) => {
        const started = performance.now()
        const { itemId } = await send()
        const posted = performance.now()
        for (const deadline = Date.now() + 120_000; ; await Bun.sleep(5)) {
          const [row] = await monitor`select count(*)::int as n from notification_threads where work_item_id = ${itemId} and excerpt = ${excerpt} and organization_id = ${seeded.organizationId}`
          if (row!.n >= WATCHERS) break
          if (Date.now() > deadline) throw new Error(`only ${row!.n} of ${WATCHERS} threads after 120 s`)
        }
        const seconds = (performance.now() - posted) / 1000
        runs.push({ seconds, perSecond: WATCHERS / seconds, postMs: posted - started })
        return itemId
      }
      // The work item's creation makes the watchers' threads (`created`); each comment updates them.
      let itemId = ''
      itemId = await measure(async () => ({ itemId: (await call('POST', `/api/v1/projects/${seeded.projectId}/work-items`, seeded.secret, { title: 'Release checklist' })).id }), 'Release checklist')
      for (let run = 0; run < RUNS; run++) {
        const marker = `Run ${run + 1}: the release is tomorrow`
        await measure(async () => (await call('POST', `/api/v1/work-items/${itemId}/entries`, seeded.secret, { body: marker }), { itemId }), marker)
      }
      const item = { id: itemId }
      // Each watcher has one thread for the work item, and the threads were written once per change
      // and watcher: the table's inserted and updated rows (the statistics reach it within seconds).
      const expected = (1 + RUNS) * WATCHERS
      let rows = 0
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await Bun.sleep(200)) if ((rows = (await written()) - before) >= expected) break
      const [counts] = await monitor`select count(*)::int as threads, count(distinct user_id)::int as users from notification_threads where work_item_id = ${item.id} and organization_id = ${seeded.organizationId}`
      exactlyOnce = counts!.threads === WATCHERS && counts!.users === WATCHERS && rows === expected
      peakRssMiB = service.peakRssMiB()
    } finally {
      await service.stop()
    }

    // (2) The writer's cost: the same comments on a watched and an unwatched project, recording only.
    service = await startService(url, PORT, { config: { notifications: { workers: false } } })
    try {
      const watchedItem = await call('POST', `/api/v1/projects/${seeded.projectId}/work-items`, seeded.secret, { title: 'Watched' })
      const quietItem = await call('POST', `/api/v1/projects/${seeded.quiet}/work-items`, seeded.secret, { title: 'Unwatched' })
      const load = async (itemId: string) => {
        const result = await wrk(`http://127.0.0.1:${PORT}/api/v1/work-items/${itemId}/entries`, {
          method: 'POST',
          headers: { authorization: `Bearer ${seeded.secret}`, 'content-type': 'application/json' },
          body: JSON.stringify({ body: 'A comment from the benchmark' }),
          duration: WRITE_SECONDS,
          connections: WRITE_CONNECTIONS,
        })
        checkAnswers(`POST entries (${itemId})`, result)
        return result
      }
      await load(quietItem.id) // warm-up
      const rounds = [await load(watchedItem.id), await load(quietItem.id), await load(watchedItem.id), await load(quietItem.id)]
      const meanOf = (list: typeof rounds) => ({ requestsPerSecond: list.reduce((sum, r) => sum + r.requestsPerSecond, 0) / list.length, p50: list.reduce((sum, r) => sum + r.p50, 0) / list.length, p99: Math.max(...list.map((r) => r.p99)) })
      watched = throughput(meanOf([rounds[0]!, rounds[2]!]))
      unwatched = throughput(meanOf([rounds[1]!, rounds[3]!]))
      peakRssMiB = Math.max(peakRssMiB, service.peakRssMiB())
    } finally {
      await service.stop()
    }
  } finally {
    await monitor.end()
  }
  const median = [...runs].sort((a, b) => a.perSecond - b.perSecond)[Math.floor(runs.length / 2)]!
  const ratio = watched!.requestsPerSecond / unwatched!.requestsPerSecond
  writeSection(
    name,
    `## Notifications: one change to a project ${round(WATCHERS)} users watch

${sectionHead(`\`npm run bench -- notifications\` (service process on the PostgreSQL server; ${round(WATCHERS)} viewers of the project
  watch it; fan-out: the default configuration, 2 workers; writes: wrk, ${WRITE_CONNECTIONS} connections, ${WRITE_SECONDS} s per run, watched
  and unwatched alternating twice, \`notifications.workers: false\`)`)}

| change | POST ms | all ${round(WATCHERS)} threads written s | thread updates/s |
|---|---:|---:|---:|
${runs.map((r, i) => `| ${i === 0 ? 'the work item created (threads made)' : `comment ${i} (threads updated)`} | ${round(r.postMs)} | ${round(r.seconds, 2)} | ${round(r.perSecond)} |`).join('\n')}

**Median ${round(median.perSecond)} thread updates/s.** ${target.fanOut} One thread per watcher, written once per comment (the table's inserted and updated rows: ${round((1 + RUNS) * WATCHERS)} expected): ${exactlyOnce ? 'yes' : 'NO'}.

| POST …/entries, workers off | req/s | p50 ms | p99 ms |
|---|---:|---:|---:|
| on the watched project | ${round(watched!.requestsPerSecond)} | ${round(watched!.p50, 1)} | ${round(watched!.p99, 1)} |
| on an unwatched project | ${round(unwatched!.requestsPerSecond)} | ${round(unwatched!.p50, 1)} | ${round(unwatched!.p99, 1)} |

**Ratio ${round(ratio, 2)}.** ${target.writer} Peak RSS of the service: ${round(peakRssMiB, 1)} MiB.
`,
  )
  recordResult(name, { watchers: WATCHERS, perRun: runs.map((r) => r.perSecond), median: median.perSecond, exactlyOnce, watched: watched!, unwatched: unwatched!, ratio, peakRssMiB })
  console.log({ runs, watched, unwatched, ratio })
}
