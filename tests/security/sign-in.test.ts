/**
 * Sign-in under attack: throttling counted before the hash so concurrent guesses cannot
 * pass the limit, keyed by email + address so a stranger cannot lock an account out, length caps
 * before any work, and the client address taken from the rightmost trusted X-Forwarded-For hop.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { clientAddress, rememberConnection } from '../../src/http/client'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

let api: TestService
let proxied: TestService
let organization: string

beforeAll(async () => {
  const config = { account: { signInMaxFailures: 10, signInMaxFailuresPerAccount: 25, signInMaxFailuresPerAddress: 40, signInWindowMinutes: 15 } }
  api = await startTestService({ config })
  proxied = await startTestService({ database: api.database, config: { ...config, server: { trustProxy: true } } })
  organization = await api.createOrganization()
})
afterAll(async () => {
  await proxied.stop()
  await api.stop()
})

let address = 0
const nextAddress = () => `198.51.100.${++address}`

/** POST /account/api/sessions from `ip` (the socket peer). */
async function signIn(email: string, password: string, ip: string, options: { service?: TestService; headers?: Record<string, string> } = {}) {
  const response = await (options.service ?? api).service.fetch(
    new Request('http://localhost/account/api/sessions', { method: 'POST', headers: { 'content-type': 'application/json', ...options.headers }, body: JSON.stringify({ email, password }) }),
    { ip },
  )
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() }
}

/** The sign-in form: fetch a form token, then post `email` and `password` from `ip`. */
async function signInForm(email: string, password: string, ip: string) {
  const page = await api.service.fetch(new Request('http://localhost/account/sign-in'), { ip })
  const token = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!
  const cookie = page.headers.getSetCookie()[0]!.split(';')[0]!
  const body = new URLSearchParams({ csrf: token, email, password }).toString()
  const response = await api.service.fetch(
    new Request('http://localhost/account/sign-in', { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body }),
    { ip },
  )
  return { status: response.status, text: await response.text() }
}

const throttleRows = async () => Number((await queryRows<{ n: number }>(api.service.core.db, sql`select count(*)::int as n from sign_in_throttle`))[0]!.n)

describe('length caps come before any work', () => {
  test('the web form refuses a 6,000-character email with its error, not a 500, and counts nothing', async () => {
    const before = await throttleRows()
    const response = await signInForm(`${'a'.repeat(6000)}@example.com`, 'whatever password', nextAddress())
    expect(response.status).toBe(400)
    expect(response.text).toContain('at most 254 characters')
    const longPassword = await signInForm('someone@example.com', 'p'.repeat(1025), nextAddress())
    expect(longPassword.status).toBe(400)
    expect(longPassword.text).toContain('at most 1024 characters')
    expect(await throttleRows()).toBe(before)
  })

  test('the JSON API refuses them as 400 naming the field', async () => {
    const email = await signIn(`${'b'.repeat(300)}@example.com`, 'whatever password', nextAddress())
    expect(email.status).toBe(400)
    expect(email.body.errors[0].field).toBe('email')
    const password = await signIn('someone@example.com', 'p'.repeat(1025), nextAddress())
    expect(password.status).toBe(400)
    expect(password.body.errors[0].field).toBe('password')
  })

  test('throttle rows have a fixed-size key, whatever the email and address', async () => {
    await signIn(`${'c'.repeat(240)}@example.com`, 'wrong password', `2001:db8::${'f'.repeat(4)}`)
    const rows = await queryRows<{ length: number }>(api.service.core.db, sql`select distinct length(key) as length from sign_in_throttle`)
    expect(rows.length).toBe(1)
    expect(rows[0]!.length).toBe(65) // a kind letter and a SHA-256, hex
  })
})

describe('the throttle is counted before the hash', () => {
  test('16 concurrent wrong guesses for one account from one address: exactly 10 are checked, 6 are 429', async () => {
    const victim = await api.createUser(organization, 'member', { password: 'victim password 1' })
    const ip = nextAddress()
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => signIn(victim.email, `guess ${i}`, ip)))
    // Every status at once, so a failure shows what the others were.
    const statuses = answers.map((answer) => answer.status).sort()
    expect(statuses).toEqual([...Array(10).fill(401), ...Array(6).fill(429)])
    for (const answer of answers.filter((each) => each.status === 429)) expect(Number(answer.retryAfter)).toBeGreaterThan(0)
  })

  test('a correct password within the limit signs in and frees its own count', async () => {
    const user = await api.createUser(organization, 'member', { password: 'right password 1' })
    const ip = nextAddress()
    for (let i = 0; i < 9; i++) expect((await signIn(user.email, `wrong ${i}`, ip)).status).toBe(401)
    expect((await signIn(user.email, 'right password 1', ip)).status).toBe(201)
    for (let i = 0; i < 9; i++) expect((await signIn(user.email, `wrong again ${i}`, ip)).status).toBe(401)
  })
})

