/**
 * The webhooks API: management by administrators (secrets shown once and sealed at
 * rest, pagination, validation, the per-organization limit), who may and may not manage them,
 * private targets refused unless the operator allows them, secret rotation with two signatures,
 * test pings and redelivery to real HTTP receivers (signatures checked with `standardwebhooks`),
 * the audit trail, the MCP tool, and a service without the plugin.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { registry } from '../../plugins'
import { isPublicAddress } from '../../src/net/targets'
import { queryText } from '../../src/db'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { eventually, startTestService, type TestResponse, type TestService, type TestUser } from '../helpers/service'
import { webSession } from '../helpers/sessions'
import { startWebhookReceiver, type Received, type Responder, type WebhookReceiver } from '../helpers/webhook-receiver'

/** How long a delivery to a local receiver may take to show up (workers poll every 50 ms and are woken at once). */
const DELIVERY_WAIT_MS = 15_000

/** The receiver answers 200 — or 500 under `/fail/`, or a 302 to `/hooks/redirected…` under `/redirect/`. */
const answer: Responder = ({ path }) => {
  if (path.startsWith('/fail/')) return { status: 500, body: 'boom' }
  if (path.startsWith('/redirect/')) return { status: 302, headers: { location: `/hooks/redirected-${path.slice('/redirect/'.length)}` } }
  return { status: 200, body: 'thanks' }
}

let api: TestService
let site: Listening
let receiver: WebhookReceiver
let organization: string
let admin: TestUser
let adminKey: string
let member: TestUser
let memberKey: string
let superadmin: TestUser
let superKey: string
let outsider: TestUser
let outsiderKey: string
let allScopes: string[]

beforeAll(async () => {
  receiver = await startWebhookReceiver(answer)
  api = await startTestService({ config: { webhooks: { allowPrivateTargets: true, pollIntervalMs: 50 } } })
  site = listen(api)
  allScopes = api.service.core.scopes.map((scope) => scope.name)
  organization = await api.createOrganization()
  admin = await api.createUser(organization, 'administrator')
  adminKey = (await api.createKey(admin.id, allScopes)).secret
  member = await api.createUser(organization, 'member')
  memberKey = (await api.createKey(member.id, allScopes)).secret
  superadmin = await api.createUser(organization, 'superadministrator')
  superKey = (await api.createKey(superadmin.id, allScopes)).secret
  const elsewhere = await api.createOrganization()
  outsider = await api.createUser(elsewhere, 'administrator')
  outsiderKey = (await api.createKey(outsider.id, allScopes)).secret
})
afterAll(async () => {
  site?.stop()
  await receiver?.close()
  await api?.stop()
})

/** A fresh receiver path, so each webhook's requests can be told apart. */
const hookPath = () => `/hooks/${crypto.randomUUID()}`

function expectError(response: TestResponse, status: number, code: string, field?: string) {
  if (response.status !== status) throw new Error(`expected ${status} ${code}, got ${response.status} ${response.text}`)
  expect(response.body.data).toBeNull()
  expect(response.body.errors[0].code).toBe(code)
  expect(typeof response.body.meta.requestId).toBe('string')
  if (field !== undefined) expect(response.body.errors[0].field).toBe(field)
}

async function call(method: string, path: string, body?: unknown, key = adminKey, service = api) {
  return service.request(method, path, { key, body })
}

/** POST /api/v1/webhooks, expecting 201; the webhook with its secret. */
async function createHook(body: Record<string, unknown> = {}, key = adminKey, service = api) {
  const path = hookPath()
  const response = await call('POST', '/api/v1/webhooks', { url: `${receiver.url}${path}`, events: ['work_item.created'], ...body }, key, service)
  if (response.status !== 201) throw new Error(`POST /api/v1/webhooks: ${response.status} ${response.text}`)
  return { ...response.body.data, path, location: response.headers.get('location') } as Record<string, any> & { path: string; secret: string; id: string }
}

/** Waits for `count` requests at the receiver path and returns them. */
const receivedAt = (path: string, count: number, filter: (entry: Received) => boolean = () => true) =>
  eventually(async () => {
    const entries = receiver.at(path).filter(filter)
    if (entries.length < count) throw new Error(`${entries.length} of ${count} requests at ${path} so far`)
    return entries
  }, DELIVERY_WAIT_MS)

/** Waits until a delivery (GET by its path) is succeeded; returns it. */
const succeeded = (location: string, key = adminKey) =>
  eventually(async () => {
    const response = await call('GET', location, undefined, key)
    expect(response.status).toBe(200)
    if (response.body.data.status !== 'succeeded') throw new Error(`delivery still ${response.body.data.status}`)
    return response.body.data
  }, DELIVERY_WAIT_MS)

const sealedSecrets = async (id: string, service = api) =>
  queryText<{ secret_sealed: string; previous_secret_sealed: string | null }>(service.service.core.db, 'select secret_sealed, previous_secret_sealed from webhooks where id = $1', [id])

