import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: ProjectFixture
let a: { id: string }
let b: { id: string }

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  a = await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'A' }, 201)
  b = await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'B' }, 201)
})
afterAll(() => api.stop())

describe('entries', () => {
  const entries = () => `/api/v1/work-items/${a.id}/entries`

  test('kind defaults to comment; the caller is the author; positions follow creation', async () => {
    const first = await fx.as('editor', 'POST', entries(), { body: 'first' }, 201)
    const second = await fx.as('editor', 'POST', entries(), { body: 'second', kind: 'log' }, 201)
    expect(first).toMatchObject({ workItemId: a.id, kind: 'comment', body: 'first', authorId: fx.users.editor.id })
    expect(second.kind).toBe('log')
    expect(second.position).toBe(first.position + 1)
    const listed = await fx.as('viewer', 'GET', entries())
    expect(listed.slice(-2).map((entry: { id: string }) => entry.id)).toEqual([first.id, second.id])
  })

  test('only the author or a project owner may edit or delete', async () => {
    const mine = await fx.as('editor', 'POST', entries(), { body: 'by the editor' }, 201)
    const otherEditor = await api.createUser(fx.organizationId)
    await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/members`, { userId: otherEditor.id, accessLevel: 'editor' }, 201)
    const otherKey = (await api.createKey(otherEditor.id, ['entries:write'])).secret
    const refused = await api.request('PATCH', `${entries()}/${mine.id}`, { key: otherKey, body: { body: 'hijack' } })
    expect(refused.status).toBe(403)
    expect(refused.body.errors[0].code).toBe('FORBIDDEN')
    expect((await api.request('DELETE', `${entries()}/${mine.id}`, { key: otherKey })).status).toBe(403)
    expect((await fx.as('editor', 'PATCH', `${entries()}/${mine.id}`, { body: 'edited by author' })).body).toBe('edited by author')
    expect((await fx.as('owner', 'PATCH', `${entries()}/${mine.id}`, { kind: 'note' })).kind).toBe('note')
    expect(await fx.as('owner', 'DELETE', `${entries()}/${mine.id}`)).toEqual({ id: mine.id })
  })

  test('a work item in a project the caller cannot see is 404 on every entries path', async () => {
    const stranger = await api.createUser(fx.organizationId)
    const key = (await api.createKey(stranger.id, ['entries:read', 'entries:write'])).secret
    const entry = await fx.as('owner', 'POST', entries(), { body: 'private' }, 201)
    for (const [method, path, body] of [
      ['GET', entries()],
      ['POST', entries(), { body: 'x' }],
      ['GET', `${entries()}/${entry.id}`],
      ['PATCH', `${entries()}/${entry.id}`, { body: 'x' }],
      ['DELETE', `${entries()}/${entry.id}`],
    ] as const) {
      const response = await api.request(method, path, { key, body })
      expect(response.status).toBe(404)
    }
    expect((await fx.call('viewer', 'GET', '/api/v1/work-items/01a20000-0000-7000-8000-000000000000/entries')).status).toBe(404)
  })

  test('an entry of another work item is 404 under this one; bad input is 400', async () => {
    const onB = await fx.as('owner', 'POST', `/api/v1/work-items/${b.id}/entries`, { body: 'on b' }, 201)
    expect((await fx.call('owner', 'GET', `${entries()}/${onB.id}`)).status).toBe(404)
    for (const body of [{ body: '' }, { body: 'x', kind: 'email' }, { body: 'x'.repeat(50_001) }, {}]) expect((await fx.call('editor', 'POST', entries(), body)).status).toBe(400)
  })
})

describe('relationships', () => {
  const relationships = () => `/api/v1/projects/${fx.projectId}/relationships`

  test('both ends must be in the project, and no self links', async () => {
    const other = await createProjectFixture(api, fx.organizationId)
    const foreign = await other.as('owner', 'POST', `/api/v1/projects/${other.projectId}/work-items`, { title: 'Foreign' }, 201)
    const cross = await fx.call('editor', 'POST', relationships(), { sourceWorkItemId: a.id, targetWorkItemId: foreign.id, type: 'blocks' })
    expect(cross.status).toBe(400)
    expect(cross.body.errors[0].field).toBe('targetWorkItemId')
    const self = await fx.call('editor', 'POST', relationships(), { sourceWorkItemId: a.id, targetWorkItemId: a.id, type: 'blocks' })
    expect(self.status).toBe(400)
    expect((await fx.call('editor', 'POST', relationships(), { sourceWorkItemId: a.id, targetWorkItemId: b.id, type: 'causes' })).status).toBe(400)
  })

  test('duplicates are 409 naming the existing link; relates_to has no direction', async () => {
    const blocks = await fx.as('editor', 'POST', relationships(), { sourceWorkItemId: a.id, targetWorkItemId: b.id, type: 'blocks' }, 201)
    const again = await fx.call('editor', 'POST', relationships(), { sourceWorkItemId: a.id, targetWorkItemId: b.id, type: 'blocks' })
    expect(again.status).toBe(409)
    expect(again.body.errors[0].existingId).toBe(blocks.id)
    expect((await fx.call('editor', 'POST', relationships(), { sourceWorkItemId: b.id, targetWorkItemId: a.id, type: 'blocks' })).status).toBe(201)
    const relates = await fx.as('editor', 'POST', relationships(), { sourceWorkItemId: a.id, targetWorkItemId: b.id, type: 'relates_to' }, 201)
    const reverse = await fx.call('editor', 'POST', relationships(), { sourceWorkItemId: b.id, targetWorkItemId: a.id, type: 'relates_to' })
    expect(reverse.status).toBe(409)
    expect(reverse.body.errors[0].existingId).toBe(relates.id)
    const clash = await fx.call('editor', 'PATCH', `${relationships()}/${relates.id}`, { type: 'blocks' })
    expect(clash.status).toBe(409)
    expect(clash.body.errors[0].existingId).toBe(blocks.id)
  })

  test('the workItemId filter matches either end', async () => {
    const c = await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'C' }, 201)
    const incoming = await fx.as('editor', 'POST', relationships(), { sourceWorkItemId: a.id, targetWorkItemId: c.id, type: 'duplicates' }, 201)
    const outgoing = await fx.as('editor', 'POST', relationships(), { sourceWorkItemId: c.id, targetWorkItemId: b.id, type: 'parent_of' }, 201)
    const listed = await fx.as('viewer', 'GET', `${relationships()}?workItemId=${c.id}`)
    expect(listed.map((link: { id: string }) => link.id)).toEqual([incoming.id, outgoing.id])
    expect((await fx.call('viewer', 'GET', `${relationships()}?workItemId=nope`)).status).toBe(400)
  })
})
