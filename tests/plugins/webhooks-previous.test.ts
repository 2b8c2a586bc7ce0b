/**
 * Update events say what changed: every `*.updated` event a webhook receives carries
 * `previous`, the old values of the fields that changed and only those (labels and custom fields
 * included), and the delivery's stored payload shows the same; created and deleted events carry
 * none. Delivered to a real loopback receiver, read once each event has arrived.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { eventually, startTestService, type TestService } from '../helpers/service'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'
import { timeLimit } from '../helpers/database'

let api: TestService
let fx: ProjectFixture
let receiver: WebhookReceiver
let adminKey: string
let webhookId: string

const admin = (method: string, path: string, body?: unknown) => api.request(method, path, { key: adminKey, body })
/** The events received so far, by type, in arrival order. */
const events = (type: string) => receiver.unique().filter((entry) => entry.json?.type === type).map((entry) => entry.json)

beforeAll(async () => {
  api = await startTestService({ config: { webhooks: { allowPrivateTargets: true, pollIntervalMs: 50 } } })
  fx = await createProjectFixture(api)
  // A superadministrator sees every project, so its webhook gets every project's events.
  const administrator = await api.createUser(fx.organizationId, 'superadministrator')
  adminKey = (await api.createKey(administrator.id, api.service.core.scopes.map((scope) => scope.name))).secret
  receiver = await startWebhookReceiver()
  const created = await admin('POST', '/api/v1/webhooks', { url: receiver.url, events: ['work_item.*', 'label.*', 'project.updated', 'entry.updated', 'project_member.updated'] })
  expect(created.status).toBe(201)
  webhookId = created.body.data.id
}, timeLimit(60_000))
afterAll(async () => {
  await receiver?.close()
  await api?.stop()
})

test('work_item.updated carries the old values of the changed fields only, labels and custom fields included', async () => {
  const label = (await admin('POST', '/api/v1/labels', { name: 'urgent', color: '#aa0000' })).body.data
  const field = (await admin('POST', '/api/v1/custom-fields', { key: 'points', name: 'Points', type: 'number' })).body.data
  await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/custom-fields`, { fieldId: field.id }, 201)
  const item = await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'First', fields: { points: 1 } }, 201)
  const path = `/api/v1/projects/${fx.projectId}/work-items/${item.id}`

  await fx.as('editor', 'PATCH', path, { status: 'in_progress' })
  await fx.as('editor', 'PATCH', path, { title: 'Renamed', labels: [label.id] })
  await fx.as('editor', 'PATCH', path, { fields: { points: 5 } })
  await fx.as('editor', 'PATCH', path, { title: 'Renamed' }) // no change: no event
  await fx.as('editor', 'DELETE', path)

  const updates = await eventually(async () => {
    const received = events('work_item.updated')
    if (received.length < 3 || !events('work_item.deleted').length) throw new Error(`${received.length} updates so far`)
    return received
  }, 15_000)
  expect(updates.map((event) => event.previous)).toEqual([{ status: 'todo' }, { title: 'First', labels: [] }, { fields: { points: 1 } }])
  expect(updates.map((event) => event.data.status)).toEqual(['in_progress', 'in_progress', 'in_progress'])
  expect(updates[1].data.labels).toEqual([{ id: label.id, name: 'urgent', color: '#aa0000' }])
  expect(updates[2].data.fields).toEqual({ points: 5 })
  expect(events('work_item.created')[0]).not.toHaveProperty('previous')
  expect(events('work_item.deleted')[0]).not.toHaveProperty('previous')
  expect(events('work_item.updated')).toHaveLength(3)

  // The delivery's stored payload is what was sent.
  const deliveries = (await admin('GET', `/api/v1/webhooks/${webhookId}/deliveries?size=100`)).body.data as { id: string; eventType: string }[]
  const first = deliveries.find((delivery) => delivery.eventType === 'work_item.updated')!
  const detail = (await admin('GET', `/api/v1/webhooks/${webhookId}/deliveries/${first.id}`)).body.data
  expect(updates.map((event) => event.previous)).toContainEqual(detail.payload.previous)
})

test('label, project, entry and member updates carry previous too', async () => {
  const label = (await admin('POST', '/api/v1/labels', { name: 'later' })).body.data
  await admin('PATCH', `/api/v1/labels/${label.id}`, { name: 'someday' })
  await fx.as('owner', 'PATCH', `/api/v1/projects/${fx.projectId}`, { name: 'Renamed project' })
  const item = await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'With an entry' }, 201)
  const entry = await fx.as('editor', 'POST', `/api/v1/work-items/${item.id}/entries`, { body: 'note' }, 201)
  await fx.as('editor', 'PATCH', `/api/v1/work-items/${item.id}/entries/${entry.id}`, { body: 'edited note' })
  await fx.as('owner', 'PATCH', `/api/v1/projects/${fx.projectId}/members/${fx.users.viewer.id}`, { accessLevel: 'editor' })

  const seen = await eventually(async () => {
    const found = ['label.updated', 'project.updated', 'entry.updated', 'project_member.updated'].map((type) => events(type).at(-1))
    if (found.some((event) => !event)) throw new Error('not yet')
    return found
  }, 15_000)
  expect(seen.map((event) => event.previous)).toEqual([{ name: 'later' }, { name: 'Fixture' }, { body: 'note' }, { accessLevel: 'viewer' }])
})