describe('managing webhooks', () => {
  test('POST → 201 with Location and a whsec_ secret shown once; GET and list never show it; the table keeps it sealed', async () => {
    const path = hookPath()
    const url = `${receiver.url}${path}`
    const response = await call('POST', '/api/v1/webhooks', { url, events: ['work_item.created', 'entry.created'], description: 'CI notifier' })
    expect(response.status).toBe(201)
    const created = response.body.data
    expect(response.headers.get('location')).toBe(`/api/v1/webhooks/${created.id}`)
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/)
    expect(Buffer.from(created.secret.slice('whsec_'.length), 'base64').length).toBe(32)
    expect(created).toMatchObject({
      url,
      events: ['work_item.created', 'entry.created'],
      description: 'CI notifier',
      projectId: null,
      enabled: true,
      disabledReason: null,
      createdBy: admin.id,
      lastSuccessAt: null,
      failingSince: null,
      previousSecretExpiresAt: null,
    })

    const one = await call('GET', `/api/v1/webhooks/${created.id}`)
    expect(one.status).toBe(200)
    expect(one.body.data).not.toHaveProperty('secret')
    const { secret, ...withoutSecret } = created
    expect(one.body.data).toEqual(withoutSecret)
    expect(one.text).not.toContain(secret)

    const list = await call('GET', '/api/v1/webhooks?size=100')
    expect(list.status).toBe(200)
    const listed = list.body.data.find((hook: { id: string }) => hook.id === created.id)
    expect(listed).toEqual(withoutSecret)
    for (const hook of list.body.data) expect(hook).not.toHaveProperty('secret')
    expect(list.text).not.toContain(secret)

    const [row] = await sealedSecrets(created.id)
    expect(row!.secret_sealed).toStartWith('v1.')
    expect(row!.secret_sealed).not.toContain(secret)
    expect(row!.secret_sealed).not.toContain(secret.slice('whsec_'.length))
    expect(row!.previous_secret_sealed).toBeNull()
  })

  test('list: oldest first, zero-based pages with page, size, totalItems and totalPages', async () => {
    const org = await api.createOrganization()
    const owner = await api.createUser(org, 'administrator')
    const key = (await api.createKey(owner.id, allScopes)).secret
    const made = [await createHook({}, key), await createHook({}, key), await createHook({}, key)]

    const first = await call('GET', '/api/v1/webhooks?page=0&size=2', undefined, key)
    expect(first.status).toBe(200)
    expect(first.body.data.map((hook: { id: string }) => hook.id)).toEqual([made[0]!.id, made[1]!.id])
    expect(first.body.meta).toMatchObject({ page: 0, size: 2, totalItems: 3, totalPages: 2 })

    const second = await call('GET', '/api/v1/webhooks?page=1&size=2', undefined, key)
    expect(second.body.data.map((hook: { id: string }) => hook.id)).toEqual([made[2]!.id])
    expect(second.body.meta).toMatchObject({ page: 1, size: 2, totalItems: 3, totalPages: 2 })

    const past = await call('GET', '/api/v1/webhooks?page=5&size=2', undefined, key)
    expect(past.status).toBe(200)
    expect(past.body.data).toEqual([])
    expect(past.body.meta).toMatchObject({ page: 5, size: 2, totalItems: 3, totalPages: 2 })

    const defaults = await call('GET', '/api/v1/webhooks', undefined, key)
    expect(defaults.body.meta).toMatchObject({ page: 0, size: 20, totalItems: 3, totalPages: 1 })

    expectError(await call('GET', '/api/v1/webhooks?page=-1', undefined, key), 400, 'BAD_REQUEST', 'page')
    expectError(await call('GET', '/api/v1/webhooks?size=101', undefined, key), 400, 'BAD_REQUEST', 'size')
  })

  test('PATCH changes url, events, description and enabled; DELETE answers {id} and then 404', async () => {
    const hook = await createHook({ description: 'before' })
    const newPath = hookPath()
    const patched = await call('PATCH', `/api/v1/webhooks/${hook.id}`, {
      url: `${receiver.url}${newPath}`,
      events: ['project.created', 'relationship.deleted'],
      description: 'after',
      enabled: false,
    })
    expect(patched.status).toBe(200)
    expect(patched.body.data).toMatchObject({
      id: hook.id,
      url: `${receiver.url}${newPath}`,
      events: ['project.created', 'relationship.deleted'],
      description: 'after',
      enabled: false,
      createdAt: hook.createdAt,
    })
    expect(patched.body.data).not.toHaveProperty('secret')
    expect(Date.parse(patched.body.data.updatedAt)).toBeGreaterThan(Date.parse(hook.updatedAt))

    const read = await call('GET', `/api/v1/webhooks/${hook.id}`)
    expect(read.body.data).toEqual(patched.body.data)

    const cleared = await call('PATCH', `/api/v1/webhooks/${hook.id}`, { description: null, enabled: true })
    expect(cleared.status).toBe(200)
    expect(cleared.body.data).toMatchObject({ description: null, enabled: true, events: ['project.created', 'relationship.deleted'] })

    const deleted = await call('DELETE', `/api/v1/webhooks/${hook.id}`)
    expect(deleted.status).toBe(200)
    expect(deleted.body.data).toEqual({ id: hook.id })
    expectError(await call('GET', `/api/v1/webhooks/${hook.id}`), 404, 'NOT_FOUND')
    expectError(await call('DELETE', `/api/v1/webhooks/${hook.id}`), 404, 'NOT_FOUND')
    expectError(await call('PATCH', `/api/v1/webhooks/${hook.id}`, { enabled: false }), 404, 'NOT_FOUND')
    const list = await call('GET', '/api/v1/webhooks?size=100')
    expect(list.body.data.some((entry: { id: string }) => entry.id === hook.id)).toBe(false)
  })

  test('a webhook limited to a project the administrator can see keeps its projectId', async () => {
    const project = await call('POST', '/api/v1/projects', { name: 'Hooked' })
    expect(project.status).toBe(201)
    const hook = await createHook({ projectId: project.body.data.id, events: ['*'] })
    expect(hook.projectId).toBe(project.body.data.id)
    expect(hook.events).toEqual(['*'])
  })
})

