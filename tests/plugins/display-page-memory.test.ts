/**
 * Six concurrent views of the largest live page a default service allows (100 components filled
 * the worst way) grow the service process's memory by less than 300 MiB, with its fragment cache
 * cold and then warm (unbounded drawing would take it from ~160 MB to 1.4 GB). The service is its own
 * process (`bun entries/bun.ts`, default config) on a database seeded here, and its resident set
 * is read from /proc while the views are served. A bound, not a timing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/db'
import { startServiceProcess, type ServiceProcess } from '../faults/service-process'
import { createTestDatabase, usingServer, type TestDatabase } from '../helpers/database'
import { largestFill, SAMPLE_DATA } from '../helpers/display-fixture'
import { startTestService } from '../helpers/service'
import { webSession } from '../helpers/sessions'

const MiB = 1024 * 1024
const procfs = existsSync('/proc/self/status')
const skipReason = procfs ? undefined : 'needs /proc to read the process memory'

let database: TestDatabase | undefined
let scratch: string | undefined
let service: ServiceProcess | undefined
let cookie = ''
const BIG = 'largest-page'
const SMALL = 'small-page'

/** The resident set of `pid`, in bytes. */
function residentBytes(pid: number): number {
  const kilobytes = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  return Number(kilobytes) * 1024
}

/** Seeds a fresh database (PostgreSQL server, or a PGlite directory the service process opens next) and returns its URL. */
async function seed(): Promise<string> {
  if (usingServer()) database = await createTestDatabase()
  else {
    scratch = mkdtempSync(join(tmpdir(), 'display-memory-'))
    database = { ...(await openDatabase(`pglite:${scratch}`)), url: `pglite:${scratch}` }
  }
  const api = await startTestService({ database, plugins: ['auth', 'teams', 'display'] })
  try {
    const organizationId = await api.createOrganization()
    const user = await api.createUser(organizationId)
    const key = (await api.createKey(user.id, ['dashboards:read', 'dashboards:write'])).secret
    const v1 = async (method: string, path: string, body?: unknown) => {
      const response = await api.request(method, path, { key, body, unchecked: true })
      if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
      return response.body.data
    }
    const fill = largestFill()
    let timestamp = 1_700_000_000
    const big = await v1('POST', '/api/v1/pages', { name: BIG, title: '"'.repeat(200) })
    for (let i = 0; i < 100; i++) {
      const component = await v1('POST', `/api/v1/pages/${big.id}/components`, { type: fill.type, title: '"'.repeat(200), x: 0, width: 24 })
      const posted = await api.request('POST', '/api/component', { body: { componentId: component.id, apiKey: user.displayApiKey, timestamp: ++timestamp, data: fill }, unchecked: true })
      if (posted.status !== 200) throw new Error(`POST /api/component: ${posted.status} ${posted.text}`)
    }
    const small = await v1('POST', '/api/v1/pages', { name: SMALL })
    const component = await v1('POST', `/api/v1/pages/${small.id}/components`, { type: 'barChart' })
    await api.request('POST', '/api/component', { body: { componentId: component.id, apiKey: user.displayApiKey, timestamp: ++timestamp, data: SAMPLE_DATA.barChart }, unchecked: true })
    cookie = (await webSession(api, user, { displayName: 'Viewer' })).cookie
  } finally {
    await api.stop()
  }
  const url = database.url
  // An embedded database has one owner at a time: the service process is next.
  if (!usingServer()) await database.close()
  return url
}

beforeAll(async () => {
  if (skipReason) return
  service = await startServiceProcess(await seed())
}, 180_000)

afterAll(async () => {
  await service?.stop()
  if (usingServer()) await database?.close()
  if (scratch) rmSync(scratch, { recursive: true, force: true })
})

/** GETs `path` from the service; the body's size in bytes. */
async function view(path: string): Promise<number> {
  const response = await fetch(`${service!.base}${path}`, { headers: { cookie }, signal: AbortSignal.timeout(120_000) })
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${(await response.text()).slice(0, 200)}`)
  return (await response.arrayBuffer()).byteLength
}

/** Runs `work` while sampling the process's resident set every 10 ms; the highest sample. */
async function peakDuring(pid: number, work: () => Promise<unknown>): Promise<number> {
  let peak = residentBytes(pid)
  let running = true
  const sampler = (async () => {
    while (running) {
      peak = Math.max(peak, residentBytes(pid))
      await Bun.sleep(10)
    }
  })()
  try {
    await work()
  } finally {
    running = false
    await sampler
  }
  return Math.max(peak, residentBytes(pid))
}

describe('memory of live page views', () => {
  test.skipIf(Boolean(skipReason))(`6 concurrent views of the largest page grow the service's memory by less than 300 MiB, cold and warm${skipReason ? ` (skipped: ${skipReason})` : ''}`, async () => {
    const pid = service!.pid
    // Every route's code is loaded before the baseline.
    expect(await view(`/pages/${SMALL}`)).toBeGreaterThan(0)
    const baseline = residentBytes(pid)
    for (const round of ['cold', 'warm']) {
      const sizes: number[] = []
      const peak = await peakDuring(pid, async () => sizes.push(...(await Promise.all(Array.from({ length: 6 }, () => view(`/pages/${BIG}`))))))
      const growth = peak - baseline
      console.info(`${round}: 6 views of ${sizes[0]!.toLocaleString('en')} bytes; RSS ${(baseline / MiB).toFixed(0)} MiB before, ${(peak / MiB).toFixed(0)} MiB at most (+${(growth / MiB).toFixed(0)} MiB)`)
      for (const size of sizes) expect(size).toBeLessThanOrEqual(8 * MiB)
      expect(growth).toBeLessThan(300 * MiB)
    }
  }, 300_000)
})
