/**
 * `me` stands for the caller wherever a user id is taken: list filters (`assigneeId=me` on work
 * items of a project and across projects, `authorId=me` on entries), body fields (`assigneeId` in
 * work item create, PATCH and bulk bodies; `userId` of a team member or project member added), and
 * the same arguments of MCP tools. It resolves to the caller's id before anything else: the same
 * rows, totals and cursors as the id itself, the id stored and audited, and the same refusals.
 * The OpenAPI document says "a user id, or `me`".
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { sqlOn, timeLimit } from '../helpers/database'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

let api: TestService
let fx: ProjectFixture
let http: Listening
let mcp: Client
let admin: TestUser
let adminKey: string
const sql = sqlOn(() => api)
const items = () => `/api/v1/projects/${fx.projectId}/work-items`

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  admin = await api.createUser(fx.organizationId, 'superadministrator')
  adminKey = (await api.createKey(admin.id, api.service.core.scopes.map((scope) => scope.name))).secret
  http = listen(api)
  mcp = await connectMcp(http.url, fx.keys.editor)
  for (let i = 0; i < 9; i++)
    await fx.as('owner', 'POST', items(), { title: `Item ${i}`, assigneeId: [fx.users.editor.id, fx.users.owner.id, null][i % 3], priority: i % 5 }, 201)
}, timeLimit(60_000))
afterAll(async () => {
  await mcp?.close()
  http?.stop()
  await api?.stop()
})

/** The audit record of the change that answered with `requestId`. */
const auditedChanges = async (requestId: string) => (await sql<{ changes: any }>('select changes from audit_logs where request_id = $1', [requestId]))[0]?.changes

describe('in bodies', () => {
  test('a work item created with assigneeId "me" is assigned to the caller, stored and audited as their id', async () => {
    const response = await fx.call('editor', 'POST', items(), { title: 'Mine', assigneeId: 'me' })
    expect(response.status).toBe(201)
    expect(response.body.data.assigneeId).toBe(fx.users.editor.id)
    const [row] = await sql<{ assignee_id: string }>('select assignee_id from work_items where id = $1', [response.body.data.id])
    expect(row!.assignee_id).toBe(fx.users.editor.id)
    expect((await auditedChanges(response.headers.get('x-request-id')!)).after.assigneeId).toBe(fx.users.editor.id)
  })

  test('PATCH with assigneeId "me" assigns the caller; null still unassigns; a viewer is refused as for any id', async () => {
    const item = await fx.as('editor', 'POST', items(), { title: 'Reassigned' }, 201)
    const patched = await fx.call('owner', 'PATCH', `${items()}/${item.id}`, { assigneeId: 'me' })
    expect(patched.status).toBe(200)
    expect(patched.body.data.assigneeId).toBe(fx.users.owner.id)
    expect(await auditedChanges(patched.headers.get('x-request-id')!)).toEqual({ before: { assigneeId: null }, after: { assigneeId: fx.users.owner.id } })
    // The same assignee again: nothing changes, nothing is audited.
    const again = await fx.call('owner', 'PATCH', `${items()}/${item.id}`, { assigneeId: fx.users.owner.id })
    expect(await auditedChanges(again.headers.get('x-request-id')!)).toBeUndefined()
    expect((await fx.as('owner', 'PATCH', `${items()}/${item.id}`, { assigneeId: null })).assigneeId).toBeNull()
    expect((await fx.call('viewer', 'PATCH', `${items()}/${item.id}`, { assigneeId: 'me' })).status).toBe(403)
  })

  test('bulk create and bulk update take "me" in any item', async () => {
    const created = await fx.as('editor', 'POST', `${items()}/bulk`, { items: [{ title: 'Bulk mine', assigneeId: 'me' }, { title: 'Bulk nobody' }] })
    expect(created.map((item: { assigneeId: string | null }) => item.assigneeId)).toEqual([fx.users.editor.id, null])
    const updated = await fx.as('owner', 'PATCH', `${items()}/bulk`, { items: [{ id: created[1].id, assigneeId: 'me' }, { id: created[0].id, assigneeId: fx.users.editor.id }] })
    expect(updated.map((item: { assigneeId: string | null }) => item.assigneeId)).toEqual([fx.users.owner.id, fx.users.editor.id])
  })

  test.each([['ME'], ['you'], ['me '], [''], [42]])('assigneeId %j is 400 naming the field and saying what it takes', async (value) => {
    const response = await fx.call('editor', 'POST', items(), { title: 'Bad', assigneeId: value })
    expect(response.status).toBe(400)
    const error = response.body.errors.find((item: { field?: string }) => item.field === 'assigneeId')
    expect(error.message).toContain('"me"')
    const bulk = await fx.call('editor', 'POST', `${items()}/bulk`, { items: [{ title: 'Fine' }, { title: 'Bad', assigneeId: value }] })
    expect(bulk.status).toBe(400)
    expect(bulk.body.errors.map((item: { field: string }) => item.field)).toContain('items[1].assigneeId')
  })

  test('an administrator adds themselves to a team with userId "me"; twice is 409 naming their id', async () => {
    const team = (await api.request('POST', '/api/v1/teams', { key: adminKey, body: { name: 'Me team' } })).body.data
    const added = await api.request('POST', `/api/v1/teams/${team.id}/members`, { key: adminKey, body: { userId: 'me' } })
    expect(added.status).toBe(201)
    expect(added.body.data).toMatchObject({ userId: admin.id, user: { id: admin.id } })
    const twice = await api.request('POST', `/api/v1/teams/${team.id}/members`, { key: adminKey, body: { userId: 'me' } })
    expect(twice.status).toBe(409)
    expect(twice.body.errors[0]).toMatchObject({ field: 'userId', existingId: admin.id })
    const members = await api.request('GET', `/api/v1/teams/${team.id}/members`, { key: adminKey })
    expect(members.body.data.map((member: { userId: string }) => member.userId)).toEqual([admin.id])
  })

  test('a superadministrator adds themselves to a project with userId "me"', async () => {
    const added = await api.request('POST', `/api/v1/projects/${fx.projectId}/members`, { key: adminKey, body: { userId: 'me', accessLevel: 'viewer' } })
    expect(added.status).toBe(201)
    expect(added.body.data).toMatchObject({ userId: admin.id, accessLevel: 'viewer' })
    const twice = await api.request('POST', `/api/v1/projects/${fx.projectId}/members`, { key: adminKey, body: { userId: 'me', accessLevel: 'viewer' } })
    expect(twice.status).toBe(409)
    expect(twice.body.errors[0]).toMatchObject({ field: 'userId', existingId: admin.id })
  })
})