describe('who may manage webhooks', () => {
  let hook: Awaited<ReturnType<typeof createHook>>
  let deliveryId: string

  beforeAll(async () => {
    hook = await createHook()
    const ping = await call('POST', `/api/v1/webhooks/${hook.id}/test`)
    expect(ping.status).toBe(201)
    deliveryId = ping.body.data.id
  })

  /** Every route, with a valid body where one is needed. */
  const routes = (): Array<[string, string, unknown?]> => [
    ['GET', '/api/v1/webhooks'],
    ['POST', '/api/v1/webhooks', { url: `${receiver.url}${hookPath()}`, events: ['work_item.created'] }],
    ['GET', `/api/v1/webhooks/${hook.id}`],
    ['PATCH', `/api/v1/webhooks/${hook.id}`, { description: 'nope' }],
    ['DELETE', `/api/v1/webhooks/${hook.id}`],
    ['POST', `/api/v1/webhooks/${hook.id}/rotate-secret`],
    ['POST', `/api/v1/webhooks/${hook.id}/test`],
    ['GET', `/api/v1/webhooks/${hook.id}/deliveries`],
    ['GET', `/api/v1/webhooks/${hook.id}/deliveries/${deliveryId}`],
    ['POST', `/api/v1/webhooks/${hook.id}/deliveries/${deliveryId}/redeliver`],
  ]

  test('a member (with every scope) gets 403 FORBIDDEN on every route', async () => {
    for (const [method, path, body] of routes()) {
      const response = await call(method, path, body, memberKey)
      expect(`${method} ${path} ${response.status} ${response.body.errors?.[0]?.code}`).toBe(`${method} ${path} 403 FORBIDDEN`)
      expect(response.body.data).toBeNull()
    }
    // Nothing changed.
    const after = await call('GET', `/api/v1/webhooks/${hook.id}`)
    expect(after.body.data).toMatchObject({ description: null, previousSecretExpiresAt: null })
  })

  test('an administrator key without webhooks:read / webhooks:write gets 403 INSUFFICIENT_SCOPE naming the scope', async () => {
    const withoutWebhooks = (await api.createKey(admin.id, allScopes.filter((scope) => !scope.startsWith('webhooks:')))).secret
    for (const [method, path, body] of routes()) {
      const response = await call(method, path, body, withoutWebhooks)
      expect(`${method} ${path} ${response.status} ${response.body.errors?.[0]?.code}`).toBe(`${method} ${path} 403 INSUFFICIENT_SCOPE`)
      const needed = method === 'GET' ? 'webhooks:read' : 'webhooks:write'
      expect(response.body.errors[0].message).toContain(needed)
      expect(response.headers.get('www-authenticate')).toContain('insufficient_scope')
      expect(response.headers.get('www-authenticate')).toContain(needed)
    }
    const readOnly = (await api.createKey(admin.id, ['webhooks:read'])).secret
    for (const [method, path, body] of routes()) {
      const response = await call(method, path, body, readOnly)
      if (method === 'GET') expect(`${method} ${path} ${response.status}`).toBe(`${method} ${path} 200`)
      else expect(`${method} ${path} ${response.status} ${response.body.errors?.[0]?.code}`).toBe(`${method} ${path} 403 INSUFFICIENT_SCOPE`)
    }
  })

  test("another organization's administrator gets 404 (never 403) for this organization's webhook and its deliveries", async () => {
    for (const [method, path, body] of routes().slice(2)) {
      const response = await call(method, path, body, outsiderKey)
      expect(`${method} ${path} ${response.status} ${response.body.errors?.[0]?.code}`).toBe(`${method} ${path} 404 NOT_FOUND`)
    }
    const theirs = await call('GET', '/api/v1/webhooks?size=100', undefined, outsiderKey)
    expect(theirs.status).toBe(200)
    expect(theirs.body.data.some((entry: { id: string }) => entry.id === hook.id)).toBe(false)
    // Still there, unchanged, for its own organization.
    const ours = await call('GET', `/api/v1/webhooks/${hook.id}`)
    expect(ours.status).toBe(200)
    expect(ours.body.data.previousSecretExpiresAt).toBeNull()
  })

  test("a superadministrator manages any of the organization's webhooks, and may limit one to a project they are not a member of", async () => {
    const read = await call('GET', `/api/v1/webhooks/${hook.id}`, undefined, superKey)
    expect(read.status).toBe(200)
    const patched = await call('PATCH', `/api/v1/webhooks/${hook.id}`, { description: 'seen by the superadministrator' }, superKey)
    expect(patched.status).toBe(200)
    expect(patched.body.data.description).toBe('seen by the superadministrator')

    const project = await call('POST', '/api/v1/projects', { name: 'Member project' }, memberKey)
    expect(project.status).toBe(201)
    const own = await createHook({ projectId: project.body.data.id }, superKey)
    expect(own.createdBy).toBe(superadmin.id)
    expect(own.projectId).toBe(project.body.data.id)
    const rotated = await call('POST', `/api/v1/webhooks/${own.id}/rotate-secret`, undefined, superKey)
    expect(rotated.status).toBe(200)
    expect(rotated.body.data.secret).toStartWith('whsec_')
    const deleted = await call('DELETE', `/api/v1/webhooks/${own.id}`, undefined, superKey)
    expect(deleted.status).toBe(200)
    expectError(await call('GET', `/api/v1/webhooks/${own.id}`, undefined, superKey), 404, 'NOT_FOUND')
  })
})

