import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let http: Listening
let fx: ProjectFixture
let everything: string[]

beforeAll(async () => {
  api = await startTestService()
  http = listen(api)
  fx = await createProjectFixture(api)
  everything = api.service.core.scopes.map((scope) => scope.name)
})
afterAll(async () => {
  http.stop()
  await api.stop()
})

const toolNames = async (scopes: string[]) => {
  const client = await connectMcp(http.url, (await api.createKey(fx.users.owner.id, scopes)).secret)
  const { tools } = await client.listTools()
  await client.close()
  return tools
}

describe('tools/list', () => {
  // get_current_user needs no scope (like GET /api/v1/users/me): every key sees it.
  test('shows exactly the tools the key scopes allow', async () => {
    // watch_work_item: watching is the caller's own state, and needs only the read scope (as its REST route).
    expect((await toolNames(['work_items:read'])).map((tool) => tool.name).sort()).toEqual(['get_current_user', 'get_work_item', 'list_views', 'list_work_items', 'watch_work_item'])
    expect((await toolNames(['work_items:read', 'entries:read', 'relationships:read'])).map((tool) => tool.name).sort()).toEqual([
      'get_current_user',
      'get_work_item',
      'list_entries',
      'list_relationships',
      'list_views',
      'list_work_items',
      'project_summary',
      'search_project',
      'watch_work_item',
    ])
    expect((await toolNames(['work_items:write'])).map((tool) => tool.name).sort()).toEqual(['bulk_create_work_items', 'bulk_update_work_items', 'create_work_item', 'delete_work_item', 'get_current_user', 'update_work_item'])
    expect((await toolNames([])).map((tool) => tool.name)).toEqual(['get_current_user'])
    expect((await toolNames(everything)).map((tool) => tool.name).sort()).toEqual(
      [
        'bulk_create_work_items', 'bulk_update_work_items', 'create_entry', 'create_label', 'create_project', 'create_relationship', 'create_work_item', 'delete_label', 'list_custom_fields', 'list_labels',
        'list_project_custom_fields', 'update_label', 'delete_entry', 'delete_relationship', 'delete_work_item', 'get_project', 'get_user', 'get_current_user', 'list_users', 'invite_user', 'update_user',
        'get_work_item', 'list_audit_logs', 'list_entries', 'list_project_members', 'list_projects', 'list_relationships', 'list_team_members',
        'list_team_projects', 'list_teams', 'list_webhooks', 'list_work_items', 'project_summary', 'reorder_content', 'search_project', 'update_entry', 'update_work_item',
        'list_notifications', 'mark_notifications_read', 'watch_work_item', 'list_views',
      ].sort(),
    )
  })

  test('read tools are read-only, deletes destructive, and inputs are JSON Schema with REST names', async () => {
    const tools = await toolNames(everything)
    const byName = new Map(tools.map((tool) => [tool.name, tool]))
    for (const tool of tools) {
      const read = tool.name.startsWith('list_') || tool.name.startsWith('get_') || ['search_project', 'project_summary'].includes(tool.name)
      expect(tool.annotations?.readOnlyHint).toBe(read)
      expect(tool.annotations?.destructiveHint).toBe(tool.name.startsWith('delete_'))
      expect(tool.inputSchema.type).toBe('object')
    }
    expect(byName.get('create_work_item')!.inputSchema.required).toEqual(['projectId', 'title'])
    expect(Object.keys(byName.get('list_work_items')!.inputSchema.properties!)).toEqual(['projectId', 'viewId', 'page', 'size', 'cursor', 'status', 'assigneeId', 'priority', 'createdAt', 'updatedAt', 'dueDate', 'label', 'sort'])
  })

  test('a disabled plugin takes its tools with it', async () => {
    const trimmed = await startTestService({ plugins: ['auth', 'teams', 'projects', 'work-items', 'mcp'], database: api.database })
    const trimmedHttp = listen(trimmed)
    try {
      const client = await connectMcp(trimmedHttp.url, (await api.createKey(fx.users.owner.id, everything)).secret)
      const names = (await client.listTools()).tools.map((tool) => tool.name)
      expect(names).toContain('list_work_items')
      expect(names).not.toContain('search_project')
      expect(names).not.toContain('list_entries')
      const call = await callTool(client, 'search_project', { projectId: fx.projectId, q: 'x' })
      expect(call).toMatchObject({ isError: true, code: 'NOT_FOUND' })
      await client.close()
    } finally {
      trimmedHttp.stop()
      await trimmed.stop()
    }
  })
})