describe('in list filters', () => {
  test('assigneeId=me lists what assigneeId=<caller> lists: the same rows, totals and cursors, per caller', async () => {
    for (const who of ['editor', 'owner'] as const) {
      const mine = await fx.call(who, 'GET', `${items()}?assigneeId=me&size=2&sort=priority`)
      const byId = await fx.call(who, 'GET', `${items()}?assigneeId=${fx.users[who].id}&size=2&sort=priority`)
      expect(mine.status).toBe(200)
      expect(mine.body.data.length).toBeGreaterThan(0)
      expect(mine.body.data.every((item: { assigneeId: string }) => item.assigneeId === fx.users[who].id)).toBe(true)
      expect(mine.body.data).toEqual(byId.body.data)
      expect(mine.body.meta.totalItems).toBe(byId.body.meta.totalItems)
      // A cursor of one spelling continues the other: the filter is the same.
      const next = await fx.call(who, 'GET', `${items()}?assigneeId=${fx.users[who].id}&size=2&sort=priority&cursor=${mine.body.meta.nextCursor}`)
      expect(next.status).toBe(200)
    }
    // `me` is the caller: the viewer has nothing assigned.
    expect((await fx.call('viewer', 'GET', `${items()}?assigneeId=me`)).body.meta.totalItems).toBe(0)
  })

  test('assigneeId=me across projects', async () => {
    const mine = await fx.call('editor', 'GET', '/api/v1/work-items?assigneeId=me&size=100')
    const byId = await fx.call('editor', 'GET', `/api/v1/work-items?assigneeId=${fx.users.editor.id}&size=100`)
    expect(mine.body.data.length).toBeGreaterThan(0)
    expect(mine.body.data).toEqual(byId.body.data)
  })

  test('authorId=me lists the caller’s own entries of a work item', async () => {
    const item = await fx.as('editor', 'POST', items(), { title: 'Discussed' }, 201)
    for (const [who, body] of [['editor', 'one'], ['owner', 'two'], ['editor', 'three']] as const) await fx.as(who, 'POST', `/api/v1/work-items/${item.id}/entries`, { body }, 201)
    const bodies = async (who: 'editor' | 'owner' | 'viewer', query: string) => (await fx.as(who, 'GET', `/api/v1/work-items/${item.id}/entries?${query}`)).map((entry: { body: string }) => entry.body)
    expect(await bodies('editor', 'authorId=me')).toEqual(['one', 'three'])
    expect(await bodies('owner', 'authorId=me')).toEqual(['two'])
    expect(await bodies('viewer', 'authorId=me')).toEqual([])
    expect(await bodies('viewer', `authorId=${fx.users.editor.id}`)).toEqual(['one', 'three'])
  })

  test.each([
    ['assigneeId=you', 'assigneeId'],
    ['assigneeId=me,none', 'assigneeId'],
    ['assigneeId=ME', 'assigneeId'],
  ])('%s is 400 naming %s and saying `me` is taken', async (query, field) => {
    for (const path of [items(), '/api/v1/work-items']) {
      const response = await fx.call('editor', 'GET', `${path}?${query}`)
      expect(response.status).toBe(400)
      expect(response.body.errors.find((error: { field?: string }) => error.field === field).message).toContain('`me`')
    }
  })
})

