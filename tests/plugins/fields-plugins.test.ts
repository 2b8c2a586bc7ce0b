/**
 * Labels and custom fields are plugins of their own that work items use through the work-items
 * extension point: enabled, the document, the tools, the scopes and the work item carry them;
 * disabled, every trace is gone (routes 404, no scopes or tools, no `labels`/`fields` property,
 * which a create then refuses as unknown) and work items work as before.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { callTool, connectMcp, listen } from '../helpers/mcp'
import { createProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

const ALL_BUT = ['auth', 'users', 'teams', 'projects', 'work-items', 'entries', 'relationships', 'content-order', 'search', 'audit-log', 'mcp', 'account', 'display', 'push', 'webhooks', 'docs']
let enabled: TestService
let disabled: TestService

beforeAll(async () => {
  enabled = await startTestService()
  disabled = await startTestService({ plugins: ALL_BUT })
}, timeLimit(60_000))
afterAll(async () => {
  await enabled?.stop()
  await disabled?.stop()
})

/** The work item schema of `GET …/work-items/{workItemId}` in a service's document (a `$ref` to a named schema, resolved). */
async function workItemSchema(api: TestService) {
  const document = (await api.request('GET', '/docs/json')).body
  const operation = document.paths['/api/v1/projects/{projectId}/work-items/{workItemId}'].get
  return { document, item: named(document, operation.responses['200'].content['application/json'].schema.properties.data) }
}

/** A schema, or the one of components.schemas its `$ref` names. */
const named = (document: any, schema: any) => (schema.$ref ? document.components.schemas[schema.$ref.split('/').pop()] : schema)

describe('enabled', () => {
  test('the document, scopes and tools carry labels, custom fields and bulk', async () => {
    const { document, item } = await workItemSchema(enabled)
    expect(Object.keys(item.properties)).toEqual(expect.arrayContaining(['labels', 'fields']))
    for (const path of ['/api/v1/labels', '/api/v1/custom-fields', '/api/v1/projects/{projectId}/custom-fields', '/api/v1/projects/{projectId}/work-items/bulk']) expect(document.paths[path]).toBeDefined()
    const create = named(document, document.paths['/api/v1/projects/{projectId}/work-items'].post.requestBody.content['application/json'].schema)
    expect(Object.keys(create.properties)).toEqual(expect.arrayContaining(['labels', 'fields']))
    const list = document.paths['/api/v1/projects/{projectId}/work-items'].get.parameters.map((parameter: { name: string }) => parameter.name)
    expect(list).toContain('label')
    const scopes = enabled.service.core.scopes.map((scope) => scope.name)
    expect(scopes).toEqual(expect.arrayContaining(['labels:read', 'labels:write', 'custom_fields:read', 'custom_fields:write']))
    const tools = enabled.service.core.tools.map((tool) => tool.name)
    expect(tools).toEqual(expect.arrayContaining(['list_labels', 'list_custom_fields', 'bulk_create_work_items', 'bulk_update_work_items']))
    const create_tool = enabled.service.core.tools.find((tool) => tool.name === 'create_work_item')!
    expect(Object.keys((create_tool.input as unknown as { properties: object }).properties)).toEqual(expect.arrayContaining(['labels', 'fields']))
  })
})

