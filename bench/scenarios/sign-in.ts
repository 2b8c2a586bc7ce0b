/**
 * Sign-in under attack: 16, then 64 concurrent wrong-password sign-ins from ever new
 * addresses (the throttle never stops them, the worst case for hashing), while wrk reads
 * `GET /api/v1/users/me`. Measures the service process's RSS growth over idle,
 * the answers (only 401, 429, 503, the last two with Retry-After) and /users/me's p99 during the
 * storm. The service runs with its default hashing settings.
 */
import { seededDatabase } from '../lib/database'
import { startService } from '../lib/processes'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { DURATION_SECONDS } from '../lib/settings'
import { round } from '../lib/stats'
import { throughput, wrk, type LoadResult } from '../lib/wrk'
import { seedOrganization } from '../seed/organization'
import { TARGETS } from '../targets'

export const name = 'sign-in'
export const target = TARGETS[name]

const PORT = 3811
const STORMS = [16, 64]
const READERS = 8

/** Keeps `concurrency` sign-ins in flight until `stop()`; counts answers and samples RSS. */
function storm(concurrency: number, rss: () => number) {
  const answers: Record<string, number> = {}
  let missingRetryAfter = 0
  let peak = rss()
  let running = true
  let sequence = 0
  const worker = async () => {
    while (running) {
      const n = ++sequence
      try {
        const response = await fetch(`http://127.0.0.1:${PORT}/account/api/sessions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` },
          body: JSON.stringify({ email: `guess-${n}@example.com`, password: 'not the password' }),
        })
        await response.arrayBuffer()
        answers[response.status] = (answers[response.status] ?? 0) + 1
        if ((response.status === 429 || response.status === 503) && !response.headers.get('retry-after')) missingRetryAfter++
      } catch {
        answers.transport = (answers.transport ?? 0) + 1
      }
    }
  }
  const sampler = setInterval(() => (peak = Math.max(peak, rss())), 50)
  const workers = Array.from({ length: concurrency }, worker)
  return {
    async stop() {
      running = false
      await Promise.all(workers)
      clearInterval(sampler)
      return { answers, missingRetryAfter, peakRssMiB: Math.max(peak, rss()) }
    },
  }
}

export async function run(): Promise<void> {
  const { url, seeded } = await seededDatabase('worktrack_bench_sign_in', (db) => seedOrganization(db, { scopes: ['users:read'] }))
  const { secret } = seeded
  // Behind one trusted proxy: every guess comes from a new address, so the throttle lets each one hash.
  const service = await startService(url, PORT, { config: { server: { trustProxy: 1 } } })
  const me = (duration = DURATION_SECONDS) => wrk(`http://127.0.0.1:${PORT}/api/v1/users/me`, { headers: { authorization: `Bearer ${secret}` }, connections: READERS, duration })
  const storms: Array<{ concurrency: number; usersMe: LoadResult; peakRssMiB: number; answers: Record<string, number>; missingRetryAfter: number; hashedPerSecond: number }> = []
  let quiet: LoadResult
  let idle: number
  try {
    // Warm: code paths loaded, the decoy hash made.
    await me(2)
    await fetch(`http://127.0.0.1:${PORT}/account/api/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'warm@example.com', password: 'x' }) })
    idle = service.rssMiB()
    quiet = await me()
    for (const concurrency of STORMS) {
      const running = storm(concurrency, () => service.rssMiB())
      const usersMe = await me()
      const { answers, missingRetryAfter, peakRssMiB } = await running.stop()
      storms.push({ concurrency, usersMe, peakRssMiB, answers, missingRetryAfter, hashedPerSecond: (answers['401'] ?? 0) / DURATION_SECONDS })
    }
  } finally {
    await service.stop()
  }
  const rows = storms.map(
    (run) =>
      `| ${run.concurrency} | ${round(run.peakRssMiB - idle, 1)} | ${Object.entries(run.answers).map(([status, count]) => `${status}: ${round(count)}`).join(', ')} | ${run.missingRetryAfter} | ${round(run.hashedPerSecond, 1)} | ${round(run.usersMe.requestsPerSecond)} | ${round(run.usersMe.p50, 2)} | ${round(run.usersMe.p99, 2)} |`,
  )
  writeSection(
    name,
    `## Sign-in under attack: RSS and \`GET /users/me\` latency during concurrent wrong-password sign-ins

${sectionHead(`\`npm run bench -- sign-in\` (service with default hashing settings — scrypt N=2^14 r=8 p=5, \`auth.maxConcurrentHashes\` 2, 2 s queue — behind one trusted proxy hop, every guess from a new address so none is throttled; ${READERS} wrk connections on \`/users/me\` for ${DURATION_SECONDS} s during each storm)`)}
- Idle RSS ${round(idle, 1)} MiB; \`/users/me\` alone: ${round(quiet.requestsPerSecond)} req/s, p50 ${round(quiet.p50, 2)} / p99 ${round(quiet.p99, 2)} ms.

| concurrent sign-ins | RSS growth MiB | answers | 429/503 without Retry-After | hashes/s (401s) | /users/me req/s | p50 ms | p99 ms |
|---:|---:|---|---:|---:|---:|---:|---:|
${rows.join('\n')}

${target.storm}`,
  )
  recordResult(name, { idleRssMiB: idle, quiet: throughput(quiet), storms: storms.map(({ usersMe, ...run }) => ({ ...run, usersMe: throughput(usersMe) })) })
  console.log(`sign-in: ${storms.map((run) => `${run.concurrency}: +${round(run.peakRssMiB - idle, 1)} MiB, /users/me p99 ${round(run.usersMe.p99, 2)} ms`).join('; ')}`)
}

