/**
 * Push controls end to end, through the service and firebase-admin to the fake FCM server:
 * message options on the wire, scheduling and cancelling, delivery reports, notification
 * preferences (quiet hours, muted pages) and receipts. Times are moved in SQL, never waited for.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createDisplayFixture, type DisplayFixture } from '../helpers/display-fixture'
import { startFakeFcm, type FakeFcm, type RecordedSend } from '../helpers/fake-fcm'
import { eventually, startTestService, type TestService, type TestUser } from '../helpers/service'
import { signIn } from '../helpers/sessions'
import { sqlOn } from '../helpers/database'

let fcm: FakeFcm
let api: TestService
let fx: DisplayFixture

beforeAll(async () => {
  fcm = await startFakeFcm(undefined, { redirect: true })
  api = await startTestService({
    provide: fcm.provide,
    config: { push: { pollIntervalMs: 50, retryBaseMs: 200, retryMaxMs: 400, maxAttempts: 3, leaseSeconds: 5 } },
  })
  fx = await createDisplayFixture(api)
})
afterAll(async () => {
  await api.stop()
  await fcm.close()
})

const HOUR = 3_600_000
const sql = sqlOn(() => api)

let sequence = 0
const newToken = (label: string) => `${label}-${++sequence}:APA91b${Math.random().toString(36).slice(2, 14)}`

async function addDevice(session: string, platform = 'android'): Promise<string> {
  const token = newToken(platform)
  const response = await api.request('POST', '/api/devices', { body: { token, platform }, headers: { authorization: `Bearer ${session}` } })
  expect(response.status).toBe(201)
  return token
}

/** A page of the fixture's creator (who has no devices in this file): its audience is exactly the members a test adds. */
async function newPage(): Promise<{ id: string; name: string }> {
  const response = await api.request('POST', '/api/v1/pages', { key: fx.creatorKey, body: { name: `controls-${++sequence}` } })
  expect(response.status).toBe(201)
  return { id: response.body.data.id, name: response.body.data.name }
}

interface Member {
  user: TestUser
  session: string
  token: string
}

/** A new user of the organization on `page`'s access list, signed in on one device. */
async function member(page: { id: string }, options: { platform?: string; level?: 'viewer' | 'editor' } = {}): Promise<Member> {
  const user = await api.createUser(fx.organizationId, 'member', { password: `member password ${++sequence}` })
  const grant = await api.request('POST', `/api/v1/pages/${page.id}/access`, { key: fx.creatorKey, body: { userId: user.id, level: options.level ?? 'viewer' } })
  expect(grant.status).toBe(201)
  const session = await signIn(api, user)
  return { user, session, token: await addDevice(session, options.platform) }
}

const send = (body: Record<string, unknown>) =>
  api.request('POST', '/api/message', { body: { apiKey: fx.creator.displayApiKey, ...body }, headers: { 'content-type': 'application/json' } })

/** Sends a message to `page`; its id. */
async function message(page: { name: string }, body: Record<string, unknown> = {}): Promise<string> {
  const response = await send({ pageName: page.name, message: `note ${++sequence}`, ...body })
  expect(response.status).toBe(200)
  return response.headers.get('x-message-id')!
}

const STATES = ['pending', 'held', 'sent', 'failed', 'pruned', 'expired', 'cancelled', 'undelivered'] as const

/** The report of a message; every targeted device is in exactly one of its states. */
async function report(page: { id: string }, messageId: string) {
  const response = await api.request('GET', `/api/v1/pages/${page.id}/messages/${messageId}`, { key: fx.creatorKey })
  expect(response.status).toBe(200)
  const data = response.body.data
  expect(STATES.reduce((sum, state) => sum + data[state], 0)).toBe(data.targeted)
  return data
}

/** Polls until the report has `counts`; the report. */
const settled = (page: { id: string }, messageId: string, counts: Record<string, number>, timeoutMs = 5000) =>
  eventually(async () => {
    const current = await report(page, messageId)
    expect(current).toMatchObject(counts)
    return current
  }, timeoutMs)

const sendsOf = (messageId: string) => fcm.sends.filter((each) => each.message.data?.messageId === messageId)
const sendsTo = (token: string) => fcm.sends.filter((each) => each.token === token)

