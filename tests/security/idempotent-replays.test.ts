/**
 * Idempotent POSTs, secrets at rest and list versions, through the unit of work of writes (src/writes.ts):
 * - every documented v1 POST, sent with an Idempotency-Key and sent again, replays its first
 *   answer exactly: the status, the Location and the data (secrets shown once included);
 * - no secret the service ever showed (API keys, display keys, session tokens, share-link tokens,
 *   webhook signing secrets) is stored anywhere in the database: every column of every table is
 *   read as text and searched, idempotency records included (they hold the answers sealed);
 * - the organization's list versions move only with changes to what those lists show: signing in,
 *   creating or revoking a key leave the teams list's ETag as it was.
 * The POSTs come from the served OpenAPI document, so a POST added later without a body here fails.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { queryText } from '../../src/db'
import { startTestService, type TestResponse, type TestService, type TestUser } from '../helpers/service'

let api: TestService
let owner: TestUser
let key: string
let paths: Record<string, Record<string, any>>
const ids: Record<string, string> = {}
/** Every secret an answer showed, to be searched for in the database. */
const shown = new Set<string>()

const call = (method: string, path: string, options: { body?: unknown; headers?: Record<string, string>; key?: string } = {}) =>
  api.request(method, path, { key, ...options, unchecked: true })
const fill = (template: string) => template.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? `missing-${name}`)

/** Collects the secrets in an answer: API keys (wtk_), session tokens (wts_), invitation tokens (wti_), display keys (dpk_), share-link tokens (dsl_), webhook secrets (whsec_). */
function collectSecrets(value: unknown): void {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null)
  for (const match of text.matchAll(/\b(?:(?:wtk|wts|wti|dpk|dsl)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{16,})/g)) shown.add(match[0])
}

/** The body of each documented POST (templates with `{…}` filled from `ids`, in this order). */
const BODIES: [template: string, body: () => unknown][] = [
  ['/api/v1/users', () => ({ email: `replayed-${Math.random().toString(36).slice(2)}@example.com` })],
  ['/api/v1/users/{userId}/invite', () => ({})],
  ['/api/v1/projects', () => ({ name: `Replayed ${Math.random()}` })],
  ['/api/v1/teams', () => ({ name: `Team ${Math.random()}` })],
  ['/api/v1/teams/{teamId}/members', () => ({ userId: ids.memberId })],
  ['/api/v1/projects/{projectId}/members', () => ({ userId: ids.memberId, accessLevel: 'viewer' })],
  ['/api/v1/projects/{projectId}/teams', () => ({ teamId: ids.teamId, accessLevel: 'viewer' })],
  ['/api/v1/projects/{projectId}/work-items', () => ({ title: 'Replayed item' })],
  ['/api/v1/projects/{projectId}/views', () => ({ name: `View ${Math.random()}`, filters: { status: 'todo' } })],
  ['/api/v1/projects/{projectId}/work-items/bulk', () => ({ items: [{ title: 'Replayed one' }, { title: 'Replayed two', labels: [ids.labelId] }] })],
  ['/api/v1/labels', () => ({ name: `Label ${Math.random()}` })],
  ['/api/v1/custom-fields', () => ({ key: `k${Math.random().toString(36).slice(2, 10)}`, name: 'Replayed', type: 'number' })],
  ['/api/v1/projects/{projectId}/custom-fields', () => ({ fieldId: ids.fieldId })],
  ['/api/v1/work-items/{workItemId}/entries', () => ({ body: 'A replayed note' })],
  ['/api/v1/projects/{projectId}/relationships', () => ({ sourceWorkItemId: ids.workItemId, targetWorkItemId: ids.otherWorkItemId, type: 'blocks' })],
  ['/api/v1/pages', () => ({ name: `board-${Math.random().toString(36).slice(2)}` })],
  ['/api/v1/pages/{pageId}/access', () => ({ userId: ids.memberId })],
  ['/api/v1/pages/{pageId}/components', () => ({ type: 'horizontalBox', title: 'Open' })],
  ['/api/v1/pages/{pageId}/share-links', () => ({})],
  ['/api/v1/pages/{pageId}/components/{componentId}/alerts', () => ({ when: 'above', value: 90, forSeconds: 60 })],
  ['/api/v1/webhooks', () => ({ url: 'http://127.0.0.1:9/hook', events: ['*'] })],
  ['/api/v1/webhooks/{webhookId}/rotate-secret', () => undefined],
  ['/api/v1/webhooks/{webhookId}/test', () => undefined],
  ['/api/v1/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver', () => undefined],
  ['/api/v1/notifications/mark-read', () => ({})],
]

