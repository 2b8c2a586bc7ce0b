import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { runCommand } from '../../src/cli'
import { registry } from '../../plugins'
import { startTestService, type TestResponse, type TestService, type TestUser } from '../helpers/service'

let api: TestService
let alice: TestUser
let bob: TestUser

beforeAll(async () => {
  api = await startTestService({ config: { account: { signInMaxFailures: 10, signInWindowMinutes: 15 } } })
  const organization = await api.createOrganization()
  alice = await api.createUser(organization, 'member', { password: 'alice password 1' })
  bob = await api.createUser(organization, 'member', { password: 'bob password 1' })
})
afterAll(() => api.stop())

let address = 0
/** A distinct client address per test, so throttling in one test does not reach another. */
const nextAddress = () => `203.0.113.${++address}`

interface Browser {
  cookies: Map<string, string>
  ip: string
  request(method: string, path: string, form?: Record<string, string | string[]>, https?: boolean): Promise<TestResponse>
}

/** A minimal cookie-keeping client for the account pages. */
function browser(ip = nextAddress()): Browser {
  const cookies = new Map<string, string>()
  return {
    cookies,
    ip,
    async request(method, path, form, https = false) {
      const headers: Record<string, string> = { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') }
      let body: string | undefined
      if (form) {
        const params = new URLSearchParams()
        for (const [name, value] of Object.entries(form)) for (const each of [value].flat()) params.append(name, each)
        body = params.toString()
        headers['content-type'] = 'application/x-www-form-urlencoded'
      }
      const response = await api.service.fetch(new Request(`${https ? 'https' : 'http'}://localhost${path}`, { method, headers, body }), { ip })
      for (const setCookie of response.headers.getSetCookie()) {
        const [pair] = setCookie.split(';')
        const [name, ...value] = pair!.split('=')
        if (/Max-Age=0/.test(setCookie)) cookies.delete(name!)
        else cookies.set(name!, value.join('='))
      }
      const text = await response.text()
      return { status: response.status, headers: response.headers, text, body: text }
    },
  }
}

const formToken = (page: string) => /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? ''

async function signedIn(user: TestUser, password = user.password) {
  const client = browser()
  const page = await client.request('GET', '/account/sign-in')
  const response = await client.request('POST', '/account/sign-in', { csrf: formToken(page.text), email: user.email, password })
  expect(response.status).toBe(303)
  const keysPage = await client.request('GET', '/account/keys')
  return { client, csrf: formToken(keysPage.text) }
}

describe('sign-in and sessions', () => {
  test('signing in sets an HttpOnly, SameSite=Strict session cookie; Secure only over HTTPS', async () => {
    for (const https of [false, true]) {
      const client = browser()
      const page = await client.request('GET', '/account/sign-in', undefined, https)
      const response = await client.request('POST', '/account/sign-in', { csrf: formToken(page.text), email: alice.email, password: alice.password }, https)
      expect(response.status).toBe(303)
      expect(response.headers.get('location')).toBe('/account/keys')
      const sessionCookie = response.headers.getSetCookie().find((header) => header.startsWith('wt_session='))!
      expect(sessionCookie).toContain('HttpOnly')
      expect(sessionCookie).toContain('SameSite=Strict')
      expect(sessionCookie.includes('Secure')).toBe(https)
      const [row] = await queryRows<{ token_hash: string }>(api.service.core.db, sql`select token_hash from sessions order by created_at desc limit 1`)
      expect(row!.token_hash).not.toBe(client.cookies.get('wt_session'))
      expect(row!.token_hash).toMatch(/^[0-9a-f]{64}$/)
    }
  })

  test('pages need a session; sign-out ends it', async () => {
    const anonymous = browser()
    expect((await anonymous.request('GET', '/account/keys')).headers.get('location')).toBe('/account/sign-in')
    const { client, csrf } = await signedIn(alice)
    expect((await client.request('GET', '/account/keys')).status).toBe(200)
    const token = client.cookies.get('wt_session')!
    expect((await client.request('POST', '/account/sign-out', { csrf })).headers.get('location')).toBe('/account/sign-in')
    client.cookies.set('wt_session', token)
    expect((await client.request('GET', '/account/keys')).headers.get('location')).toBe('/account/sign-in')
  })

  test('idle and absolute expiry end a session', async () => {
    for (const column of ['last_seen_at', 'expires_at']) {
      const { client } = await signedIn(alice)
      expect((await client.request('GET', '/account/keys')).status).toBe(200)
      await api.service.core.db.execute(sql`update sessions set ${sql.identifier(column)} = now() - interval '1 day' where revoked_at is null and kind = 'web'`)
      expect((await client.request('GET', '/account/keys')).status).toBe(303)
    }
  })

  test('the same answer for an unknown email and a wrong password, in the page and the JSON API', async () => {
    const attempt = async (email: string) => {
      const client = browser()
      const page = await client.request('GET', '/account/sign-in')
      const response = await client.request('POST', '/account/sign-in', { csrf: formToken(page.text), email, password: 'wrong password' })
      return { status: response.status, error: /role="alert">([^<]*)</.exec(response.text)?.[1] }
    }
    expect(await attempt('nobody@example.com')).toEqual(await attempt(alice.email))
    expect(await attempt(alice.email)).toEqual({ status: 401, error: 'Email or password is incorrect.' })
    const json = async (email: string) => {
      const response = await api.service.fetch(
        new Request('http://localhost/account/api/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'wrong password' }) }),
        { ip: nextAddress() },
      )
      const body = await response.json()
      return { status: response.status, errors: body.errors, headers: [...response.headers.keys()].filter((name) => name !== 'x-request-id').sort() }
    }
    expect(await json('nobody@example.com')).toEqual(await json(alice.email))
  })

  test("an organization's password sign-in turned off (org update --password-sign-in false): the form and the JSON API refuse the right password with the reason, a wrong one as before; on again, it works", async () => {
    const organization = await api.createOrganization()
    const carol = await api.createUser(organization, 'member', { password: 'carol password 1' })
    const orgUpdate = async (...flags: string[]) => {
      const outcome = await runCommand(registry, ['org', 'update', '--id', organization, ...flags], async () => ({ service: api.service, close: async () => {} }))
      return { code: outcome.code, out: JSON.parse(outcome.stdout || outcome.stderr) }
    }
    expect(await orgUpdate('--password-sign-in', 'false')).toEqual({ code: 0, out: { id: organization, name: expect.any(String), passwordSignIn: false } })
    const form = async (password: string) => {
      const client = browser()
      const page = await client.request('GET', '/account/sign-in')
      const response = await client.request('POST', '/account/sign-in', { csrf: formToken(page.text), email: carol.email, password })
      return { status: response.status, error: /role="alert">([^<]*)</.exec(response.text)?.[1], session: client.cookies.has('wt_session') }
    }
    const json = async (password: string) => {
      const response = await api.service.fetch(
        new Request('http://localhost/account/api/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: carol.email, password }) }),
        { ip: nextAddress() },
      )
      return { status: response.status, code: (await response.json()).errors?.[0]?.code }
    }
    const turnedOff = 'Password sign-in is turned off for your organization: sign in through its identity provider.'
    expect(await form(carol.password)).toEqual({ status: 403, error: turnedOff, session: false })
    expect(await json(carol.password)).toEqual({ status: 403, code: 'FORBIDDEN' })
    // Whoever does not know the password learns nothing: the same 401 as any wrong password.
    expect(await form('wrong password')).toEqual({ status: 401, error: 'Email or password is incorrect.', session: false })
    expect(await json('wrong password')).toEqual({ status: 401, code: 'UNAUTHORIZED' })
    const [audited] = await queryRows<{ changes: unknown }>(api.service.core.db, sql`select changes from audit_logs where resource_id = ${organization} and action = 'organization.updated'`)
    expect(audited?.changes).toEqual({ before: { passwordSignIn: true }, after: { passwordSignIn: false } })
    // A bad value names the flag and changes nothing.
    const bad = await orgUpdate('--password-sign-in', 'no')
    expect(bad.code).toBe(1)
    expect(bad.out.error).toContain('--password-sign-in')
    expect(await json(carol.password)).toEqual({ status: 403, code: 'FORBIDDEN' })
    expect((await orgUpdate('--password-sign-in', 'true')).out.passwordSignIn).toBe(true)
    expect(await form(carol.password)).toMatchObject({ status: 303, session: true })
  })

  test('an unknown email takes as long as a wrong password', async () => {
    const time = async (email: string) => {
      const started = performance.now()
      await api.service.fetch(
        new Request('http://localhost/account/api/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'wrong password' }) }),
        { ip: nextAddress() },
      )
      return performance.now() - started
    }
    // The fastest of each: a busy machine only ever adds time (the median of eight, used before,
    // missed the bound once in CI beside the other suites), and a missing hash for an unknown email
    // would make even its slowest try several times faster than a wrong password's fastest.
    const fastest = (values: number[]) => Math.min(...values)
    const unknown: number[] = []
    const wrong: number[] = []
    // Eight tries stays under the account throttle (10), which would answer early.
    const target = await api.createUser(alice.organizationId, 'member', { password: 'timing password' })
    for (let i = 0; i < 8; i++) {
      unknown.push(await time(`nobody${i}@example.com`))
      wrong.push(await time(target.email))
    }
    const ratio = fastest(unknown) / fastest(wrong)
    expect(ratio).toBeGreaterThan(0.6)
    expect(ratio).toBeLessThan(1.6)
  })

  // Throttling (pair, account and address counters, counted before the hash) is proven in tests/security/sign-in.test.ts.

  test('a deactivated user is signed out everywhere', async () => {
    const leaver = await api.createUser(alice.organizationId, 'member', { password: 'leaver password' })
    const { client } = await signedIn(leaver)
    const mobile = await api.request('POST', '/account/api/sessions', { body: { email: leaver.email, password: 'leaver password' } })
    expect(mobile.status).toBe(201)
    await api.deactivateUser(leaver.id)
    expect((await client.request('GET', '/account/keys')).status).toBe(303)
    expect((await api.request('GET', '/account/api/keys', { headers: { authorization: `Bearer ${mobile.body.data.token}` } })).status).toBe(401)
  })
})

describe('API keys in the pages', () => {
  test('a form post without the CSRF token is refused and creates nothing', async () => {
    const { client } = await signedIn(alice)
    const before = (await queryRows<{ n: number }>(api.service.core.db, sql`select count(*)::int as n from api_keys where owner_id = ${alice.id}`))[0]!.n
    const response = await client.request('POST', '/account/keys', { name: 'forged', scopes: ['teams:read'] })
    expect(response.status).toBe(403)
    const wrong = await client.request('POST', '/account/keys', { name: 'forged', scopes: ['teams:read'], csrf: 'not-the-token' })
    expect(wrong.status).toBe(403)
    const after = (await queryRows<{ n: number }>(api.service.core.db, sql`select count(*)::int as n from api_keys where owner_id = ${alice.id}`))[0]!.n
    expect(after).toBe(before)
  })

  test('create shows the secret once; the list shows only the prefix; revoke works on your own keys only', async () => {
    const { client, csrf } = await signedIn(alice)
    const created = await client.request('POST', '/account/keys', { csrf, name: 'page key', scopes: ['teams:read', 'users:read'] })
    expect(created.status).toBe(201)
    const secret = /id="new-secret">([^<]+)</.exec(created.text)![1]!
    expect(secret).toMatch(/^wtk_/)
    const me = await api.request('GET', '/api/v1/users/me', { key: secret })
    expect(me.body.data.key.scopes).toEqual(['teams:read', 'users:read'])
    const listed = await client.request('GET', '/account/keys')
    expect(listed.text).not.toContain(secret)
    expect(listed.text).toContain(secret.slice(0, 8))
    const keyId = me.body.data.key.id
    const other = await signedIn(bob)
    expect((await other.client.request('POST', `/account/keys/${keyId}/revoke`, { csrf: other.csrf })).status).toBe(404)
    expect((await api.request('GET', '/api/v1/users/me', { key: secret })).status).toBe(200)
    expect((await client.request('POST', `/account/keys/${keyId}/revoke`, { csrf })).status).toBe(303)
    expect((await api.request('GET', '/api/v1/users/me', { key: secret })).status).toBe(401)
  })

  test('a key named like a script renders as text', async () => {
    const { client, csrf } = await signedIn(alice)
    const name = '<script>alert(1)</script>'
    await client.request('POST', '/account/keys', { csrf, name, scopes: ['teams:read'] })
    const page = await client.request('GET', '/account/keys')
    expect(page.text).not.toContain(name)
    expect(page.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
  })

  test('invalid input re-renders the page with the reason', async () => {
    const { client, csrf } = await signedIn(alice)
    const response = await client.request('POST', '/account/keys', { csrf, name: 'x', scopes: ['no:such'] })
    expect(response.status).toBe(400)
    expect(response.text).toContain('Unknown scope')
  })
})

describe('the JSON API for mobile apps', () => {
  test('session token, keys, revoke, sign-out; audited via "account" without secrets', async () => {
    const started = await api.request('POST', '/account/api/sessions', { body: { email: bob.email, password: bob.password } })
    expect(started.status).toBe(201)
    expect(started.body.data).toEqual({ token: expect.stringMatching(/^wts_/), expiresAt: expect.any(String) })
    const auth = { authorization: `Bearer ${started.body.data.token}` }
    const created = await api.request('POST', '/account/api/keys', { headers: auth, body: { name: 'phone', scopes: ['projects:read'] } })
    expect(created.status).toBe(201)
    expect(created.body.data.secret).toMatch(/^wtk_/)
    const listed = await api.request('GET', '/account/api/keys', { headers: auth })
    expect(listed.body.data.map((key: { id: string }) => key.id)).toContain(created.body.data.key.id)
    expect(listed.text).not.toContain(created.body.data.secret)
    expect((await api.request('DELETE', `/account/api/keys/${created.body.data.key.id}`, { headers: auth })).body.data.revokedAt).toBeString()
    expect((await api.request('GET', '/api/v1/users/me', { key: created.body.data.secret })).status).toBe(401)
    // A session token is not an API key, and an API key is not a session token.
    expect((await api.request('GET', '/api/v1/users/me', { headers: auth })).status).toBe(401)
    expect((await api.request('DELETE', '/account/api/sessions/current', { headers: auth })).body.data).toEqual({ revoked: true })
    expect((await api.request('GET', '/account/api/keys', { headers: auth })).status).toBe(401)
    const records = await queryRows<{ action: string; via: string; changes: unknown }>(
      api.service.core.db,
      sql`select action, via, changes from audit_logs where actor_user_id = ${bob.id} order by occurred_at, id`,
    )
    expect(records.map((record) => record.action)).toEqual(expect.arrayContaining(['session.created', 'api_key.created', 'api_key.revoked', 'session.revoked']))
    expect(records.every((record) => record.via === 'account')).toBe(true)
    const text = JSON.stringify(records)
    expect(text).not.toContain(created.body.data.secret.slice(8))
    expect(text).not.toContain(started.body.data.token.slice(8))
  })
})