async function deliveryOf(messageId: string, token: string) {
  const [row] = await sql<{ state: string; attempts: number; nextAttemptAt: number }>(
    `select state, attempts, (extract(epoch from next_attempt_at) * 1000)::float8 as "nextAttemptAt" from deliveries where message_id = $1 and device_token = $2`,
    [messageId, token],
  )
  return row
}

/** Makes a message and its waiting deliveries due now (a scheduled time, or the end of a hold). */
async function dueNow(messageId: string) {
  await sql(`update messages set send_at = now() - interval '1 second' where id = $1 and send_at is not null`, [messageId])
  await sql(`update deliveries set next_attempt_at = now() - interval '1 second' where message_id = $1`, [messageId])
}

const preferences = (credential: string, body?: unknown) =>
  api.request(body === undefined ? 'GET' : 'PUT', '/api/v1/users/me/notifications', { key: credential, ...(body === undefined ? {} : { body }) })

/** `HH:MM` on the wall clock of `timeZone` at `instant`. */
const clock = (instant: number, timeZone: string) => new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(instant))

/**
 * Quiet hours from an hour ago to an hour ahead in `timeZone` (one without DST, its offset in
 * whole minutes), and the instant they end: the minute an hour from now.
 */
function quietAroundNow(timeZone: string) {
  const now = Date.now()
  return { quietHours: { start: clock(now - HOUR, timeZone), end: clock(now + HOUR, timeZone), timeZone }, endsAt: Math.floor((now + HOUR) / 60_000) * 60_000 }
}

const APNS_PAYLOAD = { aps: { sound: 'default' } }

/**
 * The TTL a send carried (its Web Push TTL), checked to be what was left of a 3600 s TTL when the
 * worker decided: after the message was recorded (`createdAt`), before the fake received it.
 */
function ttlLeft(each: RecordedSend, createdAt: string): number {
  const left = Number(each.message.webpush!.headers!.TTL)
  expect(left).toBeLessThanOrEqual(3600)
  expect(left).toBeGreaterThanOrEqual(Math.floor((Date.parse(createdAt) + HOUR - each.receivedAt) / 1000))
  return left
}

