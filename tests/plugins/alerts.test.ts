/**
 * Alert rules (plugins/alerts, docs/alerts.md): CRUD and its refusals (400 naming the field and
 * writing nothing, 403 for viewers, 404 for what the caller cannot see, another organization
 * apart), the component values rules compare, a rule that fires and resolves exactly once with its
 * history, audit records, pushes through the fake FCM and webhook events, `forSeconds` through the
 * sweep, and a `noData` rule fired by the sweep of a service started after the data went old; the
 * sweep as a queue of the core's outbox runner; firing rules marked on the live page.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { queryText } from '../../src/db'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture } from '../helpers/display-fixture'
import { createTestDatabase, timeLimit, sqlOn } from '../helpers/database'
import { startFakeFcm, type FakeFcm } from '../helpers/fake-fcm'
import { listen } from '../helpers/http'
import { eventually, startTestService, type TestService, type TestUser } from '../helpers/service'
import { webSession } from '../helpers/sessions'
import { openEventStream, type EventStream } from '../helpers/sse'
import { startWebhookReceiver, verifySignature, type WebhookReceiver } from '../helpers/webhook-receiver'

const WAIT_MS = 10_000
const CONFIG = {
  push: { pollIntervalMs: 50 },
  alerts: { sweepIntervalSeconds: 0.1, maxAlertsPerComponent: 3 },
  webhooks: { allowPrivateTargets: true, pollIntervalMs: 50 },
}

let fcm: FakeFcm
let receiver: WebhookReceiver
let api: TestService
let fx: DisplayFixture
let readerKey: string
let outsiderKey: string
let otherKey: string
let webhookSecret: string
let readerDevice: string

const sql = sqlOn(() => api)
const alertsPath = (componentId: string, pageId = fx.pageId) => `/api/v1/pages/${pageId}/components/${componentId}/alerts`
const as = (key: string, method: string, path: string, body?: unknown) => api.request(method, path, { key, body })

/** Feeds a component through the display API (the creator's display key), now. */
async function feed(service: TestService, user: TestUser, componentId: string, data: unknown, timestamp = Date.now() / 1000) {
  const response = await service.request('POST', '/api/component', { body: { apiKey: user.displayApiKey, componentId, timestamp, data }, headers: { 'content-type': 'application/json' } })
  expect(response.status).toBe(200)
}

const box = (value: string) => ({ ...SAMPLE_DATA.horizontalBox, middleText: { ...SAMPLE_DATA.horizontalBox.middleText, value } })
const line = (...ys: number[]) => ({ ...SAMPLE_DATA.lineChart, xNumber: false, points: ys.map((y, i) => ({ x: `t${i}`, y, color: '#0e7490' })) })

async function history(alertId: string, componentId: string, service = api, key = fx.creatorKey) {
  const response = await service.request('GET', `${alertsPath(componentId)}/${alertId}/history?size=100`, { key })
  expect(response.status).toBe(200)
  return response.body.data as Array<{ transition: string; value: number | null; at: string }>
}

beforeAll(async () => {
  fcm = await startFakeFcm(undefined, { redirect: true })
  receiver = await startWebhookReceiver()
  api = await startTestService({ provide: fcm.provide, config: CONFIG })
  fx = await createDisplayFixture(api)
  readerKey = (await api.createKey(fx.reader.id, ['dashboards:read', 'dashboards:write'])).secret
  outsiderKey = (await api.createKey(fx.outsider.id, ['dashboards:read', 'dashboards:write'])).secret
  const otherOrganization = await api.createOrganization()
  otherKey = (await api.createKey((await api.createUser(otherOrganization, 'administrator')).id, ['dashboards:read', 'dashboards:write'])).secret
  const admin = await api.createUser(fx.organizationId, 'administrator')
  const adminKey = (await api.createKey(admin.id, ['webhooks:read', 'webhooks:write'])).secret
  const hook = await as(adminKey, 'POST', '/api/v1/webhooks', { url: receiver.url, events: ['alert.*'] })
  expect(hook.status).toBe(201)
  webhookSecret = hook.body.data.secret
  readerDevice = `alerts-reader:APA91b${Math.random().toString(36).slice(2, 14)}`
  const registered = await api.request('POST', '/api/devices', { body: { token: readerDevice, platform: 'android' }, headers: { authorization: `Bearer ${fx.readerSession}` } })
  expect(registered.status).toBe(201)
})

