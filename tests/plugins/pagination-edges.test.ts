/**
 * Pagination meta at the edges on every list: empty, exactly 100 items, a partial last page,
 * and a page past the end. Rows are bulk-inserted in SQL; the reads go through the API.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { writeAudit } from '../../src/audit'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

let api: TestService
let superadmin: TestUser
let key: string
let organizationId: string
let projectId: string
let teamId: string

const run = (query: ReturnType<typeof sql>) => api.service.core.db.execute(query)

/** Inserts `n` users of the organization and returns the SQL selecting their ids. */
async function addUsers(n: number, tag: string) {
  await run(sql`insert into users (id, organization_id, email, username, display_name, password_hash)
    select gen_random_uuid(), ${organizationId}, ${tag} || i || '@example.com', ${tag} || i, 'User ' || i, 'scrypt$invalid'
    from generate_series(1, ${n}) as i`)
  return sql`select id from users where username like ${`${tag}%`}`
}

beforeAll(async () => {
  api = await startTestService()
  organizationId = await api.createOrganization()
  superadmin = await api.createUser(organizationId, 'superadministrator')
  key = (await api.createKey(superadmin.id, ['teams:read', 'team_members:read', 'team_projects:read', 'projects:read', 'projects:write', 'project_access:read', 'audit_logs:read'])).secret
})
afterAll(() => api.stop())

interface List {
  name: string
  path: () => string
  /** Makes the list hold exactly `n` more items than its empty state. */
  fill: (n: number) => Promise<void>
  /** Items the list holds before `fill` (lists that can never be empty). */
  base?: number
}

const lists: List[] = [
  {
    name: 'GET /teams',
    path: () => '/api/v1/teams',
    // "The team" below exists; this list runs first, before the other lists add teams.
    base: 1,
    fill: async (n) => {
      await run(sql`insert into teams (id, organization_id, name) select gen_random_uuid(), ${organizationId}, 'Team ' || i from generate_series(1, ${n}) as i`)
    },
  },
  {
    name: 'GET /teams/{teamId}/members',
    path: () => `/api/v1/teams/${teamId}/members`,
    fill: async (n) => {
      const ids = await addUsers(n, 'tm')
      await run(sql`insert into team_members (team_id, user_id, organization_id) select ${teamId}, id, ${organizationId} from (${ids}) as u`)
    },
  },
  {
    name: 'GET /teams/{teamId}/projects',
    path: () => `/api/v1/teams/${teamId}/projects`,
    fill: async (n) => {
      await run(sql`with made as (insert into projects (id, organization_id, name) select gen_random_uuid(), ${organizationId}, 'Linked ' || i from generate_series(1, ${n}) as i returning id)
        insert into project_teams (project_id, team_id, organization_id, access_level) select id, ${teamId}, ${organizationId}, 'viewer' from made`)
    },
  },
  {
    name: 'GET /projects/{projectId}/members',
    path: () => `/api/v1/projects/${projectId}/members`,
    base: 1,
    fill: async (n) => {
      const ids = await addUsers(n, 'pm')
      await run(sql`insert into project_members (project_id, user_id, organization_id, access_level) select ${projectId}, id, ${organizationId}, 'viewer' from (${ids}) as u`)
    },
  },
  {
    name: 'GET /projects/{projectId}/teams',
    path: () => `/api/v1/projects/${projectId}/teams`,
    fill: async (n) => {
      await run(sql`with made as (insert into teams (id, organization_id, name) select gen_random_uuid(), ${organizationId}, 'Grant ' || i from generate_series(1, ${n}) as i returning id)
        insert into project_teams (project_id, team_id, organization_id, access_level) select ${projectId}, id, ${organizationId}, 'viewer' from made`)
    },
  },
  {
    name: 'GET /projects/{projectId}/audit-logs',
    path: () => `/api/v1/projects/${projectId}/audit-logs`,
    base: 1,
    fill: async (n) => {
      // Through the audit writer, which keeps the log's maintained count (audit_log_counts) with each record.
      const actor = { organizationId, userId: null, apiKeyId: null, via: 'cli' as const, requestId: null }
      await api.database.db.transaction(async (tx) => {
        for (let i = 0; i < n; i++) await writeAudit(tx, actor, { action: 'test.filled', resourceType: 'project', resourceId: projectId, projectId })
      })
    },
  },
]