describe('message options', () => {
  test('priority, ttlSeconds and collapseKey reach FCM as android, apns and webpush fields; without them the message is the default one', async () => {
    const page = await newPage()
    const someone = await member(page)
    const tokens = [someone.token, await addDevice(someone.session, 'ios'), await addDevice(someone.session, 'web')]

    const plain = await message(page, { message: 'plain' })
    const plainReport = await settled(page, plain, { sent: 3 })
    for (const token of tokens)
      expect(sendsTo(token).find((each) => each.message.data?.messageId === plain)!.message).toEqual({
        token,
        notification: { title: page.name, body: 'plain' },
        data: { pageName: page.name, messageId: plain, sentAt: plainReport.createdAt },
        android: { priority: 'high' },
        apns: { headers: { 'apns-priority': '10', 'apns-push-type': 'alert' }, payload: APNS_PAYLOAD },
        webpush: { headers: { Urgency: 'high' } },
      })

    const quiet = await message(page, { message: 'disk', priority: 'normal', ttlSeconds: 3600, collapseKey: 'disk db-2' })
    const done = await settled(page, quiet, { sent: 3 })
    expect(done).toEqual({
      id: quiet,
      pageId: page.id,
      pageName: page.name,
      title: page.name,
      message: 'disk',
      sentBy: fx.creator.id,
      createdAt: expect.any(String),
      priority: 'normal',
      ttlSeconds: 3600,
      collapseKey: 'disk db-2',
      sendAt: null,
      critical: false,
      cancelledAt: null,
      targeted: 3,
      pending: 0,
      held: 0,
      sent: 3,
      failed: 0,
      pruned: 0,
      expired: 0,
      cancelled: 0,
      undelivered: 0,
      delivered: 0,
      opened: 0,
    })
    expect(sendsOf(quiet).map((each) => each.token).sort()).toEqual([...tokens].sort())
    for (const each of sendsOf(quiet)) {
      const left = ttlLeft(each, done.createdAt)
      expect(each.message).toEqual({
        token: each.token,
        notification: { title: page.name, body: 'disk' },
        data: { pageName: page.name, messageId: quiet, sentAt: done.createdAt },
        android: { priority: 'normal', ttl: `${left}s`, collapse_key: 'disk db-2' },
        apns: { headers: { 'apns-priority': '5', 'apns-push-type': 'alert', 'apns-expiration': expect.any(String), 'apns-collapse-id': 'disk db-2' }, payload: APNS_PAYLOAD },
        webpush: { headers: { Urgency: 'normal', TTL: String(left) } },
      })
    }

    // ttlSeconds 0: now or never, on every transport.
    const now = await message(page, { message: 'now or never', ttlSeconds: 0 })
    await settled(page, now, { sent: 3 })
    for (const each of sendsOf(now)) {
      expect(each.message.android).toEqual({ priority: 'high', ttl: '0s' })
      expect(each.message.apns!.headers).toEqual({ 'apns-priority': '10', 'apns-push-type': 'alert', 'apns-expiration': '0' })
      expect(each.message.webpush).toEqual({ headers: { Urgency: 'high', TTL: '0' } })
    }
  })

  test('apns-expiration is the epoch second at which what is left of the TTL runs out', async () => {
    const page = await newPage()
    const someone = await member(page, { platform: 'ios' })
    const sent = await message(page, { ttlSeconds: 3600 })
    const done = await settled(page, sent, { sent: 1 })
    const [each] = sendsOf(sent)
    const left = ttlLeft(each!, done.createdAt)
    // Built between the worker's decision and the fake's receipt: (left s after) the epoch second then.
    const expiration = Number(each!.message.apns!.headers!['apns-expiration'])
    expect(each!.token).toBe(someone.token)
    expect(expiration - left).toBeGreaterThanOrEqual(Math.floor(Date.parse(done.createdAt) / 1000))
    expect(expiration - left).toBeLessThanOrEqual(Math.floor(each!.receivedAt / 1000))
  })

  test('each bad option is 400 invalidRequest naming it, counted against the daily limit', async () => {
    const used = async () => Number((await send({ pageName: fx.pageName, message: 'count' })).headers.get('x-ratelimit-used'))
    const before = await used()
    const ahead = (ms: number) => new Date(Date.now() + ms).toISOString()
    const invalid: Array<[Record<string, unknown>, string]> = [
      [{ priority: 'urgent' }, 'priority'],
      [{ priority: 10 }, 'priority'],
      [{ ttlSeconds: -1 }, 'ttlSeconds'],
      [{ ttlSeconds: 2_419_201 }, 'ttlSeconds'],
      [{ ttlSeconds: 1.5 }, 'ttlSeconds'],
      [{ ttlSeconds: '60' }, 'ttlSeconds'],
      [{ collapseKey: '' }, 'collapseKey'],
      [{ collapseKey: 'x'.repeat(65) }, 'collapseKey'],
      [{ collapseKey: 'déjà' }, 'collapseKey'],
      [{ collapseKey: 'a\nb' }, 'collapseKey'],
      [{ sendAt: 'tomorrow' }, 'sendAt'],
      [{ sendAt: 1_800_000_000 }, 'sendAt'],
      [{ sendAt: ahead(30 * 24 * HOUR + 60_000) }, 'sendAt'],
      [{ sendAt: ahead(-HOUR - 60_000) }, 'sendAt'],
      [{ critical: 'yes' }, 'critical'],
      [{ critical: 1 }, 'critical'],
    ]
    for (const [options, field] of invalid) {
      const response = await send({ pageName: fx.pageName, message: 'hi', ...options })
      expect(response.status).toBe(400)
      expect(response.body).toMatchObject({ message: 'invalidRequest', field })
    }
    expect(await used()).toBe(before + invalid.length + 1)
    const [written] = await sql<{ n: number }>(`select count(*)::int as n from messages where page_id = $1 and body = 'hi'`, [fx.pageId])
    expect(written!.n).toBe(0)

    // The limits themselves are accepted: 4 weeks of TTL, 64 characters, 30 days ahead (scheduled).
    const edge = await send({ pageName: fx.pageName, message: 'edge', ttlSeconds: 2_419_200, collapseKey: '~'.repeat(64), sendAt: ahead(30 * 24 * HOUR - 60_000), critical: true })
    expect(edge.status).toBe(200)
    expect(await report({ id: fx.pageId }, edge.headers.get('x-message-id')!)).toMatchObject({ ttlSeconds: 2_419_200, collapseKey: '~'.repeat(64), critical: true, sendAt: expect.any(String) })
  })
})

