/**
 * Webhook delivery end to end, to real loopback receivers (tests/helpers/webhook-receiver.ts):
 * every event type once, signed (verified with `standardwebhooks`), with the documented payload;
 * nothing for a rolled-back change; retries after non-2xx answers, redirects and timeouts; order
 * per webhook and project under concurrent writes, with a failing event holding back its project
 * only; the webhook creator's project visibility at delivery time; the failure window that fails a
 * delivery and disables its webhook (audited); and the 64 KiB bound on reading an answer.
 * Waits are on signals (polling with a deadline); retry delays are configured small, or skipped
 * by moving `next_attempt_at` / the failure clocks in SQL.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { AuditActor } from '../../src/audit'
import { queryText } from '../../src/db'
import type { Role } from '../../src/services/identity'
import { eventually, startTestService, type TestService, type TestUser } from '../helpers/service'
import { startWebhookReceiver, verifySignature, type Received, type WebhookReceiver } from '../helpers/webhook-receiver'
import { timeLimit, sqlOn } from '../helpers/database'

/** Retries come fast here (0.3 s), so tests wait for them instead of moving clocks, unless they inspect the state in between. */
const RETRY_SECONDS = 0.3
const WEBHOOKS = { allowPrivateTargets: true, pollIntervalMs: 50, retryDelaysSeconds: [RETRY_SECONDS, RETRY_SECONDS, RETRY_SECONDS], retryEverySeconds: RETRY_SECONDS }
const WAIT_MS = 15_000

let api: TestService
const receivers: WebhookReceiver[] = []
const services: TestService[] = []

beforeAll(async () => {
  // Without alerts: their events (alert.fired, alert.resolved) need a dashboard fed over time, and
  // arrive as tests/plugins/alerts.test.ts shows.
  api = await startTestService({ config: { webhooks: WEBHOOKS, plugins: { disabled: ['alerts'] } } })
  services.push(api)
})
afterAll(async () => {
  for (const receiver of receivers) await receiver.close()
  for (const service of services) await service.stop()
})

async function receiver(...args: Parameters<typeof startWebhookReceiver>): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver(...args)
  receivers.push(started)
  return started
}

const until = <T>(check: () => Promise<T>, timeoutMs = WAIT_MS) => eventually(check, timeoutMs)

interface Caller {
  user: TestUser
  key: string
  /** Sends a request and expects `status` (default: any 2xx); returns `data`. */
  as(method: string, path: string, body?: unknown, status?: number, headers?: Record<string, string>): Promise<any>
}

interface Tenant extends Caller {
  service: TestService
  organizationId: string
  /** Another user of the organization with a key holding every scope. */
  colleague(role?: Role): Promise<Caller>
}

async function callerOf(service: TestService, user: TestUser): Promise<Caller> {
  const key = (await service.createKey(user.id, service.service.core.scopes.map((scope) => scope.name))).secret
  return {
    user,
    key,
    async as(method, path, body, status, headers) {
      const response = await service.request(method, path, { key, body, headers })
      if (status !== undefined ? response.status !== status : response.status >= 300)
        throw new Error(`${method} ${path}: expected ${status ?? '2xx'}, got ${response.status} ${response.text}`)
      return response.body?.data
    },
  }
}

/** A new organization and an administrator of it (each test its own: webhooks are per organization). */
async function tenant(service = api, role: Role = 'administrator'): Promise<Tenant> {
  const organizationId = await service.createOrganization()
  const admin = await callerOf(service, await service.createUser(organizationId, role))
  return { ...admin, service, organizationId, colleague: async (other = 'member') => callerOf(service, await service.createUser(organizationId, other)) }
}

async function subscribe(owner: Caller, url: string, events: string[] = ['*'], projectId?: string): Promise<{ id: string; secret: string }> {
  const created = await owner.as('POST', '/api/v1/webhooks', { url, events, ...(projectId ? { projectId } : {}) }, 201)
  expect(created.secret).toMatch(/^whsec_/)
  return { id: created.id, secret: created.secret }
}

const sql = sqlOn(() => api) // a call may name another instance as its third argument

/** Every delivery of a webhook, newest first, as the API lists them. */
async function deliveries(owner: Caller, webhookId: string): Promise<any[]> {
  const all: any[] = []
  for (let page = 0; ; page++) {
    const data = await owner.as('GET', `/api/v1/webhooks/${webhookId}/deliveries?size=100&page=${page}`)
    all.push(...data)
    if (data.length < 100) return all
  }
}

/** Waits until the webhook has no pending delivery left. */
const settled = (webhookId: string, service = api) =>
  until(async () => {
    const [row] = await sql<{ n: number }>(`select count(*)::int as n from webhook_deliveries where webhook_id = $1 and status = 'pending'`, [webhookId], service)
    expect(row!.n).toBe(0)
  })

/** Checks the request (POST, JSON, Standard Webhooks headers, a valid signature) and returns its payload. */
function verified(secret: string, request: Received): any {
  expect(request.method).toBe('POST')
  expect(request.headers['content-type']).toStartWith('application/json')
  expect(request.headers['webhook-id']).toBeTruthy()
  expect(request.headers['webhook-timestamp']).toMatch(/^\d+$/)
  expect(request.headers['webhook-signature']).toMatch(/^v1,/)
  const payload = verifySignature(secret, request)
  expect(payload.id).toBe(request.headers['webhook-id'])
  expect(payload).toEqual(request.json)
  return payload
}