afterAll(async () => {
  await api.stop()
  await receiver.close()
  await fcm.close()
})

describe('rules through API v1', () => {
  test('create, read, list, change and delete a rule; each change audited', async () => {
    const path = alertsPath(fx.components.verticalBox)
    const created = await as(fx.creatorKey, 'POST', path, { when: 'above', value: 1000, forSeconds: 300 })
    expect(created.status).toBe(201)
    const alert = created.body.data
    expect(alert).toMatchObject({ pageId: fx.pageId, componentId: fx.components.verticalBox, when: 'above', value: 1000, forSeconds: 300, state: 'ok', pendingSince: null, createdBy: fx.creator.id })
    expect(created.headers.get('location')).toBe(`${path}/${alert.id}`)
    expect((await as(fx.creatorKey, 'GET', `${path}/${alert.id}`)).body.data).toEqual(alert)
    const listed = await as(readerKey, 'GET', path)
    expect(listed.status).toBe(200)
    expect(listed.body.data.map((item: { id: string }) => item.id)).toEqual([alert.id])
    expect(listed.body.meta.totalItems).toBe(1)

    const changed = await as(fx.creatorKey, 'PATCH', `${path}/${alert.id}`, { when: 'noData', forSeconds: 600 })
    expect(changed.status).toBe(200)
    expect(changed.body.data).toMatchObject({ when: 'noData', value: null, forSeconds: 600 })
    const back = await as(fx.creatorKey, 'PATCH', `${path}/${alert.id}`, { when: 'below' })
    expect(back.status).toBe(400)
    expect(back.body.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field: 'value' })
    expect((await as(fx.creatorKey, 'PATCH', `${path}/${alert.id}`, { when: 'below', value: -5 })).body.data).toMatchObject({ when: 'below', value: -5, forSeconds: 0 })

    expect((await as(fx.creatorKey, 'DELETE', `${path}/${alert.id}`)).status).toBe(200)
    expect((await as(fx.creatorKey, 'GET', `${path}/${alert.id}`)).status).toBe(404)
    const audited = await sql<{ action: string }>(`select action from audit_logs where organization_id = $1 and resource_id = $2 order by occurred_at, id`, [fx.organizationId, alert.id])
    expect(audited.map((row) => row.action)).toEqual(['alert.created', 'alert.updated', 'alert.updated', 'alert.deleted'])
  })

  test('bad input is 400 naming the field, and writes nothing', async () => {
    const path = alertsPath(fx.components.pieChart)
    const cases: Array<[unknown, string]> = [
      [{ when: 'above' }, 'value'],
      [{ when: 'above', value: '90' }, 'value'],
      [{ when: 'sideways', value: 1 }, 'when'],
      [{ when: 'above', value: 1, forSeconds: 86_401 }, 'forSeconds'],
      [{ when: 'below', value: 1, forSeconds: -1 }, 'forSeconds'],
      [{ when: 'below', value: 1, forSeconds: 1.5 }, 'forSeconds'],
      [{ when: 'noData' }, 'forSeconds'],
      [{ when: 'noData', forSeconds: 59 }, 'forSeconds'],
      [{ when: 'noData', forSeconds: 604_801 }, 'forSeconds'],
      [{ when: 'noData', forSeconds: 600, value: 3 }, 'value'],
      [{ when: 'above', value: 1, extra: true }, 'extra'],
    ]
    for (const [body, field] of cases) {
      const response = await as(fx.creatorKey, 'POST', path, body)
      expect({ body, status: response.status, field: response.body.errors?.[0]?.field }).toEqual({ body, status: 400, field })
    }
    const existing = (await as(fx.creatorKey, 'POST', path, { when: 'above', value: 1e308 })).body.data
    for (const [patch, field] of [[{}, undefined], [{ forSeconds: 'soon' }, 'forSeconds'], [{ when: 'noData' }, 'forSeconds'], [{ value: null }, 'value']] as const) {
      const response = await as(fx.creatorKey, 'PATCH', `${path}/${existing.id}`, patch)
      expect({ patch, status: response.status, field: response.body.errors?.[0]?.field }).toEqual({ patch, status: 400, field })
    }
    expect((await as(fx.creatorKey, 'GET', `${path}/${existing.id}`)).body.data).toMatchObject({ when: 'above', value: 1e308, forSeconds: 0 })
    await as(fx.creatorKey, 'DELETE', `${path}/${existing.id}`)
    const huge = await api.request('POST', path, { key: fx.creatorKey, rawBody: '{"when":"above","value":1e400}', headers: { 'content-type': 'application/json' } })
    expect(huge.status).toBe(400)
    expect((await as(fx.creatorKey, 'GET', path)).body.meta.totalItems).toBe(0)
  })

  test('a component holds at most alerts.maxAlertsPerComponent rules: one more is 409', async () => {
    const path = alertsPath(fx.components.barChart)
    const made = await Promise.all([1, 2, 3, 4].map((value) => as(fx.creatorKey, 'POST', path, { when: 'above', value })))
    expect(made.map((response) => response.status).sort()).toEqual([201, 201, 201, 409])
    for (const response of made.filter((response) => response.status === 201)) await as(fx.creatorKey, 'DELETE', `${path}/${response.body.data.id}`)
  })

  test('viewers read and get 403 on writes; outsiders and other organizations get 404; unknown ids are 404', async () => {
    const path = alertsPath(fx.components.barChart)
    const alert = (await as(fx.creatorKey, 'POST', path, { when: 'below', value: 0 })).body.data
    const one = `${path}/${alert.id}`
    expect((await as(readerKey, 'GET', one)).status).toBe(200)
    expect((await as(readerKey, 'GET', `${one}/history`)).status).toBe(200)
    expect((await as(readerKey, 'POST', path, { when: 'below', value: 0 })).status).toBe(403)
    expect((await as(readerKey, 'PATCH', one, { value: 3 })).status).toBe(403)
    expect((await as(readerKey, 'DELETE', one)).status).toBe(403)
    for (const key of [outsiderKey, otherKey]) {
      expect((await as(key, 'GET', path)).status).toBe(404)
      expect((await as(key, 'GET', one)).status).toBe(404)
      expect((await as(key, 'GET', `${one}/history`)).status).toBe(404)
      expect((await as(key, 'POST', path, { when: 'below', value: 0 })).status).toBe(404)
      expect((await as(key, 'PATCH', one, { value: 3 })).status).toBe(404)
      expect((await as(key, 'DELETE', one)).status).toBe(404)
    }
    // Ids that are no UUID, a component of no page of the caller, a rule of another component.
    expect((await as(fx.creatorKey, 'GET', alertsPath('nope'))).status).toBe(404)
    expect((await as(fx.creatorKey, 'GET', alertsPath(fx.components.barChart, 'nope'))).status).toBe(404)
    expect((await as(fx.creatorKey, 'GET', `${alertsPath(fx.components.barChart, crypto.randomUUID())}/${alert.id}/history`)).status).toBe(404)
    expect((await as(fx.creatorKey, 'GET', `${path}/nope`)).status).toBe(404)
    expect((await as(fx.creatorKey, 'POST', alertsPath(crypto.randomUUID()), { when: 'below', value: 0 })).status).toBe(404)
    expect((await as(fx.creatorKey, 'GET', `${alertsPath(fx.components.pieChart)}/${alert.id}`)).status).toBe(404)
    expect((await as(fx.creatorKey, 'GET', one)).body.data.value).toBe(0)
    await as(fx.creatorKey, 'DELETE', one)
  })

  test('a component\'s value: a box\'s number, a line chart\'s last point, a bar or pie chart\'s total', async () => {
    for (const [type, data] of Object.entries(SAMPLE_DATA)) await feed(api, fx.creator, fx.components[type as keyof typeof SAMPLE_DATA], data)
    const rows = await sql<{ type: string; value: number | null }>('select type, value::float8 as value from component_values where organization_id = $1 and page_id = $2', [fx.organizationId, fx.pageId])
    expect(Object.fromEntries(rows.map((row) => [row.type, row.value]))).toEqual({ horizontalBox: 1204, verticalBox: 99.98, barChart: 38.5, lineChart: 5, pieChart: 100 })
    const valueOf = async () => (await sql<{ value: number | null }>('select value::float8 as value from component_values where organization_id = $1 and component_id = $2', [fx.organizationId, fx.components.horizontalBox]))[0]!.value
    // No number in the middle: the next text that is one ("+4%"); none at all: null.
    await feed(api, fx.creator, fx.components.horizontalBox, box('n/a'))
    expect(await valueOf()).toBe(4)
    await feed(api, fx.creator, fx.components.horizontalBox, { ...box('n/a'), rightText: { ...SAMPLE_DATA.horizontalBox.rightText, value: 'down' } })
    expect(await valueOf()).toBeNull()
  })
})

