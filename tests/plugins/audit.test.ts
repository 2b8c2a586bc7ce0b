/**
 * Every write is audited in its own transaction: the right action, actor, key, door, resource
 * and changes; and a write that fails leaves neither the change nor a record.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { testTriggers } from '../helpers/test-triggers'

let api: TestService
let admin: TestUser
let member: TestUser
let adminKey: { id: string; secret: string }

const ALL = ['teams:read', 'teams:write', 'team_members:read', 'team_members:write', 'team_projects:read', 'projects:read', 'projects:write', 'project_access:read', 'project_access:write', 'audit_logs:read', 'users:read']

beforeAll(async () => {
  api = await startTestService()
  const organization = await api.createOrganization()
  admin = await api.createUser(organization, 'administrator')
  member = await api.createUser(organization, 'member')
  adminKey = await api.createKey(admin.id, ALL)
})
afterAll(() => api.stop())

interface Record {
  action: string
  actor_user_id: string | null
  api_key_id: string | null
  via: string
  resource_type: string
  resource_id: string
  project_id: string | null
  changes: { before?: any; after?: any } | null
  request_id: string
}

const recordsOf = (requestId: string) => queryRows<Record>(api.service.core.db, sql`select * from audit_logs where request_id = ${requestId}`)
const count = async (table: string, where = sql`true`) =>
  Number((await queryRows<{ n: number }>(api.service.core.db, sql`select count(*) as n from ${sql.identifier(table)} where ${where}`))[0]!.n)

async function write(method: string, path: string, body?: unknown) {
  const response = await api.request(method, path, { key: adminKey.secret, body })
  expect(response.status).toBeLessThan(300)
  const records = await recordsOf(response.body.meta.requestId)
  expect(records).toHaveLength(1)
  const [record] = records
  expect(record).toMatchObject({ actor_user_id: admin.id, api_key_id: adminKey.id, via: 'rest' })
  return { data: response.body.data, record: record! }
}

describe('every write is audited with action, actor and changes', () => {
  test('teams and team members', async () => {
    const created = await write('POST', '/api/v1/teams', { name: 'Platform', description: 'infra' })
    expect(created.record).toMatchObject({ action: 'team.created', resource_type: 'team', resource_id: created.data.id, project_id: null, changes: { after: { name: 'Platform', description: 'infra' } } })
    const team = created.data.id

    const updated = await write('PATCH', `/api/v1/teams/${team}`, { name: 'Platform Core' })
    expect(updated.record).toMatchObject({ action: 'team.updated', changes: { before: { name: 'Platform' }, after: { name: 'Platform Core' } } })
    expect(updated.record.changes!.after).not.toHaveProperty('description')

    const added = await write('POST', `/api/v1/teams/${team}/members`, { userId: member.id })
    expect(added.record).toMatchObject({ action: 'team.member_added', resource_id: team, changes: { after: { userId: member.id } } })
    const removed = await write('DELETE', `/api/v1/teams/${team}/members/${member.id}`)
    expect(removed.record).toMatchObject({ action: 'team.member_removed', changes: { before: { userId: member.id } } })
    const deleted = await write('DELETE', `/api/v1/teams/${team}`)
    expect(deleted.record).toMatchObject({ action: 'team.deleted', resource_id: team, changes: { before: { name: 'Platform Core' } } })
  })

  test('projects, members and team links carry the project id', async () => {
    const created = await write('POST', '/api/v1/projects', { name: 'Apollo' })
    const project = created.data.id
    expect(created.record).toMatchObject({ action: 'project.created', resource_id: project, project_id: project, changes: { after: { name: 'Apollo', ownerId: admin.id } } })
    expect((await write('PATCH', `/api/v1/projects/${project}`, { description: 'moon' })).record).toMatchObject({ action: 'project.updated', project_id: project, changes: { before: { description: null }, after: { description: 'moon' } } })
    expect((await write('POST', `/api/v1/projects/${project}/members`, { userId: member.id, accessLevel: 'viewer' })).record).toMatchObject({ action: 'project.member_added', resource_type: 'project_member', resource_id: member.id, project_id: project, changes: { after: { userId: member.id, accessLevel: 'viewer' } } })
    expect((await write('PATCH', `/api/v1/projects/${project}/members/${member.id}`, { accessLevel: 'editor' })).record).toMatchObject({ action: 'project.member_updated', changes: { before: { accessLevel: 'viewer' }, after: { accessLevel: 'editor' } } })
    expect((await write('DELETE', `/api/v1/projects/${project}/members/${member.id}`)).record).toMatchObject({ action: 'project.member_removed', project_id: project })
    const team = (await write('POST', '/api/v1/teams', { name: 'Linked' })).data.id
    expect((await write('POST', `/api/v1/projects/${project}/teams`, { teamId: team, accessLevel: 'viewer' })).record).toMatchObject({ action: 'project.team_linked', resource_type: 'project_team', resource_id: team, project_id: project })
    expect((await write('PATCH', `/api/v1/projects/${project}/teams/${team}`, { accessLevel: 'owner' })).record).toMatchObject({ action: 'project.team_updated', changes: { before: { accessLevel: 'viewer' }, after: { accessLevel: 'owner' } } })
    expect((await write('DELETE', `/api/v1/projects/${project}/teams/${team}`)).record).toMatchObject({ action: 'project.team_unlinked' })
    expect((await write('DELETE', `/api/v1/projects/${project}`)).record).toMatchObject({ action: 'project.deleted', project_id: project, changes: { before: { name: 'Apollo', description: 'moon' } } })
  })

  test('an update that changes nothing writes no record', async () => {
    const team = (await write('POST', '/api/v1/teams', { name: 'Steady' })).data.id
    const response = await api.request('PATCH', `/api/v1/teams/${team}`, { key: adminKey.secret, body: { name: 'Steady' } })
    expect(response.status).toBe(200)
    expect(await recordsOf(response.body.meta.requestId)).toHaveLength(0)
  })
})

describe('a failed write leaves neither the change nor a record', () => {
  test('a validation failure', async () => {
    const before = await count('teams')
    const response = await api.request('POST', '/api/v1/teams', { key: adminKey.secret, body: { name: '' } })
    expect(response.status).toBe(400)
    expect(await count('teams')).toBe(before)
    expect(await recordsOf(response.body.meta.requestId)).toHaveLength(0)
  })

  test('a conflict names the existing resource and changes nothing', async () => {
    const existing = (await write('POST', '/api/v1/teams', { name: 'Unique' })).data.id
    const before = await count('teams')
    const response = await api.request('POST', '/api/v1/teams', { key: adminKey.secret, body: { name: 'UNIQUE' } })
    expect(response.status).toBe(409)
    expect(response.body.errors[0]).toMatchObject({ code: 'CONFLICT', field: 'name', existingId: existing })
    expect(await count('teams')).toBe(before)
    expect(await recordsOf(response.body.meta.requestId)).toHaveLength(0)
  })

  test('an error thrown after the change, inside the transaction, rolls both back', async () => {
    // A trigger makes the audit insert itself fail for one project name: the project row and
    // its owner membership were already written in the same transaction.
    await api.service.core.db.execute(sql`
      create or replace function fail_doomed_audit() returns trigger language plpgsql as $$
      begin
        if new.changes->'after'->>'name' = 'Doomed' then raise exception 'injected failure'; end if;
        return new;
      end $$`)
    const triggers = await testTriggers(api.database)
    await triggers.createTrigger({ name: 'fail_doomed', timing: 'before insert', table: 'audit_logs', function: 'fail_doomed_audit' })
    try {
      const projects = await count('projects')
      const members = await count('project_members')
      const response = await api.request('POST', '/api/v1/projects', { key: adminKey.secret, body: { name: 'Doomed' } })
      expect(response.status).toBe(500)
      expect(response.body.errors[0]).toEqual({ code: 'INTERNAL', message: 'An internal error occurred.' })
      expect(await count('projects')).toBe(projects)
      expect(await count('project_members')).toBe(members)
      expect(await count('projects', sql`name = 'Doomed'`)).toBe(0)
      expect(await recordsOf(response.body.meta.requestId)).toHaveLength(0)

      const teams = await count('teams')
      const teamResponse = await api.request('POST', '/api/v1/teams', { key: adminKey.secret, body: { name: 'Doomed' } })
      expect(teamResponse.status).toBe(500)
      expect(await count('teams')).toBe(teams)
    } finally {
      await triggers.dropTrigger('fail_doomed', 'audit_logs')
      await triggers.close()
    }
  })
})

describe('reading the audit log', () => {
  test('newest first, with filters', async () => {
    const before = new Date(Date.now() - 1000).toISOString()
    const team = (await write('POST', '/api/v1/teams', { name: 'Filtered' })).data.id
    await write('PATCH', `/api/v1/teams/${team}`, { description: 'x' })
    const all = (await api.request('GET', '/api/v1/audit-logs?size=100', { key: adminKey.secret })).body.data
    const times = all.map((record: { occurredAt: string }) => record.occurredAt)
    expect([...times].sort().reverse()).toEqual(times)
    expect(all[0]).toMatchObject({ action: 'team.updated', resourceId: team, actorUserId: admin.id, apiKeyId: adminKey.id, via: 'rest' })

    const byAction = (await api.request('GET', '/api/v1/audit-logs?action=team.updated&size=100', { key: adminKey.secret })).body.data
    expect(byAction.length).toBeGreaterThan(0)
    expect(byAction.every((record: { action: string }) => record.action === 'team.updated')).toBe(true)
    const byPrefix = (await api.request('GET', '/api/v1/audit-logs?action=team.*&size=100', { key: adminKey.secret })).body.data
    expect(new Set(byPrefix.map((record: { action: string }) => record.action.split('.')[0]))).toEqual(new Set(['team']))
    const byActor = (await api.request('GET', `/api/v1/audit-logs?actorId=${member.id}`, { key: adminKey.secret })).body
    expect(byActor.data).toEqual([])
    const byAdmin = (await api.request('GET', `/api/v1/audit-logs?actorId=${admin.id}&size=100`, { key: adminKey.secret })).body.data
    expect(byAdmin.length).toBeGreaterThan(0)
    expect(byAdmin.every((record: { actorUserId: string }) => record.actorUserId === admin.id)).toBe(true)
    expect(byAdmin).toContainEqual(expect.objectContaining({ action: 'team.updated', resourceId: team }))
    const future = new Date(Date.now() + 86_400_000).toISOString()
    expect((await api.request('GET', `/api/v1/audit-logs?since=${future}`, { key: adminKey.secret })).body.meta.totalItems).toBe(0)
    const recent = (await api.request('GET', `/api/v1/audit-logs?since=${before}&size=100`, { key: adminKey.secret })).body.data
    expect(recent).toContainEqual(expect.objectContaining({ action: 'team.created', resourceId: team }))
    expect(recent).toContainEqual(expect.objectContaining({ action: 'team.updated', resourceId: team }))
    expect(recent.every((record: { occurredAt: string }) => Date.parse(record.occurredAt) >= Date.parse(before))).toBe(true)
    const until = (await api.request('GET', `/api/v1/audit-logs?until=${future}&size=1`, { key: adminKey.secret })).body.meta.totalItems
    expect(until).toBeGreaterThan(0)
  })

  test.each([
    ['since=yesterday', 'since'],
    ['until=2026-13-45T00:00:00Z', 'until'],
    ['actorId=not-a-uuid', 'actorId'],
    ['action=', 'action'],
    [`since=${new Date(Date.now() + 1000).toISOString()}&until=${new Date(0).toISOString()}`, 'since'],
  ])('an invalid filter (%s) is 400 naming it', async (query, field) => {
    const response = await api.request('GET', `/api/v1/audit-logs?${query}`, { key: adminKey.secret })
    expect(response.status).toBe(400)
    expect(response.body.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field })
  })

  test('an administrator who can see a project reads its log; one who cannot gets 404', async () => {
    const project = (await write('POST', '/api/v1/projects', { name: 'Logged' })).data.id
    const own = await api.request('GET', `/api/v1/projects/${project}/audit-logs`, { key: adminKey.secret })
    expect(own.status).toBe(200)
    expect(own.body.data.map((record: { action: string }) => record.action)).toEqual(['project.created'])
    const otherAdmin = await api.createUser(admin.organizationId, 'administrator')
    const otherKey = (await api.createKey(otherAdmin.id, ['audit_logs:read'])).secret
    expect((await api.request('GET', `/api/v1/projects/${project}/audit-logs`, { key: otherKey })).status).toBe(404)
  })

  test('key creation and revocation are audited without the secret', async () => {
    const { id, secret } = await api.createKey(member.id, ['teams:read'])
    await api.revokeKey(id)
    const rows = await queryRows<Record>(api.service.core.db, sql`select * from audit_logs where resource_id = ${id} order by occurred_at`)
    expect(rows.map((row) => row.action)).toEqual(['api_key.created', 'api_key.revoked'])
    expect(JSON.stringify(rows)).not.toContain(secret.slice(8))
  })
})
