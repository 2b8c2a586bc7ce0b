/**
 * Keys people can say: a project's key (given or derived from its name, unique in the organization,
 * changeable by owners with the old one still resolving) and a work item's `<key>-<number>`, which
 * reads, changes and deletes it at /api/v1/work-items/{workItemId}, finds it in search, and names it
 * in MCP tools.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { deriveKeyBase } from '../../plugins/projects/keys'
import { parseWorkItemKey } from '../../plugins/work-items/api'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let http: Listening
let fx: ProjectFixture
/** Another organization, with a project of the same key as one of ours. */
let elsewhere: ProjectFixture
/** A member of our organization in no project. */
let outsiderKey: string
const events: { type: string; data: any }[] = []

beforeAll(async () => {
  api = await startTestService()
  http = listen(api)
  fx = await createProjectFixture(api)
  elsewhere = await createProjectFixture(api)
  const outsider = await api.createUser(fx.organizationId)
  outsiderKey = (await api.createKey(outsider.id, api.service.core.scopes.map((scope) => scope.name))).secret
  api.service.core.changes.observe({ wants: () => true, observe: async (_tx, event) => void events.push({ type: event.type, data: await event.data() }) })
})
afterAll(async () => {
  http.stop()
  await api.stop()
})

const createProject = (body: Record<string, unknown>, who: 'owner' | 'editor' = 'owner') => fx.call(who, 'POST', '/api/v1/projects', body)
const newProject = async (body: Record<string, unknown>) => {
  const response = await createProject(body)
  expect(response.status).toBe(201)
  return response.body.data
}
const newItem = (projectId: string, title: string) => fx.as('owner', 'POST', `/api/v1/projects/${projectId}/work-items`, { title }, 201)
const byRef = (ref: string) => `/api/v1/work-items/${ref}`

/** Rows of the project's keys, oldest first. */
const keysOf = async (projectId: string) =>
  (await queryRows<{ key: string }>(api.service.core.db, sql`select key from project_keys where project_id = ${projectId} order by created_at, key`)).map((row) => row.key)

const auditOf = async (projectId: string, action: string) =>
  queryRows<{ changes: any }>(api.service.core.db, sql`select changes from audit_logs where project_id = ${projectId} and action = ${action} order by occurred_at`)

describe('deriving a key from the name', () => {
  test.each([
    ['Engineering', 'ENG'],
    ['Mobile App', 'MA'],
    ['the quick brown fox jumps', 'TQBF'],
    ['Q3 planning', 'QP'],
    ['Résumé', 'RES'],
    ['Go', 'GO'],
    ['X', 'PRJ'],
    ['2024', 'PRJ'],
    ['プロジェクト', 'PRJ'],
  ])('%s → %s', (name, key) => {
    expect(deriveKeyBase(name)).toBe(key)
  })

  test('a taken key gets the next number; the key is stored, audited and evented', async () => {
    const first = await newProject({ name: 'Derivation' })
    const second = await newProject({ name: 'Derived again' })
    const third = await newProject({ name: 'Deriving' })
    expect(first.key).toBe('DER')
    expect(second.key).toBe('DA')
    expect(third.key).toBe('DER2')
    expect(await keysOf(third.id)).toEqual(['DER2'])
    const [record] = await auditOf(third.id, 'project.created')
    expect(record!.changes.after).toMatchObject({ key: 'DER2', name: 'Deriving' })
    expect(events.find((event) => event.type === 'project.created' && event.data.id === third.id)?.data.key).toBe('DER2')
    expect(await fx.as('owner', 'GET', `/api/v1/projects/${third.id}`)).toEqual(third)
  })

  test('creates at once with the same name each get their own key', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => createProject({ name: 'Racing' })))
    expect(answers.map((answer) => answer.status)).toEqual(Array(6).fill(201))
    expect(answers.map((answer) => answer.body.data.key).sort()).toEqual(['RAC', 'RAC2', 'RAC3', 'RAC4', 'RAC5', 'RAC6'])
  })
})

