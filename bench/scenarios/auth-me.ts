/**
 * The Bearer check on every request: authenticated `GET /api/v1/users/me` against an Elysia
 * hello-world on the same runtime, measured by the same wrk, in the same run, alternating.
 */
import { seededDatabase } from '../lib/database'
import { startServer, startService } from '../lib/processes'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS, DURATION_SECONDS } from '../lib/settings'
import { best, round } from '../lib/stats'
import { throughput, wrk, type LoadResult } from '../lib/wrk'
import { seedOrganization } from '../seed/organization'
import { TARGETS } from '../targets'

export const name = 'auth-me'
export const target = TARGETS[name]

export async function run(): Promise<void> {
  const { url, seeded } = await seededDatabase('worktrack_bench_auth', (db) => seedOrganization(db, { scopes: ['users:read'] }))
  const service = await startService(url, 3801)
  const hello = await startServer('hello', 3802)
  const results: { me: LoadResult[]; hello: LoadResult[] } = { me: [], hello: [] }
  let serviceRss = 0
  let helloRss = 0
  try {
    const headers = { authorization: `Bearer ${seeded.secret}` }
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
  const me = best(results.me)
  const base = best(results.hello)
  const failed = results.me.reduce((sum, run) => sum + run.errors + run.non2xx, 0)
  const ratio = me.requestsPerSecond / base.requestsPerSecond
  writeSection(
    name,
    `## Bearer check: authenticated \`GET /api/v1/users/me\` vs Elysia hello-world

${sectionHead(`\`npm run bench -- auth-me\` (wrk, 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s per run, 2 alternating runs each, best shown; service on the PostgreSQL server)`)}

| target | req/s | p50 ms | p99 ms | peak RSS MiB |
|---|---:|---:|---:|---:|
| \`GET /api/v1/users/me\` (key check + envelope) | ${round(me.requestsPerSecond)} | ${me.p50} | ${me.p99} | ${round(serviceRss, 1)} |
| Elysia hello-world (\`GET /\`) | ${round(base.requestsPerSecond)} | ${base.p50} | ${base.p99} | ${round(helloRss, 1)} |

**Ratio: ${round(ratio * 100, 1)}% of hello-world**. ${target.bearer} Errors or non-2xx answers during the runs: ${failed}.
Per-run req/s — users/me: ${results.me.map((run) => round(run.requestsPerSecond)).join(', ')}; hello: ${results.hello.map((run) => round(run.requestsPerSecond)).join(', ')}.`,
  )
  recordResult(name, { endpoint: throughput(me), hello: throughput(base), peakRssMiB: serviceRss, helloPeakRssMiB: helloRss, errors: failed })
  console.log(`auth-me: ${round(me.requestsPerSecond)} req/s vs hello ${round(base.requestsPerSecond)} req/s = ${round(ratio * 100, 1)}%`)
}
