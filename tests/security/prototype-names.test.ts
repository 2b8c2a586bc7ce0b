/**
 * Names a client chooses are looked up among the service's own names only: filter and sort keys,
 * filter operators and values, MCP argument names, custom field keys and config settings. Every
 * Object.prototype name (`constructor`, `toString`, `__proto__`, …) is refused with a 400 naming
 * its parameter, as unknown as any other name: never a 500, never an unexpected error in the log;
 * and a required custom field keyed `constructor` is enforced like any other.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { registry } from '../../plugins'
import { SessionsRef } from '../../plugins/auth/api'
import { loadConfig } from '../../src/config'
import { timeLimit } from '../helpers/database'
import { capturingLogger } from '../helpers/logger'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestResponse, type TestService } from '../helpers/service'

/** Every name a plain object answers without holding it. */
const PROTOTYPE_NAMES = [...new Set([...Object.getOwnPropertyNames(Object.prototype), '__proto__'])]

let api: TestService
let fx: ProjectFixture
let key: string
let sessionToken: string
const lines: Array<{ level: string; message: string }> = []
/** Real ids by path parameter name; any other id is a random UUID (input is checked before visibility). */
const ids: Record<string, string> = {}
/** The list operations of the served OpenAPI document: every GET taking `page`, and the search. */
let lists: Array<{ path: string; session: boolean }> = []