/** What must equal between an answer and its replay: all but the request id. */
const comparable = (response: TestResponse) => ({ status: response.status, location: response.headers.get('location'), data: response.body?.data, errors: response.body?.errors })

beforeAll(async () => {
  // Webhooks point at a closed loopback port and no worker sends: deliveries stay as created.
  api = await startTestService({ config: { webhooks: { allowPrivateTargets: true, workers: false } } })
  const organization = await api.createOrganization()
  owner = await api.createUser(organization, 'superadministrator')
  collectSecrets(owner.displayApiKey)
  key = (await api.createKey(owner.id, api.service.core.scopes.map((scope) => scope.name))).secret
  collectSecrets(key)
  paths = (await api.request('GET', '/docs/json', { unchecked: true })).body.paths
  ids.memberId = (await api.createUser(organization)).id
  const invited = await call('POST', '/api/v1/users', { body: { email: 'fixture-invitee@example.com' } })
  collectSecrets(invited.body)
  ids.userId = invited.body.data.id
  const project = await call('POST', '/api/v1/projects', { body: { name: 'Fixture' } })
  ids.projectId = project.body.data.id
  ids.teamId = (await call('POST', '/api/v1/teams', { body: { name: 'Fixture team' } })).body.data.id
  ids.workItemId = (await call('POST', fill('/api/v1/projects/{projectId}/work-items'), { body: { title: 'One' } })).body.data.id
  ids.otherWorkItemId = (await call('POST', fill('/api/v1/projects/{projectId}/work-items'), { body: { title: 'Two' } })).body.data.id
  ids.pageId = (await call('POST', '/api/v1/pages', { body: { name: 'fixture-board' } })).body.data.id
  ids.componentId = (await call('POST', fill('/api/v1/pages/{pageId}/components'), { body: { type: 'verticalBox', title: 'Fixture' } })).body.data.id
  ids.labelId = (await call('POST', '/api/v1/labels', { body: { name: 'fixture' } })).body.data.id
  ids.fieldId = (await call('POST', '/api/v1/custom-fields', { body: { key: 'fixture', name: 'Fixture', type: 'text' } })).body.data.id
  const webhook = await call('POST', '/api/v1/webhooks', { body: { url: 'http://127.0.0.1:9/fixture', events: ['*'] } })
  collectSecrets(webhook.body)
  ids.webhookId = webhook.body.data.id
  ids.deliveryId = (await call('POST', fill('/api/v1/webhooks/{webhookId}/test'))).body.data.id
})
afterAll(() => api.stop())