describe('a stranger cannot lock an account out', () => {
  let victim: TestUser
  beforeAll(async () => {
    victim = await api.createUser(organization, 'member', { password: 'victim password 2' })
  })

  test('10 wrong passwords from one address throttle that address for that account only', async () => {
    const attacker = nextAddress()
    for (let i = 0; i < 10; i++) expect((await signIn(victim.email, `guess ${i}`, attacker)).status).toBe(401)
    const blocked = await signIn(victim.email, 'victim password 2', attacker)
    expect(blocked.status).toBe(429)
    expect(blocked.body.errors[0].code).toBe('RATE_LIMITED')
    expect((await signIn(victim.email, 'victim password 2', nextAddress())).status).toBe(201)
  })

  test('the email-only ceiling (higher) stops guesses spread over many addresses', async () => {
    const target = await api.createUser(organization, 'member', { password: 'spread password 1' })
    let failures = 0
    for (let i = 0; failures < 25; i++) {
      const answer = await signIn(target.email, `guess ${i}`, nextAddress())
      expect(answer.status).toBe(401)
      failures++
    }
    const blocked = await signIn(target.email, 'spread password 1', nextAddress())
    expect(blocked.status).toBe(429)
    expect(Number(blocked.retryAfter)).toBeGreaterThan(0)
  })

  test('the address-only ceiling (higher) stops one address guessing across many accounts', async () => {
    const ip = nextAddress()
    for (let i = 0; i < 40; i++) expect((await signIn(`nobody-${i}-${ip}@example.com`, 'guess', ip)).status).toBe(401)
    expect((await signIn(`nobody-else-${ip}@example.com`, 'guess', ip)).status).toBe(429)
  })
})

describe('behind a proxy (server.trustProxy)', () => {
  test('the client address is the rightmost X-Forwarded-For entry, so a forged leftmost one changes nothing', async () => {
    const victim = await api.createUser(organization, 'member', { password: 'proxied password 1' })
    const proxy = '10.0.0.5'
    const client = '203.0.113.77'
    for (let i = 0; i < 10; i++) {
      const forged = `192.0.2.${i + 1}`
      const answer = await signIn(victim.email, `guess ${i}`, proxy, { service: proxied, headers: { 'x-forwarded-for': `${forged}, ${client}` } })
      expect(answer.status).toBe(401)
    }
    const blocked = await signIn(victim.email, 'proxied password 1', proxy, { service: proxied, headers: { 'x-forwarded-for': `192.0.2.99, ${client}` } })
    expect(blocked.status).toBe(429)
    // Another client behind the same proxy is someone else.
    expect((await signIn(victim.email, 'proxied password 1', proxy, { service: proxied, headers: { 'x-forwarded-for': '203.0.113.78' } })).status).toBe(201)
  })

  test('without trustProxy, X-Forwarded-For is ignored: the socket peer is the client', async () => {
    const victim = await api.createUser(organization, 'member', { password: 'direct password 1' })
    const ip = nextAddress()
    for (let i = 0; i < 10; i++) expect((await signIn(victim.email, `guess ${i}`, ip, { headers: { 'x-forwarded-for': `192.0.2.${i}` } })).status).toBe(401)
    expect((await signIn(victim.email, 'direct password 1', ip, { headers: { 'x-forwarded-for': '192.0.2.200' } })).status).toBe(429)
  })
})

describe('clientAddress', () => {
  const request = (forwarded?: string) => {
    const made = new Request('http://localhost/', { headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded } })
    rememberConnection(made, { ip: '10.0.0.1' })
    return made
  }

  test('takes the entry added by the outermost trusted hop, never a client-supplied one', () => {
    expect(clientAddress(request('1.1.1.1, 2.2.2.2'), 0)).toBe('10.0.0.1')
    expect(clientAddress(request('1.1.1.1, 2.2.2.2'), 1)).toBe('2.2.2.2')
    expect(clientAddress(request('1.1.1.1, 2.2.2.2, 3.3.3.3'), 2)).toBe('2.2.2.2')
    expect(clientAddress(request(' 2.2.2.2 '), 1)).toBe('2.2.2.2')
    // Fewer entries than trusted hops: the farthest address known.
    expect(clientAddress(request('2.2.2.2'), 3)).toBe('2.2.2.2')
    expect(clientAddress(request(), 1)).toBe('10.0.0.1')
    expect(clientAddress(request(',, ,'), 1)).toBe('10.0.0.1')
  })
})

describe('stored hashes are upgraded at sign-in', () => {
  test('a hash with older parameters signs in and is replaced with the current ones (audited, never the hash)', async () => {
    const user = await api.createUser(organization, 'member', { password: 'correct horse battery' })
    // 'correct horse battery' at N=2^10 r=8 p=1, as the previous scrypt implementation stored it.
    const legacy = 'scrypt$10$8$1$d29ya3RyYWNrLXZlY3Rvcg==$BjkUV8fEZCTXzBJI/OODqCbsmcrHShLKypcj2ehO4KY='
    await api.service.core.db.execute(sql`update users set password_hash = ${legacy} where id = ${user.id}`)
    expect((await signIn(user.email, 'correct horse battery', nextAddress())).status).toBe(201)
    const [row] = await queryRows<{ password_hash: string }>(api.service.core.db, sql`select password_hash from users where id = ${user.id}`)
    expect(row!.password_hash).toMatch(/^scrypt\$10\$8\$5\$/)
    const records = await queryRows<{ changes: unknown }>(api.service.core.db, sql`select changes from audit_logs where action = 'user.password_rehashed' and resource_id = ${user.id}`)
    expect(records).toEqual([{ changes: { after: { scheme: 'scrypt$10$8$5' } } }])
    expect((await signIn(user.email, 'correct horse battery', nextAddress())).status).toBe(201)
  })
})
