/**
 * Audit logs by cursor, and their totals from the maintained counts (audit_log_counts): exact for
 * a superadministrator (every record), an administrator (organization records and the projects
 * they can see) and per project, after concurrent writes in several projects and at the
 * organization level, and after a project is deleted (its records, and their count, stay).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

let api: TestService
let keys: { owner: string; admin: string; superadmin: string }
let projects: string[] = []

const call = (key: string, method: string, path: string, body?: unknown) => api.request(method, path, { key, body })
const ok = async (key: string, method: string, path: string, body?: unknown) => {
  const response = await call(key, method, path, body)
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
  return response.body.data
}

beforeAll(async () => {
  api = await startTestService()
  const organization = await api.createOrganization()
  const scopes = api.service.core.scopes.map((scope) => scope.name)
  const [owner, admin, superadmin] = [await api.createUser(organization), await api.createUser(organization, 'administrator'), await api.createUser(organization, 'superadministrator')]
  keys = { owner: (await api.createKey(owner.id, scopes)).secret, admin: (await api.createKey(admin.id, scopes)).secret, superadmin: (await api.createKey(superadmin.id, scopes)).secret }
  for (const name of ['Seen', 'Hidden', 'Doomed']) projects.push((await ok(keys.owner, 'POST', '/api/v1/projects', { name })).id)
  await ok(keys.owner, 'POST', `/api/v1/projects/${projects[0]}/members`, { userId: admin.id, accessLevel: 'viewer' })
}, timeLimit(60_000))
afterAll(() => api.stop())

/** Walks a log by cursor (size 4); returns the ids and the totals each page gave. */
async function walk(key: string, path: string) {
  const ids: string[] = []
  const totals = new Set<number>()
  let cursor: string | null = null
  for (let page = 0; page < 500; page++) {
    const response = await call(key, 'GET', `${path}${path.includes('?') ? '&' : '?'}size=4${cursor ? `&cursor=${cursor}` : ''}`)
    expect(response.status).toBe(200)
    ids.push(...response.body.data.map((record: { id: string }) => record.id))
    totals.add(response.body.meta.totalItems)
    cursor = response.body.meta.nextCursor
    if (!cursor) break
  }
  return { ids, totals: [...totals] }
}

/** Every log's cursor walk equals its page walk, and its total is the number of records it shows. */
async function expectExact() {
  for (const [key, path] of [
    [keys.superadmin, '/api/v1/audit-logs'],
    [keys.admin, '/api/v1/audit-logs'],
    [keys.superadmin, `/api/v1/projects/${projects[0]}/audit-logs`],
    [keys.superadmin, `/api/v1/projects/${projects[1]}/audit-logs`],
    [keys.admin, '/api/v1/audit-logs?action=work_item.*'],
  ] as const) {
    const paged = (await call(key, 'GET', `${path}${path.includes('?') ? '&' : '?'}size=100`)).body
    const { ids, totals } = await walk(key, path)
    expect({ path, ids }).toEqual({ path, ids: paged.data.map((record: { id: string }) => record.id) })
    expect({ path, totals }).toEqual({ path, totals: [ids.length] })
    expect(paged.meta.totalItems).toBe(ids.length)
  }
}

test('totals stay exact under concurrent writes in projects and at the organization level', async () => {
  for (let round = 0; round < 3; round++) {
    await Promise.all([
      ...projects.map((project, index) => ok(keys.owner, 'POST', `/api/v1/projects/${project}/work-items`, { title: `Round ${round} item ${index}` })),
      ok(keys.admin, 'POST', '/api/v1/teams', { name: `Team ${round}` }),
      ok(keys.owner, 'PATCH', `/api/v1/projects/${projects[round % 3]}`, { description: `round ${round}` }),
    ])
  }
  await expectExact()
  const all = (await ok(keys.superadmin, 'GET', '/api/v1/audit-logs?size=100')) as { projectId: string | null }[]
  const seen = (await ok(keys.admin, 'GET', '/api/v1/audit-logs?size=100')) as { projectId: string | null }[]
  expect(seen.length).toBeLessThan(all.length)
  expect(seen.every((record) => record.projectId === null || record.projectId === projects[0])).toBe(true)
})

test('a deleted project keeps its records, and the superadministrator total counts them', async () => {
  const before = (await call(keys.superadmin, 'GET', '/api/v1/audit-logs?size=1')).body.meta.totalItems
  await ok(keys.owner, 'DELETE', `/api/v1/projects/${projects[2]}`)
  const after = (await call(keys.superadmin, 'GET', '/api/v1/audit-logs?size=1')).body.meta.totalItems
  expect(after).toBe(before + 1)
  await expectExact()
})

test("a cursor of one log is refused on another, and on the same log with other filters", async () => {
  const cursor = (await call(keys.superadmin, 'GET', '/api/v1/audit-logs?size=2')).body.meta.nextCursor
  for (const path of [`/api/v1/projects/${projects[0]}/audit-logs?cursor=${cursor}`, `/api/v1/audit-logs?action=team.created&cursor=${cursor}`]) {
    const response = await call(keys.superadmin, 'GET', path)
    expect(response.status).toBe(400)
    expect(response.body.errors[0].field).toBe('cursor')
  }
  // Another reader's cursor of the organization log (what they see differs) is refused too.
  const response = await call(keys.admin, 'GET', `/api/v1/audit-logs?cursor=${cursor}`)
  expect(response.status).toBe(400)
})
