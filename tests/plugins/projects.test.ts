import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { moveUpdatedAtBack } from '../helpers/age-row'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

const ALL = ['teams:read', 'teams:write', 'team_members:read', 'team_members:write', 'team_projects:read', 'projects:read', 'projects:write', 'project_access:read', 'project_access:write']

let api: TestService
let admin: TestUser
let alice: TestUser
let bob: TestUser
let carol: TestUser
const keys: Record<string, string> = {}

beforeAll(async () => {
  api = await startTestService()
  const organization = await api.createOrganization()
  admin = await api.createUser(organization, 'administrator')
  alice = await api.createUser(organization)
  bob = await api.createUser(organization)
  carol = await api.createUser(organization)
  for (const [name, user] of Object.entries({ admin, alice, bob, carol })) keys[name] = (await api.createKey(user.id, ALL)).secret
})
afterAll(() => api.stop())

async function call(who: string, method: string, path: string, body?: unknown, headers?: Record<string, string>) {
  return api.request(method, path, { key: keys[who], body, headers })
}
async function created(who: string, path: string, body: unknown) {
  const response = await call(who, 'POST', path, body)
  expect(response.status).toBe(201)
  return response.body.data
}
const levelOf = async (who: string, projectId: string) => {
  const get = await call(who, 'GET', `/api/v1/projects/${projectId}`)
  if (get.status === 404) return null
  const patch = await call(who, 'PATCH', `/api/v1/projects/${projectId}`, { description: 'probe' })
  if (patch.status === 200) return 'owner'
  const members = await call(who, 'GET', `/api/v1/projects/${projectId}/members`)
  return members.status === 200 ? 'viewer-or-editor' : null
}

describe('projects', () => {
  test('the creator becomes the owner and the only member', async () => {
    const project = await created('alice', '/api/v1/projects', { name: 'Alpha', description: 'first' })
    expect(project).toMatchObject({ name: 'Alpha', description: 'first', createdBy: alice.id })
    const members = (await call('alice', 'GET', `/api/v1/projects/${project.id}/members`)).body
    expect(members.data).toEqual([{ userId: alice.id, accessLevel: 'owner', user: { id: alice.id, username: alice.username, displayName: expect.any(String), avatarUrl: null }, createdAt: expect.any(String) }])
  })

  test('effective access is the highest of direct membership and linked teams', async () => {
    const project = await created('alice', '/api/v1/projects', { name: 'Beta' })
    const team = await created('admin', '/api/v1/teams', { name: 'Beta team' })
    await created('admin', `/api/v1/teams/${team.id}/members`, { userId: bob.id })
    expect(await levelOf('bob', project.id)).toBeNull()
    await created('alice', `/api/v1/projects/${project.id}/members`, { userId: bob.id, accessLevel: 'viewer' })
    expect(await levelOf('bob', project.id)).toBe('viewer-or-editor')
    await created('alice', `/api/v1/projects/${project.id}/teams`, { teamId: team.id, accessLevel: 'owner' })
    expect(await levelOf('bob', project.id)).toBe('owner')
    // Back to viewer through the team; the direct viewer membership still counts.
    expect((await call('alice', 'PATCH', `/api/v1/projects/${project.id}/teams/${team.id}`, { accessLevel: 'viewer' })).status).toBe(200)
    expect(await levelOf('bob', project.id)).toBe('viewer-or-editor')
  })

  test('the team directory lists every linked project, visible or not', async () => {
    const team = await created('admin', '/api/v1/teams', { name: 'Directory' })
    const hidden = await created('alice', '/api/v1/projects', { name: 'Hidden from carol' })
    await created('alice', `/api/v1/projects/${hidden.id}/teams`, { teamId: team.id, accessLevel: 'editor' })
    const response = await call('carol', 'GET', `/api/v1/teams/${team.id}/projects`)
    expect(response.body.data).toEqual([{ id: hidden.id, name: 'Hidden from carol', accessLevel: 'editor' }])
    expect((await call('carol', 'GET', `/api/v1/projects/${hidden.id}`)).status).toBe(404)
  })

  test('deleting a team removes its project links and the access they gave', async () => {
    const project = await created('alice', '/api/v1/projects', { name: 'Gamma' })
    const team = await created('admin', '/api/v1/teams', { name: 'Gamma team' })
    await created('admin', `/api/v1/teams/${team.id}/members`, { userId: carol.id })
    await created('alice', `/api/v1/projects/${project.id}/teams`, { teamId: team.id, accessLevel: 'editor' })
    expect((await call('carol', 'GET', `/api/v1/projects/${project.id}`)).status).toBe(200)
    expect((await call('admin', 'DELETE', `/api/v1/teams/${team.id}`)).body.data).toEqual({ id: team.id })
    expect((await call('alice', 'GET', `/api/v1/projects/${project.id}/teams`)).body.data).toEqual([])
    expect((await call('carol', 'GET', `/api/v1/projects/${project.id}`)).status).toBe(404)
  })

  test('deleting a project removes its members and team links', async () => {
    const project = await created('alice', '/api/v1/projects', { name: 'Delta' })
    const team = await created('admin', '/api/v1/teams', { name: 'Delta team' })
    await created('alice', `/api/v1/projects/${project.id}/members`, { userId: bob.id, accessLevel: 'editor' })
    await created('alice', `/api/v1/projects/${project.id}/teams`, { teamId: team.id, accessLevel: 'viewer' })
    expect((await call('alice', 'DELETE', `/api/v1/projects/${project.id}`)).body.data).toEqual({ id: project.id })
    const rows = await queryRows<{ members: number; links: number }>(
      api.service.core.db,
      sql`select (select count(*) from project_members where project_id = ${project.id})::int as members, (select count(*) from project_teams where project_id = ${project.id})::int as links`,
    )
    expect(rows[0]).toEqual({ members: 0, links: 0 })
    expect((await call('alice', 'GET', `/api/v1/projects/${project.id}`)).status).toBe(404)
    expect((await call('admin', 'GET', `/api/v1/teams/${team.id}`)).status).toBe(200)
  })
})

