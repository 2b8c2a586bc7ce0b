/**
 * Who manages a webhook and who reads what it sent (clarified 2026-11-24): only its
 * creator or a superadministrator changes, rotates, tests, redelivers or deletes it (another
 * administrator, who reads it, gets 403); a delivery (and its payload) is shown only to readers
 * who can see its project; and a webhook's URL never receives what its creator cannot see at
 * delivery time — an administrator cannot repoint a superadministrator's webhook, and a creator
 * who loses sight of a project receives nothing more of it, not even what was already queued.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eventually, startTestService, type TestResponse, type TestService, type TestUser } from '../helpers/service'
import { startWebhookReceiver, type Received, type WebhookReceiver } from '../helpers/webhook-receiver'
import { sqlOn } from '../helpers/database'

const WAIT_MS = 15_000
const WEBHOOKS = { allowPrivateTargets: true, pollIntervalMs: 50 }

let api: TestService
let receiver: WebhookReceiver
const services: TestService[] = []

beforeAll(async () => {
  receiver = await startWebhookReceiver()
  api = await startTestService({ config: { webhooks: WEBHOOKS } })
  services.push(api)
})
afterAll(async () => {
  for (const service of services.reverse()) await service.stop()
  await receiver?.close()
})

interface Person {
  user: TestUser
  key: string
  call(method: string, path: string, body?: unknown): Promise<TestResponse>
  /** Sends and expects a 2xx; returns `data`. */
  as(method: string, path: string, body?: unknown): Promise<any>
}

async function person(organizationId: string, role: TestUser['role'], service = api): Promise<Person> {
  const user = await service.createUser(organizationId, role)
  const key = (await service.createKey(user.id, service.service.core.scopes.map((scope) => scope.name))).secret
  const call = (method: string, path: string, body?: unknown) => service.request(method, path, { key, body })
  return {
    user,
    key,
    call,
    async as(method, path, body) {
      const response = await call(method, path, body)
      if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
      return response.body.data
    },
  }
}

/** An organization with a member who owns projects, two administrators and a superadministrator. */
async function organization(service = api) {
  const id = await service.createOrganization()
  return {
    id,
    member: await person(id, 'member', service),
    admin: await person(id, 'administrator', service),
    otherAdmin: await person(id, 'administrator', service),
    chief: await person(id, 'superadministrator', service),
  }
}

const path = () => `/hooks/${crypto.randomUUID()}`
const at = (where: string) => receiver.received.filter((request) => request.path === where)
const sql = sqlOn(() => api) // a call may name another instance as its third argument

/** Creates a webhook to a fresh receiver path. */
async function hookOf(owner: Person, body: Record<string, unknown> = {}) {
  const where = path()
  const created = await owner.as('POST', '/api/v1/webhooks', { url: receiver.urlFor(where), events: ['*'], ...body })
  return { ...created, path: where } as { id: string; secret: string; url: string; path: string }
}

/** Waits until the webhook has nothing pending. */
const settled = (webhookId: string, service = api) =>
  eventually(async () => {
    const [row] = await sql<{ n: number }>(`select count(*)::int as n from webhook_deliveries where webhook_id = $1 and status = 'pending'`, [webhookId], service)
    expect(row!.n).toBe(0)
  }, WAIT_MS)

