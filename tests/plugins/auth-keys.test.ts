import { afterAll, beforeAll, describe, expect, setSystemTime, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { SessionsRef } from '../../plugins/auth/api'
import { KeyAuthenticator } from '../../plugins/auth/authenticator'
import { apiKeys } from '../../plugins/auth/schema'
import type { Database } from '../../src/db'
import { createLogger } from '../../src/log'
import { queryRows, queryText } from '../../src/db'
import { generateSecret, hashSecret } from '../../src/secrets'
import { eventually, startTestService, type TestService, type TestUser } from '../helpers/service'

let api: TestService
let user: TestUser

beforeAll(async () => {
  api = await startTestService({ plugins: ['auth', 'users'] })
  user = await api.createUser(await api.createOrganization(), 'member')
})
afterAll(() => api.stop())

const me = (key?: string) => api.request('GET', '/api/v1/users/me', key ? { key } : {})

describe('API key lifecycle', () => {
  test('a new key works and /users/me shows its owner and scopes', async () => {
    const { id, secret } = await api.createKey(user.id, ['users:read'], { name: 'laptop' })
    expect(secret).toMatch(/^wtk_[0-9A-Za-z]{42}$/)
    const response = await me(secret)
    expect(response.status).toBe(200)
    expect(response.body.data).toEqual({
      user: { id: user.id, username: user.username, displayName: expect.any(String), avatarUrl: null, email: user.email, role: 'member' },
      organization: { id: user.organizationId, name: expect.any(String) },
      key: { id, name: 'laptop', prefix: secret.slice(0, 8), scopes: ['users:read'], expiresAt: null },
    })
  })

  test('the stored row holds only the hash and the 8-character prefix, never the secret', async () => {
    const { id, secret } = await api.createKey(user.id, ['users:read'])
    const [row] = await queryRows<Record<string, unknown>>(api.service.core.db, sql`select * from api_keys where id = ${id}`)
    expect(row!.secret_hash).toBe(hashSecret(secret))
    expect(row!.prefix).toBe(secret.slice(0, 8))
    const stored = JSON.stringify(row)
    expect(stored).not.toContain(secret.slice(8))
    const audit = await queryRows<{ changes: unknown }>(api.service.core.db, sql`select changes from audit_logs where resource_id = ${id}`)
    expect(audit).toHaveLength(1)
    expect(JSON.stringify(audit)).not.toContain(secret.slice(8))
  })

  test('a revoked key gets 401 on the next request, even though it was cached', async () => {
    const { id, secret } = await api.createKey(user.id, ['users:read'])
    expect((await me(secret)).status).toBe(200)
    await api.revokeKey(id)
    const response = await me(secret)
    expect(response.status).toBe(401)
    expect(response.body.errors[0].code).toBe('UNAUTHORIZED')
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="worktrack", error="invalid_token"')
  })

  test('an expired key gets 401, read from the database', async () => {
    const { id, secret } = await api.createKey(user.id, ['users:read'], { expiresAt: new Date(Date.now() + 3_600_000).toISOString() })
    await queryText(api.service.core.db, "update api_keys set expires_at = now() - interval '1 second' where id = $1", [id])
    expect((await me(secret)).status).toBe(401)
  })

  test('a cached key gets 401 once it expires (the clock moved past its expiry, no waiting)', async () => {
    const { secret } = await api.createKey(user.id, ['users:read'], { expiresAt: new Date(Date.now() + 60_000).toISOString() })
    expect((await me(secret)).status).toBe(200) // now cached
    try {
      setSystemTime(new Date(Date.now() + 61_000))
      expect((await me(secret)).status).toBe(401)
    } finally {
      setSystemTime()
    }
    // Back in the present the key is valid again: the 401 was the expiry, not something else.
    expect((await me(secret)).status).toBe(200)
  })

  test("a deactivated owner's keys get 401 at once", async () => {
    const owner = await api.createUser(user.organizationId)
    const { secret } = await api.createKey(owner.id, [])
    expect((await me(secret)).status).toBe(200)
    await api.deactivateUser(owner.id)
    expect((await me(secret)).status).toBe(401)
  })

  test('a key without the scope gets 403 INSUFFICIENT_SCOPE naming it', async () => {
    const { secret } = await api.createKey(user.id, [])
    const response = await api.request('GET', `/api/v1/users/${user.id}`, { key: secret })
    expect(response.status).toBe(403)
    expect(response.body.errors[0]).toEqual({ code: 'INSUFFICIENT_SCOPE', message: 'The API key lacks the scope(s): users:read.' })
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="worktrack", error="insufficient_scope", scope="users:read"')
  })

  test('missing, malformed, wrong-checksum and unknown keys get 401', async () => {
    const missing = await me()
    expect(missing.status).toBe(401)
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="worktrack"')
    const { secret } = await api.createKey(user.id, [])
    const flipped = secret.slice(0, 10) + (secret[10] === 'a' ? 'b' : 'a') + secret.slice(11)
    const unknown = `${secret.slice(0, -6)}000000`
    for (const header of ['Basic abc', 'Bearer', `Bearer ${secret} extra`, `Bearer ${flipped}`, `Bearer ${unknown}`, 'Bearer wtk_short']) {
      const response = await api.request('GET', '/api/v1/users/me', { headers: { authorization: header } })
      expect(response.status).toBe(401)
      expect(response.body.errors[0].code).toBe('UNAUTHORIZED')
    }
  })

  test('a session token (web cookie value or mobile token) where API v1 takes keys: 401 saying API v1 takes an API key, not "invalid key"', async () => {
    const SAYS = 'This is a session token (a sign-in); API v1 takes an API key, sent as `Authorization: Bearer <key>`: create one in the account area (/account).'
    const sessions = api.service.core.services.get(SessionsRef)
    const principal = { id: user.id, organizationId: user.organizationId, email: user.email, username: user.username, displayName: user.username, avatarUrl: null, role: user.role }
    for (const kind of ['web', 'mobile'] as const) {
      const { token } = await sessions.start(principal, kind, null)
      expect(token).toStartWith('wts_')
      const response = await me(token)
      expect({ kind, status: response.status, errors: response.body.errors }).toEqual({ kind, status: 401, errors: [{ code: 'UNAUTHORIZED', message: SAYS }] })
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="worktrack", error="invalid_token"')
    }
    // Told by its form alone: a session-shaped token nobody issued says the same, and an API key that is no one's is still an invalid key.
    expect((await me(generateSecret('wts'))).body.errors[0].message).toBe(SAYS)
    const { secret } = await api.createKey(user.id, [])
    expect((await me(`${secret.slice(0, -6)}000000`)).body.errors[0].message).toBe('The API key is invalid, revoked or expired.')
    // No database round trip for it: an authenticator whose database throws on any use still answers.
    const untouchable = new Proxy({}, { get: () => { throw new Error('the database was used') } }) as unknown as Database
    const authenticator = new KeyAuthenticator(untouchable, { cacheTtlSeconds: 60, cacheMaxEntries: 10, requestsPerMinute: 0 }, createLogger('silent'))
    await expect(authenticator.authenticateBearer(`Bearer ${generateSecret('wts')}`)).rejects.toMatchObject({ status: 401, message: SAYS })
  })

  test('lastUsedAt is recorded, at most once a minute', async () => {
    const { id, secret } = await api.createKey(user.id, [])
    const lastUsed = async () => (await api.service.core.db.select().from(apiKeys).where(eq(apiKeys.id, id)))[0]!.lastUsedAt
    expect(await lastUsed()).toBeNull()
    // The write is off the request's path: instances of their own, whose stop() waits for it.
    const instance = () => startTestService({ plugins: ['auth', 'users'], database: api.database })
    const one = await instance()
    const before = Date.now()
    let between: number
    try {
      expect((await one.request('GET', '/api/v1/users/me', { key: secret })).status).toBe(200)
      await Bun.sleep(5)
      between = Date.now()
      // The same instance again, within the minute: no second write.
      expect((await one.request('GET', '/api/v1/users/me', { key: secret })).status).toBe(200)
    } finally {
      await one.stop()
    }
    const first = (await lastUsed())!
    expect(first).not.toBeNull()
    expect(first.getTime()).toBeGreaterThanOrEqual(before)
    expect(first.getTime()).toBeLessThan(between)
    // Another instance reads that lastUsedAt with the key: no write within the minute either.
    const two = await instance()
    try {
      expect((await two.request('GET', '/api/v1/users/me', { key: secret })).status).toBe(200)
    } finally {
      await two.stop()
    }
    expect((await lastUsed())!.getTime()).toBe(first.getTime())
  })
})

describe('two instances on one database', () => {
  test('a revocation on one instance takes effect on the other at once', async () => {
    const other = await startTestService({ plugins: ['auth', 'users'], database: api.database })
    try {
      const { id, secret } = await api.createKey(user.id, [])
      expect((await other.request('GET', '/api/v1/users/me', { key: secret })).status).toBe(200)
      await api.revokeKey(id)
      await eventually(async () => expect((await other.request('GET', '/api/v1/users/me', { key: secret })).status).toBe(401), 1000)
    } finally {
      await other.stop()
    }
  })
})

describe('per-key rate limit', () => {
  test('off by default; when configured, the request over the limit gets 429 with Retry-After', async () => {
    const limited = await startTestService({ plugins: ['auth', 'users'], config: { auth: { requestsPerMinute: 3 } } })
    try {
      const owner = await limited.createUser(await limited.createOrganization())
      const { secret } = await limited.createKey(owner.id, [])
      for (let i = 0; i < 3; i++) expect((await limited.request('GET', '/api/v1/users/me', { key: secret })).status).toBe(200)
      const refused = await limited.request('GET', '/api/v1/users/me', { key: secret })
      expect(refused.status).toBe(429)
      expect(refused.body.errors[0].code).toBe('RATE_LIMITED')
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    } finally {
      await limited.stop()
    }
    const { secret } = await api.createKey(user.id, [])
    for (let i = 0; i < 10; i++) expect((await me(secret)).status).toBe(200)
  })
})
