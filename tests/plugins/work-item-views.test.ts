/**
 * Saved views of a project's work-item list: private (the creator's alone; anyone else 404) or
 * shared (every viewer reads; the creator or an owner changes; sharing needs editor level); their
 * filters checked as the list checks its parameters (400 naming `filters.<parameter>`, nothing
 * written); `GET …/work-items?view=` applying one with the request's parameters ANDed on top (its
 * `sort` winning), `me` standing for the reader, a view the caller cannot read there 400 naming
 * `view`; the MCP tools; audit records with each change.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sqlOn } from '../helpers/database'
import { callTool, connectMcp, listen } from '../helpers/mcp'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: ProjectFixture
let other: ProjectFixture
const sql = sqlOn(() => api)
const views = (projectId = fx.projectId) => `/api/v1/projects/${projectId}/views`
const items = (projectId = fx.projectId) => `/api/v1/projects/${projectId}/work-items`
/** The numbers of the work items a list answers, in its order. */
const numbers = (page: Array<{ number: number }>) => page.map((item) => item.number)
const made: Record<string, number> = {}

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  other = await createProjectFixture(api, fx.organizationId)
  const adminKey = (await api.createKey((await api.createUser(fx.organizationId, 'administrator')).id, api.service.core.scopes.map((scope) => scope.name))).secret
  const bug = await api.request('POST', '/api/v1/labels', { key: adminKey, body: { name: 'bug' } })
  expect(bug.status).toBe(201)
  // 1 todo urgent, the viewer's, a bug · 2 todo low · 3 in progress high, the viewer's · 4 done urgent, a bug
  const rows = [
    { title: 'one', status: 'todo', priority: 1, assigneeId: fx.users.viewer.id, labels: [bug.body.data.id] },
    { title: 'two', status: 'todo', priority: 4 },
    { title: 'three', status: 'in_progress', priority: 2, assigneeId: fx.users.viewer.id },
    { title: 'four', status: 'done', priority: 1, labels: [bug.body.data.id] },
  ]
  for (const row of rows) made[row.title] = (await fx.as('owner', 'POST', items(), row, 201)).number
})
afterAll(() => api?.stop())

describe('views', () => {
  test('a private view is its creator’s alone: others get 404 and never see it listed', async () => {
    const view = await fx.as('viewer', 'POST', views(), { name: 'Mine', filters: { assigneeId: 'me' } }, 201)
    expect(view).toMatchObject({ name: 'Mine', filters: { assigneeId: 'me' }, sort: null, shared: false, createdBy: fx.users.viewer.id, projectId: fx.projectId })
    expect(await fx.as('viewer', 'GET', `${views()}/${view.id}`, undefined, 200)).toEqual(view)
    for (const who of ['owner', 'editor'] as const) {
      expect((await fx.call(who, 'GET', `${views()}/${view.id}`)).status).toBe(404)
      expect((await fx.call(who, 'PATCH', `${views()}/${view.id}`, { name: 'Taken' })).status).toBe(404)
      expect((await fx.call(who, 'DELETE', `${views()}/${view.id}`)).status).toBe(404)
      expect((await fx.as(who, 'GET', views(), undefined, 200)).map((each: any) => each.id)).not.toContain(view.id)
    }
    expect((await fx.as('viewer', 'GET', views(), undefined, 200)).map((each: any) => each.id)).toContain(view.id)
  })

  test('sharing needs editor level; a shared view is read by every viewer, changed by its creator or an owner', async () => {
    expect((await fx.call('viewer', 'POST', views(), { name: 'Open', filters: { status: 'todo' }, shared: true })).status).toBe(403)
    const shared = await fx.as('editor', 'POST', views(), { name: 'Open', filters: { status: 'todo,in_progress' }, sort: 'priority', shared: true }, 201)
    expect(await fx.as('viewer', 'GET', `${views()}/${shared.id}`, undefined, 200)).toMatchObject({ shared: true, sort: 'priority' })
    expect((await fx.call('viewer', 'PATCH', `${views()}/${shared.id}`, { name: 'Mine now' })).status).toBe(403)
    expect((await fx.call('viewer', 'DELETE', `${views()}/${shared.id}`)).status).toBe(403)
    expect(await fx.as('owner', 'PATCH', `${views()}/${shared.id}`, { name: 'Open work' }, 200)).toMatchObject({ name: 'Open work', filters: { status: 'todo,in_progress' } })
    // `filters` replaces them.
    expect((await fx.as('editor', 'PATCH', `${views()}/${shared.id}`, { filters: { priority: '1' } }, 200)).filters).toEqual({ priority: '1' })
    // A viewer's own view cannot become shared; their private one stays theirs to change.
    const own = await fx.as('viewer', 'POST', views(), { name: 'Scratch', filters: {} }, 201)
    expect((await fx.call('viewer', 'PATCH', `${views()}/${own.id}`, { shared: true })).status).toBe(403)
    expect(await fx.as('viewer', 'DELETE', `${views()}/${own.id}`, undefined, 200)).toEqual({ id: own.id })
    expect((await fx.call('viewer', 'GET', `${views()}/${own.id}`)).status).toBe(404)
    const audits = await sql<{ action: string }>('select action from audit_logs where resource_id in ($1, $2) order by occurred_at, id', [shared.id, own.id])
    expect(audits.map((row) => row.action)).toEqual(['work_item_view.created', 'work_item_view.updated', 'work_item_view.updated', 'work_item_view.created', 'work_item_view.deleted'])
  })

  test('filters are checked as the list checks them: 400 naming filters.<parameter> (or sort), nothing written', async () => {
    const before = (await sql<{ n: number }>('select count(*)::int as n from work_item_views'))[0]!.n
    const refusals: Array<[unknown, string]> = [
      [{ name: 'x', filters: { status: 'finished' } }, 'filters.status'],
      [{ name: 'x', filters: { colour: 'red' } }, 'filters.colour'],
      [{ name: 'x', filters: { priority: 'gte:9' } }, 'filters.priority'],
      [{ name: 'x', filters: { sort: 'priority' } }, 'filters.sort'],
      [{ name: 'x', filters: { page: '2' } }, 'filters.page'],
      [{ name: 'x', filters: {}, sort: 'colour' }, 'sort'],
      [{ name: '', filters: {} }, 'name'],
      [{ name: 'x', filters: { status: 7 } }, 'filters.status'],
    ]
    for (const [body, field] of refusals) {
      const response = await fx.call('editor', 'POST', views(), body)
      expect(response.status, JSON.stringify(body)).toBe(400)
      expect(response.body.errors.map((error: any) => error.field)).toContain(field)
    }
    expect((await sql<{ n: number }>('select count(*)::int as n from work_item_views'))[0]!.n).toBe(before)
  })
})