describe('a given key', () => {
  test('is taken in any case and stored upper-case', async () => {
    const project = await newProject({ name: 'Operations', key: 'oPs1' })
    expect(project.key).toBe('OPS1')
    expect(await keysOf(project.id)).toEqual(['OPS1'])
  })

  test.each([['1AB'], ['A'], ['ABCDEFGHIJK'], ['AB-1'], ['ÄB'], ['A B'], [''], [12]])('%j is 400 naming key, nothing written', async (key) => {
    const before = await queryRows<{ n: number }>(api.service.core.db, sql`select count(*)::int as n from projects`)
    const response = await createProject({ name: 'Invalid key', key })
    expect(response.status).toBe(400)
    expect(response.body.errors.map((error: { field?: string }) => error.field)).toContain('key')
    expect(await queryRows<{ n: number }>(api.service.core.db, sql`select count(*)::int as n from projects`)).toEqual(before)
  })

  test("another project's key, now or before, is 409 naming key (any case)", async () => {
    const taken = await newProject({ name: 'Taken', key: 'TKN' })
    for (const key of ['TKN', 'tkn']) {
      const response = await createProject({ name: 'Copy', key })
      expect(response.status).toBe(409)
      expect(response.body.errors).toEqual([{ code: 'CONFLICT', message: expect.any(String), field: 'key' }])
    }
    await fx.as('owner', 'PATCH', `/api/v1/projects/${taken.id}`, { key: 'GIVEN' })
    const old = await createProject({ name: 'Old key', key: 'Tkn' })
    expect(old.status).toBe(409)
    expect(old.body.errors[0]).toMatchObject({ code: 'CONFLICT', field: 'key' })
    // A derived key skips old keys too.
    expect((await newProject({ name: 'Tall Knight Nights' })).key).toBe('TKN2')
  })

  test('another organization may have the same key', async () => {
    const ours = await newProject({ name: 'Shared', key: 'SHARED' })
    const theirs = await elsewhere.as('owner', 'POST', '/api/v1/projects', { name: 'Shared', key: 'SHARED' }, 201)
    expect([ours.key, theirs.key]).toEqual(['SHARED', 'SHARED'])
  })
})

describe('changing a key', () => {
  test('owners only; the old key keeps resolving, work items show the new one, audited with before and after', async () => {
    const project = await newProject({ name: 'Renamed', key: 'OLDK' })
    const item = await newItem(project.id, 'Survives the rename')
    expect(item.key).toBe('OLDK-1')
    await fx.as('owner', 'POST', `/api/v1/projects/${project.id}/members`, { userId: fx.users.editor.id, accessLevel: 'editor' })
    expect((await fx.call('editor', 'PATCH', `/api/v1/projects/${project.id}`, { key: 'NEWK' })).status).toBe(403)
    // Warm the list cache: the rename must move it.
    expect((await fx.as('owner', 'GET', `/api/v1/projects/${project.id}/work-items`)).map((each: { key: string }) => each.key)).toEqual(['OLDK-1'])
    const renamed = await fx.as('owner', 'PATCH', `/api/v1/projects/${project.id}`, { key: 'newk' })
    expect(renamed).toMatchObject({ id: project.id, key: 'NEWK', name: 'Renamed' })
    expect(await keysOf(project.id)).toEqual(expect.arrayContaining(['OLDK', 'NEWK']))
    const [record] = await auditOf(project.id, 'project.updated')
    expect(record!.changes).toEqual({ before: { key: 'OLDK' }, after: { key: 'NEWK' } })
    expect(events.find((event) => event.type === 'project.updated' && event.data.id === project.id)?.data.key).toBe('NEWK')
    expect((await fx.as('owner', 'GET', `/api/v1/projects/${project.id}/work-items`)).map((each: { key: string }) => each.key)).toEqual(['NEWK-1'])
    for (const ref of ['OLDK-1', 'NEWK-1', 'oldk-1', item.id]) expect(await fx.as('owner', 'GET', byRef(ref))).toMatchObject({ id: item.id, key: 'NEWK-1' })
    // The same key again changes nothing; the project's own old key is refused like any other project's.
    expect((await fx.as('owner', 'PATCH', `/api/v1/projects/${project.id}`, { key: 'NEWK' })).key).toBe('NEWK')
    const back = await fx.call('owner', 'PATCH', `/api/v1/projects/${project.id}`, { key: 'OLDK' })
    expect(back.status).toBe(409)
    expect(back.body.errors[0]).toMatchObject({ code: 'CONFLICT', field: 'key' })
  })

  test("another project's current or old key is 409 and changes nothing", async () => {
    const mine = await newProject({ name: 'Mine', key: 'MINE' })
    const other = await newProject({ name: 'Other', key: 'OTHR' })
    await fx.as('owner', 'PATCH', `/api/v1/projects/${other.id}`, { key: 'OTHR2' })
    for (const key of ['OTHR2', 'othr']) {
      const response = await fx.call('owner', 'PATCH', `/api/v1/projects/${mine.id}`, { key, name: 'Changed too' })
      expect(response.status).toBe(409)
      expect(response.body.errors[0]).toMatchObject({ code: 'CONFLICT', field: 'key' })
    }
    expect(await fx.as('owner', 'GET', `/api/v1/projects/${mine.id}`)).toEqual(mine)
    expect(await keysOf(mine.id)).toEqual(['MINE'])
  })

  test('a deleted project takes its keys with it', async () => {
    const project = await newProject({ name: 'Gone', key: 'GONE' })
    await fx.as('owner', 'DELETE', `/api/v1/projects/${project.id}`)
    expect(await keysOf(project.id)).toEqual([])
    expect((await newProject({ name: 'Back', key: 'GONE' })).key).toBe('GONE')
  })
})