describe('idempotent replays equal their originals', () => {
  test('every documented v1 POST is in the table', () => {
    const documented = Object.entries(paths)
      .filter(([path, item]) => path.startsWith('/api/v1/') && item.post)
      .map(([path]) => path)
    // An import streams its body (not a JSON one to record a replay by): its retry is a 409, the project then having work items (docs/api.md).
    expect(new Set(BODIES.map(([template]) => template))).toEqual(new Set(documented.filter((path) => path !== '/api/v1/projects/{projectId}/import')))
  })

  test('status, Location and data (secrets shown once included) are the same on the replay', async () => {
    for (const [template, body] of BODIES) {
      const headers = { 'idempotency-key': `replay:${template}` }
      const payload = body()
      const first = await call('POST', fill(template), { body: payload, headers })
      expect([200, 201], `${template}: ${first.text}`).toContain(first.status)
      collectSecrets(first.body)
      const again = await call('POST', fill(template), { body: payload, headers })
      expect(again.headers.get('idempotent-replayed'), template).toBe('true')
      expect(comparable(again), template).toEqual(comparable(first))
      if (first.status === 201) expect(first.headers.get('location'), template).not.toBeNull()
    }
    // The secrets shown once were replayed too (webhook create and rotation, the share link's url).
    expect([...shown].some((secret) => secret.startsWith('whsec_'))).toBe(true)
    expect([...shown].some((secret) => secret.startsWith('wti_'))).toBe(true)
  })

  test('a replay needs the same credential: another key of the same user does not see the first answer', async () => {
    const other = (await api.createKey(owner.id, api.service.core.scopes.map((scope) => scope.name))).secret
    collectSecrets(other)
    const headers = { 'idempotency-key': 'per-key' }
    const first = await call('POST', fill('/api/v1/pages/{pageId}/share-links'), { body: {}, headers })
    const second = await call('POST', fill('/api/v1/pages/{pageId}/share-links'), { body: {}, headers, key: other })
    collectSecrets(first.body)
    collectSecrets(second.body)
    expect(second.headers.get('idempotent-replayed')).toBeNull()
    expect(second.body.data.id).not.toBe(first.body.data.id)
  })
})

describe('no secret at rest', () => {
  test('signing in shows a session token, which is searched for too', async () => {
    const session = await api.request('POST', '/account/api/sessions', { body: { email: owner.email, password: owner.password }, unchecked: true })
    expect(session.status).toBe(201)
    collectSecrets(session.body)
    const created = await api.request('POST', '/account/api/keys', {
      key: session.body.data.token,
      body: { name: 'from the account area', scopes: ['teams:read'] },
      headers: { 'idempotency-key': 'account-key' },
      unchecked: true,
    })
    expect(created.status).toBe(201)
    collectSecrets(created.body)
  })

  test('no column of any table holds a secret the service showed', async () => {
    expect(shown.size).toBeGreaterThanOrEqual(8)
    const db = api.service.core.db
    const tables = await queryText<{ name: string }>(db, `select quote_ident(table_schema) || '.' || quote_ident(table_name) as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`, [])
    expect(tables.length).toBeGreaterThan(20)
    const secrets = [...shown]
    const found: string[] = []
    for (const { name } of tables) {
      const rows = await queryText<{ row: string }>(db, `select t::text as row from ${name} t`, [])
      for (const { row } of rows) for (const secret of secrets) if (row.includes(secret)) found.push(`${name}: ${secret.slice(0, 8)}…`)
    }
    expect(found).toEqual([])
    // The replay records exist and hold sealed answers, not plain ones.
    const records = await queryText<{ response: unknown }>(db, 'select response from idempotency_keys where response is not null', [])
    expect(records.length).toBeGreaterThanOrEqual(BODIES.length)
    for (const { response } of records) expect(Object.keys(response as object)).toEqual(['sealed'])
  })
})

describe("organization list versions move only with what the lists show", () => {
  test("signing in, creating and revoking keys leave the teams list's ETag; a team change moves it", async () => {
    const etag = async () => (await call('GET', '/api/v1/teams')).headers.get('etag')
    const before = await etag()
    expect(before).not.toBeNull()
    const member = await api.createUser(owner.organizationId)
    const session = await api.request('POST', '/account/api/sessions', { body: { email: member.email, password: member.password }, unchecked: true })
    expect(session.status).toBe(201)
    const created = await api.request('POST', '/account/api/keys', { key: session.body.data.token, body: { name: 'watch', scopes: ['teams:read'] }, unchecked: true })
    expect(created.status).toBe(201)
    const revoked = await api.request('DELETE', `/account/api/keys/${created.body.data.key.id}`, { key: session.body.data.token, unchecked: true })
    expect(revoked.status).toBe(200)
    expect(await etag()).toBe(before)
    await call('POST', '/api/v1/teams', { body: { name: 'Moves the list' } })
    expect(await etag()).not.toBe(before)
  })
})
