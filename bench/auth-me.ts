/**
 * The Bearer check on every request: authenticated GET /api/v1/users/me against an Elysia
 * hello-world on the same runtime, measured by the same wrk, in the same run. Target: at least 50% of
 * hello-world.
 */
import { openDatabase } from '../src/db'
import { migrate } from '../src/migrate'
import { seedOrganization } from './seed'
import { CONNECTIONS, DURATION_SECONDS, freshDatabase, machine, recordResult, round, startProcess, wrk, writeSection, type LoadResult } from './lib'

export async function benchAuthMe(): Promise<void> {
  const databaseUrl = await freshDatabase('worktrack_bench_auth')
  const database = await openDatabase(databaseUrl)
  await migrate(database.db)
  const { secret } = await seedOrganization(database.db, { scopes: ['users:read'] })
  await database.close()

  const service = await startProcess([process.execPath, 'entries/bun.ts'], { DATABASE_URL: databaseUrl, SERVICE_CONFIG: '' }, 3801)
  const hello = await startProcess([process.execPath, 'bench/hello.ts'], {}, 3802, '/')
  const results: { me: LoadResult[]; hello: LoadResult[] } = { me: [], hello: [] }
  let serviceRss = 0
  let helloRss = 0
  try {
    const headers = { authorization: `Bearer ${secret}` }
    await wrk('http://127.0.0.1:3801/api/v1/users/me', { headers, duration: 2 }) // warm-up
    await wrk('http://127.0.0.1:3802/', { duration: 2 })
    // Alternate the two targets so drift on a shared machine hits both alike.
    for (let round = 0; round < 2; round++) {
      results.me.push(await wrk('http://127.0.0.1:3801/api/v1/users/me', { headers }))
      results.hello.push(await wrk('http://127.0.0.1:3802/'))
    }
    serviceRss = service.peakRssMiB()
    helloRss = hello.peakRssMiB()
  } finally {
    await service.stop()
    await hello.stop()
  }
  const best = (runs: LoadResult[]) => runs.reduce((a, b) => (b.requestsPerSecond > a.requestsPerSecond ? b : a))
  const me = best(results.me)
  const base = best(results.hello)
  const failed = results.me.reduce((sum, run) => sum + run.errors + run.non2xx, 0)
  const ratio = me.requestsPerSecond / base.requestsPerSecond
  const date = new Date().toISOString()
  writeSection(
    'auth-me',
    `## Bearer check: authenticated \`GET /api/v1/users/me\` vs Elysia hello-world

- Date: ${date} · Machine: ${machine()}
- Command: \`npm run bench -- auth-me\` (wrk, 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s per run, 2 alternating runs each, best shown; service on the PostgreSQL server)

| target | req/s | p50 ms | p99 ms | peak RSS MiB |
|---|---:|---:|---:|---:|
| \`GET /api/v1/users/me\` (key check + envelope) | ${round(me.requestsPerSecond)} | ${me.p50} | ${me.p99} | ${round(serviceRss, 1)} |
| Elysia hello-world (\`GET /\`) | ${round(base.requestsPerSecond)} | ${base.p50} | ${base.p99} | ${round(helloRss, 1)} |

**Ratio: ${round(ratio * 100, 1)}% of hello-world** (target ≥ 50%). Errors or non-2xx answers during the runs: ${failed}.
Per-run req/s — users/me: ${results.me.map((run) => round(run.requestsPerSecond)).join(', ')}; hello: ${results.hello.map((run) => round(run.requestsPerSecond)).join(', ')}.`,
  )
  recordResult('auth-me', {
    date,
    machine: machine(),
    command: 'npm run bench -- auth-me',
    figures: { endpoint: { requestsPerSecond: me.requestsPerSecond, p50: me.p50, p99: me.p99 }, hello: { requestsPerSecond: base.requestsPerSecond, p50: base.p50, p99: base.p99 }, peakRssMiB: serviceRss, helloPeakRssMiB: helloRss, errors: failed },
  })
  console.log(`auth-me: ${round(me.requestsPerSecond)} req/s vs hello ${round(base.requestsPerSecond)} req/s = ${round(ratio * 100, 1)}%`)
}