describe('the last owner', () => {
  test('cannot be demoted or removed; with a second owner, can', async () => {
    const project = await created('alice', '/api/v1/projects', { name: 'Owned' })
    const demote = await call('alice', 'PATCH', `/api/v1/projects/${project.id}/members/${alice.id}`, { accessLevel: 'editor' })
    expect(demote.status).toBe(409)
    expect(demote.body.errors[0].code).toBe('CONFLICT')
    expect((await call('alice', 'DELETE', `/api/v1/projects/${project.id}/members/${alice.id}`)).status).toBe(409)
    await created('alice', `/api/v1/projects/${project.id}/members`, { userId: bob.id, accessLevel: 'owner' })
    expect((await call('alice', 'PATCH', `/api/v1/projects/${project.id}/members/${alice.id}`, { accessLevel: 'viewer' })).body.data.accessLevel).toBe('viewer')
    expect((await call('bob', 'DELETE', `/api/v1/projects/${project.id}/members/${bob.id}`)).status).toBe(409)
  })

  test('a team linked as owner counts as an owner grant', async () => {
    const project = await created('alice', '/api/v1/projects', { name: 'Team owned' })
    const team = await created('admin', '/api/v1/teams', { name: 'Owners' })
    await created('admin', `/api/v1/teams/${team.id}/members`, { userId: bob.id })
    await created('alice', `/api/v1/projects/${project.id}/teams`, { teamId: team.id, accessLevel: 'owner' })
    expect((await call('alice', 'DELETE', `/api/v1/projects/${project.id}/members/${alice.id}`)).status).toBe(200)
    expect((await call('bob', 'DELETE', `/api/v1/projects/${project.id}/teams/${team.id}`)).status).toBe(409)
    expect((await call('bob', 'PATCH', `/api/v1/projects/${project.id}/teams/${team.id}`, { accessLevel: 'editor' })).status).toBe(409)
  })

  test('two owners demoting each other at once never leave the project without an owner', async () => {
    const project = await created('alice', '/api/v1/projects', { name: 'Race' })
    await created('alice', `/api/v1/projects/${project.id}/members`, { userId: bob.id, accessLevel: 'owner' })
    const [first, second] = await Promise.all([
      call('alice', 'PATCH', `/api/v1/projects/${project.id}/members/${alice.id}`, { accessLevel: 'viewer' }),
      call('bob', 'PATCH', `/api/v1/projects/${project.id}/members/${bob.id}`, { accessLevel: 'viewer' }),
    ])
    expect([first.status, second.status].sort()).toEqual([200, 409])
    const [row] = await queryRows<{ owners: number }>(api.service.core.db, sql`select count(*)::int as owners from project_members where project_id = ${project.id} and access_level = 'owner'`)
    expect(row!.owners).toBe(1)
  })
})