describe('validation', () => {
  const post = (body: unknown) => call('POST', '/api/v1/webhooks', body)
  const url = () => `${receiver.url}${hookPath()}`

  test('an unknown event name is 400 on events[i], and the message lists the valid names', async () => {
    const response = await post({ url: url(), events: ['work_item.created', 'work_item.exploded'] })
    expectError(response, 400, 'BAD_REQUEST', 'events[1]')
    const message: string = response.body.errors[0].message
    expect(message).toContain('work_item.exploded')
    for (const name of ['work_item.created', 'project.deleted', 'entry.updated', 'relationship.created', 'project_member.deleted', 'content_order.updated']) expect(message).toContain(name)
    expectError(await post({ url: url(), events: ['ping'] }), 400, 'BAD_REQUEST', 'events[0]')
  })

  test('empty events, a non-http URL, a URL with credentials, a URL over 2000 characters, an unknown field: 400 naming the field', async () => {
    expectError(await post({ url: url(), events: [] }), 400, 'BAD_REQUEST', 'events')
    expectError(await post({ url: url() }), 400, 'BAD_REQUEST', 'events')
    for (const bad of ['ftp://example.com/hook', 'javascript:alert(1)', 'not a url', 'file:///etc/passwd'])
      expectError(await post({ url: bad, events: ['*'] }), 400, 'BAD_REQUEST', 'url')
    const withCredentials = `http://user:password@127.0.0.1:${new URL(receiver.url).port}/hook`
    const credentials = await post({ url: withCredentials, events: ['*'] })
    expectError(credentials, 400, 'BAD_REQUEST', 'url')
    expect(credentials.text).not.toContain('password@')
    expectError(await post({ url: `${receiver.url}/${'a'.repeat(2001)}`, events: ['*'] }), 400, 'BAD_REQUEST', 'url')
    expectError(await post({ url: url(), events: ['*'], secret: 'whsec_mine' }), 400, 'BAD_REQUEST', 'secret')
    expectError(await post({ url: url(), events: ['*'], enabled: false }), 400, 'BAD_REQUEST', 'enabled')

    const hook = await createHook()
    expectError(await call('PATCH', `/api/v1/webhooks/${hook.id}`, { events: [] }), 400, 'BAD_REQUEST', 'events')
    expectError(await call('PATCH', `/api/v1/webhooks/${hook.id}`, { events: ['*', 'nope.created'] }), 400, 'BAD_REQUEST', 'events[1]')
    expectError(await call('PATCH', `/api/v1/webhooks/${hook.id}`, { url: 'gopher://example.com/' }), 400, 'BAD_REQUEST', 'url')
    expectError(await call('PATCH', `/api/v1/webhooks/${hook.id}`, { projectId: crypto.randomUUID() }), 400, 'BAD_REQUEST', 'projectId')
    const unchanged = await call('GET', `/api/v1/webhooks/${hook.id}`)
    expect(unchanged.body.data).toMatchObject({ url: `${receiver.url}${hook.path}`, events: ['work_item.created'] })
  })

  test('a projectId the administrator cannot see (or that does not exist) is 400 on projectId', async () => {
    const hidden = await call('POST', '/api/v1/projects', { name: 'Not for the administrator' }, memberKey)
    expect(hidden.status).toBe(201)
    expectError(await post({ url: url(), events: ['*'], projectId: hidden.body.data.id }), 400, 'BAD_REQUEST', 'projectId')
    expectError(await post({ url: url(), events: ['*'], projectId: crypto.randomUUID() }), 400, 'BAD_REQUEST', 'projectId')
    const foreign = await call('POST', '/api/v1/projects', { name: 'Elsewhere' }, outsiderKey)
    expect(foreign.status).toBe(201)
    expectError(await post({ url: url(), events: ['*'], projectId: foreign.body.data.id }), 400, 'BAD_REQUEST', 'projectId')
    // Nothing was stored for these attempts.
    const rows = await queryText<{ n: number }>(api.service.core.db, 'select count(*)::int as n from webhooks where project_id = any($1::uuid[])', [[hidden.body.data.id, foreign.body.data.id]])
    expect(rows[0]!.n).toBe(0)
  })

  test('malformed ids in paths are 404', async () => {
    const hook = await createHook()
    for (const [method, path] of [
      ['GET', '/api/v1/webhooks/not-a-uuid'],
      ['PATCH', '/api/v1/webhooks/not-a-uuid'],
      ['DELETE', '/api/v1/webhooks/123'],
      ['POST', '/api/v1/webhooks/not-a-uuid/rotate-secret'],
      ['POST', '/api/v1/webhooks/not-a-uuid/test'],
      ['GET', '/api/v1/webhooks/not-a-uuid/deliveries'],
      ['GET', `/api/v1/webhooks/${hook.id}/deliveries/not-a-uuid`],
      ['POST', `/api/v1/webhooks/${hook.id}/deliveries/not-a-uuid/redeliver`],
      ['GET', `/api/v1/webhooks/${hook.id}/deliveries/${crypto.randomUUID()}`],
      ['GET', `/api/v1/webhooks/${crypto.randomUUID()}`],
    ] as const) {
      const response = await call(method, path, method === 'PATCH' ? { description: 'x' } : undefined)
      expect(`${method} ${path} ${response.status} ${response.body.errors?.[0]?.code}`).toBe(`${method} ${path} 404 NOT_FOUND`)
    }
  })
})

describe('the per-organization limit', () => {
  let limited: TestService

  beforeAll(async () => {
    limited = await startTestService({ config: { webhooks: { allowPrivateTargets: true, maxWebhooksPerOrganization: 2, workers: false } } })
  })
  afterAll(() => limited?.stop())

  test('with maxWebhooksPerOrganization 2 the third POST is 409 CONFLICT; deleting one makes room; other organizations have their own count', async () => {
    const org = await limited.createOrganization()
    const owner = await limited.createUser(org, 'administrator')
    const key = (await limited.createKey(owner.id, ['webhooks:read', 'webhooks:write'])).secret
    const first = await createHook({}, key, limited)
    await createHook({}, key, limited)
    const third = await call('POST', '/api/v1/webhooks', { url: `${receiver.url}${hookPath()}`, events: ['*'] }, key, limited)
    expectError(third, 409, 'CONFLICT')
    const list = await call('GET', '/api/v1/webhooks', undefined, key, limited)
    expect(list.body.meta.totalItems).toBe(2)

    expect((await call('DELETE', `/api/v1/webhooks/${first.id}`, undefined, key, limited)).status).toBe(200)
    await createHook({}, key, limited)
    expectError(await call('POST', '/api/v1/webhooks', { url: `${receiver.url}${hookPath()}`, events: ['*'] }, key, limited), 409, 'CONFLICT')

    const otherOrg = await limited.createOrganization()
    const otherAdmin = await limited.createUser(otherOrg, 'administrator')
    const otherKey = (await limited.createKey(otherAdmin.id, ['webhooks:write'])).secret
    await createHook({}, otherKey, limited)
  })

  test('concurrent creations do not pass the limit', async () => {
    const org = await limited.createOrganization()
    const owner = await limited.createUser(org, 'administrator')
    const key = (await limited.createKey(owner.id, ['webhooks:read', 'webhooks:write'])).secret
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => call('POST', '/api/v1/webhooks', { url: `${receiver.url}${hookPath()}`, events: ['*'] }, key, limited)),
    )
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 201, 409, 409, 409])
    const rows = await queryText<{ n: number }>(limited.service.core.db, 'select count(*)::int as n from webhooks where organization_id = $1', [org])
    expect(rows[0]!.n).toBe(2)
  })
})