describe('scheduling and cancelling', () => {
  test('a scheduled message waits, pending until its sendAt, then goes out; a slightly past sendAt sends at once', async () => {
    const page = await newPage()
    const someone = await member(page)
    const sendAt = new Date(Date.now() + HOUR).toISOString()
    const scheduled = await message(page, { sendAt })
    expect(await report(page, scheduled)).toMatchObject({ sendAt, targeted: 1, pending: 1, sent: 0 })
    expect(await deliveryOf(scheduled, someone.token)).toEqual({ state: 'pending', attempts: 0, nextAttemptAt: Date.parse(sendAt) })

    // A message sent after it arrives while the scheduled one stays put.
    const control = await message(page)
    await settled(page, control, { sent: 1 })
    expect(sendsOf(scheduled)).toEqual([])
    expect((await report(page, scheduled)).pending).toBe(1)

    await dueNow(scheduled)
    const done = await settled(page, scheduled, { sent: 1, pending: 0 })
    expect(sendsOf(scheduled).map((each) => [each.token, each.message.data!.sentAt])).toEqual([[someone.token, done.sendAt]])

    const late = await message(page, { sendAt: new Date(Date.now() - 10 * 60_000).toISOString() })
    expect(await settled(page, late, { sent: 1 })).toMatchObject({ sendAt: null })
  })

  test('page editors cancel a scheduled message: cancelled, audited, never sent after its time; again: the same report', async () => {
    const page = await newPage()
    const editor = await member(page, { level: 'editor' })
    const viewer = await member(page)
    const scheduled = await message(page, { sendAt: new Date(Date.now() + HOUR).toISOString(), collapseKey: 'nightly' })
    const path = `/api/v1/pages/${page.id}/messages/${scheduled}`

    const viewerKey = (await api.createKey(viewer.user.id, ['dashboards:read', 'dashboards:write'])).secret
    const outsiderKey = (await api.createKey(fx.outsider.id, ['dashboards:read', 'dashboards:write'])).secret
    const readOnlyKey = (await api.createKey(fx.creator.id, ['dashboards:read'])).secret
    const editorKey = (await api.createKey(editor.user.id, ['dashboards:write'])).secret
    expect((await api.request('DELETE', path, { key: viewerKey })).status).toBe(403)
    expect((await api.request('DELETE', path, { key: readOnlyKey })).status).toBe(403)
    expect((await api.request('DELETE', path, { key: outsiderKey })).status).toBe(404)
    const otherPage = await newPage()
    for (const wrong of [`/api/v1/pages/${page.id}/messages/${crypto.randomUUID()}`, `/api/v1/pages/${page.id}/messages/not-a-uuid`, `/api/v1/pages/${otherPage.id}/messages/${scheduled}`]) {
      const response = await api.request('DELETE', wrong, { key: fx.creatorKey })
      expect(response.status).toBe(404)
      expect(response.body.errors[0].code).toBe('NOT_FOUND')
    }
    expect(await report(page, scheduled)).toMatchObject({ pending: 2, cancelled: 0, cancelledAt: null })

    const cancelled = await api.request('DELETE', path, { key: editorKey })
    expect(cancelled.status).toBe(200)
    expect(cancelled.body.data).toMatchObject({ id: scheduled, collapseKey: 'nightly', targeted: 2, pending: 0, held: 0, sent: 0, cancelled: 2, cancelledAt: expect.any(String) })
    const states = await sql<{ state: string }>('select state from deliveries where message_id = $1', [scheduled])
    expect(states).toEqual([{ state: 'cancelled' }, { state: 'cancelled' }])
    const audits = await sql<{ actor: string; resourceType: string; changes: unknown }>(
      `select actor_user_id as actor, resource_type as "resourceType", changes from audit_logs where action = 'message.cancelled' and resource_id = $1`,
      [scheduled],
    )
    expect(audits).toEqual([{ actor: editor.user.id, resourceType: 'message', changes: { after: { pageId: page.id, cancelledDeliveries: 2 } } }])

    const again = await api.request('DELETE', path, { key: fx.creatorKey })
    expect(again.status).toBe(200)
    expect(again.body.data).toEqual(cancelled.body.data)
    expect(await sql(`select 1 from audit_logs where action = 'message.cancelled' and resource_id = $1`, [scheduled])).toHaveLength(1)

    // Past its time: the deliveries stay cancelled; a message sent after it reaches both devices.
    await dueNow(scheduled)
    const control = await message(page)
    await settled(page, control, { sent: 2 })
    expect(sendsOf(scheduled)).toEqual([])
    expect(await report(page, scheduled)).toEqual({ ...cancelled.body.data, sendAt: expect.any(String) })
  })

  test('a message that has gone out is not cancelled (409), and nothing changes', async () => {
    const page = await newPage()
    await member(page)
    const sent = await message(page)
    const before = await settled(page, sent, { sent: 1 })
    const refused = await api.request('DELETE', `/api/v1/pages/${page.id}/messages/${sent}`, { key: fx.creatorKey })
    expect(refused.status).toBe(409)
    expect(refused.body.errors[0].code).toBe('CONFLICT')
    expect(await report(page, sent)).toEqual(before)
    expect(await sql(`select 1 from audit_logs where action = 'message.cancelled' and resource_id = $1`, [sent])).toEqual([])
  })
})