describe('?view=', () => {
  test("applies the view's filters and sort; the request's parameters are ANDed on top and its sort wins", async () => {
    const view = await fx.as('editor', 'POST', views(), { name: 'Not done', filters: { status: ['todo', 'in_progress'] }, sort: 'priority', shared: true }, 201)
    const page = await fx.call('viewer', 'GET', `${items()}?view=${view.id}`)
    expect(page.status).toBe(200)
    // urgent (1) first, then high (2), then low (4).
    expect(numbers(page.body.data)).toEqual([made.one!, made.three!, made.two!])
    expect(page.body.meta.totalItems).toBe(3)
    // The same filter on top: both hold (todo), and the total counts what both select.
    const narrowed = await fx.call('viewer', 'GET', `${items()}?view=${view.id}&status=todo,done`)
    expect(numbers(narrowed.body.data)).toEqual([made.one!, made.two!])
    expect(narrowed.body.meta.totalItems).toBe(2)
    const sorted = await fx.call('viewer', 'GET', `${items()}?view=${view.id}&sort=-number`)
    expect(numbers(sorted.body.data)).toEqual([made.three!, made.two!, made.one!])
    // Cursors continue the view's list.
    const first = await fx.call('viewer', 'GET', `${items()}?view=${view.id}&size=2`)
    expect(first.status).toBe(200)
    const next = await fx.call('viewer', 'GET', `${items()}?view=${view.id}&size=2&cursor=${encodeURIComponent(first.body.meta.nextCursor)}`)
    expect([...numbers(first.body.data), ...numbers(next.body.data)]).toEqual([made.one!, made.three!, made.two!])
  })

  test('`me` in a view is whoever reads it; labels as an array', async () => {
    const view = await fx.as('editor', 'POST', views(), { name: 'My bugs', filters: { assigneeId: 'me', label: ['bug'] }, shared: true }, 201)
    expect(numbers((await fx.call('viewer', 'GET', `${items()}?view=${view.id}`)).body.data)).toEqual([made.one!])
    expect(numbers((await fx.call('editor', 'GET', `${items()}?view=${view.id}`)).body.data)).toEqual([])
  })

  test("a view the caller cannot read here is 400 naming view; a project they cannot see is 404 first", async () => {
    const mine = await fx.as('viewer', 'POST', views(), { name: 'Private', filters: {} }, 201)
    const elsewhere = await other.as('owner', 'POST', views(other.projectId), { name: 'Elsewhere', filters: {}, shared: true }, 201)
    for (const [who, viewId] of [['editor', mine.id], ['viewer', elsewhere.id], ['viewer', '00000000-0000-4000-8000-000000000000'], ['viewer', 'garbage']] as const) {
      const response = await fx.call(who, 'GET', `${items()}?view=${viewId}`)
      expect(response.status).toBe(400)
      expect(response.body.errors[0].field).toBe('view')
    }
    // fx's viewer is no member of `other`'s project: 404, whatever the view.
    expect((await fx.call('viewer', 'GET', `${items(other.projectId)}?view=${elsewhere.id}`)).status).toBe(404)
  })

  test('MCP: list_views, and list_work_items with viewId (which needs its project)', async () => {
    const view = await fx.as('editor', 'POST', views(), { name: 'Urgent', filters: { priority: '1' }, shared: true }, 201)
    const http = listen(api)
    const mcp = await connectMcp(http.url, fx.keys.viewer)
    try {
      const listed = await callTool(mcp, 'list_views', { projectId: fx.projectId })
      expect(listed.isError).toBe(false)
      expect(listed.data.items.map((each: any) => each.name)).toContain('Urgent')
      const result = await callTool(mcp, 'list_work_items', { projectId: fx.projectId, viewId: view.id })
      expect(result.data.items.map((item: any) => item.number).sort()).toEqual([made.one!, made.four!].sort())
      const refused = await callTool(mcp, 'list_work_items', { viewId: view.id })
      expect(refused).toMatchObject({ isError: true, code: 'BAD_REQUEST' })
    } finally {
      await mcp.close()
      http.stop()
    }
  })
})