/** A wrong secret must not verify (the signature really depends on the secret). */
const WRONG_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`

describe('payloads', () => {
  test('every event type arrives exactly once, signed, with {type, id, occurredAt, organizationId, projectId, actor, data}; type and project filters hold', async () => {
    const t = await tenant()
    const everything = await receiver()
    const createdOnly = await receiver()
    const oneProject = await receiver()
    const startedAt = Date.now()
    const hookAll = await subscribe(t, everything.url, ['*'])
    const hookCreated = await subscribe(t, createdOnly.url, ['work_item.created'])

    // Another project: the org-wide webhooks see it, the project webhook must not.
    const other = await t.as('POST', '/api/v1/projects', { name: 'Other' })
    const otherItem = await t.as('POST', `/api/v1/projects/${other.id}/work-items`, { title: 'elsewhere' })

    // The organization's labels and custom fields: events of no project, for organization-wide webhooks only.
    const label = await t.as('POST', '/api/v1/labels', { name: 'hooked' }, 201)
    const labelRenamed = await t.as('PATCH', `/api/v1/labels/${label.id}`, { name: 'hooked, renamed' })
    await t.as('DELETE', `/api/v1/labels/${label.id}`)
    const field = await t.as('POST', '/api/v1/custom-fields', { key: 'hooked', name: 'Hooked', type: 'text' }, 201)
    const fieldRenamed = await t.as('PATCH', `/api/v1/custom-fields/${field.id}`, { name: 'Hooked, renamed' })
    await t.as('DELETE', `/api/v1/custom-fields/${field.id}`)
    const lane = await t.as('POST', '/api/v1/custom-fields', { key: 'lane', name: 'Lane', type: 'text' }, 201)
    const organizationEvents = [
      ['label.created', label],
      ['label.updated', labelRenamed],
      ['label.deleted', labelRenamed],
      ['custom_field.created', field],
      ['custom_field.updated', fieldRenamed],
      ['custom_field.deleted', fieldRenamed],
      ['custom_field.created', lane],
    ]

    /** What each change of the hooked project should deliver: its type and API v1's answer. */
    const expected: Array<{ type: string; data: unknown }> = []
    const project = await t.as('POST', '/api/v1/projects', { name: 'Hooked', description: 'receives events' })
    expected.push({ type: 'project.created', data: project })
    const hookProject = await subscribe(t, oneProject.url, ['*'], project.id)
    const p = `/api/v1/projects/${project.id}`
    expected.push({ type: 'project.updated', data: await t.as('PATCH', p, { name: 'Hooked, renamed' }) })
    // An import (here of the importer's own membership, which it already has: nothing written) is one event.
    const imported = await api.request('POST', `${p}/import`, {
      key: t.key,
      rawBody: JSON.stringify({ type: 'member', data: { userId: t.user.id, accessLevel: 'owner' } }),
      headers: { 'content-type': 'application/x-ndjson' },
    })
    expect(imported.status, imported.text).toBe(200)
    expected.push({ type: 'project.imported', data: { projectId: project.id, imported: imported.body.data.imported } })

    const colleague = await t.colleague('member')
    expected.push({ type: 'project_member.created', data: await t.as('POST', `${p}/members`, { userId: colleague.user.id, accessLevel: 'viewer' }, 201) })
    expected.push({ type: 'project_member.updated', data: await t.as('PATCH', `${p}/members/${colleague.user.id}`, { accessLevel: 'editor' }) })
    // A field enabled for the project and disabled again.
    await t.as('POST', `${p}/custom-fields`, { fieldId: lane.id }, 201)
    expected.push({ type: 'project_custom_field.created', data: { projectId: project.id, fieldId: lane.id, key: 'lane' } })
    await t.as('DELETE', `${p}/custom-fields/${lane.id}`)
    expected.push({ type: 'project_custom_field.deleted', data: { projectId: project.id, fieldId: lane.id, key: 'lane' } })

    const a = await t.as('POST', `${p}/work-items`, { title: 'A', priority: 2 }, 201)
    expected.push({ type: 'work_item.created', data: a })
    const b = await t.as('POST', `${p}/work-items`, { title: 'B', status: 'in_progress' }, 201)
    expected.push({ type: 'work_item.created', data: b })
    expected.push({ type: 'work_item.updated', data: await t.as('PATCH', `${p}/work-items/${a.id}`, { title: 'A, edited', status: 'done' }) })
    // (Delivered before the project goes: see 'events committed before a project is deleted…' for why this wait matters.)
    await until(async () => expect(createdOnly.unique().length).toBe(3))

    const e1 = await t.as('POST', `/api/v1/work-items/${a.id}/entries`, { body: 'first' }, 201)
    expected.push({ type: 'entry.created', data: e1 })
    const e2 = await t.as('POST', `/api/v1/work-items/${a.id}/entries`, { body: 'second', kind: 'note' }, 201)
    expected.push({ type: 'entry.created', data: e2 })
    expected.push({ type: 'entry.updated', data: await t.as('PATCH', `/api/v1/work-items/${a.id}/entries/${e1.id}`, { body: 'first, edited' }) })

    const link = await t.as('POST', `${p}/relationships`, { sourceWorkItemId: a.id, targetWorkItemId: b.id, type: 'blocks' }, 201)
    expected.push({ type: 'relationship.created', data: link })
    expected.push({ type: 'relationship.updated', data: await t.as('PATCH', `${p}/relationships/${link.id}`, { type: 'relates_to' }) })

    await t.as('PUT', `${p}/content-order`, { workItems: [b.id, a.id], entries: { [a.id]: [e2.id, e1.id] } })
    expected.push({ type: 'content_order.updated', data: await t.as('GET', `${p}/content-order`) })

    // Deletes carry the resource as it was just before.
    const linkBefore = await t.as('GET', `${p}/relationships/${link.id}`)
    await t.as('DELETE', `${p}/relationships/${link.id}`)
    expected.push({ type: 'relationship.deleted', data: linkBefore })
    const entryBefore = await t.as('GET', `/api/v1/work-items/${a.id}/entries/${e2.id}`)
    await t.as('DELETE', `/api/v1/work-items/${a.id}/entries/${e2.id}`)
    expected.push({ type: 'entry.deleted', data: entryBefore })
    const itemBefore = await t.as('GET', `${p}/work-items/${b.id}`)
    await t.as('DELETE', `${p}/work-items/${b.id}`)
    expected.push({ type: 'work_item.deleted', data: itemBefore })
    const memberBefore = (await t.as('GET', `${p}/members?size=100`)).find((member: any) => member.userId === colleague.user.id)
    expect(memberBefore).toBeDefined()
    await t.as('DELETE', `${p}/members/${colleague.user.id}`)
    expected.push({ type: 'project_member.deleted', data: memberBefore })
    const projectBefore = await t.as('GET', p)
    await t.as('DELETE', p)
    expected.push({ type: 'project.deleted', data: projectBefore })

    const total = expected.length + 2 + organizationEvents.length // + the other project's project.created and work_item.created
    await until(async () => expect(everything.unique().length).toBe(total))
    await until(async () => expect(createdOnly.unique().length).toBe(3))
    await until(async () => expect(oneProject.unique().length).toBe(expected.length - 1))
    for (const hook of [hookAll, hookCreated, hookProject]) await settled(hook.id)
    const finishedAt = Date.now()

    // Exactly once: every event id arrived once, at every receiver.
    for (const r of [everything, createdOnly, oneProject]) {
      expect(r.duplicates()).toBe(0)
      expect(r.received.length).toBe(r.unique().length)
    }

    const payloads = everything.received.map((request) => verified(hookAll.secret, request))
    expect(() => verifySignature(WRONG_SECRET, everything.received[0]!)).toThrow()
    const ofProject = payloads.filter((payload) => payload.projectId === project.id)
    // One stream (webhook and project): received in the order the changes were made.
    expect(ofProject.map((payload) => payload.type)).toEqual(expected.map((change) => change.type))
    ofProject.forEach((payload, i) => {
      expect(payload).toEqual({
        type: expected[i]!.type,
        id: expect.any(String),
        occurredAt: expect.any(String),
        organizationId: t.organizationId,
        projectId: project.id,
        actor: { userId: t.user.id, via: 'rest' },
        data: expected[i]!.data,
        // An update also says what it changed (tests/plugins/webhooks-previous.test.ts checks the values).
        ...(expected[i]!.type.endsWith('.updated') ? { previous: expect.any(Object) } : {}),
      })
      const occurred = Date.parse(payload.occurredAt)
      expect(occurred).toBeGreaterThanOrEqual(startedAt - 1000)
      expect(occurred).toBeLessThanOrEqual(finishedAt + 1000)
    })
    expect(new Set(payloads.map((payload) => payload.id)).size).toBe(payloads.length)
    const elsewhere = payloads.filter((payload) => payload.projectId === other.id)
    expect(elsewhere.map((payload) => [payload.type, payload.data])).toEqual([
      ['project.created', other],
      ['work_item.created', otherItem],
    ])
    expect(payloads.filter((payload) => payload.projectId === null).map((payload) => [payload.type, payload.data])).toEqual(organizationEvents)

    // Every declared event type was received: a new type without a case here fails this.
    const declared = api.service.core.changes.types.map((type) => type.name).sort()
    expect([...new Set(payloads.map((payload) => payload.type))].sort()).toEqual(declared)

    // events: ['work_item.created'] gets only those (of every project).
    const created = createdOnly.received.map((request) => verified(hookCreated.secret, request))
    expect(created.map((payload) => payload.type)).toEqual(['work_item.created', 'work_item.created', 'work_item.created'])
    expect(created.map((payload) => payload.data.id).sort()).toEqual([otherItem.id, a.id, b.id].sort())
    // A project's webhook gets only that project's events (from its creation on), the same payloads.
    const scoped = oneProject.received.map((request) => verified(hookProject.secret, request))
    expect(scoped.every((payload) => payload.projectId === project.id)).toBe(true)
    expect(scoped.map((payload) => payload.type)).toEqual(expected.slice(1).map((change) => change.type))
    expect(scoped.map((payload) => payload.id)).toEqual(ofProject.slice(1).map((payload) => payload.id))

    // The API lists each as delivered once (to a superadministrator: the creator no longer sees the deleted project's deliveries).
    const listed = await deliveries(await t.colleague('superadministrator'), hookAll.id)
    expect(listed).toHaveLength(total)
    for (const delivery of listed) expect(delivery).toMatchObject({ status: 'succeeded', attempts: 1, lastResponseStatus: 200, nextAttemptAt: null })
    // The creator sees the other project's deliveries and those of no project (newest first).
    expect((await deliveries(t, hookAll.id)).map((delivery) => delivery.projectId)).toEqual([...organizationEvents.map(() => null), other.id, other.id])
  }, timeLimit(60_000))

  test('a rolled-back change sends nothing; a REST change refused (409/400) sends nothing; committed ones after them arrive', async () => {
    const t = await tenant()
    const project = await t.as('POST', '/api/v1/projects', { name: 'Rollbacks' })
    const p = `/api/v1/projects/${project.id}`
    const a = await t.as('POST', `${p}/work-items`, { title: 'A' }, 201)
    const b = await t.as('POST', `${p}/work-items`, { title: 'B' }, 201)
    const colleague = await t.colleague('member')
    await t.as('POST', `${p}/members`, { userId: colleague.user.id, accessLevel: 'viewer' }, 201)
    await t.as('POST', `${p}/relationships`, { sourceWorkItemId: a.id, targetWorkItemId: b.id, type: 'blocks' }, 201)
    const r = await receiver()
    const hook = await subscribe(t, r.url, ['*'], project.id)

    const core = api.service.core
    const actor: AuditActor = { organizationId: t.organizationId, userId: t.user.id, apiKeyId: null, via: 'rest', requestId: null }
    const marked = (marker: string) => sql<{ n: number }>(`select count(*)::int as n from webhook_events where organization_id = $1 and data->>'marker' = $2`, [t.organizationId, marker])
    let recordedInside = -1
    await expect(
      core.db.transaction(async (tx) => {
        await core.changes.record(tx, actor, { type: 'work_item.updated', projectId: project.id, data: { marker: 'rolled back' } })
        // The event was written in the change's own transaction...
        const [row] = await queryText<{ n: number }>(tx, `select count(*)::int as n from webhook_events where data->>'marker' = 'rolled back'`, [])
        recordedInside = row!.n
        throw new Error('the change fails after recording')
      }),
    ).rejects.toThrow('the change fails after recording')
    expect(recordedInside).toBe(1)
    // ...and went with it.
    expect((await marked('rolled back'))[0]!.n).toBe(0)

    // Refused REST changes: a duplicate member and relationship (409), a stale If-Match (412), a content order naming a foreign work item (400).
    await t.as('POST', `${p}/members`, { userId: colleague.user.id, accessLevel: 'editor' }, 409)
    await t.as('POST', `${p}/relationships`, { sourceWorkItemId: a.id, targetWorkItemId: b.id, type: 'blocks' }, 409)
    await t.as('PATCH', `${p}/work-items/${a.id}`, { title: 'stale' }, 412, { 'if-match': '"1"' })
    await t.as('PUT', `${p}/content-order`, { workItems: [b.id, a.id], entries: { [crypto.randomUUID()]: [] } }, 400)

    await core.db.transaction(async (tx) => core.changes.record(tx, actor, { type: 'work_item.updated', projectId: project.id, data: { marker: 'committed' } }))
    const edited = await t.as('PATCH', `${p}/work-items/${a.id}`, { title: 'A, committed' })
    await until(async () => expect(r.unique().length).toBe(2))
    await settled(hook.id)
    const payloads = r.received.map((request) => verified(hook.secret, request))
    expect(payloads.map((payload) => [payload.type, payload.data])).toEqual([
      ['work_item.updated', { marker: 'committed' }],
      ['work_item.updated', edited],
    ])
    expect((await marked('rolled back'))[0]!.n).toBe(0)
    expect((await marked('committed'))[0]!.n).toBe(1)
    expect(await deliveries(t, hook.id)).toHaveLength(2)
  }, timeLimit(30_000))
})

describe('retries', () => {
  test('500 then 200: the event arrives twice with the same webhook-id; the delivery succeeded on attempt 2', async () => {
    const t = await tenant()
    const project = await t.as('POST', '/api/v1/projects', { name: 'Retry' })
    const r = await receiver((request) => (request.nth === 1 ? { status: 500, body: 'try later' } : 200))
    const hook = await subscribe(t, r.url, ['work_item.created'], project.id)
    const item = await t.as('POST', `/api/v1/projects/${project.id}/work-items`, { title: 'retried' }, 201)

    await until(async () => expect(r.received.length).toBe(2))
    await settled(hook.id)
    const [first, second] = r.received as [Received, Received]
    expect(second.id).toBe(first.id)
    expect(second.nth).toBe(2)
    const payload = verified(hook.secret, first)
    expect(verified(hook.secret, second)).toEqual(payload)
    expect(payload).toMatchObject({ type: 'work_item.created', data: item })
    // Not before the configured retry delay.
    expect(second.at - first.at).toBeGreaterThanOrEqual(RETRY_SECONDS * 1000 - 20)

    const [delivery] = await deliveries(t, hook.id)
    expect(delivery).toMatchObject({ eventId: first.id, eventType: 'work_item.created', projectId: project.id, status: 'succeeded', attempts: 2, lastResponseStatus: 200, lastError: null, nextAttemptAt: null })
    expect(delivery.deliveredAt).toBeTruthy()
    const detail = await t.as('GET', `/api/v1/webhooks/${hook.id}/deliveries/${delivery.id}`)
    expect(detail.payload).toEqual(payload)
    expect(detail.lastResponseBody).toBe('ok')
    expect(r.received.length).toBe(2)
  })

  test('a 3xx is a failure that is not followed: the redirect target gets nothing, and the event is retried', async () => {
    const t = await tenant()
    const project = await t.as('POST', '/api/v1/projects', { name: 'Redirect' })
    const target = await receiver()
    let answerSecond: (status: number) => void = () => {}
    const r = await receiver((request) =>
      request.nth === 1 ? { status: 302, headers: { location: target.urlFor('/moved') } } : new Promise<number>((resolve) => (answerSecond = resolve)),
    )
    const hook = await subscribe(t, r.url, ['*'], project.id)
    await t.as('PATCH', `/api/v1/projects/${project.id}`, { name: 'Redirect, renamed' })

    // The retry is in flight (held by the receiver): the first attempt is on record as a failed redirect.
    await until(async () => expect(r.received.length).toBe(2))
    const [pending] = await deliveries(t, hook.id)
    expect(pending).toMatchObject({ status: 'pending', attempts: 1, lastResponseStatus: 302 })
    expect(pending.lastError).toContain('redirect')
    expect(pending.lastError).toContain('not followed')
    expect(target.received).toHaveLength(0)
    answerSecond(204)

    await settled(hook.id)
    const [delivery] = await deliveries(t, hook.id)
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 2, lastResponseStatus: 204 })
    expect(r.received.map((request) => request.id)).toEqual([pending.eventId, pending.eventId])
    for (const request of r.received) verified(hook.secret, request)
    expect(target.received).toHaveLength(0)
  })

  test('a stalled receiver: the attempt times out (timeoutMs), and the retry succeeds', async () => {
    // Its own service: a 300 ms timeout, and the default 5 s retry delay, skipped in SQL once the failure is inspected.
    const slow = await startTestService({ config: { webhooks: { allowPrivateTargets: true, pollIntervalMs: 50, timeoutMs: 300 } } })
    services.push(slow)
    const t = await tenant(slow)
    const project = await t.as('POST', '/api/v1/projects', { name: 'Slow' })
    const r = await receiver((request) => (request.nth === 1 ? 'stall' : 200))
    const hook = await subscribe(t, r.url, ['*'], project.id)
    await t.as('POST', `/api/v1/projects/${project.id}/work-items`, { title: 'slowly' }, 201)

    const failed = await until(async () => {
      const [delivery] = await deliveries(t, hook.id)
      expect(delivery.attempts).toBe(1)
      return delivery
    })
    expect(failed).toMatchObject({ status: 'pending', lastResponseStatus: null })
    expect(failed.lastError).toMatch(/no answer within 0\.3 s/)
    expect(failed.lastDurationMs).toBeGreaterThanOrEqual(290)
    expect(failed.lastDurationMs).toBeLessThan(3000)
    // The next attempt waits for the retry delay (5 s by default).
    expect(Date.parse(failed.nextAttemptAt) - Date.parse(failed.lastAttemptAt)).toBeGreaterThanOrEqual(4000)
    // The sender hung up on the stalled request.
    await until(async () => expect(r.received[0]!.abortedAt).toBeDefined())
    expect(r.received).toHaveLength(1)

    await sql(`update webhook_deliveries set next_attempt_at = now() where webhook_id = $1 and status = 'pending'`, [hook.id], slow)
    await settled(hook.id, slow)
    const [delivery] = await deliveries(t, hook.id)
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 2, lastResponseStatus: 200, lastError: null })
    expect(r.received.map((request) => request.id)).toEqual([failed.eventId, failed.eventId])
    for (const request of r.received) verified(hook.secret, request)
  })
})

describe('order', () => {
  test('40 concurrent PATCHes of one work item and 20 creates arrive in the per-project sequence; updatedAt strictly increases to the final GET', async () => {
    const t = await tenant()
    const project = await t.as('POST', '/api/v1/projects', { name: 'Busy' })
    const p = `/api/v1/projects/${project.id}`
    const item = await t.as('POST', `${p}/work-items`, { title: 'hot' }, 201)
    const r = await receiver()
    const hook = await subscribe(t, r.url, ['*'], project.id)

    const answers = await Promise.all([
      ...Array.from({ length: 40 }, (_, i) => t.service.request('PATCH', `${p}/work-items/${item.id}`, { key: t.key, body: { title: `hot ${i}`, priority: i % 5 } })),
      ...Array.from({ length: 20 }, (_, i) => t.service.request('POST', `${p}/work-items`, { key: t.key, body: { title: `new ${i}` } })),
    ])
    expect(answers.map((answer) => answer.status).filter((status) => status >= 300)).toEqual([])
    const final = await t.as('GET', `${p}/work-items/${item.id}`)

    await until(async () => expect(r.unique().length).toBe(60))
    await settled(hook.id)
    expect(r.duplicates()).toBe(0)
    const payloads = r.received.map((request) => verified(hook.secret, request))
    const seqs = new Map(
      (await sql<{ id: string; seq: string }>(`select id, seq from webhook_events where organization_id = $1 and project_id = $2`, [t.organizationId, project.id])).map((row) => [
        row.id,
        Number(row.seq),
      ]),
    )
    const arrived = payloads.map((payload) => seqs.get(payload.id)!)
    expect(arrived.every((seq) => Number.isInteger(seq))).toBe(true)
    expect(arrived).toEqual([...arrived].sort((x, y) => x - y))
    expect(new Set(arrived).size).toBe(60)

    const updates = payloads.filter((payload) => payload.type === 'work_item.updated' && payload.data.id === item.id)
    expect(updates).toHaveLength(40)
    const times = updates.map((payload) => Date.parse(payload.data.updatedAt))
    for (let i = 1; i < times.length; i++) expect(times[i]!).toBeGreaterThan(times[i - 1]!)
    expect(updates.at(-1)!.data).toEqual(final)
    // Every answer of the 60 requests is what was delivered for it (as data, whatever the key order).
    for (const answer of answers) {
      const data = answer.body.data
      const match = payloads.filter((payload) => payload.data.id === data.id && payload.data.updatedAt === data.updatedAt)
      expect(match).toHaveLength(1)
      expect(match[0].data).toEqual(data)
    }
  }, timeLimit(60_000))

  test("while a project's first event waits for a retry, its later events wait behind it; another project's go out", async () => {
    const t = await tenant()
    const held = await t.as('POST', '/api/v1/projects', { name: 'Held' })
    const free = await t.as('POST', '/api/v1/projects', { name: 'Free' })
    let blocked: string | undefined
    let failing = true
    const r = await receiver((request) => {
      if (request.json?.projectId !== held.id) return 200
      blocked ??= request.id
      return request.id === blocked && failing ? 500 : 200
    })
    const hook = await subscribe(t, r.url, ['*'])
    const heldItems = []
    for (const title of ['h1', 'h2', 'h3']) heldItems.push(await t.as('POST', `/api/v1/projects/${held.id}/work-items`, { title }, 201))
    const freeItems = []
    for (const title of ['f1', 'f2', 'f3']) freeItems.push(await t.as('POST', `/api/v1/projects/${free.id}/work-items`, { title }, 201))

    // The free project's events all arrive while the held project's head keeps failing (three attempts at least).
    await until(async () => {
      expect(r.unique().filter((request) => request.json?.projectId === free.id)).toHaveLength(3)
      expect(r.received.filter((request) => request.id === blocked).length).toBeGreaterThanOrEqual(3)
    })
    const ofHeld = r.received.filter((request) => request.json?.projectId === held.id)
    expect(new Set(ofHeld.map((request) => request.id))).toEqual(new Set([blocked!]))
    expect(ofHeld[0]!.json.data).toEqual(heldItems[0])
    const waiting = (await deliveries(t, hook.id)).filter((delivery) => delivery.projectId === held.id)
    expect(waiting.map((delivery) => [delivery.status, delivery.attempts > 0]).sort()).toEqual([
      ['pending', false],
      ['pending', false],
      ['pending', true],
    ])

    failing = false
    await until(async () => expect(r.unique().filter((request) => request.json?.projectId === held.id)).toHaveLength(3))
    await settled(hook.id)
    const heldOrder = r.unique().filter((request) => request.json?.projectId === held.id)
    expect(heldOrder.map((request) => request.json.data.id)).toEqual(heldItems.map((item) => item.id))
    expect(r.unique().filter((request) => request.json?.projectId === free.id).map((request) => request.json.data.id)).toEqual(freeItems.map((item) => item.id))
    for (const request of r.received) verified(hook.secret, request)
  }, timeLimit(30_000))

  test("one organization's backlog does not hold back another's events: organizations with due work are claimed in turn", async () => {
    // One worker taking two streams a claim, so the order of claims shows in the order of arrivals.
    const own = await startTestService({ config: { webhooks: { ...WEBHOOKS, concurrency: 1, streamsPerClaim: 2, batchSize: 30 } } })
    services.push(own)
    const busy = await tenant(own)
    const quiet = await tenant(own)
    const r = await receiver()
    const busyHooks = []
    for (let i = 0; i < 5; i++) busyHooks.push(await subscribe(busy, r.urlFor(`/busy-${i}`), ['*']))
    const quietHook = await subscribe(quiet, r.urlFor('/quiet'), ['*'])
    // Queued together, the busy organization's 150 (5 streams of 30) due before the quiet one's single delivery.
    await sql(
      `with queued as (
         select h.organization_id, h.webhook_id, gen_random_uuid() as event_id, g as seq, now() - interval '1 minute' + (h.after_ms + g) * interval '1 ms' as due
         from unnest($1::uuid[], $2::uuid[], $3::int[], $5::int[]) as h(organization_id, webhook_id, n, after_ms), generate_series(1, h.n) g
       ),
       e as (insert into webhook_events (id, organization_id, seq, type, via, data) select event_id, organization_id, seq, 'ping', 'api', '{}' from queued)
       insert into webhook_deliveries (id, organization_id, webhook_id, event_id, project_key, seq, next_attempt_at)
       select gen_random_uuid(), organization_id, webhook_id, event_id, $4, seq, due from queued`,
      [
        [...busyHooks.map(() => busy.organizationId), quiet.organizationId],
        [...busyHooks.map((hook) => hook.id), quietHook.id],
        [...busyHooks.map(() => 30), 1],
        '00000000-0000-0000-0000-000000000000',
        [...busyHooks.map(() => 0), 1000],
      ],
      own,
    )
    await until(async () => expect(r.unique().length).toBe(151))
    // The first claim takes two of the busy streams (60 deliveries); the next one starts with the quiet organization
    // (claiming by due time alone, it came after two more busy streams: 121st).
    const quietArrival = r.unique().findIndex((request) => request.path === '/quiet')
    expect(quietArrival).toBeGreaterThanOrEqual(0)
    expect(quietArrival).toBeLessThan(90)
    for (let i = 0; i < 5; i++) {
      const seqs = r.unique(`/busy-${i}`).map((request) => request.id)
      const expected = (await sql<{ id: string }>(`select event_id as id from webhook_deliveries where webhook_id = $1 order by seq`, [busyHooks[i]!.id], own)).map((row) => row.id)
      expect(seqs).toEqual(expected)
    }
  }, timeLimit(30_000))
})

describe('visibility', () => {
  test("a webhook gets the projects its creator sees at delivery time; a superadministrator's gets all; project.deleted of a visible project arrives", async () => {
    const organizationId = await api.createOrganization()
    const owner = await callerOf(api, await api.createUser(organizationId, 'member'))
    const admin = await callerOf(api, await api.createUser(organizationId, 'administrator'))
    const chief = await callerOf(api, await api.createUser(organizationId, 'superadministrator'))
    const hidden = await owner.as('POST', '/api/v1/projects', { name: 'X, hidden from the admin' })
    const shared = await owner.as('POST', '/api/v1/projects', { name: 'Y, shared with the admin' })
    await owner.as('POST', `/api/v1/projects/${shared.id}/members`, { userId: admin.user.id, accessLevel: 'viewer' }, 201)
    const adminReceiver = await receiver()
    const chiefReceiver = await receiver()
    const adminHook = await subscribe(admin, adminReceiver.url, ['*'])
    const chiefHook = await subscribe(chief, chiefReceiver.url, ['*'])
    const ofProject = (r: WebhookReceiver, projectId: string) => r.unique().filter((request) => request.json?.projectId === projectId)

    const x1 = await owner.as('POST', `/api/v1/projects/${hidden.id}/work-items`, { title: 'x1' }, 201)
    const y1 = await owner.as('POST', `/api/v1/projects/${shared.id}/work-items`, { title: 'y1' }, 201)
    await until(async () => {
      expect(ofProject(adminReceiver, shared.id)).toHaveLength(1)
      expect(ofProject(chiefReceiver, hidden.id)).toHaveLength(1)
      expect(ofProject(chiefReceiver, shared.id)).toHaveLength(1)
    })
    await settled(adminHook.id)
    expect(adminReceiver.received.map((request) => request.json.data.id)).toEqual([y1.id])
    expect((await deliveries(admin, adminHook.id)).filter((delivery) => delivery.projectId === hidden.id)).toEqual([])
    expect(ofProject(chiefReceiver, hidden.id)[0]!.json.data).toEqual(x1)

    // The admin joins X: X's new events go to the admin's webhook (the dropped one does not come back).
    const joined = await owner.as('POST', `/api/v1/projects/${hidden.id}/members`, { userId: admin.user.id, accessLevel: 'viewer' }, 201)
    const x2 = await owner.as('POST', `/api/v1/projects/${hidden.id}/work-items`, { title: 'x2' }, 201)
    await until(async () => expect(ofProject(adminReceiver, hidden.id)).toHaveLength(2))
    expect(ofProject(adminReceiver, hidden.id).map((request) => [request.json.type, request.json.data])).toEqual([
      ['project_member.created', joined],
      ['work_item.created', x2],
    ])

    // Y is deleted: its last events and project.deleted still reach the admin (who could see it).
    const y2 = await owner.as('POST', `/api/v1/projects/${shared.id}/work-items`, { title: 'y2' }, 201)
    const sharedBefore = await owner.as('GET', `/api/v1/projects/${shared.id}`)
    await owner.as('DELETE', `/api/v1/projects/${shared.id}`)
    await until(async () => expect(ofProject(adminReceiver, shared.id)).toHaveLength(3))
    expect(ofProject(adminReceiver, shared.id).map((request) => [request.json.type, request.json.data])).toEqual([
      ['work_item.created', y1],
      ['work_item.created', y2],
      ['project.deleted', sharedBefore],
    ])
    await until(async () => expect(ofProject(chiefReceiver, shared.id)).toHaveLength(3))
    await settled(adminHook.id)
    await settled(chiefHook.id)
    expect(ofProject(chiefReceiver, hidden.id).map((request) => request.json.type)).toEqual(['work_item.created', 'project_member.created', 'work_item.created'])
    expect(adminReceiver.received.some((request) => request.json.data.id === x1.id)).toBe(false)
    for (const request of adminReceiver.received) verified(adminHook.secret, request)
    for (const request of chiefReceiver.received) verified(chiefHook.secret, request)
    expect(adminReceiver.duplicates() + chiefReceiver.duplicates()).toBe(0)
  }, timeLimit(30_000))
})

describe('deleted projects', () => {
  /**
   * A project's events committed while the creator could see it, still queued when the project is
   * deleted. The plugin keeps them sendable only through a `granted` project.deleted delivery in
   * the same stream (outbox.ts webhookObserver), so a webhook that does not subscribe to
   * project.deleted loses them (worker.ts DROP), and whether it does depends on how fast the
   * worker was: a '*' webhook gets the same events.
   */
  test('events committed before a project is deleted reach a webhook that does not subscribe to project.deleted, as they reach a "*" webhook', async () => {
    const t = await tenant()
    const project = await t.as('POST', '/api/v1/projects', { name: 'Short-lived' })
    const releases: Array<() => void> = []
    // Each receiver holds its first request, so the later events are still queued when the project goes.
    const hold = (request: Received) => (request.index === 0 ? new Promise<number>((resolve) => releases.push(() => resolve(200))) : 200)
    const narrow = await receiver(hold)
    const wide = await receiver(hold)
    const narrowHook = await subscribe(t, narrow.url, ['work_item.created'])
    const wideHook = await subscribe(t, wide.url, ['*'])

    const a = await t.as('POST', `/api/v1/projects/${project.id}/work-items`, { title: 'A' }, 201)
    await until(async () => {
      expect(narrow.received).toHaveLength(1)
      expect(wide.received).toHaveLength(1)
    })
    const b = await t.as('POST', `/api/v1/projects/${project.id}/work-items`, { title: 'B' }, 201)
    await t.as('DELETE', `/api/v1/projects/${project.id}`)
    for (const release of releases) release()
    await settled(narrowHook.id)
    await settled(wideHook.id)

    expect(wide.unique().map((request) => [request.json.type, request.json.data.id ?? null])).toEqual([
      ['work_item.created', a.id],
      ['work_item.created', b.id],
      ['project.deleted', project.id],
    ])
    // Fails today: B's delivery is deleted unsent (the creator no longer "sees" the deleted project).
    expect(narrow.unique().map((request) => request.json.data.id)).toEqual([a.id, b.id])
  })
})

describe('failure window', () => {
  test('past failAfterHours the next failure fails the delivery and disables the webhook (audited as system); enabled again, the stream goes on', async () => {
    const t = await tenant()
    const project = await t.as('POST', '/api/v1/projects', { name: 'Failing' })
    let status = 500
    const r = await receiver(() => status)
    const hook = await subscribe(t, r.url, ['*'], project.id)
    const items = []
    for (const title of ['e1', 'e2', 'e3']) items.push(await t.as('POST', `/api/v1/projects/${project.id}/work-items`, { title }, 201))

    await until(async () => expect(r.received.length).toBeGreaterThanOrEqual(1))
    const head = r.received[0]!.id
    const failingHook = await until(async () => {
      const webhook = await t.as('GET', `/api/v1/webhooks/${hook.id}`)
      expect(webhook.failingSince).toBeTruthy()
      return webhook
    })
    expect(failingHook).toMatchObject({ enabled: true, disabledReason: null })

    // A day and an hour of failures, as far as the clocks know: both clocks in one statement, so a retry recorded meanwhile
    // cannot disable the webhook by its clock while its head's clock is still today's (leaving the head pending).
    await sql(
      `with hook as (update webhooks set failing_since = now() - interval '25 hours' where organization_id = $1 and id = $2)
        update webhook_deliveries set first_attempt_at = now() - interval '25 hours' where organization_id = $1 and webhook_id = $2 and first_attempt_at is not null`,
      [t.organizationId, hook.id],
    )

    const disabled = await until(async () => {
      const webhook = await t.as('GET', `/api/v1/webhooks/${hook.id}`)
      expect(webhook.enabled).toBe(false)
      return webhook
    })
    expect(disabled.disabledReason).toBe('failing')
    const listed = await deliveries(t, hook.id)
    const headDelivery = listed.find((delivery) => delivery.eventId === head)
    expect(headDelivery).toMatchObject({ status: 'failed', nextAttemptAt: null, lastResponseStatus: 500 })
    expect(listed.filter((delivery) => delivery.eventId !== head).map((delivery) => [delivery.status, delivery.attempts])).toEqual([
      ['pending', 0],
      ['pending', 0],
    ])
    // Nothing but the head was ever sent.
    expect(new Set(r.received.map((request) => request.id))).toEqual(new Set([head]))
    const audit = await t.as('GET', '/api/v1/audit-logs?action=webhook.disabled')
    expect(audit).toHaveLength(1)
    expect(audit[0]).toMatchObject({ action: 'webhook.disabled', via: 'system', actorUserId: null, resourceType: 'webhook', resourceId: hook.id })

    status = 200
    const headAttempts = r.received.length
    const enabled = await t.as('PATCH', `/api/v1/webhooks/${hook.id}`, { enabled: true })
    expect(enabled).toMatchObject({ enabled: true, disabledReason: null, failingSince: null })
    await until(async () => expect(r.unique().length).toBe(3))
    await settled(hook.id)
    expect(r.unique().map((request) => request.json.data.id)).toEqual(items.map((item) => item.id))
    // The failed head is not sent again.
    expect(r.received.filter((request) => request.id === head)).toHaveLength(headAttempts)
    expect(r.received.length).toBe(headAttempts + 2)
    for (const request of r.received) verified(hook.secret, request)
    expect((await t.as('GET', `/api/v1/webhooks/${hook.id}`)).lastSuccessAt).toBeTruthy()
  }, timeLimit(30_000))
})

describe('answers', () => {
  test('at most 64 KiB of an answer is read: an endless 200 body still succeeds quickly, 2 KiB of it kept', async () => {
    const t = await tenant()
    const project = await t.as('POST', '/api/v1/projects', { name: 'Chatty' })
    const r = await receiver((request) => (request.json?.type === 'work_item.created' ? { status: 200, bodyBytes: 'endless' } : { status: 200, bodyBytes: 8 * 1024 * 1024 }))
    const hook = await subscribe(t, r.url, ['*'], project.id)
    await t.as('POST', `/api/v1/projects/${project.id}/work-items`, { title: 'endless' }, 201)
    await t.as('PATCH', `/api/v1/projects/${project.id}`, { name: 'huge' })

    await settled(hook.id)
    const listed = await deliveries(t, hook.id)
    expect(listed).toHaveLength(2)
    for (const delivery of listed) {
      expect(delivery).toMatchObject({ status: 'succeeded', attempts: 1, lastResponseStatus: 200 })
      // Well inside the 10 s timeout: the sender stopped reading rather than waiting for an end.
      expect(delivery.lastDurationMs).toBeLessThan(3000)
      const detail = await t.as('GET', `/api/v1/webhooks/${hook.id}/deliveries/${delivery.id}`)
      expect(detail.lastResponseBody.length).toBeGreaterThan(0)
      expect(Buffer.byteLength(detail.lastResponseBody)).toBeLessThanOrEqual(2048)
      expect(detail.lastResponseBody).toMatch(/^x+$/)
    }
    // The sender hung up on the endless answer.
    await until(async () => expect(r.received[0]!.abortedAt).toBeDefined())
    expect(r.received).toHaveLength(2)
    expect(r.duplicates()).toBe(0)
  })
})
