import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: ProjectFixture
const items = () => `/api/v1/projects/${fx.projectId}/work-items`

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
})
afterAll(() => api.stop())

describe('work items', () => {
  test('a minimal create gets defaults, the next number and the last position', async () => {
    const first = await fx.as('editor', 'POST', items(), { title: 'First' }, 201)
    const second = await fx.as('editor', 'POST', items(), { title: 'Second', description: 'd', status: 'in_progress', priority: 2, assigneeId: fx.users.viewer.id, dueDate: '2027-02-28' }, 201)
    expect(first).toMatchObject({ projectId: fx.projectId, title: 'First', description: null, status: 'todo', priority: 0, assigneeId: null, dueDate: null, createdBy: fx.users.editor.id })
    expect(second).toMatchObject({ status: 'in_progress', priority: 2, assigneeId: fx.users.viewer.id, dueDate: '2027-02-28' })
    expect(second.number).toBe(first.number + 1)
    expect(second.position).toBe(first.position + 1)
    expect(await fx.as('viewer', 'GET', `${items()}/${second.id}`)).toEqual(second)
  })

  test.each([
    [{ title: '' }, 'title'],
    [{ title: 'x'.repeat(501) }, 'title'],
    [{ title: 'ok', status: 'blocked' }, 'status'],
    [{ title: 'ok', priority: 5 }, 'priority'],
    [{ title: 'ok', priority: 1.5 }, 'priority'],
    [{ title: 'ok', priority: '2' }, 'priority'],
    [{ title: 'ok', dueDate: '2027-02-30' }, 'dueDate'],
    [{ title: 'ok', assigneeId: 'nobody' }, 'assigneeId'],
    [{ title: 'ok', number: 7 }, 'number'],
  ])('invalid input %j is 400 naming %s', async (body, field) => {
    const response = await fx.call('editor', 'POST', items(), body)
    expect(response.status).toBe(400)
    expect(response.body.errors.map((error: { field?: string }) => error.field)).toContain(field)
  })

  test('the assignee must be an active user of the organization', async () => {
    const stranger = await api.createUser(await api.createOrganization())
    const leaver = await api.createUser(fx.organizationId)
    await api.deactivateUser(leaver.id)
    for (const assigneeId of [stranger.id, leaver.id]) {
      const response = await fx.call('editor', 'POST', items(), { title: 'Assigned', assigneeId })
      expect(response.status).toBe(400)
      expect(response.body.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field: 'assigneeId' })
    }
  })

  test('filters by status and assignee; bad filter values are 400', async () => {
    const assigned = await fx.as('editor', 'POST', items(), { title: 'Filtered', status: 'done', assigneeId: fx.users.owner.id }, 201)
    const done = await fx.as('viewer', 'GET', `${items()}?status=done`)
    expect(done.map((item: { id: string }) => item.id)).toContain(assigned.id)
    expect(done.every((item: { status: string }) => item.status === 'done')).toBe(true)
    const mine = await fx.as('viewer', 'GET', `${items()}?assigneeId=${fx.users.owner.id}&status=done`)
    expect(mine.map((item: { id: string }) => item.id)).toEqual([assigned.id])
    for (const query of ['status=blocked', 'assigneeId=someone']) {
      const response = await fx.call('viewer', 'GET', `${items()}?${query}`)
      expect(response.status).toBe(400)
      expect(response.body.errors[0].field).toBe(query.split('=')[0])
    }
  })

  test('numbers never repeat, even after a delete', async () => {
    const a = await fx.as('editor', 'POST', items(), { title: 'Doomed' }, 201)
    await fx.as('editor', 'DELETE', `${items()}/${a.id}`)
    const b = await fx.as('editor', 'POST', items(), { title: 'After' }, 201)
    expect(b.number).toBe(a.number + 1)
  })

  test('50 concurrent creates get 50 distinct numbers and positions', async () => {
    const fresh = await createProjectFixture(api, fx.organizationId)
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => fresh.call('editor', 'POST', `/api/v1/projects/${fresh.projectId}/work-items`, { title: `Concurrent ${i}` })))
    expect(responses.map((response) => response.status)).toEqual(Array(50).fill(201))
    const numbers = responses.map((response) => response.body.data.number).sort((a, b) => a - b)
    expect(numbers).toEqual(Array.from({ length: 50 }, (_, i) => i + 1))
    expect(new Set(responses.map((response) => response.body.data.position)).size).toBe(50)
  })

  test('deleting a work item deletes its entries and relationships', async () => {
    const a = await fx.as('editor', 'POST', items(), { title: 'Parent' }, 201)
    const b = await fx.as('editor', 'POST', items(), { title: 'Child' }, 201)
    await fx.as('editor', 'POST', `/api/v1/work-items/${a.id}/entries`, { body: 'note' }, 201)
    const link = await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/relationships`, { sourceWorkItemId: a.id, targetWorkItemId: b.id, type: 'parent_of' }, 201)
    await fx.as('editor', 'DELETE', `${items()}/${a.id}`)
    const [counts] = await queryRows<{ entries: number; links: number }>(
      api.service.core.db,
      sql`select (select count(*) from entries where work_item_id = ${a.id})::int as entries, (select count(*) from relationships where id = ${link.id})::int as links`,
    )
    expect(counts).toEqual({ entries: 0, links: 0 })
    expect((await fx.call('viewer', 'GET', `${items()}/${a.id}`)).status).toBe(404)
    expect((await fx.call('viewer', 'GET', `/api/v1/work-items/${a.id}/entries`)).status).toBe(404)
  })

  test('a work item of another project, or a malformed id, is 404 under this project', async () => {
    const other = await createProjectFixture(api, fx.organizationId)
    const foreign = await other.as('owner', 'POST', `/api/v1/projects/${other.projectId}/work-items`, { title: 'Elsewhere' }, 201)
    expect((await fx.call('owner', 'GET', `${items()}/${foreign.id}`)).status).toBe(404)
    expect((await fx.call('owner', 'PATCH', `${items()}/${foreign.id}`, { title: 'x' })).status).toBe(404)
    expect((await fx.call('owner', 'GET', `${items()}/not-an-id`)).status).toBe(404)
  })

  test('PATCH changes only what it names, audits before/after, and honours If-Match', async () => {
    const item = await fx.as('editor', 'POST', items(), { title: 'Patchable', priority: 1 }, 201)
    const read = await fx.call('viewer', 'GET', `${items()}/${item.id}`)
    const updated = await api.request('PATCH', `${items()}/${item.id}`, { key: fx.keys.editor, body: { status: 'done', dueDate: null }, headers: { 'if-match': read.headers.get('etag')! } })
    expect(updated.status).toBe(200)
    expect(updated.body.data).toMatchObject({ title: 'Patchable', priority: 1, status: 'done' })
    const stale = await api.request('PATCH', `${items()}/${item.id}`, { key: fx.keys.editor, body: { title: 'Late' }, headers: { 'if-match': read.headers.get('etag')! } })
    expect(stale.status).toBe(412)
    expect(stale.body.errors).toEqual([{ code: 'PRECONDITION_FAILED', message: expect.stringContaining('If-Match') }])
    const [record] = await queryRows<{ changes: unknown }>(api.service.core.db, sql`select changes from audit_logs where request_id = ${updated.body.meta.requestId}`)
    expect(record!.changes).toEqual({ before: { status: 'todo' }, after: { status: 'done' } })
  })
})
