/**
 * Password hashing is bounded: a service process under 16 and then 64 concurrent
 * sign-ins stays within 300 MiB of its idle RSS, and every answer is 401, 429 or 503 (the last
 * two with Retry-After). Black-box: a separate process with its default settings, its RSS read
 * from /proc while the sign-ins run.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { createTestDatabase, type TestDatabase, timeLimit } from '../helpers/database'
import { startInstance, type Instance } from '../helpers/instance'

let database: TestDatabase
let instance: Instance

beforeAll(async () => {
  database = await createTestDatabase()
  // The embedded database cannot be shared with another process: the instance opens its own.
  instance = await startInstance({ name: 'sign-in-memory', databaseUrl: database.kind === 'pglite' ? 'pglite://memory' : database.url, config: {} })
}, timeLimit(60_000))
afterAll(async () => {
  await instance?.stop()
  await database?.close()
})

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024

let sequence = 0
const signIn = () =>
  fetch(`${instance.url}/account/api/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    // Unknown emails: the same password work as a wrong password (the decoy hash).
    body: JSON.stringify({ email: `nobody-${++sequence}@example.com`, password: 'a wrong password' }),
  }).then(async (response) => ({ status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.text() }))

/** Runs `count` concurrent sign-ins while sampling the process's RSS; returns the answers and the peak. */
async function storm(count: number) {
  let peak = rssMiB(instance.pid)
  let running = true
  const sampler = (async () => {
    while (running) {
      peak = Math.max(peak, rssMiB(instance.pid))
      await Bun.sleep(10)
    }
  })()
  const answers = await Promise.all(Array.from({ length: count }, signIn))
  running = false
  await sampler
  return { answers, peak: Math.max(peak, rssMiB(instance.pid)) }
}

test('16 and then 64 concurrent sign-ins keep RSS within 300 MiB of idle; every answer is 401, 429 or 503 with Retry-After', async () => {
  expect((await signIn()).status).toBe(401) // warm: the decoy hash exists, the code paths are loaded
  const idle = rssMiB(instance.pid)
  for (const count of [16, 64]) {
    const { answers, peak } = await storm(count)
    for (const answer of answers) {
      expect([401, 429, 503]).toContain(answer.status)
      if (answer.status !== 401) expect(Number(answer.retryAfter)).toBeGreaterThan(0)
    }
    expect(answers.some((answer) => answer.status === 401)).toBe(true)
    expect(peak - idle).toBeLessThan(300)
  }
}, 120_000)