describe('every tool, happy path', () => {
  test('reads, writes and the summary, with the same shapes as REST', async () => {
    const client = await connectMcp(http.url, (await api.createKey(fx.users.owner.id, everything)).secret)
    const ok = async (name: string, args: Record<string, unknown>) => {
      const outcome = await callTool(client, name, args)
      expect({ name, isError: outcome.isError }).toEqual({ name, isError: false })
      return outcome.data
    }
    const projectId = fx.projectId
    const a = await ok('create_work_item', { projectId, title: 'Alpha via MCP', description: 'written by a tool', priority: 2 })
    const b = await ok('create_work_item', { projectId, title: 'Beta via MCP' })
    expect(a).toEqual((await api.request('GET', `/api/v1/projects/${projectId}/work-items/${a.id}`, { key: fx.keys.owner })).body.data)
    expect((await ok('update_work_item', { projectId, workItemId: a.id, status: 'done' })).status).toBe('done')
    expect((await ok('get_work_item', { projectId, workItemId: a.id })).title).toBe('Alpha via MCP')
    const list = await ok('list_work_items', { projectId, size: 1, page: 1 })
    expect(list.items.map((item: { id: string }) => item.id)).toEqual([b.id])
    expect(list.meta).toEqual({ page: 1, size: 1, totalItems: 2, totalPages: 2, nextCursor: null })
    const entry = await ok('create_entry', { workItemId: a.id, body: 'alpha note' })
    expect((await ok('update_entry', { workItemId: a.id, entryId: entry.id, kind: 'log' })).kind).toBe('log')
    expect((await ok('list_entries', { workItemId: a.id })).items).toHaveLength(1)
    const link = await ok('create_relationship', { projectId, sourceWorkItemId: a.id, targetWorkItemId: b.id, type: 'blocks' })
    expect((await ok('list_relationships', { projectId, workItemId: b.id })).items.map((item: { id: string }) => item.id)).toEqual([link.id])
    expect((await ok('reorder_content', { projectId, workItems: [b.id, a.id] })).workItems).toEqual([b.id, a.id])
    const found = await ok('search_project', { projectId, q: 'alpha' })
    expect(found.workItems.map((item: { id: string }) => item.id)).toEqual([a.id])
    expect(found.relationships.map((item: { id: string }) => item.id)).toEqual([link.id])
    const summary = await ok('project_summary', { projectId })
    expect(summary).toMatchObject({ projectId, workItems: { total: 2, byStatus: { todo: 1, in_progress: 0, done: 1, cancelled: 0 } }, entries: 1, relationships: 1 })
    // a changed status after b was created; reordering is not an update of the items.
    expect(summary.recentlyUpdated.map((item: { id: string }) => item.id)).toEqual([a.id, b.id])
    expect((await ok('list_projects', {})).items.map((project: { id: string }) => project.id)).toContain(projectId)
    expect((await ok('get_project', { projectId })).id).toBe(projectId)
    expect((await ok('list_project_members', { projectId })).meta.totalItems).toBe(3)
    expect(await ok('get_user', { userId: fx.users.viewer.id })).toMatchObject({ id: fx.users.viewer.id, username: fx.users.viewer.username })
    expect(await ok('delete_relationship', { projectId, relationshipId: link.id })).toEqual({ id: link.id })
    expect(await ok('delete_entry', { workItemId: a.id, entryId: entry.id })).toEqual({ id: entry.id })
    expect(await ok('delete_work_item', { projectId, workItemId: a.id })).toEqual({ id: a.id })
    await client.close()

    const admin = await api.createUser(fx.organizationId, 'administrator')
    const adminClient = await connectMcp(http.url, (await api.createKey(admin.id, everything)).secret)
    const team = (await api.request('POST', '/api/v1/teams', { key: (await api.createKey(admin.id, ['teams:write'])).secret, body: { name: 'MCP team' } })).body.data
    expect((await callTool(adminClient, 'list_teams', {})).data.items.map((item: { id: string }) => item.id)).toContain(team.id)
    expect((await callTool(adminClient, 'list_team_members', { teamId: team.id })).data.meta.totalItems).toBe(0)
    expect((await callTool(adminClient, 'list_team_projects', { teamId: team.id })).data.items).toEqual([])
    const audit = await callTool(adminClient, 'list_audit_logs', { action: 'team.created' })
    expect(audit.data.items[0]).toMatchObject({ action: 'team.created', resourceId: team.id })
    await adminClient.close()
  })
})