/** The preferences as answered: the push plugin's, and the notifications plugin's `work` section at its defaults. */
const withWork = (own: Record<string, unknown>) => ({ ...own, work: { assigned: 'push', mentioned: 'push', status_changed: 'inbox', commented: 'inbox', created: 'inbox' } })

describe('notification preferences', () => {
  test('none until set; PUT replaces them; by any API key or a mobile session; never another user\'s', async () => {
    const page = await newPage()
    const second = await newPage()
    const someone = await member(page)
    const other = await member(page)
    // Muted pages are pages the user sees: someone is on both.
    expect((await api.request('POST', `/api/v1/pages/${second.id}/access`, { key: fx.creatorKey, body: { userId: someone.user.id } })).status).toBe(201)
    const noScopeKey = (await api.createKey(someone.user.id, [])).secret
    const empty = { quietHours: null, mutedPageIds: [] }
    for (const credential of [noScopeKey, someone.session]) {
      const response = await preferences(credential)
      expect(response.status).toBe(200)
      expect(response.body.data).toEqual(withWork(empty))
    }

    const chosen = { quietHours: { start: '22:00', end: '07:00', timeZone: 'Europe/Berlin' }, mutedPageIds: [page.id, second.id] }
    const put = await preferences(someone.session, chosen)
    expect(put.status).toBe(200)
    expect(put.body.data).toEqual(withWork(chosen))
    expect((await preferences(noScopeKey)).body.data).toEqual(withWork(chosen))
    expect((await preferences(other.session)).body.data).toEqual(withWork(empty))

    // Replaced as a whole; an id given twice (in any case) is kept once, in the order given.
    const next = { quietHours: null, mutedPageIds: [second.id.toUpperCase(), page.id, second.id] }
    const replaced = await preferences(noScopeKey, next)
    expect(replaced.status).toBe(200)
    expect(replaced.body.data).toEqual(withWork({ quietHours: null, mutedPageIds: [second.id, page.id] }))
    expect((await preferences(someone.session)).body.data).toEqual(withWork({ quietHours: null, mutedPageIds: [second.id, page.id] }))

    const audits = await sql<{ changes: unknown; resourceType: string }>(
      `select changes, resource_type as "resourceType" from audit_logs where action = 'notification_preferences.updated' and resource_id = $1 order by occurred_at, id`,
      [someone.user.id],
    )
    expect(audits).toEqual([
      { resourceType: 'user', changes: { before: withWork(empty), after: withWork(chosen) } },
      { resourceType: 'user', changes: { before: withWork(chosen), after: withWork({ quietHours: null, mutedPageIds: [second.id, page.id] }) } },
    ])
  })

  test('a muted page the user no longer sees (access revoked, page deleted) is left out of GET, so what GET answers PUT accepts', async () => {
    const [kept, revoked, deleted] = [await newPage(), await newPage(), await newPage()]
    const someone = await member(kept)
    for (const page of [revoked, deleted]) expect((await api.request('POST', `/api/v1/pages/${page.id}/access`, { key: fx.creatorKey, body: { userId: someone.user.id } })).status).toBe(201)
    const chosen = { quietHours: null, mutedPageIds: [deleted.id, kept.id, revoked.id] }
    expect((await preferences(someone.session, chosen)).body.data).toEqual(withWork(chosen))

    expect((await api.request('DELETE', `/api/v1/pages/${revoked.id}/access/${someone.user.id}`, { key: fx.creatorKey })).status).toBe(200)
    expect((await api.request('DELETE', `/api/v1/pages/${deleted.id}`, { key: fx.creatorKey })).status).toBe(200)
    const read = await preferences(someone.session)
    expect(read.body.data).toEqual(withWork({ quietHours: null, mutedPageIds: [kept.id] }))
    const again = await preferences(someone.session, read.body.data)
    expect(again.status).toBe(200)
    expect(again.body.data).toEqual(read.body.data)
  })

  test('bad preferences are 400 naming the field and change nothing; no credentials is 401', async () => {
    const page = await newPage()
    const someone = await member(page)
    const kept = { quietHours: { start: '21:30', end: '06:45', timeZone: 'America/New_York' }, mutedPageIds: [] }
    expect((await preferences(someone.session, kept)).status).toBe(200)
    const quiet = (overrides: Record<string, unknown>) => ({ quietHours: { ...kept.quietHours, ...overrides }, mutedPageIds: [] })
    const invalid: Array<[unknown, string]> = [
      [quiet({ end: '21:30' }), 'quietHours.end'],
      [quiet({ timeZone: 'Mars/Olympus' }), 'quietHours.timeZone'],
      // Inside the object-or-null, the object's own field is named.
      [quiet({ start: '24:00' }), 'quietHours.start'],
      [quiet({ end: '7:00' }), 'quietHours.end'],
      [quiet({ days: [1, 2] }), 'quietHours.days'],
      [{ quietHours: 'night', mutedPageIds: [] }, 'quietHours'],
      [{ ...kept, color: 'red' }, 'color'],
      [{ quietHours: null }, 'mutedPageIds'],
      [{ quietHours: null, mutedPageIds: ['not-a-uuid'] }, 'mutedPageIds[0]'],
      // A page the user cannot see (here: none has this id).
      [{ quietHours: null, mutedPageIds: [page.id, crypto.randomUUID()] }, 'mutedPageIds[1]'],
      [{ quietHours: null, mutedPageIds: Array.from({ length: 501 }, () => crypto.randomUUID()) }, 'mutedPageIds'],
    ]
    for (const [body, field] of invalid) {
      const response = await preferences(someone.session, body)
      expect(response.status).toBe(400)
      expect(response.body.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field })
    }
    // 500 pages is the most, and allowed: pages the user created, made in SQL (500 requests would take most of this file's time).
    const made = await sql<{ id: string }>(`insert into pages (id, organization_id, name, created_by) select gen_random_uuid(), $1, 'most-' || n, $2 from generate_series(1, 500) n returning id`, [
      fx.organizationId,
      someone.user.id,
    ])
    const most = made.map((row) => row.id)
    expect((await preferences(someone.session, { quietHours: null, mutedPageIds: most })).body.data.mutedPageIds).toEqual(most)
    expect((await preferences(someone.session, kept)).status).toBe(200)

    for (const method of ['GET', 'PUT']) {
      const anonymous = await api.request(method, '/api/v1/users/me/notifications', method === 'PUT' ? { body: kept } : {})
      expect(anonymous.status).toBe(401)
      expect(anonymous.body.errors[0].code).toBe('UNAUTHORIZED')
      const forged = await api.request(method, '/api/v1/users/me/notifications', { key: `wts_${'A'.repeat(43)}`, ...(method === 'PUT' ? { body: kept } : {}) })
      expect(forged.status).toBe(401)
    }
    expect((await preferences(someone.session)).body.data).toEqual(withWork(kept))
  })
})

