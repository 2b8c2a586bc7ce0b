import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { runCommand } from '../../src/cli'
import { registry } from '../../plugins'
import { eventually, startTestService, type TestService, type TestUser } from '../helpers/service'

let api: TestService
let alice: TestUser
let bob: TestUser
let outsider: TestUser
let aliceKey: string
let bobKey: string

beforeAll(async () => {
  api = await startTestService({ plugins: ['auth', 'users'] })
  const organization = await api.createOrganization('A')
  alice = await api.createUser(organization, 'administrator')
  bob = await api.createUser(organization, 'member')
  outsider = await api.createUser(await api.createOrganization('B'), 'superadministrator')
  aliceKey = (await api.createKey(alice.id, ['users:read'])).secret
  bobKey = (await api.createKey(bob.id, ['users:read'])).secret
})
afterAll(() => api.stop())

describe('GET /api/v1/users/{userId}', () => {
  test('an active user of the same organization: limited identity only (a member asking)', async () => {
    const response = await api.request('GET', `/api/v1/users/${alice.id}`, { key: bobKey })
    expect(response.status).toBe(200)
    expect(response.body.data).toEqual({ id: alice.id, username: alice.username, displayName: expect.any(String), avatarUrl: null })
    expect(response.text).not.toContain(alice.email)
  })

  test('an administrator also sees email, role and status', async () => {
    const response = await api.request('GET', `/api/v1/users/${bob.id}`, { key: aliceKey })
    expect(response.body.data).toEqual({ id: bob.id, username: bob.username, displayName: expect.any(String), avatarUrl: null, email: bob.email, role: 'member', status: 'active' })
  })

  test('a user of organization A cannot resolve a user of organization B (404)', async () => {
    const response = await api.request('GET', `/api/v1/users/${outsider.id}`, { key: aliceKey })
    expect(response.status).toBe(404)
    expect(response.body.errors[0].code).toBe('NOT_FOUND')
  })

  test('a deactivated user, an unknown id and a malformed id are 404 alike (to a member; an administrator sees the deactivated user)', async () => {
    const leaver = await api.createUser(alice.organizationId)
    expect((await api.request('GET', `/api/v1/users/${leaver.id}`, { key: bobKey })).status).toBe(200)
    await api.deactivateUser(leaver.id)
    for (const key of [bobKey, aliceKey]) {
      const answers = await Promise.all(
        [...(key === bobKey ? [leaver.id] : []), '01a20000-0000-7000-8000-000000000000', 'not-a-uuid', "1' or '1'='1"].map((id) =>
          api.request('GET', `/api/v1/users/${encodeURIComponent(id)}`, { key }),
        ),
      )
      for (const answer of answers) {
        expect(answer.status).toBe(404)
        expect(answer.body.errors[0]).toEqual({ code: 'NOT_FOUND', message: 'No such user.' })
      }
    }
    expect((await api.request('GET', `/api/v1/users/${leaver.id}`, { key: aliceKey })).body.data.status).toBe('deactivated')
  })

  test('needs users:read', async () => {
    const { secret } = await api.createKey(alice.id, [])
    expect((await api.request('GET', `/api/v1/users/${bob.id}`, { key: secret })).status).toBe(403)
  })
})

describe('GET /api/v1/users/me', () => {
  test('needs no scope and returns the owner with email and role, and the key', async () => {
    const { id, secret } = await api.createKey(outsider.id, [], { name: 'bare' })
    const response = await api.request('GET', '/api/v1/users/me', { key: secret })
    expect(response.body.data.user).toMatchObject({ id: outsider.id, email: outsider.email, role: 'superadministrator' })
    expect(response.body.data.key).toEqual({ id, name: 'bare', prefix: secret.slice(0, 8), scopes: [], expiresAt: null })
  })

  test('with answers kept per credential: each key shows itself (and its own ETag), a 304 for its ETag, and a role change shows at once with a new ETag', async () => {
    const member = await api.createUser(alice.organizationId, 'member')
    const first = await api.createKey(member.id, [], { name: 'first' })
    const second = await api.createKey(member.id, [], { name: 'second' })
    const me = (key: string, headers: Record<string, string> = {}) => api.request('GET', '/api/v1/users/me', { key, headers })
    const [one, again, other] = [await me(first.secret), await me(first.secret), await me(second.secret)]
    expect([one.body.data.key.name, again.body.data.key.name, other.body.data.key.name]).toEqual(['first', 'first', 'second'])
    expect(again.headers.get('etag')).toBe(one.headers.get('etag'))
    expect(other.headers.get('etag')).not.toBe(one.headers.get('etag'))
    expect(again.body.meta.requestId).not.toBe(one.body.meta.requestId)
    expect((await me(first.secret, { 'if-none-match': one.headers.get('etag')! })).status).toBe(304)
    const adminKey = (await api.createKey(alice.id, ['users:write'])).secret
    expect((await api.request('PATCH', `/api/v1/users/${member.id}`, { key: adminKey, body: { role: 'administrator' } })).status).toBe(200)
    const promoted = await me(first.secret, { 'if-none-match': one.headers.get('etag')! })
    expect(promoted.status).toBe(200)
    expect(promoted.body.data.user.role).toBe('administrator')
    expect(promoted.headers.get('etag')).not.toBe(one.headers.get('etag'))
  })

  test("an organization renamed by the CLI (a process of its own: here a second instance on the database) shows in every instance's /users/me", async () => {
    const organization = await api.createOrganization('Before rename')
    const someone = await api.createUser(organization, 'member')
    const { secret } = await api.createKey(someone.id, [])
    const nameShown = async () => (await api.request('GET', '/api/v1/users/me', { key: secret })).body.data.organization.name
    expect(await nameShown()).toBe('Before rename')
    expect(await nameShown()).toBe('Before rename')
    const cli = await startTestService({ plugins: ['auth', 'users'], database: api.database })
    try {
      const outcome = await runCommand(registry, ['org', 'update', '--id', organization, '--name', 'After rename'], async () => ({ service: cli.service, close: async () => {} }))
      expect(outcome.code).toBe(0)
      await eventually(async () => expect(await nameShown()).toBe('After rename'), 10_000)
    } finally {
      await cli.stop()
    }
  })
})