beforeAll(async () => {
  api = await startTestService({ log: capturingLogger(lines) })
  fx = await createProjectFixture(api)
  const superadministrator = await api.createUser(fx.organizationId, 'superadministrator')
  key = (await api.createKey(superadministrator.id, api.service.core.scopes.map((scope) => scope.name))).secret
  const sessions = api.service.core.services.get(SessionsRef)
  sessionToken = (await sessions.start((await sessions.verifyCredentials(superadministrator.email, superadministrator.password))!, 'mobile', null)).token
  ids.projectId = fx.projectId
  ids.workItemId = (await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'An item' })).id
  const stage = await created('/api/v1/custom-fields', { key: 'stage', name: 'Stage', type: 'single_select', options: [{ name: 'Doing' }] })
  await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/custom-fields`, { fieldId: stage.id }, 201)

  const document = (await api.request('GET', '/docs/json')).body
  for (const [path, operations] of Object.entries<any>(document.paths)) {
    const parameters: any[] = operations.get?.parameters ?? []
    if (!parameters.some((parameter) => parameter.in === 'query' && parameter.name === 'page')) continue
    lists.push({ path: withIds(path), session: JSON.stringify(operations.get.security).includes('sessionToken') })
  }
  lists.push({ path: `/api/v1/projects/${fx.projectId}/search?q=item`, session: false })
  lists = lists.map((list) => ({ ...list, path: list.path.includes('?') ? `${list.path}&` : `${list.path}?` }))
}, timeLimit(60_000))
afterAll(() => api?.stop())

async function created(path: string, body: unknown) {
  const response = await api.request('POST', path, { key, body })
  if (response.status !== 201) throw new Error(`POST ${path}: ${response.status} ${response.text}`)
  return response.body.data
}

const withIds = (template: string) => template.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? crypto.randomUUID())
const get = (path: string, session = false) => api.request('GET', path, { headers: { authorization: `Bearer ${session ? sessionToken : key}` } })

/** Fails on any error line logged since the test began (an unexpected error is logged as one). */
function expectNothingUnexpected(from: number) {
  expect(lines.slice(from).filter((line) => line.level === 'error')).toEqual([])
}

/** A 400 whose errors name `field`; `message` (when given) matches the error naming it. */
function expectRefused(response: TestResponse, field: string, message?: RegExp) {
  const context = `${field}: ${response.status} ${response.text.slice(0, 300)}`
  expect(response.status, context).toBe(400)
  const named = response.body.errors.find((error: { field?: string }) => error.field === field)
  expect(named, context).toBeDefined()
  if (message) expect(named.message, context).toMatch(message)
}

/** A tool call with its arguments sent as written (`__proto__` included as an own key); its result. */
async function callTool(name: string, args: Record<string, unknown>) {
  const response = await api.request('POST', '/mcp', {
    key,
    body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
    headers: { accept: 'application/json, text/event-stream' },
  })
  expect(response.status, response.text).toBe(200)
  expect(response.body.error, response.text).toBeUndefined()
  return response.body.result as { isError?: boolean; structuredContent: any }
}

function expectToolRefused(result: { isError?: boolean; structuredContent: any }, field: string, message: RegExp, context: string) {
  const text = `${context}: ${JSON.stringify(result.structuredContent).slice(0, 300)}`
  expect(result.isError, text).toBe(true)
  expect(result.structuredContent.status, text).toBe(400)
  const named = result.structuredContent.errors.find((error: { field?: string }) => error.field === field)
  expect(named, text).toBeDefined()
  expect(named.message, text).toMatch(message)
}

describe('prototype names', () => {
  test('as a filter or sort key of any list: 400 naming the parameter as unknown', async () => {
    const from = lines.length
    for (const { path, session } of lists)
      for (const name of PROTOTYPE_NAMES) {
        expectRefused(await get(`${path}${encodeURIComponent(name)}=1`, session), name, /unknown/i)
        for (const sort of [name, `-${name}`]) expectRefused(await get(`${path}sort=${encodeURIComponent(sort)}`, session), 'sort', /unknown|no sort/i)
      }
    expectNothingUnexpected(from)
  })

  test('as a filter value or operator: 400 naming the filter; as a label name: no match', async () => {
    const from = lines.length
    const items = `/api/v1/projects/${fx.projectId}/work-items?`
    for (const name of PROTOTYPE_NAMES) {
      const value = encodeURIComponent(name)
      expectRefused(await get(`${items}status=${value}`), 'status')
      expectRefused(await get(`${items}priority=${value}:1`), 'priority')
      expectRefused(await get(`${items}createdAt=${value}:2026-01-01T00:00:00Z`), 'createdAt')
      expectRefused(await get(`${items}field.stage=${value}`), 'field.stage')
      expectRefused(await get(`/api/v1/work-items/${ids.workItemId}/entries?kind=${value}`), 'kind')
      const labelled = await get(`${items}label=${value}`)
      expect(labelled.status, labelled.text).toBe(200)
      expect(labelled.body.data).toEqual([])
    }
    expectNothingUnexpected(from)
  })

  test('as an argument or sort key of any MCP list tool: a refused call naming it', async () => {
    const from = lines.length
    const listed = await api.request('POST', '/mcp', { key, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } })
    const tools = (listed.body.result.tools as Array<{ name: string; inputSchema: any }>).filter((tool) => tool.inputSchema.properties?.page || tool.name === 'search_project')
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['list_work_items', 'list_entries', 'list_relationships', 'list_audit_logs', 'search_project']))
    for (const tool of tools) {
      const required: Record<string, unknown> = {}
      for (const name of tool.inputSchema.required ?? []) required[name] = name === 'q' ? 'item' : (ids[name] ?? crypto.randomUUID())
      for (const name of PROTOTYPE_NAMES) {
        expectToolRefused(await callTool(tool.name, { ...required, [name]: '1' }), name, /unknown/i, `${tool.name} ${name}`)
        for (const sort of [name, `-${name}`]) expectToolRefused(await callTool(tool.name, { ...required, sort }), 'sort', /unknown|no sort/i, `${tool.name} sort=${sort}`)
      }
    }
    expectNothingUnexpected(from)
  })

  test('as custom field keys: a required field keyed constructor is enforced; other names are refused naming the key', async () => {
    const from = lines.length
    const projectId = (await fx.as('owner', 'POST', '/api/v1/projects', { name: 'Prototype fields' })).id
    const items = `/api/v1/projects/${projectId}/work-items`
    const field = await created('/api/v1/custom-fields', { key: 'constructor', name: 'Constructor', type: 'text', required: true })
    await fx.as('owner', 'POST', `/api/v1/projects/${projectId}/custom-fields`, { fieldId: field.id }, 201)

    for (const body of [{ title: 'No fields' }, { title: 'Empty fields', fields: {} }, { title: 'Cleared', fields: { constructor: null } }])
      expectRefused(await api.request('POST', items, { key, body }), 'fields.constructor', /required/i)
    const item = await created(items, { title: 'Built', fields: { constructor: 'made' } })
    expect(item.fields).toEqual({ constructor: 'made' })
    expectRefused(await api.request('PATCH', `${items}/${item.id}`, { key, body: { fields: { constructor: null } } }), 'fields.constructor', /cannot be cleared/)
    expect((await get(`${items}?field.constructor=made`)).body.data.map((each: { id: string }) => each.id)).toEqual([item.id])
    expect((await get(`${items}?sort=-field.constructor`)).status).toBe(200)
    expectToolRefused(await callTool('create_work_item', { projectId, title: 'No fields' }), 'fields.constructor', /required/i, 'create_work_item')
    // Through MCP, whose tool schemas name the organization's fields: `constructor` is read as sent or not at all.
    const byTool = await callTool('create_work_item', { projectId, title: 'By tool', fields: { constructor: 'tool made' } })
    expect(byTool.isError, JSON.stringify(byTool.structuredContent)).toBeUndefined()
    expect(byTool.structuredContent.fields).toEqual({ constructor: 'tool made' })
    const untouched = await callTool('update_work_item', { projectId, workItemId: byTool.structuredContent.id, title: 'Renamed', fields: {} })
    expect(untouched.isError, JSON.stringify(untouched.structuredContent)).toBeUndefined()
    expect(untouched.structuredContent.fields).toEqual({ constructor: 'tool made' })
    expectToolRefused(await callTool('update_work_item', { projectId, workItemId: byTool.structuredContent.id, fields: { constructor: null } }), 'fields.constructor', /cannot be cleared/, 'update_work_item')

    for (const name of PROTOTYPE_NAMES.filter((name) => name !== 'constructor')) {
      expectRefused(await api.request('POST', items, { key, body: { title: 'Other', fields: { constructor: 'made', [name]: 'x' } } }), `fields.${name}`, /no custom field/i)
      expectRefused(await api.request('POST', '/api/v1/custom-fields', { key, body: { key: name, name: 'Other', type: 'text' } }), 'key')
    }
    expectNothingUnexpected(from)
  })
})

test('config refuses a setting named after an Object.prototype property in any section', () => {
  for (const name of PROTOTYPE_NAMES)
    for (const section of ['server', 'database', 'plugins', 'auth', 'webhooks']) {
      const raw = { [section]: { [name]: 1 } }
      expect(() => loadConfig(registry, { raw, env: {} }), `${section}.${name}`).toThrow(`config ${section}.${name}: `)
    }
})
