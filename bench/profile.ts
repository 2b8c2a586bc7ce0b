/**
 * A CPU profile of the service under one request shape, for finding where a request's time goes
 * (not a benchmark: it records nothing). `bun bench/profile.ts [users-me|list|list-20|list-cold|display]` seeds
 * a fresh database on the PostgreSQL server (a member's key, a project of 100 work items; for
 * `display`, the display benchmark's 50 accounts, each updating its own chart), starts
 * `entries/bun.ts` under Bun's sampling profiler (`--cpu-prof-md`, every 200 µs), drives the path
 * with wrk for BENCH_DURATION seconds and writes the profile as Markdown to /tmp/worktrack-profile/.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs'
import { componentCalls } from './lib/component-calls'
import { seededDatabase } from './lib/database'
import { LIST_CACHE_BYTES, startService } from './lib/processes'
import { DURATION_SECONDS } from './lib/settings'
import { round } from './lib/stats'
import { wrk } from './lib/wrk'
import { seedDisplayBench } from './seed/display'
import { seedOrganization } from './seed/organization'
import { seedWork } from './seed/work'

const DIR = '/tmp/worktrack-profile'
const shape = process.argv[2] ?? 'list'
const paths: Record<string, (projectId: string) => string> = {
  'users-me': () => '/api/v1/users/me',
  list: (projectId) => `/api/v1/projects/${projectId}/work-items?size=100`,
  'list-20': (projectId) => `/api/v1/projects/${projectId}/work-items`,
  /** The list with its cache off: every answer reads and encodes its rows. */
  'list-cold': (projectId) => `/api/v1/projects/${projectId}/work-items?size=100`,
}
if (shape !== 'display' && !paths[shape]) throw new Error(`unknown shape "${shape}" (known: ${[...Object.keys(paths), 'display'].join(', ')})`)
const { url, seeded } = await seededDatabase('worktrack_bench_profile', async (db) => {
  const seeded = await seedOrganization(db, { scopes: ['work_items:read', 'users:read'] })
  await seedWork(db, seeded, { workItems: 100, entries: 0 })
  return seeded
})
const accounts = shape === 'display' ? (await seedDisplayBench('worktrack_bench_profile_display')) : undefined
rmSync(DIR, { recursive: true, force: true })
mkdirSync(DIR, { recursive: true })
const service = await startService(accounts?.url ?? url, 3872, {
  config: { server: { listCacheBytes: shape === 'list-cold' ? 0 : LIST_CACHE_BYTES } },
  bunFlags: ['--cpu-prof-md', `--cpu-prof-dir=${DIR}`, '--cpu-prof-interval=200'],
})
try {
  const result = accounts
    ? await wrk('http://127.0.0.1:3872/api/component', { script: componentCalls(accounts.accounts), duration: DURATION_SECONDS })
    : await wrk(`http://127.0.0.1:3872${paths[shape]!(seeded.projectId)}`, { headers: { authorization: `Bearer ${seeded.secret}` }, duration: DURATION_SECONDS })
  console.log(`${shape}: ${round(result.requestsPerSecond)} req/s (p50 ${result.p50} ms)`)
} finally {
  await service.stop()
}
console.log(`profile: ${DIR}/${readdirSync(DIR).find((name) => name.endsWith('.md'))}`)
