/**
 * Page access levels: viewers see a page and receive its messages; only editors (and
 * the page's creator and administrators) feed it. A viewer's display key gets 403 readOnlyAccess,
 * counted like any refusal and with the X-RateLimit-* headers; no access at all is still 404.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { SAMPLE_DATA } from '../helpers/display-fixture'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { signIn } from '../helpers/sessions'

let api: TestService
let creator: TestUser
let viewer: TestUser
let editor: TestUser
let teamEditor: TestUser
let admin: TestUser
let outsider: TestUser
let creatorKey: string
let page: { id: string; name: string }
let componentId: string
let clock = 1_900_000_000

async function v1(key: string, method: string, path: string, body?: unknown, status?: number) {
  const response = await api.request(method, path, { key, body })
  if (status !== undefined ? response.status !== status : response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
  return response.body.data
}

beforeAll(async () => {
  api = await startTestService()
  const organization = await api.createOrganization()
  creator = await api.createUser(organization)
  viewer = await api.createUser(organization, 'member', { password: 'viewer password' })
  editor = await api.createUser(organization)
  teamEditor = await api.createUser(organization)
  admin = await api.createUser(organization, 'administrator')
  outsider = await api.createUser(organization)
  creatorKey = (await api.createKey(creator.id, ['dashboards:read', 'dashboards:write'])).secret
  const adminKey = (await api.createKey(admin.id, ['teams:write', 'team_members:write'])).secret
  page = await v1(creatorKey, 'POST', '/api/v1/pages', { name: 'levels' })
  componentId = (await v1(creatorKey, 'POST', `/api/v1/pages/${page.id}/components`, { type: 'barChart' })).id
  const team = await v1(adminKey, 'POST', '/api/v1/teams', { name: 'Editors' })
  await v1(adminKey, 'POST', `/api/v1/teams/${team.id}/members`, { userId: teamEditor.id })
  await v1(adminKey, 'POST', `/api/v1/teams/${team.id}/members`, { userId: viewer.id })
  await v1(creatorKey, 'POST', `/api/v1/pages/${page.id}/access`, { userId: viewer.id })
  await v1(creatorKey, 'POST', `/api/v1/pages/${page.id}/access`, { userId: editor.id, level: 'editor' })
  await v1(creatorKey, 'POST', `/api/v1/pages/${page.id}/access`, { teamId: team.id, level: 'viewer' })
  // teamEditor gets editor through a second team entry below; the viewer stays a viewer in both ways.
  const editors = await v1(adminKey, 'POST', '/api/v1/teams', { name: 'Page editors' })
  await v1(adminKey, 'POST', `/api/v1/teams/${editors.id}/members`, { userId: teamEditor.id })
  await v1(creatorKey, 'POST', `/api/v1/pages/${page.id}/access`, { teamId: editors.id, level: 'editor' })
})
afterAll(() => api.stop())

const feed = (user: TestUser) =>
  api.request('POST', '/api/component', { body: { componentId, apiKey: user.displayApiKey, timestamp: ++clock, data: SAMPLE_DATA.barChart } })
const message = (user: TestUser) => api.request('POST', '/api/message', { body: { apiKey: user.displayApiKey, pageName: page.name, message: 'Deploy done' } })

describe('API v1: the level of an access entry', () => {
  test('POST defaults to viewer, takes level, GET lists it, PATCH changes it (audited)', async () => {
    const list = await v1(creatorKey, 'GET', `/api/v1/pages/${page.id}/access?size=100`)
    const levels = Object.fromEntries(list.map((entry: { principalId: string; level: string }) => [entry.principalId, entry.level]))
    expect(levels[viewer.id]).toBe('viewer')
    expect(levels[editor.id]).toBe('editor')
    const someone = await api.createUser(viewer.organizationId)
    const created = await v1(creatorKey, 'POST', `/api/v1/pages/${page.id}/access`, { userId: someone.id }, 201)
    expect(created.level).toBe('viewer')
    const patched = await v1(creatorKey, 'PATCH', `/api/v1/pages/${page.id}/access/${someone.id}`, { level: 'editor' })
    expect(patched).toMatchObject({ principalId: someone.id, principalType: 'user', level: 'editor' })
    const listed = await api.request('GET', `/api/v1/pages/${page.id}/access?size=100`, { key: creatorKey })
    expect(listed.body.data.find((entry: { principalId: string }) => entry.principalId === someone.id).level).toBe('editor')
    const [record] = await queryRows<{ changes: unknown }>(api.service.core.db, sql`select changes from audit_logs where action = 'page.access_updated' and resource_id = ${page.id}`)
    expect(record!.changes).toEqual({ before: { principalId: someone.id, level: 'viewer' }, after: { principalId: someone.id, level: 'editor' } })
    const both = await api.request('POST', `/api/v1/pages/${page.id}/access`, { key: creatorKey, body: { userId: someone.id, teamId: someone.id } })
    expect(both.status).toBe(400)
    const neither = await api.request('POST', `/api/v1/pages/${page.id}/access`, { key: creatorKey, body: { level: 'editor' } })
    expect(neither.status).toBe(400)
    expect(neither.body.errors[0].field).toBe('userId')
    const bad = await api.request('PATCH', `/api/v1/pages/${page.id}/access/${someone.id}`, { key: creatorKey, body: { level: 'owner' } })
    expect(bad.status).toBe(400)
    expect(bad.body.errors[0].field).toBe('level')
    const unknown = await api.request('PATCH', `/api/v1/pages/${page.id}/access/${outsider.id}`, { key: creatorKey, body: { level: 'editor' } })
    expect(unknown.status).toBe(404)
  })
})

describe('the display API feeds a page only at level editor', () => {
  test("a viewer's display key is 403 readOnlyAccess, counted, with the X-RateLimit headers", async () => {
    const before = await feed(editor)
    expect(before.status).toBe(200)
    const first = await feed(viewer)
    expect(first.status).toBe(403)
    expect(first.body).toMatchObject({ message: 'readOnlyAccess', detail: expect.any(String) })
    const second = await feed(viewer)
    expect(Number(second.headers.get('x-ratelimit-remaining'))).toBe(Number(first.headers.get('x-ratelimit-remaining')) - 1)
    expect(first.headers.get('x-ratelimit-limit')).not.toBeNull()
    expect(first.headers.get('x-ratelimit-reset')).not.toBeNull()
    const refused = await message(viewer)
    expect(refused.status).toBe(403)
    expect(refused.body.message).toBe('readOnlyAccess')
    expect(Number(refused.headers.get('x-ratelimit-remaining'))).toBe(Number(second.headers.get('x-ratelimit-remaining')) - 1)
  })

  test("the viewer's refused update changes nothing", async () => {
    const before = await v1(creatorKey, 'GET', `/api/v1/pages/${page.id}/components/${componentId}`)
    expect((await feed(viewer)).status).toBe(403)
    expect(await v1(creatorKey, 'GET', `/api/v1/pages/${page.id}/components/${componentId}`)).toEqual(before)
  })

  test('direct editors, team editors, the creator and administrators feed it', async () => {
    for (const user of [editor, teamEditor, creator, admin]) {
      expect((await feed(user)).status).toBe(200)
      const sent = await message(user)
      expect(sent.status).toBe(200)
    }
  })

  test('no access at all is still 404', async () => {
    const component = await feed(outsider)
    expect(component.status).toBe(404)
    expect(component.body.message).toBe('componentNotFound')
    expect((await message(outsider)).body.message).toBe('pageNotFound')
  })

  test('a viewer still sees the page', async () => {
    const session = await signIn(api, viewer)
    const read = await api.request('GET', `/api/pages/${page.name}`, { headers: { authorization: `Bearer ${session}` } })
    expect(read.status).toBe(200)
    expect(read.body.components.map((component: { id: string }) => component.id)).toContain(componentId)
  })
})