function expectStatus(response: TestResponse, status: number, code?: string) {
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status} ${response.text}`)
  if (code) expect(response.body.errors[0].code).toBe(code)
}

describe('who manages a webhook', () => {
  test("an administrator who did not create it: 403 FORBIDDEN on PATCH, rotate-secret, test, redeliver and DELETE; GET and the list still show it; nothing changes or is queued", async () => {
    const org = await organization()
    const chiefHook = await hookOf(org.chief)
    const adminHook = await hookOf(org.admin)
    const pings = new Map<string, string>()
    for (const hook of [chiefHook, adminHook]) pings.set(hook.id, (await (hook === chiefHook ? org.chief : org.admin).as('POST', `/api/v1/webhooks/${hook.id}/test`)).id)
    await settled(chiefHook.id)
    await settled(adminHook.id)
    const stateOf = async (id: string) =>
      (await sql('select url, events, description, enabled, secret_sealed, previous_secret_sealed, updated_at::text from webhooks where id = $1', [id]))[0]
    const before = new Map([[chiefHook.id, await stateOf(chiefHook.id)], [adminHook.id, await stateOf(adminHook.id)]])
    const mine = receiver.urlFor(path())

    for (const hook of [chiefHook, adminHook]) {
      const routes: Array<[string, string, unknown?]> = [
        ['PATCH', `/api/v1/webhooks/${hook.id}`, { url: mine }],
        ['PATCH', `/api/v1/webhooks/${hook.id}`, { enabled: false }],
        ['POST', `/api/v1/webhooks/${hook.id}/rotate-secret`],
        ['POST', `/api/v1/webhooks/${hook.id}/test`],
        ['POST', `/api/v1/webhooks/${hook.id}/deliveries/${pings.get(hook.id)}/redeliver`],
        ['DELETE', `/api/v1/webhooks/${hook.id}`],
      ]
      for (const [method, route, body] of routes) {
        const response = await org.otherAdmin.call(method, route, body)
        expect(`${method} ${route} ${response.status} ${response.body.errors?.[0]?.code}`).toBe(`${method} ${route} 403 FORBIDDEN`)
        expect(response.body.errors[0].message).toContain('creator')
      }
      // Reading stays open to administrators (the configuration, never the secret).
      const read = await org.otherAdmin.call('GET', `/api/v1/webhooks/${hook.id}`)
      expect(read.status).toBe(200)
      expect(read.body.data).toMatchObject({ id: hook.id, url: hook.url })
      expect(read.body.data).not.toHaveProperty('secret')
      expect(await stateOf(hook.id)).toEqual(before.get(hook.id))
    }
    const listed = await org.otherAdmin.as('GET', '/api/v1/webhooks')
    expect(listed.map((hook: { id: string }) => hook.id).sort()).toEqual([chiefHook.id, adminHook.id].sort())
    const [deliveries] = await sql<{ n: number }>('select count(*)::int as n from webhook_deliveries where webhook_id = any($1::uuid[])', [[chiefHook.id, adminHook.id]])
    expect(deliveries!.n).toBe(2)
    expect(at(mine.slice(receiver.url.length))).toHaveLength(0)
    const audit = await org.chief.as('GET', '/api/v1/audit-logs?action=webhook.*&size=100')
    expect(audit.filter((record: { actorUserId: string }) => record.actorUserId === org.otherAdmin.user.id)).toEqual([])
  })

  test("the creator manages their own webhook, and a superadministrator anyone's", async () => {
    const org = await organization()
    const adminHook = await hookOf(org.admin)
    for (const manager of [org.admin, org.chief]) {
      expect(await manager.as('PATCH', `/api/v1/webhooks/${adminHook.id}`, { description: `by ${manager.user.role}` })).toMatchObject({ description: `by ${manager.user.role}` })
      expect((await manager.as('POST', `/api/v1/webhooks/${adminHook.id}/rotate-secret`)).secret).toStartWith('whsec_')
      const ping = await manager.as('POST', `/api/v1/webhooks/${adminHook.id}/test`)
      expect(await manager.as('POST', `/api/v1/webhooks/${adminHook.id}/deliveries/${ping.id}/redeliver`)).toMatchObject({ eventId: ping.eventId })
    }
    await settled(adminHook.id)
    expect(await org.chief.as('DELETE', `/api/v1/webhooks/${adminHook.id}`)).toEqual({ id: adminHook.id })
    const ownHook = await hookOf(org.otherAdmin)
    expect(await org.otherAdmin.as('DELETE', `/api/v1/webhooks/${ownHook.id}`)).toEqual({ id: ownHook.id })
  })
})

describe("an administrator cannot receive what they cannot see through someone else's webhook", () => {
  test("repointing a superadministrator's webhook is 403, and the hidden project's events keep going to its own URL only", async () => {
    const org = await organization()
    const hidden = await org.member.as('POST', '/api/v1/projects', { name: 'Hidden from the administrator' })
    expectStatus(await org.admin.call('GET', `/api/v1/projects/${hidden.id}`), 404)
    const chiefHook = await hookOf(org.chief, { events: ['work_item.created'] })
    const theirs = path()

    expectStatus(await org.admin.call('PATCH', `/api/v1/webhooks/${chiefHook.id}`, { url: receiver.urlFor(theirs) }), 403, 'FORBIDDEN')
    const item = await org.member.as('POST', `/api/v1/projects/${hidden.id}/work-items`, { title: 'Secret plans' })
    await eventually(async () => expect(at(chiefHook.path)).toHaveLength(1), WAIT_MS)
    await settled(chiefHook.id)
    expect(at(chiefHook.path)[0]!.json).toMatchObject({ type: 'work_item.created', data: { id: item.id, title: 'Secret plans' } })
    expect(at(theirs)).toHaveLength(0)

    // Nor can they read it afterwards: the delivery is not listed for them, and reading it is 404.
    const delivery = (await org.chief.as('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries`))[0]
    expect(delivery).toMatchObject({ projectId: hidden.id, eventType: 'work_item.created' })
    const listed = await org.admin.call('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries`)
    expect(listed.status).toBe(200)
    expect(listed.body.data).toEqual([])
    expect(listed.body.meta.totalItems).toBe(0)
    const read = await org.admin.call('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries/${delivery.id}`)
    expectStatus(read, 404, 'NOT_FOUND')
    expect(read.text).not.toContain('Secret plans')
  })
})

