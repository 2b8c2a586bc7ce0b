/**
 * Teams and their members, with only the plugins teams needs (auth): unique names per
 * organization, membership, optimistic concurrency, and who may change them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { moveUpdatedAtBack } from '../helpers/age-row'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

const ALL = ['teams:read', 'teams:write', 'team_members:read', 'team_members:write']

let api: TestService
let admin: TestUser
let bob: TestUser
let carol: TestUser
const keys: Record<string, string> = {}

beforeAll(async () => {
  api = await startTestService({ plugins: ['auth', 'teams'] })
  const organization = await api.createOrganization()
  admin = await api.createUser(organization, 'administrator')
  bob = await api.createUser(organization)
  carol = await api.createUser(organization)
  for (const [name, user] of Object.entries({ admin, bob, carol })) keys[name] = (await api.createKey(user.id, ALL)).secret
})
afterAll(() => api.stop())

const call = (who: string, method: string, path: string, body?: unknown, headers?: Record<string, string>) => api.request(method, path, { key: keys[who], body, headers })
async function created(who: string, path: string, body: unknown) {
  const response = await call(who, 'POST', path, body)
  expect(response.status).toBe(201)
  return response.body.data
}

describe('teams', () => {
  test('names are unique per organization, case-insensitively; another organization may reuse one', async () => {
    const first = await created('admin', '/api/v1/teams', { name: 'Design' })
    const clash = await call('admin', 'POST', '/api/v1/teams', { name: 'design' })
    expect(clash.status).toBe(409)
    expect(clash.body.errors[0]).toMatchObject({ existingId: first.id, field: 'name' })
    const other = await api.createUser(await api.createOrganization(), 'administrator')
    const otherKey = (await api.createKey(other.id, ['teams:write', 'teams:read'])).secret
    expect((await api.request('POST', '/api/v1/teams', { key: otherKey, body: { name: 'Design' } })).status).toBe(201)
    const renamed = await created('admin', '/api/v1/teams', { name: 'Research' })
    const rename = await call('admin', 'PATCH', `/api/v1/teams/${renamed.id}`, { name: 'DESIGN' })
    expect(rename.status).toBe(409)
    expect(rename.body.errors[0].existingId).toBe(first.id)
    // Neither organization sees the other's team, by list or by id.
    expect((await api.request('GET', `/api/v1/teams/${first.id}`, { key: otherKey })).status).toBe(404)
    const theirs = await api.request('GET', '/api/v1/teams?size=100', { key: otherKey })
    expect(theirs.body.data.map((team: { id: string }) => team.id)).not.toContain(first.id)
  })

  test('adding a member twice is 409; removing someone who is not a member is 404', async () => {
    const team = await created('admin', '/api/v1/teams', { name: 'Members' })
    await created('admin', `/api/v1/teams/${team.id}/members`, { userId: carol.id })
    const twice = await call('admin', 'POST', `/api/v1/teams/${team.id}/members`, { userId: carol.id })
    expect(twice.status).toBe(409)
    expect(twice.body.errors[0].existingId).toBe(carol.id)
    expect((await call('admin', 'DELETE', `/api/v1/teams/${team.id}/members/${bob.id}`)).status).toBe(404)
    const members = await call('bob', 'GET', `/api/v1/teams/${team.id}/members`)
    expect(members.status).toBe(200)
    expect(members.body.data.map((member: { userId: string }) => member.userId)).toEqual([carol.id])
  })

  test('a member of another organization cannot be added (400 naming userId)', async () => {
    const team = await created('admin', '/api/v1/teams', { name: 'Closed' })
    const stranger = await api.createUser(await api.createOrganization())
    const response = await call('admin', 'POST', `/api/v1/teams/${team.id}/members`, { userId: stranger.id })
    expect(response.status).toBe(400)
    expect(response.body.errors[0].field).toBe('userId')
  })

  test('only administrators change teams; anyone in the organization reads them', async () => {
    const team = await created('admin', '/api/v1/teams', { name: 'Guarded' })
    expect((await call('bob', 'GET', `/api/v1/teams/${team.id}`)).status).toBe(200)
    expect((await call('bob', 'POST', '/api/v1/teams', { name: 'Mine' })).status).toBe(403)
    expect((await call('bob', 'PATCH', `/api/v1/teams/${team.id}`, { name: 'Taken over' })).status).toBe(403)
    expect((await call('bob', 'POST', `/api/v1/teams/${team.id}/members`, { userId: bob.id })).status).toBe(403)
    expect((await call('bob', 'DELETE', `/api/v1/teams/${team.id}`)).status).toBe(403)
  })

  test('a stale ETag is 412; deleting a team takes its memberships', async () => {
    const team = await created('admin', '/api/v1/teams', { name: 'Versioned team' })
    await created('admin', `/api/v1/teams/${team.id}/members`, { userId: bob.id })
    const etag = (await call('admin', 'GET', `/api/v1/teams/${team.id}`)).headers.get('etag')!
    await moveUpdatedAtBack(api.service.core.db, 'teams', { id: team.id, organizationId: admin.organizationId })
    const current = (await call('admin', 'GET', `/api/v1/teams/${team.id}`)).headers.get('etag')!
    expect(current).not.toBe(etag)
    expect((await call('admin', 'PATCH', `/api/v1/teams/${team.id}`, { description: 'x' }, { 'if-match': etag })).status).toBe(412)
    expect((await call('admin', 'DELETE', `/api/v1/teams/${team.id}`, undefined, { 'if-match': current })).status).toBe(200)
    expect((await call('admin', 'GET', `/api/v1/teams/${team.id}`)).status).toBe(404)
    const [left] = await queryRows<{ n: number }>(api.service.core.db, sql`select count(*)::int as n from team_members where team_id = ${team.id}`)
    expect(left!.n).toBe(0)
  })

  test('an empty PATCH is 400', async () => {
    const team = await created('admin', '/api/v1/teams', { name: 'Empty patch' })
    expect((await call('admin', 'PATCH', `/api/v1/teams/${team.id}`, {})).status).toBe(400)
  })
})