describe('private targets', () => {
  let strict: TestService
  let strictKey: string

  beforeAll(async () => {
    strict = await startTestService()
    const org = await strict.createOrganization()
    const owner = await strict.createUser(org, 'administrator')
    strictKey = (await strict.createKey(owner.id, ['webhooks:read', 'webhooks:write'])).secret
  })
  afterAll(() => strict?.stop())

  const refused = () => [
    `http://127.0.0.1:${new URL(receiver.url).port}/hook`,
    'http://localhost/',
    'http://[::1]/',
    'http://10.0.0.1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[fd00::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://192.168.1.1/',
    'https://172.16.5.4/',
    'http://100.64.0.1/',
    'http://0.0.0.0/',
    'http://[fe80::1]/',
    'http://[64:ff9b::a00:1]/',
  ]

  test('without webhooks.allowPrivateTargets, loopback, private, link-local and unique-local targets are 400 on url and not stored', async () => {
    for (const target of refused()) {
      const response = await call('POST', '/api/v1/webhooks', { url: target, events: ['*'] }, strictKey, strict)
      expect(`${target} ${response.status} ${response.body.errors?.[0]?.field}`).toBe(`${target} 400 url`)
      expect(response.body.errors[0].code).toBe('BAD_REQUEST')
    }
    const list = await call('GET', '/api/v1/webhooks', undefined, strictKey, strict)
    expect(list.status).toBe(200)
    expect(list.body.meta.totalItems).toBe(0)
    const rows = await queryText<{ n: number }>(strict.service.core.db, 'select count(*)::int as n from webhooks', [])
    expect(rows[0]!.n).toBe(0)
  })

  test('a public target is accepted, and changing it to a private one is refused', async () => {
    // A public IP literal (no DNS needed); nothing is ever sent to it: no event it subscribes to happens here.
    const hook = await call('POST', '/api/v1/webhooks', { url: 'http://8.8.8.8/hook', events: ['relationship.deleted'] }, strictKey, strict)
    expect(hook.status).toBe(201)
    for (const target of refused()) {
      const response = await call('PATCH', `/api/v1/webhooks/${hook.body.data.id}`, { url: target }, strictKey, strict)
      expect(`${target} ${response.status} ${response.body.errors?.[0]?.field}`).toBe(`${target} 400 url`)
    }
    const read = await call('GET', `/api/v1/webhooks/${hook.body.data.id}`, undefined, strictKey, strict)
    expect(read.body.data.url).toBe('http://8.8.8.8/hook')
  })

  test('isPublicAddress: public addresses pass; loopback, private, shared, link-local, unique-local, multicast, reserved and mapped ones do not', () => {
    const table: Array<[string, boolean]> = [
      ['8.8.8.8', true],
      ['1.1.1.1', true],
      ['172.32.0.1', true],
      ['100.128.0.1', true],
      ['2606:4700::1111', true],
      ['2001:4860:4860::8888', true],
      ['::ffff:8.8.8.8', true],
      ['127.0.0.1', false],
      ['127.255.255.254', false],
      ['10.0.0.1', false],
      ['10.255.255.255', false],
      ['172.16.0.1', false],
      ['172.31.255.255', false],
      ['192.168.1.1', false],
      ['169.254.169.254', false],
      ['100.64.0.1', false],
      ['0.0.0.0', false],
      ['224.0.0.1', false],
      ['255.255.255.255', false],
      ['192.0.2.1', false],
      ['198.18.0.1', false],
      ['::1', false],
      ['::', false],
      ['fd00::1', false],
      ['fc00::1', false],
      ['fe80::1', false],
      ['ff02::1', false],
      ['2001:db8::1', false],
      ['::ffff:127.0.0.1', false],
      ['::ffff:7f00:1', false],
      ['::ffff:10.0.0.1', false],
      ['::ffff:a9fe:a9fe', false],
      ['64:ff9b::127.0.0.1', false],
      ['64:ff9b::a00:1', false],
      ['::127.0.0.1', false],
      ['localhost', false],
      ['example.com', false],
      ['', false],
    ]
    const answers = table.map(([address]) => [address, isPublicAddress(address)])
    expect(answers).toEqual(table)
  })
})

describe('rotating the secret', () => {
  test('rotate-secret returns a new secret; the next ping carries two v1 signatures, one by each secret, for 24 hours', async () => {
    const hook = await createHook()
    const rotatedAt = Date.now()
    const rotated = await call('POST', `/api/v1/webhooks/${hook.id}/rotate-secret`)
    expect(rotated.status).toBe(200)
    const newSecret: string = rotated.body.data.secret
    expect(newSecret).toMatch(/^whsec_/)
    expect(newSecret).not.toBe(hook.secret)
    const expiresAt = Date.parse(rotated.body.data.previousSecretExpiresAt)
    expect(Math.abs(expiresAt - (rotatedAt + 24 * 3600_000))).toBeLessThan(5 * 60_000)

    const read = await call('GET', `/api/v1/webhooks/${hook.id}`)
    expect(read.body.data).not.toHaveProperty('secret')
    expect(read.body.data.previousSecretExpiresAt).toBe(rotated.body.data.previousSecretExpiresAt)
    expect(read.text).not.toContain(newSecret)
    const [row] = await sealedSecrets(hook.id)
    for (const secret of [hook.secret, newSecret]) {
      expect(row!.secret_sealed).not.toContain(secret.slice('whsec_'.length))
      expect(row!.previous_secret_sealed).not.toContain(secret.slice('whsec_'.length))
    }

    const ping = await call('POST', `/api/v1/webhooks/${hook.id}/test`)
    expect(ping.status).toBe(201)
    const [request] = await receivedAt(hook.path, 1)
    const signature = request!.headers['webhook-signature']!
    const parts = signature.split(' ')
    expect(parts).toHaveLength(2)
    for (const part of parts) expect(part).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
    expect(parts[0]).not.toBe(parts[1])

    const headers = { 'webhook-id': request!.headers['webhook-id']!, 'webhook-timestamp': request!.headers['webhook-timestamp']!, 'webhook-signature': signature }
    expect(new Webhook(newSecret).verify(request!.body, headers)).toMatchObject({ type: 'ping', id: ping.body.data.eventId })
    expect(new Webhook(hook.secret).verify(request!.body, headers)).toMatchObject({ type: 'ping', id: ping.body.data.eventId })
    // Each signature is one secret's: the current first, then the previous one.
    expect(() => new Webhook(newSecret).verify(request!.body, { ...headers, 'webhook-signature': parts[0]! })).not.toThrow()
    expect(() => new Webhook(hook.secret).verify(request!.body, { ...headers, 'webhook-signature': parts[1]! })).not.toThrow()
    expect(() => new Webhook(hook.secret).verify(request!.body, { ...headers, 'webhook-signature': parts[0]! })).toThrow()
    // A secret that was never this webhook's does not verify, nor a changed body.
    const stranger = `whsec_${Buffer.alloc(32, 7).toString('base64')}`
    expect(() => new Webhook(stranger).verify(request!.body, headers)).toThrow()
    expect(() => new Webhook(newSecret).verify(request!.body.replace('"ping"', '"pong"'), headers)).toThrow()
  })
})