describe('transitions', () => {
  test('an above rule fires once and resolves once: history, audit, a push with ⚠ / ✓ and the webhook events', async () => {
    const component = fx.components.horizontalBox
    await as(fx.creatorKey, 'PATCH', `/api/v1/pages/${fx.pageId}/components/${component}`, { title: 'CPU' })
    await feed(api, fx.creator, component, box('50'))
    const alert = (await as(fx.creatorKey, 'POST', alertsPath(component), { when: 'above', value: 90 })).body.data
    await feed(api, fx.creator, component, box('93.5'))
    await eventually(async () => expect(await history(alert.id, component)).toEqual([{ transition: 'fired', value: 93.5, at: expect.any(String) }]), WAIT_MS)
    expect((await as(readerKey, 'GET', `${alertsPath(component)}/${alert.id}`)).body.data.state).toBe('firing')
    // Still above: nothing more.
    await feed(api, fx.creator, component, box('97'))
    await feed(api, fx.creator, component, box('80'))
    const both = await eventually(async () => {
      const rows = await history(alert.id, component)
      expect(rows.map((row) => [row.transition, row.value])).toEqual([['fired', 93.5], ['resolved', 80]])
      return rows
    }, WAIT_MS)
    expect(Date.parse(both[0]!.at)).toBeLessThanOrEqual(Date.parse(both[1]!.at))

    const audited = await sql<{ action: string; via: string; actor: string | null }>(
      `select action, via, actor_user_id as actor from audit_logs where organization_id = $1 and resource_id = $2 and action in ('alert.fired', 'alert.resolved') order by occurred_at`,
      [fx.organizationId, alert.id],
    )
    expect(audited).toEqual([{ action: 'alert.fired', via: 'system', actor: null }, { action: 'alert.resolved', via: 'system', actor: null }])

    const pushes = await eventually(async () => {
      const sent = fcm.sends.filter((send) => send.token === readerDevice && send.message.notification?.title?.endsWith('CPU'))
      expect(sent).toHaveLength(2)
      return sent
    }, WAIT_MS)
    expect(pushes.map((send) => send.message.notification)).toEqual([
      { title: '⚠ CPU', body: 'CPU is 93.5, above 90' },
      { title: '✓ CPU', body: 'CPU is 80, no longer above 90' },
    ])

    const events = await eventually(async () => {
      const arrived = receiver.unique().map((request) => verifySignature(webhookSecret, request)).filter((payload) => payload.data?.alert?.id === alert.id)
      expect(arrived.map((payload) => payload.type)).toEqual(['alert.fired', 'alert.resolved'])
      return arrived
    }, WAIT_MS)
    expect(events[0]).toMatchObject({ projectId: null, data: { transition: 'fired', value: 93.5, component: { id: component, pageId: fx.pageId, title: 'CPU' }, alert: { when: 'above', value: 90 } } })
    // Settled: more updates and sweeps add nothing.
    await feed(api, fx.creator, component, box('70'))
    await as(fx.creatorKey, 'DELETE', `${alertsPath(component)}/${alert.id}`)
  })

  test('a rule with forSeconds waits while the value holds and fires from the sweep once the time has passed', async () => {
    const component = fx.components.lineChart
    await feed(api, fx.creator, component, line(20, 30))
    const alert = (await as(fx.creatorKey, 'POST', alertsPath(component), { when: 'below', value: 10, forSeconds: 300 })).body.data
    await feed(api, fx.creator, component, line(20, 5))
    const pending = await eventually(async () => {
      const current = (await as(fx.creatorKey, 'GET', `${alertsPath(component)}/${alert.id}`)).body.data
      expect(current.pendingSince).not.toBeNull()
      return current
    }, WAIT_MS)
    expect(pending.state).toBe('ok')
    expect(await history(alert.id, component)).toEqual([])
    // Five minutes pass, as far as the rule knows.
    await sql(`update component_alerts set pending_since = now() - interval '301 seconds' where organization_id = $1 and id = $2`, [fx.organizationId, alert.id])
    await eventually(async () => expect((await history(alert.id, component)).map((row) => [row.transition, row.value])).toEqual([['fired', 5]]), WAIT_MS)
    await eventually(async () => expect(fcm.sends.filter((send) => send.message.notification?.body === 'lineChart is 5, below 10 (for 5 min)').map((send) => send.token)).toEqual([readerDevice]), WAIT_MS)
    // Back above: resolved at once, the timer cleared.
    await feed(api, fx.creator, component, line(5, 12))
    await eventually(async () => expect((await history(alert.id, component)).map((row) => row.transition)).toEqual(['fired', 'resolved']), WAIT_MS)
    expect((await as(fx.creatorKey, 'GET', `${alertsPath(component)}/${alert.id}`)).body.data).toMatchObject({ state: 'ok', pendingSince: null })
  })

  test('deleting the component deletes its rules and their history', async () => {
    const component = (await as(fx.creatorKey, 'POST', `/api/v1/pages/${fx.pageId}/components`, { type: 'verticalBox', title: 'Doomed' })).body.data.id
    const alert = (await as(fx.creatorKey, 'POST', alertsPath(component), { when: 'above', value: 1 })).body.data
    await feed(api, fx.creator, component, SAMPLE_DATA.verticalBox)
    await eventually(async () => expect(await history(alert.id, component)).toHaveLength(1), WAIT_MS)
    expect((await as(fx.creatorKey, 'DELETE', `/api/v1/pages/${fx.pageId}/components/${component}`)).status).toBe(200)
    const left = await sql<{ n: number }>('select (select count(*) from component_alerts where organization_id = $1 and id = $2)::int + (select count(*) from alert_transitions where organization_id = $1 and alert_id = $2)::int as n', [fx.organizationId, alert.id])
    expect(left[0]!.n).toBe(0)
  })
})