describe('quiet hours', () => {
  test('Asia/Tokyo: a push is held until they end, re-decided when due, a critical one goes through, and it goes once they are removed', async () => {
    const page = await newPage()
    const sleeper = await member(page)
    const { quietHours, endsAt } = quietAroundNow('Asia/Tokyo')
    expect((await preferences(sleeper.session, { quietHours, mutedPageIds: [] })).status).toBe(200)

    const held = await message(page)
    await settled(page, held, { held: 1, pending: 0 })
    const row = await deliveryOf(held, sleeper.token)
    expect(row).toMatchObject({ state: 'held', attempts: 0 })
    expect(Math.abs(row!.nextAttemptAt - endsAt)).toBeLessThan(5000)

    // Due again while they last: held again until they end.
    await dueNow(held)
    await eventually(async () => {
      const again = await deliveryOf(held, sleeper.token)
      expect(again).toMatchObject({ state: 'held', attempts: 0 })
      expect(Math.abs(again!.nextAttemptAt - endsAt)).toBeLessThan(5000)
    })

    const critical = await message(page, { critical: true })
    expect(await settled(page, critical, { sent: 1 })).toMatchObject({ critical: true, held: 0 })
    expect(sendsOf(critical).map((each) => each.token)).toEqual([sleeper.token])
    expect(sendsOf(held)).toEqual([])

    expect((await preferences(sleeper.session, { quietHours: null, mutedPageIds: [] })).status).toBe(200)
    await dueNow(held)
    await settled(page, held, { sent: 1, held: 0 })
    expect(sendsOf(held).map((each) => each.token)).toEqual([sleeper.token])
    expect(await deliveryOf(held, sleeper.token)).toMatchObject({ state: 'sent', attempts: 1 })
  })

  test('Asia/Kolkata: held until they end, or until an earlier expiry, then expired unsent; ttl 0 expires at once', async () => {
    const page = await newPage()
    const sleeper = await member(page)
    const { quietHours, endsAt } = quietAroundNow('Asia/Kolkata')
    expect((await preferences(sleeper.session, { quietHours, mutedPageIds: [] })).status).toBe(200)

    const untilEnd = await message(page, { ttlSeconds: 7200 })
    await settled(page, untilEnd, { held: 1 })
    expect(Math.abs((await deliveryOf(untilEnd, sleeper.token))!.nextAttemptAt - endsAt)).toBeLessThan(5000)

    const short = await message(page, { ttlSeconds: 600 })
    const heldReport = await settled(page, short, { held: 1 })
    expect(Math.abs((await deliveryOf(short, sleeper.token))!.nextAttemptAt - (Date.parse(heldReport.createdAt) + 600_000))).toBeLessThan(5000)
    // Its ten minutes have passed: due, and dropped.
    // The time is given, not computed from the column: Citus refuses a stable function of a column in an UPDATE.
    await sql(`update messages set created_at = $2::timestamptz where id = $1`, [short, new Date(Date.parse(heldReport.createdAt) - 600_000).toISOString()])
    await dueNow(short)
    await settled(page, short, { expired: 1, held: 0 })

    const never = await message(page, { ttlSeconds: 0 })
    await settled(page, never, { expired: 1, held: 0, pending: 0 })
    expect([...sendsOf(untilEnd), ...sendsOf(short), ...sendsOf(never)]).toEqual([])
    expect(sendsTo(sleeper.token)).toEqual([])
  })

  test('a held message can be cancelled; one that reached someone else cannot', async () => {
    const page = await newPage()
    const sleeper = await member(page)
    expect((await preferences(sleeper.session, { quietHours: quietAroundNow('Asia/Tokyo').quietHours, mutedPageIds: [] })).status).toBe(200)
    const alone = await message(page)
    await settled(page, alone, { held: 1 })
    const cancelled = await api.request('DELETE', `/api/v1/pages/${page.id}/messages/${alone}`, { key: fx.creatorKey })
    expect(cancelled.status).toBe(200)
    expect(cancelled.body.data).toMatchObject({ held: 0, cancelled: 1, targeted: 1 })

    const awake = await member(page)
    const mixed = await message(page)
    await settled(page, mixed, { held: 1, sent: 1 })
    expect((await api.request('DELETE', `/api/v1/pages/${page.id}/messages/${mixed}`, { key: fx.creatorKey })).status).toBe(409)
    expect(await report(page, mixed)).toMatchObject({ held: 1, sent: 1, cancelled: 0, cancelledAt: null })
    expect(sendsOf(mixed).map((each) => each.token)).toEqual([awake.token])
  })
})