async function meta(path: string, query: string) {
  const response = await api.request('GET', `${path}?${query}`, { key })
  expect(response.status).toBe(200)
  return { count: response.body.data.length, meta: response.body.meta }
}

describe('pagination edges on every list', () => {
  beforeAll(async () => {
    const project = await api.request('POST', '/api/v1/projects', { key, body: { name: 'Paged' } })
    projectId = project.body.data.id
    const [team] = await queryRows<{ id: string }>(api.service.core.db, sql`insert into teams (id, organization_id, name) values (gen_random_uuid(), ${organizationId}, 'The team') returning id`)
    teamId = team!.id
  })

  for (const list of lists) {
    test(`${list.name}: empty, exactly 100, partial last page, past the end`, async () => {
      const base = list.base ?? 0
      const empty = await meta(list.path(), 'size=20')
      expect(empty.meta).toMatchObject({ page: 0, size: 20, totalItems: base, totalPages: base ? 1 : 0 })

      await list.fill(100 - base)
      const full = await meta(list.path(), 'size=100')
      expect(full.count).toBe(100)
      expect(full.meta).toMatchObject({ page: 0, size: 100, totalItems: 100, totalPages: 1 })
      const next = await meta(list.path(), 'page=1&size=100')
      expect(next.count).toBe(0)
      expect(next.meta).toMatchObject({ page: 1, size: 100, totalItems: 100, totalPages: 1 })
      const partial = await meta(list.path(), 'page=3&size=30')
      expect(partial.count).toBe(10)
      expect(partial.meta).toMatchObject({ page: 3, size: 30, totalItems: 100, totalPages: 4 })
      const past = await meta(list.path(), 'page=50&size=30')
      expect(past.count).toBe(0)
      expect(past.meta).toMatchObject({ page: 50, size: 30, totalItems: 100, totalPages: 4 })
    })
  }

  test('GET /projects and GET /audit-logs: empty, exactly 100, past the end', async () => {
    const organization = await api.createOrganization()
    const owner = await api.createUser(organization, 'member')
    const ownerKey = (await api.createKey(owner.id, ['projects:read', 'projects:write'])).secret
    const admin = await api.createUser(organization, 'administrator')
    const adminKey = (await api.createKey(admin.id, ['audit_logs:read'])).secret
    const read = async (path: string, query: string, withKey: string) => (await api.request('GET', `${path}?${query}`, { key: withKey })).body

    expect((await read('/api/v1/projects', 'size=10', ownerKey)).meta).toMatchObject({ totalItems: 0, totalPages: 0 })
    expect((await read('/api/v1/audit-logs', 'action=none.such', adminKey)).meta).toMatchObject({ totalItems: 0, totalPages: 0 })

    await run(sql`with made as (insert into projects (id, organization_id, name) select gen_random_uuid(), ${organization}, 'P' || i from generate_series(1, 100) as i returning id)
      insert into project_members (project_id, user_id, organization_id, access_level) select id, ${owner.id}, ${organization}, 'owner' from made`)
    const projects = await read('/api/v1/projects', 'size=100', ownerKey)
    expect(projects.data).toHaveLength(100)
    expect(projects.meta).toMatchObject({ totalItems: 100, totalPages: 1 })
    expect((await read('/api/v1/projects', 'page=1&size=100', ownerKey)).data).toEqual([])

    await run(sql`insert into audit_logs (id, organization_id, via, action, resource_type, resource_id)
      select gen_random_uuid(), ${organization}, 'cli', 'test.hundred', 'x', 'x' from generate_series(1, 100)`)
    const audit = await read('/api/v1/audit-logs', 'action=test.hundred&size=100', adminKey)
    expect(audit.data).toHaveLength(100)
    expect(audit.meta).toMatchObject({ totalItems: 100, totalPages: 1 })
    expect((await read('/api/v1/audit-logs', 'action=test.hundred&page=2&size=100', adminKey)).meta).toMatchObject({ page: 2, totalItems: 100, totalPages: 1 })
  })
})
