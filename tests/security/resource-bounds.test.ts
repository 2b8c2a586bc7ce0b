/**
 * What one signed-in user can make the service hold is bounded: devices (every message fans out
 * to each), active API keys, and ended sessions and sign-in counters are purged.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { purgeThrottle } from '../../plugins/account/throttle'
import { purgeSessions } from '../../plugins/auth/sessions'
import { queryRows } from '../../src/db'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { signIn } from '../helpers/sessions'

let api: TestService
let user: TestUser
let session: string

beforeAll(async () => {
  api = await startTestService({ config: { push: { maxDevicesPerUser: 3 }, auth: { maxKeysPerUser: 3 } } })
  user = await api.createUser(await api.createOrganization(), 'member', { password: 'bounded password' })
  session = await signIn(api, user)
})
afterAll(() => api.stop())

const rows = async (query: ReturnType<typeof sql>) => queryRows<Record<string, any>>(api.service.core.db, query)

describe('devices per user', () => {
  test('registering past push.maxDevicesPerUser removes the device seen least recently', async () => {
    for (let i = 0; i < 5; i++) {
      const answer = await api.request('POST', '/api/devices', { headers: { authorization: `Bearer ${session}` }, body: { token: `device-token-${i}`, platform: 'android' } })
      expect(answer.status).toBe(201)
      // A distinct last-seen time per device, set in SQL rather than waited for.
      await api.service.core.db.execute(sql`update devices set last_seen_at = now() - make_interval(mins => ${10 - i}) where token = ${`device-token-${i}`}`)
    }
    const kept = await rows(sql`select token from devices where user_id = ${user.id} order by token`)
    expect(kept.map((row) => row.token)).toEqual(['device-token-2', 'device-token-3', 'device-token-4'])
  })
})

describe('API keys per user', () => {
  test('one more active key than auth.maxKeysPerUser is 409; revoking one frees a place', async () => {
    const auth = { authorization: `Bearer ${session}` }
    const created: string[] = []
    for (let i = 0; i < 3; i++) {
      const answer = await api.request('POST', '/account/api/keys', { headers: auth, body: { name: `key ${i}`, scopes: ['users:read'] } })
      expect(answer.status).toBe(201)
      created.push(answer.body.data.key.id)
    }
    const refused = await api.request('POST', '/account/api/keys', { headers: auth, body: { name: 'one too many', scopes: ['users:read'] } })
    expect(refused.status).toBe(409)
    expect(refused.body.errors[0].message).toContain('maxKeysPerUser')
    expect((await api.request('DELETE', `/account/api/keys/${created[0]}`, { headers: auth })).status).toBe(200)
    expect((await api.request('POST', '/account/api/keys', { headers: auth, body: { name: 'replacement', scopes: ['users:read'] } })).status).toBe(201)
  })

  test('concurrent creations never pass the bound', async () => {
    const other = await api.createUser(user.organizationId, 'member', { password: 'other password' })
    const token = await signIn(api, other)
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => api.request('POST', '/account/api/keys', { headers: { authorization: `Bearer ${token}` }, body: { name: `racing ${i}`, scopes: ['users:read'] } })),
    )
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(3)
    expect(answers.filter((answer) => answer.status === 409)).toHaveLength(5)
  })
})

describe('purges', () => {
  test('sessions ended over a day ago and sign-in counters past their window are deleted', async () => {
    await api.service.core.db.execute(sql`update sessions set expires_at = now() - interval '2 days' where user_id = ${user.id}`)
    expect(await purgeSessions(api.service.core.db)).toBeGreaterThan(0)
    expect(await rows(sql`select id from sessions where user_id = ${user.id}`)).toEqual([])
    await api.request('POST', '/account/api/sessions', { body: { email: user.email, password: 'wrong password' } })
    await api.service.core.db.execute(sql`update sign_in_throttle set window_start = now() - interval '1 hour'`)
    expect(await purgeThrottle(api.service.core.db, 15 * 60)).toBeGreaterThan(0)
    expect(await rows(sql`select key from sign_in_throttle`)).toEqual([])
  })
})