describe('references in bodies', () => {
  test('a user of another organization, a deactivated user or an unknown team is 400 naming the field', async () => {
    const project = await created('alice', '/api/v1/projects', { name: 'Refs' })
    const stranger = await api.createUser(await api.createOrganization())
    const leaver = await api.createUser(alice.organizationId)
    await api.deactivateUser(leaver.id)
    for (const userId of [stranger.id, leaver.id, '01a20000-0000-7000-8000-000000000000']) {
      const response = await call('alice', 'POST', `/api/v1/projects/${project.id}/members`, { userId, accessLevel: 'viewer' })
      expect(response.status).toBe(400)
      expect(response.body.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field: 'userId' })
    }
    const strangerAdmin = await api.createUser(stranger.organizationId, 'administrator')
    const foreignTeam = await api.request('POST', '/api/v1/teams', { key: (await api.createKey(strangerAdmin.id, ['teams:write'])).secret, body: { name: 'Foreign' } })
    expect(foreignTeam.status).toBe(201)
    const response = await call('alice', 'POST', `/api/v1/projects/${project.id}/teams`, { teamId: foreignTeam.body.data.id, accessLevel: 'viewer' })
    expect(response.status).toBe(400)
    expect(response.body.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field: 'teamId' })
  })

  test('a duplicate membership or link is 409 naming the existing one', async () => {
    const project = await created('alice', '/api/v1/projects', { name: 'Dupes' })
    await created('alice', `/api/v1/projects/${project.id}/members`, { userId: bob.id, accessLevel: 'viewer' })
    const again = await call('alice', 'POST', `/api/v1/projects/${project.id}/members`, { userId: bob.id, accessLevel: 'editor' })
    expect(again.status).toBe(409)
    expect(again.body.errors[0]).toMatchObject({ code: 'CONFLICT', existingId: bob.id })
  })

  test('an invalid access level is 400', async () => {
    const project = await created('alice', '/api/v1/projects', { name: 'Levels' })
    const response = await call('alice', 'POST', `/api/v1/projects/${project.id}/members`, { userId: bob.id, accessLevel: 'admin' })
    expect(response.status).toBe(400)
    expect(response.body.errors[0].field).toBe('accessLevel')
  })
})

describe('If-Match', () => {
  test('a stale ETag is 412 PRECONDITION_FAILED; the current one updates', async () => {
    const project = await created('alice', '/api/v1/projects', { name: 'Versioned' })
    const read = await call('alice', 'GET', `/api/v1/projects/${project.id}`)
    const etag = read.headers.get('etag')!
    expect(etag).toMatch(/^W\/"/)
    // Read a second ago, as far as the database knows: the update below certainly changes the time.
    await moveUpdatedAtBack(api.service.core.db, 'projects', { id: project.id, organizationId: alice.organizationId })
    const reread = await call('alice', 'GET', `/api/v1/projects/${project.id}`)
    expect(reread.headers.get('etag')).not.toBe(etag)
    const first = await call('alice', 'PATCH', `/api/v1/projects/${project.id}`, { name: 'Versioned 2' }, { 'if-match': reread.headers.get('etag')! })
    expect(first.status).toBe(200)
    const stale = await call('alice', 'PATCH', `/api/v1/projects/${project.id}`, { name: 'Versioned 3' }, { 'if-match': etag })
    expect(stale.status).toBe(412)
    expect(stale.body.errors[0].code).toBe('PRECONDITION_FAILED')
    expect((await call('alice', 'GET', `/api/v1/projects/${project.id}`)).body.data.name).toBe('Versioned 2')
    expect((await call('alice', 'DELETE', `/api/v1/projects/${project.id}`, undefined, { 'if-match': etag })).status).toBe(412)
    expect((await call('alice', 'DELETE', `/api/v1/projects/${project.id}`, undefined, { 'if-match': first.headers.get('etag')! })).status).toBe(200)
  })
})