describe('deliveries are shown only to readers who can see their project', () => {
  test("the list and a delivery show pings and the reader's projects (with payload), 404 for others; a superadministrator sees every one", async () => {
    const org = await organization()
    const hidden = await org.member.as('POST', '/api/v1/projects', { name: 'H' })
    const visible = await org.member.as('POST', '/api/v1/projects', { name: 'V' })
    await org.member.as('POST', `/api/v1/projects/${visible.id}/members`, { userId: org.admin.user.id, accessLevel: 'viewer' })
    const chiefHook = await hookOf(org.chief, { events: ['work_item.created'] })
    const ping = await org.chief.as('POST', `/api/v1/webhooks/${chiefHook.id}/test`)
    for (let i = 0; i < 3; i++) await org.member.as('POST', `/api/v1/projects/${hidden.id}/work-items`, { title: `hidden ${i}` })
    const shown = await org.member.as('POST', `/api/v1/projects/${visible.id}/work-items`, { title: 'shown' })
    await eventually(async () => expect(at(chiefHook.path)).toHaveLength(5), WAIT_MS)
    await settled(chiefHook.id)

    const all = await org.chief.call('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries?size=100`)
    expect(all.body.meta.totalItems).toBe(5)
    const byProject = (projectId: string | null) => all.body.data.filter((entry: { projectId: string | null }) => entry.projectId === projectId)
    const hiddenDelivery = byProject(hidden.id)[0]
    const visibleDelivery = byProject(visible.id)[0]

    const theirs = await org.admin.call('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries?size=100`)
    expect(theirs.body.data.map((entry: { id: string }) => entry.id)).toEqual([visibleDelivery.id, ping.id])
    expect(theirs.body.meta).toMatchObject({ totalItems: 2, totalPages: 1 })
    // The count behind an empty page and the status filter keep to the same rule.
    expect((await org.admin.call('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries?page=3`)).body.meta.totalItems).toBe(2)
    expect((await org.admin.call('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries?status=succeeded`)).body.meta.totalItems).toBe(2)
    expect((await org.chief.call('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries?page=3`)).body.meta.totalItems).toBe(5)

    const visibleRead = await org.admin.as('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries/${visibleDelivery.id}`)
    expect(visibleRead.payload).toMatchObject({ type: 'work_item.created', data: { id: shown.id, title: 'shown' } })
    const pingRead = await org.admin.as('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries/${ping.id}`)
    expect(pingRead.payload).toMatchObject({ type: 'ping', data: { id: chiefHook.id } })
    const hiddenRead = await org.admin.call('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries/${hiddenDelivery.id}`)
    expectStatus(hiddenRead, 404, 'NOT_FOUND')
    expect(hiddenRead.text).not.toContain('hidden ')
    const chiefRead = await org.chief.as('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries/${hiddenDelivery.id}`)
    expect(chiefRead.payload.data.title).toMatch(/^hidden /)

    // A superadministrator still reads what a deleted project sent.
    await org.member.as('DELETE', `/api/v1/projects/${hidden.id}`)
    expect((await org.chief.as('GET', `/api/v1/webhooks/${chiefHook.id}/deliveries/${hiddenDelivery.id}`)).payload.data.title).toMatch(/^hidden /)
  })

  test('a creator who lost sight of a project no longer lists, reads or redelivers its deliveries', async () => {
    const org = await organization()
    const project = await org.member.as('POST', '/api/v1/projects', { name: 'Seen for a while' })
    await org.member.as('POST', `/api/v1/projects/${project.id}/members`, { userId: org.admin.user.id, accessLevel: 'viewer' })
    const hook = await hookOf(org.admin, { events: ['work_item.created'] })
    await org.member.as('POST', `/api/v1/projects/${project.id}/work-items`, { title: 'while seen' })
    await eventually(async () => expect(at(hook.path)).toHaveLength(1), WAIT_MS)
    await settled(hook.id)
    const [delivery] = await org.admin.as('GET', `/api/v1/webhooks/${hook.id}/deliveries`)
    expect(delivery.projectId).toBe(project.id)

    await org.member.as('DELETE', `/api/v1/projects/${project.id}/members/${org.admin.user.id}`)
    expect(await org.admin.as('GET', `/api/v1/webhooks/${hook.id}/deliveries`)).toEqual([])
    expectStatus(await org.admin.call('GET', `/api/v1/webhooks/${hook.id}/deliveries/${delivery.id}`), 404, 'NOT_FOUND')
    expectStatus(await org.admin.call('POST', `/api/v1/webhooks/${hook.id}/deliveries/${delivery.id}/redeliver`), 404, 'NOT_FOUND')
    const [row] = await sql<{ n: number }>('select count(*)::int as n from webhook_deliveries where webhook_id = $1', [hook.id])
    expect(row!.n).toBe(1)
  })
})

describe('a creator who loses sight of a project', () => {
  test('receives nothing more of it: not what was already queued, not what a worker had already claimed with the delivery in flight', async () => {
    // One instance takes the requests (no workers), so three events are queued before the delivering instance claims them together.
    const writer = await startTestService({ config: { webhooks: { ...WEBHOOKS, workers: false } } })
    services.push(writer)
    const org = await organization(writer)
    const project = await org.member.as('POST', `/api/v1/projects`, { name: 'Seen, then not' })
    await org.member.as('POST', `/api/v1/projects/${project.id}/members`, { userId: org.admin.user.id, accessLevel: 'viewer' })
    const held: Array<() => void> = []
    const gate = await startWebhookReceiver((request: Received) => (request.index === 0 ? new Promise<number>((resolve) => held.push(() => resolve(200))) : 200))
    try {
      const created = await org.admin.as('POST', '/api/v1/webhooks', { url: gate.urlFor('/gate'), events: ['work_item.created'], projectId: project.id })
      const items = []
      for (const title of ['first', 'second', 'third']) items.push(await org.member.as('POST', `/api/v1/projects/${project.id}/work-items`, { title }))

      const sender = await startTestService({ database: writer.database, config: { webhooks: { ...WEBHOOKS, visibilityCheckMaxAgeMs: 0 } } })
      services.push(sender)
      await eventually(async () => expect(gate.received).toHaveLength(1), WAIT_MS)
      // The three were claimed as one batch: the first is in flight, the other two leased behind it.
      const [leased] = await sql<{ n: number }>('select count(*)::int as n from webhook_deliveries where webhook_id = $1 and lease_until > now()', [created.id], writer)
      expect(leased!.n).toBe(3)

      await org.member.as('DELETE', `/api/v1/projects/${project.id}/members/${org.admin.user.id}`)
      await org.member.as('POST', `/api/v1/projects/${project.id}/work-items`, { title: 'fourth' })
      for (const release of held) release()
      await settled(created.id, writer)
      expect(gate.received.map((request) => request.json.data.title)).toEqual(['first'])
      expect(gate.received[0]!.json.data.id).toBe(items[0].id)
      const [left] = await sql<{ n: number }>('select count(*)::int as n from webhook_deliveries where webhook_id = $1', [created.id], writer)
      expect(left!.n).toBe(1)
    } finally {
      await gate.close()
    }
  })
})