describe('in MCP arguments', () => {
  test('create, update and list work items with "me"', async () => {
    const created = await callTool(mcp, 'create_work_item', { projectId: fx.projectId, title: 'Through MCP', assigneeId: 'me' })
    expect(created.isError).toBe(false)
    expect(created.data.assigneeId).toBe(fx.users.editor.id)
    const bulk = await callTool(mcp, 'bulk_create_work_items', { projectId: fx.projectId, items: [{ title: 'MCP bulk', assigneeId: 'me' }] })
    expect(bulk.data.items.map((item: { assigneeId: string }) => item.assigneeId)).toEqual([fx.users.editor.id])
    const listed = await callTool(mcp, 'list_work_items', { projectId: fx.projectId, assigneeId: 'me', size: 100 })
    expect(listed.data.items.map((item: { id: string }) => item.id)).toContain(created.data.id)
    expect(listed.data.items.every((item: { assigneeId: string }) => item.assigneeId === fx.users.editor.id)).toBe(true)
    const across = await callTool(mcp, 'list_work_items', { assigneeId: 'me', size: 100 })
    expect(across.data.items.map((item: { id: string }) => item.id).sort()).toEqual(listed.data.items.map((item: { id: string }) => item.id).sort())
    const bad = await callTool(mcp, 'create_work_item', { projectId: fx.projectId, title: 'Nope', assigneeId: 'myself' })
    expect(bad).toMatchObject({ isError: true, code: 'BAD_REQUEST' })
  })
})

describe('the OpenAPI document', () => {
  test('says "a user id, or `me`" for the body fields and the filters', async () => {
    const document = (await api.request('GET', '/docs/json')).body
    const resolve = (schema: any): any => (schema?.$ref ? resolve(schema.$ref.split('/').slice(1).reduce((node: any, key: string) => node[key], document)) : schema)
    const takesMe = (schema: any): boolean => {
      const resolved = resolve(schema)
      return resolved?.const === 'me' || (resolved?.anyOf ?? []).some(takesMe)
    }
    const body = (path: string) => resolve(document.paths[path].post.requestBody.content['application/json'].schema)
    expect(takesMe(body('/api/v1/projects/{projectId}/work-items').properties.assigneeId)).toBe(true)
    expect(takesMe(body('/api/v1/teams/{teamId}/members').properties.userId)).toBe(true)
    expect(takesMe(resolve(document.paths['/api/v1/projects/{projectId}/work-items/bulk'].patch.requestBody.content['application/json'].schema).properties.items.items.properties.assigneeId)).toBe(true)
    const parameter = (path: string, name: string) => document.paths[path].get.parameters.find((each: { name: string }) => each.name === name)
    expect(parameter('/api/v1/projects/{projectId}/work-items', 'assigneeId').description).toContain('`me`')
    expect(parameter('/api/v1/work-items', 'assigneeId').description).toContain('`me`')
    expect(parameter('/api/v1/work-items/{workItemId}/entries', 'authorId').description).toContain('`me`')
  })
})