describe('test pings', () => {
  test('POST …/test → 201 with Location …/deliveries/{id}; the receiver gets a signed ping whose data is the webhook; the delivery shows it succeeded', async () => {
    const hook = await createHook({ description: 'ping me' })
    const response = await call('POST', `/api/v1/webhooks/${hook.id}/test`)
    expect(response.status).toBe(201)
    const delivery = response.body.data
    expect(response.headers.get('location')).toBe(`/api/v1/webhooks/${hook.id}/deliveries/${delivery.id}`)
    expect(delivery).toMatchObject({ webhookId: hook.id, eventType: 'ping', projectId: null })
    expect(['pending', 'succeeded']).toContain(delivery.status)

    const [request] = await receivedAt(hook.path, 1)
    expect(request!.headers['content-type']).toStartWith('application/json')
    expect(request!.headers['webhook-id']).toBe(delivery.eventId)
    expect(request!.headers['webhook-signature']!.split(' ')).toHaveLength(1)
    expect(Math.abs(Number(request!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(300)
    const payload = new Webhook(hook.secret).verify(request!.body, request!.headers) as Record<string, any>
    expect(payload).toMatchObject({
      type: 'ping',
      id: delivery.eventId,
      organizationId: organization,
      projectId: null,
      actor: { userId: admin.id, via: 'rest' },
    })
    const { secret, path, location, ...resource } = hook
    expect(payload.data).toEqual(resource)
    expect(request!.body).not.toContain(secret)

    const done = await succeeded(response.headers.get('location')!)
    expect(done).toMatchObject({ id: delivery.id, status: 'succeeded', attempts: 1, lastResponseStatus: 200, lastError: null, nextAttemptAt: null, lastResponseBody: 'thanks' })
    expect(done.payload).toEqual(JSON.parse(request!.body))
    expect(typeof done.lastDurationMs).toBe('number')
    expect(done.deliveredAt).not.toBeNull()

    const after = await eventually(async () => {
      const read = await call('GET', `/api/v1/webhooks/${hook.id}`)
      expect(read.body.data.lastSuccessAt).not.toBeNull()
      return read.body.data
    })
    expect(after.failingSince).toBeNull()
    // Exactly one request: delivered once.
    expect(receiver.at(hook.path)).toHaveLength(1)
  })

  test('a disabled webhook: test and redeliver are 409, and nothing is sent', async () => {
    const hook = await createHook()
    const ping = await call('POST', `/api/v1/webhooks/${hook.id}/test`)
    expect(ping.status).toBe(201)
    await receivedAt(hook.path, 1)
    expect((await call('PATCH', `/api/v1/webhooks/${hook.id}`, { enabled: false })).status).toBe(200)
    expectError(await call('POST', `/api/v1/webhooks/${hook.id}/test`), 409, 'CONFLICT')
    expectError(await call('POST', `/api/v1/webhooks/${hook.id}/deliveries/${ping.body.data.id}/redeliver`), 409, 'CONFLICT')
    const deliveries = await call('GET', `/api/v1/webhooks/${hook.id}/deliveries`)
    expect(deliveries.body.meta.totalItems).toBe(1)
    expect(receiver.at(hook.path)).toHaveLength(1)
  })
})

describe('failed attempts', () => {
  /** Waits for the first attempt of the delivery at `location` to be recorded. */
  const attempted = (location: string) =>
    eventually(async () => {
      const response = await call('GET', location)
      if (response.body.data.attempts < 1) throw new Error(`not attempted yet: ${response.text}`)
      return response.body.data
    }, DELIVERY_WAIT_MS)

  test('a receiver answering 500: the delivery stays pending with attempts 1 and a retry about 5 s later; the webhook is failing', async () => {
    const name = crypto.randomUUID()
    const hook = await createHook({ url: `${receiver.url}/fail/${name}` })
    try {
      const ping = await call('POST', `/api/v1/webhooks/${hook.id}/test`)
      expect(ping.status).toBe(201)
      await receivedAt(`/fail/${name}`, 1)
      const delivery = await attempted(ping.headers.get('location')!)
      expect(delivery).toMatchObject({ status: 'pending', attempts: 1, lastResponseStatus: 500, lastResponseBody: 'boom', deliveredAt: null })
      expect(delivery.lastError).toContain('500')
      const wait = Date.parse(delivery.nextAttemptAt) - Date.parse(delivery.lastAttemptAt)
      expect(wait).toBeGreaterThan(4000)
      expect(wait).toBeLessThan(7000)
      const read = await call('GET', `/api/v1/webhooks/${hook.id}`)
      expect(read.body.data).toMatchObject({ enabled: true, lastSuccessAt: null })
      expect(read.body.data.failingSince).not.toBeNull()
    } finally {
      // No retries after the test.
      expect((await call('PATCH', `/api/v1/webhooks/${hook.id}`, { enabled: false })).status).toBe(200)
    }
  })

  test('a redirect is a failure and is not followed', async () => {
    const name = crypto.randomUUID()
    const hook = await createHook({ url: `${receiver.url}/redirect/${name}` })
    try {
      const ping = await call('POST', `/api/v1/webhooks/${hook.id}/test`)
      expect(ping.status).toBe(201)
      const delivery = await attempted(ping.headers.get('location')!)
      expect(delivery).toMatchObject({ status: 'pending', attempts: 1, lastResponseStatus: 302 })
      expect(delivery.lastError).toContain('redirect')
      expect(receiver.at(`/redirect/${name}`)).toHaveLength(1)
      expect(receiver.at(`/hooks/redirected-${name}`)).toHaveLength(0)
    } finally {
      expect((await call('PATCH', `/api/v1/webhooks/${hook.id}`, { enabled: false })).status).toBe(200)
    }
  })
})

describe('redelivery', () => {
  test('POST …/deliveries/{id}/redeliver → 201; the receiver gets the same webhook-id again; the list shows both deliveries', async () => {
    const hook = await createHook()
    const ping = await call('POST', `/api/v1/webhooks/${hook.id}/test`)
    expect(ping.status).toBe(201)
    const [first] = await receivedAt(hook.path, 1)
    const original = await succeeded(ping.headers.get('location')!)

    const again = await call('POST', `/api/v1/webhooks/${hook.id}/deliveries/${original.id}/redeliver`)
    expect(again.status).toBe(201)
    const redelivery = again.body.data
    expect(redelivery.id).not.toBe(original.id)
    expect(redelivery).toMatchObject({ webhookId: hook.id, eventId: original.eventId, eventType: 'ping' })
    expect(again.headers.get('location')).toBe(`/api/v1/webhooks/${hook.id}/deliveries/${redelivery.id}`)

    const requests = await receivedAt(hook.path, 2)
    expect(requests.map((request) => request.headers['webhook-id'])).toEqual([original.eventId, original.eventId])
    expect(JSON.parse(requests[1]!.body)).toEqual(JSON.parse(first!.body))
    expect(new Webhook(hook.secret).verify(requests[1]!.body, requests[1]!.headers)).toMatchObject({ id: original.eventId })

    await succeeded(again.headers.get('location')!)
    const list = await call('GET', `/api/v1/webhooks/${hook.id}/deliveries`)
    expect(list.status).toBe(200)
    expect(list.body.meta).toMatchObject({ page: 0, size: 20, totalItems: 2, totalPages: 1 })
    expect(list.body.data.map((entry: { id: string }) => entry.id)).toEqual([redelivery.id, original.id])
    for (const entry of list.body.data) expect(entry).toMatchObject({ eventId: original.eventId, status: 'succeeded', attempts: 1, lastResponseStatus: 200 })
    const onlySucceeded = await call('GET', `/api/v1/webhooks/${hook.id}/deliveries?status=succeeded`)
    expect(onlySucceeded.body.meta.totalItems).toBe(2)
    const pending = await call('GET', `/api/v1/webhooks/${hook.id}/deliveries?status=pending`)
    expect(pending.body.meta.totalItems).toBe(0)
    expectError(await call('GET', `/api/v1/webhooks/${hook.id}/deliveries?status=lost`), 400, 'BAD_REQUEST', 'status')
  })
})

describe('audit', () => {
  test('created, updated, secret_rotated, tested, redelivered and deleted are audited, without any secret', async () => {
    const hook = await createHook()
    expect((await call('PATCH', `/api/v1/webhooks/${hook.id}`, { description: 'audited', events: ['*'] })).status).toBe(200)
    const rotated = await call('POST', `/api/v1/webhooks/${hook.id}/rotate-secret`)
    expect(rotated.status).toBe(200)
    const ping = await call('POST', `/api/v1/webhooks/${hook.id}/test`)
    expect(ping.status).toBe(201)
    const redelivered = await call('POST', `/api/v1/webhooks/${hook.id}/deliveries/${ping.body.data.id}/redeliver`)
    expect(redelivered.status).toBe(201)
    expect((await call('DELETE', `/api/v1/webhooks/${hook.id}`)).status).toBe(200)

    const auditKey = (await api.createKey(admin.id, ['audit_logs:read'])).secret
    const log = await call('GET', '/api/v1/audit-logs?action=webhook.*&size=100', undefined, auditKey)
    expect(log.status).toBe(200)
    const records = log.body.data.filter((record: { resourceId: string }) => record.resourceId === hook.id)
    expect(records.map((record: { action: string }) => record.action).sort()).toEqual(
      ['webhook.created', 'webhook.deleted', 'webhook.redelivered', 'webhook.secret_rotated', 'webhook.tested', 'webhook.updated'].sort(),
    )
    for (const record of records) expect(record).toMatchObject({ resourceType: 'webhook', actorUserId: admin.id, via: 'rest' })
    const byAction = new Map(records.map((record: any) => [record.action, record]))
    expect((byAction.get('webhook.created') as any).changes.after).toMatchObject({ url: `${receiver.url}${hook.path}`, events: ['work_item.created'] })
    expect((byAction.get('webhook.updated') as any).changes).toMatchObject({ before: { events: ['work_item.created'] }, after: { description: 'audited', events: ['*'] } })
    expect((byAction.get('webhook.redelivered') as any).changes.after).toMatchObject({ deliveryId: redelivered.body.data.id, eventId: ping.body.data.eventId })

    const text = JSON.stringify(records)
    for (const secret of [hook.secret, rotated.body.data.secret]) {
      expect(text).not.toContain(secret)
      expect(text).not.toContain(secret.slice('whsec_'.length))
    }
    const everything = await queryText<{ changes: unknown }>(api.service.core.db, 'select changes from audit_logs where resource_id = $1', [hook.id])
    expect(everything.length).toBe(6)
    expect(JSON.stringify(everything)).not.toContain(rotated.body.data.secret.slice('whsec_'.length))
    expect(JSON.stringify(everything)).not.toContain(hook.secret.slice('whsec_'.length))
  })
})

describe('MCP', () => {
  const tools = async (key: string) => {
    const client = await connectMcp(site.url, key)
    try {
      return (await client.listTools()).tools.map((tool) => tool.name)
    } finally {
      await client.close()
    }
  }

  test("list_webhooks lists the organization's webhooks (no secrets) for an administrator key with webhooks:read", async () => {
    const hook = await createHook()
    const key = (await api.createKey(admin.id, ['webhooks:read'])).secret
    expect(await tools(key)).toContain('list_webhooks')
    const client = await connectMcp(site.url, key)
    try {
      const outcome = await callTool(client, 'list_webhooks', { size: 100 })
      expect(outcome.isError).toBe(false)
      const ids = outcome.data.items.map((item: { id: string }) => item.id)
      expect(ids).toContain(hook.id)
      expect(outcome.data.meta).toMatchObject({ page: 0, size: 100 })
      expect(outcome.data.meta.totalItems).toBe(ids.length)
      expect(JSON.stringify(outcome.data)).not.toContain(hook.secret)
      const rest = await call('GET', '/api/v1/webhooks?size=100')
      expect(ids).toEqual(rest.body.data.map((item: { id: string }) => item.id))
      const tool = (await client.listTools()).tools.find((entry) => entry.name === 'list_webhooks')
      expect(tool?.annotations?.readOnlyHint).toBe(true)
    } finally {
      await client.close()
    }
    // Another organization's administrator sees none of them.
    const outsiderClient = await connectMcp(site.url, outsiderKey)
    try {
      const theirs = await callTool(outsiderClient, 'list_webhooks', {})
      expect(theirs.isError).toBe(false)
      expect(theirs.data.items.some((item: { id: string }) => item.id === hook.id)).toBe(false)
    } finally {
      await outsiderClient.close()
    }
  })

  test('list_webhooks is not listed for a key without webhooks:read; a member gets a FORBIDDEN tool error', async () => {
    const withoutRead = (await api.createKey(admin.id, allScopes.filter((scope) => scope !== 'webhooks:read'))).secret
    const names = await tools(withoutRead)
    expect(names).toContain('list_projects')
    expect(names).not.toContain('list_webhooks')
    expect(names.some((name) => /webhook/.test(name))).toBe(false)

    const client = await connectMcp(site.url, memberKey)
    try {
      const outcome = await callTool(client, 'list_webhooks', {})
      expect(outcome.isError).toBe(true)
      expect(outcome.code).toBe('FORBIDDEN')
    } finally {
      await client.close()
    }
  })
})

describe('a service without the webhooks plugin', () => {
  let bare: TestService
  let bareSite: Listening
  let bareAdmin: TestUser
  let bareKey: string

  const keysPage = async (service: TestService, user: TestUser) => {
    const response = await service.service.fetch(new Request('http://localhost/account/keys', { headers: { cookie: (await webSession(service, user)).cookie } }))
    expect(response.status).toBe(200)
    return response.text()
  }
  const openApiPaths = async (service: TestService) => {
    const response = await service.service.fetch(new Request('http://localhost/docs/json'))
    expect(response.status).toBe(200)
    return Object.keys(((await response.json()) as { paths: Record<string, unknown> }).paths)
  }

  beforeAll(async () => {
    const plugins = registry.map((plugin) => plugin.name).filter((name) => name !== 'webhooks')
    expect(plugins.length).toBe(registry.length - 1)
    bare = await startTestService({ plugins })
    bareSite = listen(bare)
    const org = await bare.createOrganization()
    bareAdmin = await bare.createUser(org, 'administrator')
    // The key may still hold webhooks scopes (they are known), the routes and tools are simply absent.
    bareKey = (await bare.createKey(bareAdmin.id, bare.service.core.scopes.map((scope) => scope.name))).secret
  })
  afterAll(async () => {
    bareSite?.stop()
    await bare?.stop()
  })

  test('its webhook routes answer 404', async () => {
    expect(bare.service.plugins.map((plugin) => plugin.name)).not.toContain('webhooks')
    const hook = await createHook()
    for (const [method, path, body] of [
      ['GET', '/api/v1/webhooks', undefined],
      ['POST', '/api/v1/webhooks', { url: 'http://8.8.8.8/hook', events: ['*'] }],
      ['GET', `/api/v1/webhooks/${hook.id}`, undefined],
      ['POST', `/api/v1/webhooks/${hook.id}/test`, undefined],
    ] as const) {
      const response = await call(method, path, body, bareKey, bare)
      expect(`${method} ${path} ${response.status} ${response.body.errors?.[0]?.code}`).toBe(`${method} ${path} 404 NOT_FOUND`)
    }
    // The same key on the service with the plugin reaches the routes.
    expect((await call('GET', '/api/v1/webhooks', undefined, adminKey)).status).toBe(200)
  })

  test('no list_webhooks tool, no webhooks scopes enabled', async () => {
    const client = await connectMcp(bareSite.url, bareKey)
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name)
      expect(names).toContain('list_projects')
      expect(names).not.toContain('list_webhooks')
    } finally {
      await client.close()
    }
    const enabled = bare.service.core.enabledScopes.map((scope) => scope.name)
    expect(enabled).toContain('projects:read')
    expect(enabled.filter((name) => name.startsWith('webhooks:'))).toEqual([])
    expect(api.service.core.enabledScopes.map((scope) => scope.name)).toEqual(expect.arrayContaining(['webhooks:read', 'webhooks:write']))
  })

  test("the account area's key page offers webhooks scopes only where the plugin is enabled", async () => {
    /** The scope checkboxes of the create-a-key form (the key list below may name scopes a key already holds). */
    const offered = (page: string) => {
      const table = /<table class="scopes">([\s\S]*?)<\/table>/.exec(page)?.[1]
      if (!table) throw new Error('no scope table on the keys page')
      return [...table.matchAll(/name="scopes" value="([^"]+)"/g)].map((match) => match[1])
    }
    const withPlugin = offered(await keysPage(api, admin))
    expect(withPlugin).toEqual(expect.arrayContaining(['webhooks:read', 'webhooks:write', 'projects:read']))
    const withoutPage = await keysPage(bare, bareAdmin)
    const without = offered(withoutPage)
    expect(without).toContain('projects:read')
    expect(without.filter((name) => name.startsWith('webhooks:'))).toEqual([])
    expect(withoutPage).not.toContain('value="webhooks:')
    // Everything else is offered alike.
    expect(without).toEqual(withPlugin.filter((name) => !name.startsWith('webhooks:')))
  })

  test('its OpenAPI document has no webhooks paths', async () => {
    const withPlugin = await openApiPaths(api)
    expect(withPlugin).toContain('/api/v1/webhooks')
    expect(withPlugin).toContain('/api/v1/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver')
    const without = await openApiPaths(bare)
    expect(without).toContain('/api/v1/projects')
    expect(without.filter((path) => path.includes('webhook'))).toEqual([])
  })
})
