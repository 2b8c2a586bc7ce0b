/**
 * The per-key rate limit is counted in one place per key and window, apart from the cache of
 * verified keys: concurrent requests that find their key's cache entry expired (a 2 s TTL here)
 * and reload it, a dropped cache (missed notifications) and MCP calls all count against the same
 * window, so exactly `limit` requests pass per window; the rest are 429 with Retry-After, and the
 * X-RateLimit-* headers agree with what happened.
 */
import { afterAll, afterEach, beforeAll, describe, expect, setSystemTime, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { KeyAuthenticator } from '../../plugins/auth/authenticator'
import { AuthenticatorRef } from '../../src/services/identity'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { timeLimit } from '../helpers/database'

const LIMIT = 30
const TTL_SECONDS = 2

let api: TestService
let owner: TestUser

beforeAll(async () => {
  api = await startTestService({ plugins: ['auth', 'users', 'mcp'], config: { auth: { requestsPerMinute: LIMIT, keyCacheTtlSeconds: TTL_SECONDS } } })
  owner = await api.createUser(await api.createOrganization())
})
afterAll(() => api.stop())
afterEach(() => setSystemTime())

interface Answer {
  via: 'rest' | 'mcp'
  status: number
  /** The key's name as the answer showed it (REST 200 only): which cache entry served it. */
  keyName?: string
  limit: string | null
  remaining: string | null
  reset: string | null
  retryAfter: string | null
  /** Date.now() when the answer arrived (the mocked clock when it is mocked). */
  at: number
}

async function rest(key: string): Promise<Answer> {
  const response = await api.service.fetch(new Request('http://localhost/api/v1/users/me', { headers: { authorization: `Bearer ${key}` } }))
  const body = await response.json()
  return {
    via: 'rest',
    status: response.status,
    keyName: response.status === 200 ? body.data.key.name : undefined,
    limit: response.headers.get('x-ratelimit-limit'),
    remaining: response.headers.get('x-ratelimit-remaining'),
    reset: response.headers.get('x-ratelimit-reset'),
    retryAfter: response.headers.get('retry-after'),
    at: Date.now(),
  }
}

async function mcp(key: string): Promise<Answer> {
  const response = await api.service.fetch(
    new Request('http://localhost/mcp', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    }),
  )
  await response.text()
  return {
    via: 'mcp',
    status: response.status,
    limit: response.headers.get('x-ratelimit-limit'),
    remaining: response.headers.get('x-ratelimit-remaining'),
    reset: response.headers.get('x-ratelimit-reset'),
    retryAfter: response.headers.get('retry-after'),
    at: Date.now(),
  }
}

/** `count` requests at once, every third one over MCP. */
const burst = (key: string, count: number, withMcp = true) => Promise.all(Array.from({ length: count }, (_, i) => (withMcp && i % 3 === 2 ? mcp(key) : rest(key))))

const passed = (answers: Answer[]) => answers.filter((answer) => answer.status === 200)
const refused = (answers: Answer[]) => answers.filter((answer) => answer.status === 429)

/**
 * The headers of one window's answers agree: every answer that carries them names the limit and
 * the same reset; the passed ones' remaining counts are distinct (each request counted once, in
 * some order) and the refused ones say 0; every 429 has a Retry-After that ends at the reset.
 */
function expectConsistentHeaders(answers: Answer[]) {
  const reset = answers.find((answer) => answer.reset !== null)!.reset
  for (const answer of answers) {
    if (answer.via === 'mcp' && answer.status === 200) continue // MCP answers carry no X-RateLimit-* headers on success
    expect({ limit: answer.limit, reset: answer.reset }).toEqual({ limit: String(LIMIT), reset })
  }
  const remaining = passed(answers)
    .filter((answer) => answer.via === 'rest')
    .map((answer) => Number(answer.remaining))
  expect(new Set(remaining).size).toBe(remaining.length)
  for (const value of remaining) expect(value).toBeWithin(0, LIMIT)
  for (const answer of refused(answers)) {
    expect(answer.remaining).toBe('0')
    const retryAfter = Number(answer.retryAfter)
    expect(retryAfter).toBeWithin(1, 61)
    // Retry-After (whole seconds, rounded up) reaches the reset, and not more than a second past it.
    expect(Math.abs(Math.ceil(answer.at / 1000) + retryAfter - Number(reset))).toBeLessThanOrEqual(1)
  }
}