describe('a work item by id or key', () => {
  let project: any
  let item: any
  beforeAll(async () => {
    project = await newProject({ name: 'Keyed', key: 'KEYD' })
    await fx.as('owner', 'POST', `/api/v1/projects/${project.id}/members`, { userId: fx.users.editor.id, accessLevel: 'editor' })
    await fx.as('owner', 'POST', `/api/v1/projects/${project.id}/members`, { userId: fx.users.viewer.id, accessLevel: 'viewer' })
    item = await newItem(project.id, 'Reach me by key')
  })

  test('parsing: any case, a bounded number', () => {
    expect(parseWorkItemKey('eng-123')).toEqual({ projectKey: 'ENG', number: 123 })
    expect(parseWorkItemKey('ENG-1234567890')).toBeUndefined()
    expect(parseWorkItemKey('E-1')).toBeUndefined()
    expect(parseWorkItemKey('ENG-')).toBeUndefined()
    expect(parseWorkItemKey('ENG-1 ')).toBeUndefined()
  })

  test('reads the same work item as the project-scoped route, in any case', async () => {
    const scoped = await fx.as('viewer', 'GET', `/api/v1/projects/${project.id}/work-items/${item.id}`)
    expect(scoped.key).toBe(`KEYD-${item.number}`)
    for (const ref of [item.id, item.id.toUpperCase(), `KEYD-${item.number}`, `keyd-${item.number}`, `KeYd-${item.number}`]) expect(await fx.as('viewer', 'GET', byRef(ref))).toEqual(scoped)
  })

  test('unknown, malformed, invisible and foreign are one 404', async () => {
    const foreignProject = await elsewhere.as('owner', 'POST', '/api/v1/projects', { name: 'Elsewhere', key: 'ELSW' }, 201)
    const foreign = await elsewhere.as('owner', 'POST', `/api/v1/projects/${foreignProject.id}/work-items`, { title: 'Not yours' }, 201)
    expect(foreign.key).toBe('ELSW-1')
    const answers = [
      await fx.call('viewer', 'GET', byRef(`KEYD-${item.number + 1000}`)),
      await fx.call('viewer', 'GET', byRef('NOPE-1')),
      await fx.call('viewer', 'GET', byRef('KEYD-0')),
      await fx.call('viewer', 'GET', byRef('KEYD-99999999999')),
      await fx.call('viewer', 'GET', byRef('not-a-key!')),
      await fx.call('viewer', 'GET', byRef('01a20000-0000-7000-8000-000000000000')),
      await fx.call('viewer', 'GET', byRef(foreign.id)),
      await fx.call('viewer', 'GET', byRef(foreign.key)),
      await api.request('GET', byRef(`KEYD-${item.number}`), { key: outsiderKey }),
      await api.request('GET', byRef(item.id), { key: outsiderKey }),
      await api.request('PATCH', byRef(`KEYD-${item.number}`), { key: outsiderKey, body: { title: 'Nope' } }),
      await api.request('DELETE', byRef(`KEYD-${item.number}`), { key: outsiderKey }),
    ]
    for (const answer of answers) expect({ status: answer.status, errors: answer.body.errors }).toEqual({ status: 404, errors: [{ code: 'NOT_FOUND', message: 'No such work item.' }] })
    expect((await fx.as('viewer', 'GET', byRef(item.id))).title).toBe('Reach me by key')
  })

  test("a key of another organization's project of the same key is that organization's work item, never ours", async () => {
    const ours = await newProject({ name: 'Twin', key: 'TWIN' })
    const theirs = await elsewhere.as('owner', 'POST', '/api/v1/projects', { name: 'Twin', key: 'TWIN' }, 201)
    const mine = await newItem(ours.id, 'Our twin item')
    const their = await elsewhere.as('owner', 'POST', `/api/v1/projects/${theirs.id}/work-items`, { title: 'Their twin item' }, 201)
    expect(mine.key).toBe('TWIN-1')
    expect(their.key).toBe('TWIN-1')
    expect((await fx.as('owner', 'GET', byRef('TWIN-1'))).id).toBe(mine.id)
    expect((await elsewhere.as('owner', 'GET', byRef('twin-1'))).id).toBe(their.id)
  })

  test('PATCH by key: editor, If-Match as on the project-scoped route', async () => {
    const target = await newItem(project.id, 'Patch me')
    const ref = `keyd-${target.number}`
    expect((await fx.call('viewer', 'PATCH', byRef(ref), { title: 'Viewer' })).status).toBe(403)
    const read = await fx.call('editor', 'GET', byRef(ref))
    const etag = read.headers.get('etag')!
    expect(etag).toBeTruthy()
    const patched = await api.request('PATCH', byRef(ref), { key: fx.keys.editor, body: { title: 'Patched', status: 'in_progress' }, headers: { 'if-match': etag } })
    expect(patched.status).toBe(200)
    expect(patched.body.data).toMatchObject({ id: target.id, key: `KEYD-${target.number}`, title: 'Patched', status: 'in_progress' })
    // The tag read before the change is stale now: the same answer as the project-scoped route gives it, and nothing changes.
    const scoped = await api.request('PATCH', `/api/v1/projects/${project.id}/work-items/${target.id}`, { key: fx.keys.editor, body: { title: 'Stale' }, headers: { 'if-match': etag } })
    const stale = await api.request('PATCH', byRef(ref), { key: fx.keys.editor, body: { title: 'Stale' }, headers: { 'if-match': etag } })
    expect(scoped.status).toBe(412)
    expect({ status: stale.status, errors: stale.body.errors }).toEqual({ status: 412, errors: scoped.body.errors })
    expect(stale.body.errors[0].code).toBe('PRECONDITION_FAILED')
    expect((await fx.as('viewer', 'GET', byRef(target.id))).title).toBe('Patched')
    const invalid = await fx.call('editor', 'PATCH', byRef(ref), { title: '' })
    expect(invalid.status).toBe(400)
    expect(invalid.body.errors[0].field).toBe('title')
    const updated = events.filter((event) => event.type === 'work_item.updated' && event.data.id === target.id)
    expect(updated.map((event) => event.data.key)).toEqual([`KEYD-${target.number}`])
    const [record] = await queryRows<{ changes: any }>(api.service.core.db, sql`select changes from audit_logs where resource_id = ${target.id} and action = 'work_item.updated'`)
    expect(record!.changes).toEqual({ before: { title: 'Patch me', status: 'todo' }, after: { title: 'Patched', status: 'in_progress' } })
  })

  test('DELETE by key: editor, If-Match; the key is then 404', async () => {
    const target = await newItem(project.id, 'Delete me')
    const ref = `KEYD-${target.number}`
    expect((await fx.call('viewer', 'DELETE', byRef(ref))).status).toBe(403)
    const stale = await api.request('DELETE', byRef(ref), { key: fx.keys.editor, headers: { 'if-match': '"0"' } })
    expect({ status: stale.status, code: stale.body.errors[0].code }).toEqual({ status: 412, code: 'PRECONDITION_FAILED' })
    const etag = (await fx.call('editor', 'GET', byRef(ref))).headers.get('etag')!
    const deleted = await api.request('DELETE', byRef(ref), { key: fx.keys.editor, headers: { 'if-match': etag } })
    expect({ status: deleted.status, data: deleted.body.data }).toEqual({ status: 200, data: { id: target.id } })
    expect((await fx.call('editor', 'GET', byRef(ref))).status).toBe(404)
    expect(events.find((event) => event.type === 'work_item.deleted' && event.data.id === target.id)?.data.key).toBe(ref)
  })

  test('every work item read shows the key: create, list, events', async () => {
    const created = await newItem(project.id, 'Shown everywhere')
    expect(created.key).toBe(`KEYD-${created.number}`)
    const list = await fx.as('viewer', 'GET', `/api/v1/projects/${project.id}/work-items?size=100`)
    for (const each of list) expect(each.key).toBe(`KEYD-${each.number}`)
    expect(events.find((event) => event.type === 'work_item.created' && event.data.id === created.id)?.data.key).toBe(created.key)
  })
})

