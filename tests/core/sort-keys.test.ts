/**
 * A refused sort key is named: on every list of the served document (a GET taking `page`), a list
 * that takes `sort` answers an unknown key (`title`, `-title`, one among good ones, an empty one)
 * with a 400 naming `sort` whose message quotes the key and lists every key its `sort` parameter
 * documents; a list that takes no sort refuses the parameter itself. The MCP list tools say the same.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { timeLimit } from '../helpers/database'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let key: string
/** Every list of the document, its path ids random (a query is checked before anything is looked up), with the sort keys it documents. */
const lists: Array<{ path: string; keys: string[] | undefined }> = []

beforeAll(async () => {
  api = await startTestService()
  const organizationId = await api.createOrganization()
  const superadministrator = await api.createUser(organizationId, 'superadministrator')
  key = (await api.createKey(superadministrator.id, api.service.core.scopes.map((scope) => scope.name))).secret
  const document = (await api.request('GET', '/docs/json')).body
  for (const [template, operations] of Object.entries<any>(document.paths)) {
    const parameters: any[] = operations.get?.parameters ?? []
    if (!template.startsWith('/api/v1/') || !parameters.some((parameter) => parameter.in === 'query' && parameter.name === 'page')) continue
    const sort = parameters.find((parameter) => parameter.in === 'query' && parameter.name === 'sort')
    const documented = sort ? /descending: ([^(]+) \(default/.exec(sort.description ?? sort.schema?.description ?? '') : undefined
    if (sort) expect(documented, template).toBeTruthy()
    lists.push({ path: template.replace(/\{\w+\}/g, () => crypto.randomUUID()), keys: documented?.[1]!.split(', ') })
  }
}, timeLimit(60_000))
afterAll(() => api?.stop())

describe('sort keys', () => {
  test('every list that takes sort names the refused key and lists the keys it takes', async () => {
    const sorted = lists.filter((list) => list.keys)
    expect(sorted.map((list) => list.path.replace(/[0-9a-f-]{36}/g, '{id}')).sort()).toEqual(
      ['/api/v1/notifications', '/api/v1/projects/{id}/relationships', '/api/v1/projects/{id}/views', '/api/v1/projects/{id}/work-items', '/api/v1/work-items', '/api/v1/work-items/{id}/entries'].sort(),
    )
    for (const list of sorted) {
      const good = list.keys![0]!
      for (const [sort, named] of [['title', '`title`'], ['-title', '`title`'], [`${good},-nope`, '`nope`'], [`${good},`, 'An empty sort key'], ['constructor', '`constructor`']]) {
        const response = await api.request('GET', `${list.path}?sort=${encodeURIComponent(sort!)}`, { key })
        expect(response.status, `${list.path}?sort=${sort}`).toBe(400)
        expect(response.body.errors, `${list.path}?sort=${sort}`).toHaveLength(1)
        const [error] = response.body.errors
        expect(error.field).toBe('sort')
        expect(error.message).toStartWith(named!)
        expect(error.message).toContain(`allowed: ${list.keys!.join(', ')} (\`-\` before a key for descending)`)
      }
      // A key far too long is named shortened.
      const long = await api.request('GET', `${list.path}?sort=${'x'.repeat(150)}`, { key })
      expect(long.body.errors[0].message).toStartWith(`\`${'x'.repeat(64)}…\` is no sort key`)
    }
  })

  test('a list that takes no sort refuses the parameter, naming it', async () => {
    const unsorted = lists.filter((list) => !list.keys)
    expect(unsorted.length).toBeGreaterThan(10)
    for (const list of unsorted) {
      const response = await api.request('GET', `${list.path}?sort=title`, { key })
      expect(response.status, list.path).toBe(400)
      expect(response.body.errors.map((error: { field: string }) => error.field), list.path).toEqual(['sort'])
    }
  })

  test('the MCP list tools name the refused key the same way', async () => {
    for (const [name, args] of [['list_work_items', {}], ['list_entries', { workItemId: crypto.randomUUID() }], ['list_relationships', { projectId: crypto.randomUUID() }]] as const) {
      const response = await api.request('POST', '/mcp', {
        key,
        body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { ...args, sort: 'title' } } },
        headers: { accept: 'application/json, text/event-stream' },
      })
      const result = response.body.result
      expect(result.isError, name).toBe(true)
      expect(result.structuredContent.errors[0], name).toMatchObject({ code: 'BAD_REQUEST', field: 'sort', message: expect.stringMatching(/^`title` is no sort key of this list; allowed: /) })
    }
  })
})