describe("a caller's tool listing", () => {
  test("describes its own organization's custom fields, and no other's; calls are checked against them", async () => {
    const http = listen(enabled)
    const fx = await createProjectFixture(enabled)
    const other = await createProjectFixture(enabled)
    const administrator = await enabled.createUser(fx.organizationId, 'administrator')
    const adminKey = (await enabled.createKey(administrator.id, enabled.service.core.scopes.map((scope) => scope.name))).secret
    const field = (await enabled.request('POST', '/api/v1/custom-fields', { key: adminKey, body: { key: 'severity', name: 'Severity', type: 'single_select', options: [{ name: 'High' }, { name: 'Low' }] } })).body.data
    await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/custom-fields`, { fieldId: field.id }, 201)
    const ours = await connectMcp(http.url, fx.keys.editor)
    const theirs = await connectMcp(http.url, other.keys.editor)
    try {
      const listing = async (client: typeof ours) => Object.fromEntries((await client.listTools()).tools.map((tool) => [tool.name, tool.inputSchema as any]))
      const mine = await listing(ours)
      const severity = mine.create_work_item.properties.fields.properties.severity
      expect(JSON.stringify(severity)).toContain(field.options[0].id)
      expect(severity.description).toContain('High')
      expect(mine.bulk_update_work_items.properties.items.items.properties.fields.properties.severity).toBeDefined()
      expect(mine.list_work_items.properties['field.severity']).toBeDefined()
      const foreign = await listing(theirs)
      expect(foreign.create_work_item.properties.fields.properties).toEqual({})
      expect(foreign.list_work_items.properties['field.severity']).toBeUndefined()
      // The listed arguments are what a call takes: an option id works, a name of it is refused naming the key.
      const created = await callTool(ours, 'create_work_item', { projectId: fx.projectId, title: 'Described', fields: { severity: field.options[1].id } })
      expect(created.isError).toBe(false)
      expect(created.data.fields).toEqual({ severity: field.options[1].id })
      const refused = await callTool(ours, 'create_work_item', { projectId: fx.projectId, title: 'Named', fields: { severity: 'Low' } })
      expect(refused.isError).toBe(true)
      expect(refused.data.error.field).toBe('fields.severity')
      const filtered = await callTool(ours, 'list_work_items', { projectId: fx.projectId, 'field.severity': 'Low' })
      expect(filtered.data.items.map((item: { id: string }) => item.id)).toEqual([created.data.id])
    } finally {
      await ours.close()
      await theirs.close()
      http.stop()
    }
  })
})

describe('disabled', () => {
  test('no route, scope, tool or property of either remains; bulk stays (it is work items’)', async () => {
    const { document, item } = await workItemSchema(disabled)
    expect(Object.keys(item.properties)).not.toContain('labels')
    expect(Object.keys(item.properties)).not.toContain('fields')
    expect(document.paths['/api/v1/labels']).toBeUndefined()
    expect(document.paths['/api/v1/custom-fields']).toBeUndefined()
    expect(document.paths['/api/v1/projects/{projectId}/work-items/bulk']).toBeDefined()
    const list = document.paths['/api/v1/projects/{projectId}/work-items'].get.parameters.map((parameter: { name: string }) => parameter.name)
    expect(list).not.toContain('label')
    const scopeNames = disabled.service.core.enabledScopes.map((scope) => scope.name)
    expect(scopeNames.filter((name) => name.startsWith('labels:') || name.startsWith('custom_fields:'))).toEqual([])
    const tools = disabled.service.core.tools.map((tool) => tool.name)
    expect(tools.filter((name) => name.includes('label') || name.includes('custom_field'))).toEqual([])
  })

  test('work items work as before: no labels or fields shown, and either in a body is refused as unknown', async () => {
    const fx = await createProjectFixture(disabled)
    const path = `/api/v1/projects/${fx.projectId}/work-items`
    const created = await fx.as('editor', 'POST', path, { title: 'Plain' }, 201)
    expect(created).not.toHaveProperty('labels')
    expect(created).not.toHaveProperty('fields')
    const refused = await fx.call('editor', 'POST', path, { title: 'Labelled', labels: [] })
    expect(refused.status).toBe(400)
    expect(refused.body.errors[0].field).toBe('labels')
    expect((await fx.call('viewer', 'GET', `${path}?label=bug`)).status).toBe(400)
    expect((await fx.call('owner', 'GET', '/api/v1/labels')).status).toBe(404)
    const listed = await fx.as('viewer', 'GET', path)
    expect(listed).toEqual([created])
  })
})