describe('search', () => {
  test('a work item key finds that item first, in any case, by an old key too', async () => {
    const project = await newProject({ name: 'Searching', key: 'SRCH' })
    const items = []
    for (const title of ['Search engine', 'srch notes', 'Unrelated title', 'srch 3 mention']) items.push(await newItem(project.id, title))
    const search = (q: string) => fx.as('owner', 'GET', `/api/v1/projects/${project.id}/search?q=${encodeURIComponent(q)}`)
    const third = items[2]!
    for (const q of ['SRCH-3', 'srch-3']) {
      const found = await search(q)
      expect(found.workItems[0]).toMatchObject({ id: third.id, key: 'SRCH-3', title: 'Unrelated title' })
      expect(found.workItems.filter((each: { id: string }) => each.id === third.id)).toHaveLength(1)
    }
    await fx.as('owner', 'PATCH', `/api/v1/projects/${project.id}`, { key: 'FIND' })
    expect((await search('srch-3')).workItems[0]).toMatchObject({ id: third.id, key: 'FIND-3' })
    expect((await search('FIND-3')).workItems[0].id).toBe(third.id)
    // Filters still apply; a key of another project is no exact match here.
    expect((await fx.as('owner', 'GET', `/api/v1/projects/${project.id}/search?q=FIND-3&status=done`)).workItems).toEqual([])
    expect((await search('KEYD-3')).workItems.map((each: { id: string }) => each.id)).not.toContain(third.id)
  })
})