describe('muted pages', () => {
  test('a user who muted the page is not targeted; a message scheduled before the mute is cancelled for them when due', async () => {
    const page = await newPage()
    const muting = await member(page)
    const listening = await member(page)
    const scheduled = await message(page, { sendAt: new Date(Date.now() + HOUR).toISOString() })
    expect((await report(page, scheduled)).targeted).toBe(2)

    expect((await preferences(muting.session, { quietHours: null, mutedPageIds: [page.id] })).status).toBe(200)
    const after = await message(page)
    await settled(page, after, { targeted: 1, sent: 1 })
    expect(await sql('select 1 from deliveries where message_id = $1 and user_id = $2', [after, muting.user.id])).toEqual([])

    await dueNow(scheduled)
    await settled(page, scheduled, { targeted: 2, sent: 1, cancelled: 1, pending: 0 })
    expect(await deliveryOf(scheduled, muting.token)).toMatchObject({ state: 'cancelled' })
    expect(sendsTo(muting.token)).toEqual([])
    expect([...sendsOf(scheduled), ...sendsOf(after)].map((each) => each.token)).toEqual([listening.token, listening.token])
  })
})

describe('receipts', () => {
  const receipt = (session: string | undefined, body: unknown) =>
    api.request('POST', '/api/devices/receipts', { body, headers: session ? { authorization: `Bearer ${session}` } : {} })

  test('an app reports a message delivered or opened: 204, each user counted once per event', async () => {
    const page = await newPage()
    const twoDevices = await member(page)
    await addDevice(twoDevices.session, 'ios')
    const other = await member(page)
    const sent = await message(page)
    await settled(page, sent, { sent: 3 })

    for (const [session, event] of [
      [twoDevices.session, 'delivered'],
      [twoDevices.session, 'delivered'],
      [twoDevices.session, 'opened'],
      [other.session, 'delivered'],
      [await signIn(api, twoDevices.user), 'delivered'],
    ] as const) {
      const response = await receipt(session, { messageId: sent, event })
      expect(response.status).toBe(204)
      expect(response.text).toBe('')
    }
    expect(await report(page, sent)).toMatchObject({ delivered: 2, opened: 1, sent: 3 })
  })

  test('404 for a message not sent to the user, 400 for a bad body, 401 without a session', async () => {
    const page = await newPage()
    const someone = await member(page)
    const stranger = await member(await newPage())
    const sent = await message(page)
    await settled(page, sent, { sent: 1 })
    const scheduled = await message(page, { sendAt: new Date(Date.now() + HOUR).toISOString() })

    for (const [session, messageId] of [
      [stranger.session, sent],
      [someone.session, crypto.randomUUID()],
      [someone.session, scheduled],
    ] as const) {
      const response = await receipt(session, { messageId, event: 'delivered' })
      expect(response.status).toBe(404)
      expect(response.body.message).toBe('messageNotFound')
    }

    const bad: Array<[unknown, string | undefined]> = [
      [{ messageId: 'nope', event: 'delivered' }, 'messageId'],
      [{ messageId: sent, event: 'read' }, 'event'],
      [{ messageId: sent }, 'event'],
      [{ event: 'opened' }, 'messageId'],
      [{ messageId: sent, event: 'opened', at: 1 }, 'at'],
      [[], undefined],
    ]
    for (const [body, field] of bad) {
      const response = await receipt(someone.session, body)
      expect(response.status).toBe(400)
      expect(response.body.message).toBe('invalidRequest')
      expect(response.body.field).toBe(field)
    }
    const broken = await api.request('POST', '/api/devices/receipts', { rawBody: '{"messageId":', headers: { authorization: `Bearer ${someone.session}`, 'content-type': 'application/json' } })
    expect(broken.status).toBe(400)

    for (const session of [undefined, 'not-a-session', fx.creatorKey]) {
      const response = await receipt(session, { messageId: sent, event: 'delivered' })
      expect(response.status).toBe(401)
      expect(response.body.message).toBe('invalidSession')
    }
    expect(await report(page, sent)).toMatchObject({ delivered: 0, opened: 0 })
    expect(await sql('select 1 from message_receipts where message_id = any($1::uuid[])', [[sent, scheduled]])).toEqual([])
  })
})