async function renameKey(id: string, name: string) {
  // Straight in the table, with no notification: only a reload of the cache entry shows it.
  await api.service.core.db.execute(sql`update api_keys set name = ${name} where id = ${id}`)
}

describe('the per-key limit across key-cache refreshes', () => {
  test('concurrent bursts right after each refresh pass exactly the limit (clock moved past the TTL)', async () => {
    const { id, secret } = await api.createKey(owner.id, [], { name: 'before' })
    const start = Date.now()
    setSystemTime(new Date(start))
    const first = await burst(secret, 10)
    expect(passed(first)).toHaveLength(10)
    await renameKey(id, 'after')
    // Past the TTL: every request of the next burst finds the cached entry expired at once.
    setSystemTime(new Date(start + TTL_SECONDS * 1000 + 500))
    const second = await burst(secret, 45)
    expect(second.find((answer) => answer.keyName)!.keyName).toBe('after') // the burst did reload the entry
    expect(passed(second)).toHaveLength(LIMIT - 10)
    expect(refused(second)).toHaveLength(45 - (LIMIT - 10))
    await renameKey(id, 'again')
    setSystemTime(new Date(start + 2 * (TTL_SECONDS * 1000 + 500)))
    const third = await burst(secret, 20)
    expect(refused(third)).toHaveLength(20)
    expectConsistentHeaders([...first, ...second, ...third])
    // The next window starts over, with the same exactness.
    setSystemTime(new Date(start + 61_000))
    const next = await burst(secret, 45)
    expect(passed(next)).toHaveLength(LIMIT)
    expect(refused(next)).toHaveLength(45 - LIMIT)
    expectConsistentHeaders(next)
    expect(Number(next[0]!.reset)).toBeGreaterThan(Number(first[0]!.reset))
  })

  test('on the real clock: a burst after the 2 s TTL has passed reloads the key and still counts exactly', async () => {
    const { id, secret } = await api.createKey(owner.id, [], { name: 'before' })
    const first = await burst(secret, 10, false)
    const loadedBy = Date.now()
    expect(passed(first)).toHaveLength(10)
    await renameKey(id, 'after')
    // The entry was loaded before `loadedBy`; past loadedBy + TTL it is expired for certain.
    await waitUntil(loadedBy + TTL_SECONDS * 1000 + 20)
    const second = await burst(secret, 45)
    expect(second.some((answer) => answer.keyName === 'after')).toBe(true)
    expect(passed(second)).toHaveLength(LIMIT - 10)
    const secondDone = Date.now()
    await waitUntil(secondDone + TTL_SECONDS * 1000 + 20)
    const third = await burst(secret, 20)
    expect(passed(third)).toHaveLength(0)
    expectConsistentHeaders([...first, ...second, ...third])
  }, timeLimit(30_000))

  test('a dropped cache (missed notifications) and revoking another key do not reset the count', async () => {
    const { secret } = await api.createKey(owner.id, [])
    const other = await api.createKey(owner.id, [])
    const answers = await burst(secret, LIMIT - 2, false)
    const authenticator = api.service.core.services.get(AuthenticatorRef) as KeyAuthenticator
    authenticator.clear()
    answers.push(await rest(secret))
    await api.revokeKey(other.id)
    answers.push(await rest(secret))
    expect(passed(answers)).toHaveLength(LIMIT)
    answers.push(await rest(secret))
    expect(refused(answers)).toHaveLength(1)
    expectConsistentHeaders(answers)
  })
})

describe('MCP counts against the same window', () => {
  test('REST and MCP requests of one key share one count; a refused MCP call says Retry-After and the X-RateLimit-* headers', async () => {
    const { secret } = await api.createKey(owner.id, [])
    const answers: Answer[] = []
    for (let i = 0; i < LIMIT; i++) answers.push(await (i % 2 ? mcp(secret) : rest(secret)))
    expect(passed(answers)).toHaveLength(LIMIT)
    const overMcp = await mcp(secret)
    const overRest = await rest(secret)
    expect([overMcp.status, overRest.status]).toEqual([429, 429])
    expect(overMcp.retryAfter).not.toBeNull()
    expectConsistentHeaders([...answers, overMcp, overRest])
  })
})

/** Resolves once the clock has reached `time` (a known deadline: TTL expiry is defined by the clock). */
async function waitUntil(time: number) {
  while (Date.now() < time) await Bun.sleep(Math.min(50, time - Date.now()))
}