describe('MCP', () => {
  test('create_project, and the work item tools by key', async () => {
    const client = await connectMcp(http.url, fx.keys.owner)
    const ok = async (name: string, args: Record<string, unknown>) => {
      const outcome = await callTool(client, name, args)
      expect({ name, isError: outcome.isError, data: outcome.isError ? outcome.data : undefined }).toEqual({ name, isError: false, data: undefined })
      return outcome.data
    }
    try {
      const project = await ok('create_project', { name: 'Via tools', key: 'tool' })
      expect(project).toMatchObject({ key: 'TOOL', name: 'Via tools' })
      expect(await fx.as('owner', 'GET', `/api/v1/projects/${project.id}`)).toEqual(project)
      expect((await ok('create_project', { name: 'Via tools again' })).key).toBe('VTA')
      expect(await callTool(client, 'create_project', { name: 'Clash', key: 'TOOL' })).toMatchObject({ isError: true, code: 'CONFLICT' })
      const item = await ok('create_work_item', { projectId: project.id, title: 'Tool item' })
      expect(item.key).toBe('TOOL-1')
      expect(await ok('get_work_item', { workItemId: 'tool-1' })).toEqual(item)
      expect(await ok('get_work_item', { projectId: project.id, workItemId: 'TOOL-1' })).toEqual(item)
      expect(await callTool(client, 'get_work_item', { projectId: fx.projectId, workItemId: 'TOOL-1' })).toMatchObject({ isError: true, code: 'NOT_FOUND' })
      expect(await callTool(client, 'get_work_item', { workItemId: 'NONE-1' })).toMatchObject({ isError: true, code: 'NOT_FOUND' })
      expect((await ok('update_work_item', { workItemId: 'TOOL-1', status: 'done' })).status).toBe('done')
      expect(await callTool(client, 'update_work_item', { workItemId: 'TOOL-1', projectId: project.id })).toMatchObject({ isError: true, code: 'BAD_REQUEST' })
      expect((await ok('project_summary', { projectId: project.id })).recentlyUpdated[0].key).toBe('TOOL-1')
      expect(await ok('delete_work_item', { workItemId: 'Tool-1' })).toEqual({ id: item.id })
      expect(await callTool(client, 'get_work_item', { workItemId: item.id })).toMatchObject({ isError: true, code: 'NOT_FOUND' })
      const viewer = await connectMcp(http.url, (await api.createKey(fx.users.viewer.id, ['work_items:read'])).secret)
      try {
        expect(await callTool(viewer, 'update_work_item', { workItemId: 'TOOL-1', title: 'x' })).toMatchObject({ isError: true, code: 'INSUFFICIENT_SCOPE' })
      } finally {
        await viewer.close()
      }
    } finally {
      await client.close()
    }
  })
})