describe('read-only connections', () => {
  test('/mcp?readonly=1 lists and runs only the tools that change nothing; a write tool is 403 there and writes nothing', async () => {
    const key = (await api.createKey(fx.users.owner.id, everything)).secret
    const every = await toolNames(everything)
    const client = await connectMcp(http.url, key, '/mcp?readonly=1')
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name).sort()).toEqual(every.filter((tool) => tool.annotations?.readOnlyHint).map((tool) => tool.name).sort())
    expect(tools.length).toBeGreaterThan(20)
    expect(tools.every((tool) => tool.annotations?.readOnlyHint === true && tool.annotations?.destructiveHint === false)).toBe(true)
    const count = async () => (await queryRows<{ n: number }>(api.service.core.db, sql`select count(*)::int as n from work_items where project_id = ${fx.projectId}`))[0]!.n
    const before = await count()
    expect(await callTool(client, 'create_work_item', { projectId: fx.projectId, title: 'not through a read-only connection' })).toMatchObject({ isError: true, code: 'FORBIDDEN' })
    expect(await callTool(client, 'delete_work_item', { projectId: fx.projectId, workItemId: crypto.randomUUID() })).toMatchObject({ isError: true, code: 'FORBIDDEN' })
    expect(await count()).toBe(before)
    expect((await callTool(client, 'list_work_items', { projectId: fx.projectId })).isError).toBe(false)
    await client.close()
    // readonly=0 is every tool the key allows; another value is refused.
    const zero = await connectMcp(http.url, key, '/mcp?readonly=0')
    expect((await zero.listTools()).tools.length).toBe(every.length)
    await zero.close()
    const refused = await fetch(new URL('/mcp?readonly=yes', http.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    })
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.message).toContain('readonly')
  })
})

