/**
 * The organization audit log shows an administrator the organization-level records and those of
 * projects they can see; records of other projects are left out, the same on REST and
 * MCP. A superadministrator sees every record.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let http: Listening
let adminKey: string
let superKey: string
let hidden: { projectId: string; workItemId: string; entryBody: string; title: string }
let shared: { projectId: string; title: string }
let teamId: string

beforeAll(async () => {
  api = await startTestService()
  http = listen(api)
  const organization = await api.createOrganization()
  const owner = await api.createUser(organization)
  const admin = await api.createUser(organization, 'administrator')
  const superadmin = await api.createUser(organization, 'superadministrator')
  const scopes = api.service.core.scopes.map((scope) => scope.name)
  const ownerKey = (await api.createKey(owner.id, scopes)).secret
  adminKey = (await api.createKey(admin.id, scopes)).secret
  superKey = (await api.createKey(superadmin.id, scopes)).secret
  const as = async (key: string, method: string, path: string, body?: unknown) => {
    const response = await api.request(method, path, { key, body })
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
    return response.body.data
  }
  const project = await as(ownerKey, 'POST', '/api/v1/projects', { name: 'Secret acquisition' })
  const title = 'Buy competitor quietly'
  const item = await as(ownerKey, 'POST', `/api/v1/projects/${project.id}/work-items`, { title })
  const entryBody = 'Offer 40M, walk away at 55M'
  await as(ownerKey, 'POST', `/api/v1/work-items/${item.id}/entries`, { body: entryBody })
  hidden = { projectId: project.id, workItemId: item.id, entryBody, title }
  const visible = await as(ownerKey, 'POST', '/api/v1/projects', { name: 'Open roadmap' })
  await as(ownerKey, 'POST', `/api/v1/projects/${visible.id}/members`, { userId: admin.id, accessLevel: 'viewer' })
  await as(ownerKey, 'POST', `/api/v1/projects/${visible.id}/work-items`, { title: 'Publish roadmap' })
  shared = { projectId: visible.id, title: 'Publish roadmap' }
  teamId = (await as(adminKey, 'POST', '/api/v1/teams', { name: 'Finance' })).id
})
afterAll(async () => {
  http.stop()
  await api.stop()
})

const everything = async (key: string, query: string) => {
  const response = await api.request('GET', `/api/v1/audit-logs?size=100${query}`, { key })
  expect(response.status).toBe(200)
  return response.body.data as Array<{ projectId: string | null; action: string; resourceId: string; changes: unknown }>
}

describe('GET /api/v1/audit-logs', () => {
  test('an administrator sees organization records and visible projects, never a project they cannot open', async () => {
    expect((await api.request('GET', `/api/v1/projects/${hidden.projectId}`, { key: adminKey })).status).toBe(404)
    for (const query of ['', '&action=entry.*', '&action=work_item.created', '&action=project.*']) {
      const records = await everything(adminKey, query)
      const text = JSON.stringify(records)
      expect(records.some((record) => record.projectId === hidden.projectId)).toBe(false)
      expect(text).not.toContain(hidden.entryBody)
      expect(text).not.toContain(hidden.title)
      expect(text).not.toContain(hidden.projectId)
    }
    const all = await everything(adminKey, '')
    expect(all.some((record) => record.action === 'team.created' && record.resourceId === teamId)).toBe(true)
    expect(JSON.stringify(all)).toContain(shared.title)
  })

  test('the totals count only what the administrator may see', async () => {
    const response = await api.request('GET', '/api/v1/audit-logs?size=1&action=entry.*', { key: adminKey })
    expect(response.body.meta.totalItems).toBe(0)
    expect(response.body.data).toEqual([])
  })

  test('a superadministrator sees every project', async () => {
    const records = await everything(superKey, '&action=entry.*')
    expect(JSON.stringify(records)).toContain(hidden.entryBody)
  })
})

describe('MCP list_audit_logs', () => {
  let client: Client
  beforeAll(async () => {
    client = await connectMcp(http.url, adminKey)
  })
  afterAll(() => client.close())

  test('applies the same rule as REST', async () => {
    const outcome = await callTool(client, 'list_audit_logs', { action: 'entry.*', size: 100 })
    expect(outcome.isError).toBe(false)
    expect(JSON.stringify(outcome.data)).not.toContain(hidden.entryBody)
    expect(outcome.data.meta.totalItems).toBe(0)
    const rest = await everything(adminKey, '')
    const tool = await callTool(client, 'list_audit_logs', { size: 100 })
    expect(tool.data.items.map((record: { id: string }) => record.id)).toEqual(rest.map((record: any) => record.id))
    const project = await callTool(client, 'list_audit_logs', { projectId: hidden.projectId })
    expect(project).toMatchObject({ isError: true, code: 'NOT_FOUND' })
  })
})