test('a noData rule fires from the sweep of a service started after the data went old, and resolves when data comes', async () => {
  const database = await createTestDatabase()
  const first = await startTestService({ database, config: CONFIG })
  let second: TestService | undefined
  try {
    const board = await createDisplayFixture(first)
    const component = board.components.pieChart
    await feed(first, board.creator, component, SAMPLE_DATA.pieChart)
    const created = await first.request('POST', alertsPath(component, board.pageId), { key: board.creatorKey, body: { when: 'noData', forSeconds: 600 } })
    expect(created.status).toBe(201)
    const alertId = created.body.data.id
    await first.stop()
    // Eleven minutes without data.
    await queryText(database.db, 'update components set data_timestamp = data_timestamp - 660 where organization_id = $1 and id = $2', [board.organizationId, component])
    second = await startTestService({ database, config: CONFIG })
    const read = () => second!.request('GET', `${alertsPath(component, board.pageId)}/${alertId}/history`, { key: board.creatorKey })
    await eventually(async () => expect((await read()).body.data.map((row: { transition: string }) => row.transition)).toEqual(['fired']), WAIT_MS)
    const [message] = await queryText<{ title: string; body: string }>(database.db, 'select title, body from messages where organization_id = $1 and page_id = $2', [board.organizationId, board.pageId])
    expect(message).toEqual({ title: '⚠ pieChart', body: 'pieChart has had no data for 10 min' })
    await feed(second, board.creator, component, SAMPLE_DATA.pieChart)
    await eventually(async () => expect((await read()).body.data.map((row: { transition: string; value: number }) => [row.transition, row.value])).toEqual([['fired', 100], ['resolved', 100]]), WAIT_MS)
  } finally {
    await second?.stop()
    await database.close()
  }
}, timeLimit(60_000))