describe('refusals', () => {
  test('a tool the key may not call: INSUFFICIENT_SCOPE with the same message as REST', async () => {
    const client = await connectMcp(http.url, (await api.createKey(fx.users.owner.id, ['work_items:read'])).secret)
    const outcome = await callTool(client, 'create_work_item', { projectId: fx.projectId, title: 'nope' })
    expect(outcome).toMatchObject({ isError: true, code: 'INSUFFICIENT_SCOPE' })
    expect(outcome.data.error.message).toBe('The API key lacks the scope(s): work_items:write.')
    await client.close()
  })

  test('a project the owner cannot see is reported exactly like an unknown one', async () => {
    const stranger = await api.createUser(fx.organizationId)
    const client = await connectMcp(http.url, (await api.createKey(stranger.id, everything)).secret)
    const invisible = await callTool(client, 'list_work_items', { projectId: fx.projectId })
    const unknown = await callTool(client, 'list_work_items', { projectId: '01a20000-0000-7000-8000-000000000000' })
    expect(invisible).toEqual(unknown)
    expect(invisible.code).toBe('NOT_FOUND')
    await client.close()
  })

  test('a viewer calling a write tool: FORBIDDEN; invalid arguments: BAD_REQUEST naming the field', async () => {
    const client = await connectMcp(http.url, fx.keys.viewer)
    expect(await callTool(client, 'create_work_item', { projectId: fx.projectId, title: 'viewer' })).toMatchObject({ isError: true, code: 'FORBIDDEN' })
    const invalid = await callTool(client, 'list_work_items', { projectId: fx.projectId, size: 101, extra: 1 })
    expect(invalid.code).toBe('BAD_REQUEST')
    expect(invalid.data.errors.map((error: { field: string }) => error.field).sort()).toEqual(['extra', 'size'])
    await client.close()
  })

  test('invalid arguments are described as REST describes them: the values of an enum, the format of a date', async () => {
    const client = await connectMcp(http.url, fx.keys.editor)
    const outcome = await callTool(client, 'create_work_item', { projectId: fx.projectId, title: 'x', status: 'open', dueDate: 'tomorrow' })
    expect(outcome.code).toBe('BAD_REQUEST')
    const messages = Object.fromEntries(outcome.data.errors.map((error: { field: string; message: string }) => [error.field, error.message]))
    expect(messages.status).toBe('Invalid field "status": must be one of "todo", "in_progress", "done", "cancelled".')
    expect(messages.dueDate).toBe('Invalid field "dueDate": must be a calendar date in the form YYYY-MM-DD (e.g. 2026-11-23) or null.')
    const rest = await api.request('POST', `/api/v1/projects/${fx.projectId}/work-items`, { key: fx.keys.editor, body: { title: 'x', status: 'open', dueDate: 'tomorrow' } })
    expect(rest.body.errors.map((error: { message: string }) => error.message).sort()).toEqual(Object.values(messages).sort())
    await client.close()
  })

  test('no key or a bad key: HTTP 401 with WWW-Authenticate; a body that is not JSON: a JSON-RPC parse error', async () => {
    for (const authorization of [undefined, 'Bearer wtk_nope']) {
      const response = await fetch(`${http.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
      expect(response.status).toBe(401)
      expect(response.headers.get('www-authenticate')).toStartWith('Bearer realm="worktrack"')
    }
    const garbled = await fetch(`${http.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${fx.keys.owner}` },
      body: '{"jsonrpc": ',
    })
    expect(garbled.status).toBe(400)
    expect((await garbled.json()).error.code).toBe(-32700)
  })

  test('stateless: GET (a server stream) and DELETE (a session) are 405, Allow: POST', async () => {
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(`${http.url}/mcp`, { method, headers: { accept: 'text/event-stream', authorization: `Bearer ${fx.keys.owner}` } })
      expect(response.status).toBe(405)
      expect(response.headers.get('allow')).toBe('POST')
    }
  })
})

describe('audit', () => {
  test('a change through MCP is audited with via "mcp", the key and the actor', async () => {
    const { id: keyId, secret } = await api.createKey(fx.users.editor.id, ['work_items:write'])
    const client = await connectMcp(http.url, secret)
    const created = await callTool(client, 'create_work_item', { projectId: fx.projectId, title: 'Audited via MCP' })
    await client.close()
    const [record] = await queryRows<{ via: string; actor_user_id: string; api_key_id: string; action: string }>(
      api.service.core.db,
      sql`select via, actor_user_id, api_key_id, action from audit_logs where resource_id = ${created.data.id}`,
    )
    expect(record).toEqual({ via: 'mcp', actor_user_id: fx.users.editor.id, api_key_id: keyId, action: 'work_item.created' })
  })
})
