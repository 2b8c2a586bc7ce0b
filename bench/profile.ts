/**
 * A CPU profile of the service under one request shape, for finding where a request's time goes
 * (not a benchmark: it records nothing). `bun bench/profile.ts [users-me|list|list-20|list-cold|display]` seeds
 * a fresh database on the PostgreSQL server (a member's key, a project of 100 work items; for
 * `display`, the display benchmark's 50 accounts, each updating its own chart), starts
 * `entries/bun.ts` under Bun's sampling profiler (`--cpu-prof-md`, every 200 µs), drives the path
 * with wrk for BENCH_DURATION seconds and writes the profile as Markdown to /tmp/worktrack-profile/.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { openDatabase } from '../src/db'
import { migrate } from '../src/migrate'
import { DURATION_SECONDS, freshDatabase, round, startProcess, wrk } from './lib'
import { seedOrganization } from './seed'
import { seedWork } from './seed-work'
import { componentCalls, seed as seedDisplay } from './display'

const DIR = '/tmp/worktrack-profile'
const shape = process.argv[2] ?? 'list'
const url = await freshDatabase('worktrack_bench_profile')
const database = await openDatabase(url)
await migrate(database.db)
const seeded = await seedOrganization(database.db, { scopes: ['work_items:read', 'users:read'] })
await seedWork(database.db, seeded, { workItems: 100, entries: 0 })
await database.close()
const paths: Record<string, string> = {
  'users-me': '/api/v1/users/me',
  list: `/api/v1/projects/${seeded.projectId}/work-items?size=100`,
  'list-20': `/api/v1/projects/${seeded.projectId}/work-items`,
  /** The list with its cache off: every answer reads and encodes its rows. */
  'list-cold': `/api/v1/projects/${seeded.projectId}/work-items?size=100`,
}
const accounts = shape === 'display' ? await seedDisplay(url) : undefined
const path = accounts ? '/api/component' : paths[shape]
if (!path) throw new Error(`unknown shape "${shape}" (known: ${[...Object.keys(paths), 'display'].join(', ')})`)
rmSync(DIR, { recursive: true, force: true })
mkdirSync(DIR, { recursive: true })
writeFileSync(`${DIR}/config.json`, JSON.stringify({ server: { listCacheBytes: shape === 'list-cold' ? 0 : 64 * 1024 * 1024 } }))
const service = await startProcess([process.execPath, '--cpu-prof-md', `--cpu-prof-dir=${DIR}`, '--cpu-prof-interval=200', 'entries/bun.ts'], { DATABASE_URL: url, SERVICE_CONFIG: `${DIR}/config.json` }, 3872)
try {
  const result = accounts
    ? await wrk(`http://127.0.0.1:3872${path}`, { script: componentCalls(accounts), duration: DURATION_SECONDS })
    : await wrk(`http://127.0.0.1:3872${path}`, { headers: { authorization: `Bearer ${seeded.secret}` }, duration: DURATION_SECONDS })
  console.log(`${shape}: ${round(result.requestsPerSecond)} req/s (p50 ${result.p50} ms)`)
} finally {
  await service.stop()
}
console.log(`profile: ${DIR}/${readdirSync(DIR).find((name) => name.endsWith('.md'))}`)