test("the sweep is the core outbox runner's `alerts` queue: an overdue timer waits in /metrics where workers are off, and a worker fires it", async () => {
  const database = await createTestDatabase()
  const token = 'alerts-metrics-token-0123456789'
  const idle = await startTestService({ database, config: { ...CONFIG, alerts: { ...CONFIG.alerts, workers: false }, server: { metricsToken: token } } })
  let sweeping: TestService | undefined
  try {
    const scrape = async () => (await idle.request('GET', '/metrics', { unchecked: true, headers: { authorization: `Bearer ${token}` } })).text
    const sample = (text: string, name: string) => Number(text.split('\n').find((line) => line.startsWith(`${name}{queue="alerts"} `))?.split(' ')[1])
    const board = await createDisplayFixture(idle)
    const component = board.components.horizontalBox
    await feed(idle, board.creator, component, box('95'))
    const created = await idle.request('POST', alertsPath(component, board.pageId), { key: board.creatorKey, body: { when: 'above', value: 90, forSeconds: 300 } })
    expect(created.status).toBe(201)
    const alertId = created.body.data.id
    // The evaluation after the creation starts the timer (the update path, not the sweep).
    await eventually(async () => expect((await queryText(database.db, 'select pending_since from component_alerts where organization_id = $1 and id = $2', [board.organizationId, alertId]))[0].pending_since).not.toBeNull(), WAIT_MS)
    let text = await scrape()
    expect(sample(text, 'worktrack_outbox_depth')).toBe(0)
    await queryText(database.db, `update component_alerts set pending_since = now() - interval '360 seconds' where organization_id = $1 and id = $2`, [board.organizationId, alertId])
    text = await scrape()
    expect(sample(text, 'worktrack_outbox_depth')).toBe(1)
    // Due 60 s ago (300 s of the 360 counted).
    expect(sample(text, 'worktrack_outbox_oldest_due_seconds')).toBeGreaterThanOrEqual(60)
    expect(sample(text, 'worktrack_outbox_oldest_due_seconds')).toBeLessThan(120)
    // Several polls of an instance with workers would have fired it by now; this one has none.
    expect((await idle.request('GET', `${alertsPath(component, board.pageId)}/${alertId}/history`, { key: board.creatorKey })).body.data).toEqual([])
    sweeping = await startTestService({ database, config: CONFIG })
    await eventually(async () => expect((await sweeping!.request('GET', `${alertsPath(component, board.pageId)}/${alertId}/history`, { key: board.creatorKey })).body.data.map((row: { transition: string }) => row.transition)).toEqual(['fired']), WAIT_MS)
    expect(sample(await scrape(), 'worktrack_outbox_depth')).toBe(0)
  } finally {
    await sweeping?.stop()
    await idle.stop()
    await database.close()
  }
}, timeLimit(60_000))

test("a transition marks its component on the live page: a viewer on another instance gets the page's marks, the page is drawn with them, and a resolve or a deleted firing rule takes them away", async () => {
  const database = await createTestDatabase()
  const a = await startTestService({ database, config: CONFIG })
  const b = await startTestService({ database, config: CONFIG })
  const bHttp = listen(b)
  let stream: EventStream | undefined
  try {
    const board = await createDisplayFixture(a)
    const component = board.components.horizontalBox
    const { cookie } = await webSession(a, board.reader, { displayName: 'Reader' })
    const drawn = async () => (await fetch(`${bHttp.url}/pages/${board.pageName}`, { headers: { cookie } })).text()
    const cell = (page: string) => new RegExp(`<section class="component" id="component-${component}"[^>]*>\\s*<h2>[^<]*</h2>\\s*(<ul class="marks" data-marks>.*?</ul>)?`, 's').exec(page)
    const marks = () => stream!.events.filter((event) => event.event === 'marks').map((event) => event.data.components as Record<string, string>)
    stream = await openEventStream(`${bHttp.url}/pages/${board.pageName}/events`, { cookie })
    await feed(a, board.creator, component, box('10'))
    expect((await a.request('PATCH', `/api/v1/pages/${board.pageId}/components/${component}`, { key: board.creatorKey, body: { title: 'Load' } })).status).toBe(200)
    const above = (await a.request('POST', alertsPath(component, board.pageId), { key: board.creatorKey, body: { when: 'above', value: 50 } })).body.data
    expect(cell(await drawn())![1]).toBeUndefined()

    await feed(a, board.creator, component, box('93'))
    await eventually(async () => expect(marks()).toHaveLength(1), WAIT_MS)
    const [fired] = marks()
    expect(Object.keys(fired!)).toEqual([component])
    expect(fired![component]).toMatch(/^<ul class="marks" data-marks><li class="mark" data-tone="alert" title="Firing since \d{4}-\d\d-\d\d \d\d:\d\d UTC">⚠ above 50<\/li><\/ul>$/)
    // The page drawn now has the same mark, after the title (another instance, no event needed).
    expect(cell(await drawn())![1]).toBe(fired![component])

    await feed(a, board.creator, component, box('20'))
    await eventually(async () => expect(marks()).toHaveLength(2), WAIT_MS)
    expect(marks()[1]).toEqual({})
    expect(cell(await drawn())![1]).toBeUndefined()
    expect((await a.request('DELETE', `${alertsPath(component, board.pageId)}/${above.id}`, { key: board.creatorKey })).status).toBe(200)

    // A rule that holds at once fires on creation; deleting it while it fires unmarks the page.
    const below = (await a.request('POST', alertsPath(component, board.pageId), { key: board.creatorKey, body: { when: 'below', value: 50 } })).body.data
    await eventually(async () => expect(marks()).toHaveLength(3), WAIT_MS)
    expect(marks()[2]![component]).toContain('⚠ below 50')
    expect((await a.request('DELETE', `${alertsPath(component, board.pageId)}/${below.id}`, { key: board.creatorKey })).status).toBe(200)
    await eventually(async () => expect(marks()).toHaveLength(4), WAIT_MS)
    expect(marks()[3]).toEqual({})
    expect(cell(await drawn())![1]).toBeUndefined()
  } finally {
    stream?.close()
    bHttp.stop()
    await b.stop()
    await a.stop()
    await database.close()
  }
}, timeLimit(60_000))
