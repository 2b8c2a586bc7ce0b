/**
 * A push goes out only to a recipient who still is one: recipients are chosen when a message is
 * recorded, and a scheduled, held or retried delivery goes out later, so the outbox checks again
 * when it claims it — the device still registered to the same user in the organization, the user
 * active and still on the page. Otherwise the delivery ends unsent: `pruned` (the device is gone,
 * or its token now belongs to someone else, here or in another organization) or `cancelled`, and
 * the report counts it so. Through the service and firebase-admin to the fake FCM server; times
 * are moved in SQL, never waited for.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createDisplayFixture, type DisplayFixture } from '../helpers/display-fixture'
import { FCM_ERRORS, startFakeFcm, type FakeFcm, type Responder } from '../helpers/fake-fcm'
import { eventually, startTestService, type TestService, type TestUser } from '../helpers/service'
import { signIn } from '../helpers/sessions'
import { sqlOn } from '../helpers/database'

let fcm: FakeFcm
let api: TestService
let fx: DisplayFixture
/** How the fake FCM answers; a test that needs a failure sets it. */
let responder: Responder = () => undefined

beforeAll(async () => {
  fcm = await startFakeFcm((token, attempt) => responder(token, attempt), { redirect: true })
  api = await startTestService({
    provide: fcm.provide,
    // Retries wait a minute here: a test moves the one it needs into the past.
    config: { push: { pollIntervalMs: 50, retryBaseMs: 60_000, retryMaxMs: 60_000, maxAttempts: 3, leaseSeconds: 5 } },
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
const newToken = () => `recheck-${++sequence}:APA91b${Math.random().toString(36).slice(2, 14)}`

async function register(session: string, token: string): Promise<void> {
  const response = await api.request('POST', '/api/devices', { body: { token, platform: 'android' }, headers: { authorization: `Bearer ${session}` } })
  expect([200, 201]).toContain(response.status)
}

/** A page of the fixture's creator (who has no devices): its audience is exactly the members a test adds. */
async function newPage(): Promise<{ id: string; name: string }> {
  const response = await api.request('POST', '/api/v1/pages', { key: fx.creatorKey, body: { name: `recheck-${++sequence}` } })
  expect(response.status).toBe(201)
  return { id: response.body.data.id, name: response.body.data.name }
}

interface Member {
  user: TestUser
  session: string
  token: string
}

/** A new user of the fixture's organization on `page`'s access list, signed in on one device. */
async function member(page: { id: string }): Promise<Member> {
  const user = await api.createUser(fx.organizationId, 'member', { password: `member password ${++sequence}` })
  const grant = await api.request('POST', `/api/v1/pages/${page.id}/access`, { key: fx.creatorKey, body: { userId: user.id } })
  expect(grant.status).toBe(201)
  const session = await signIn(api, user)
  const token = newToken()
  await register(session, token)
  return { user, session, token }
}

/** Sends a message to `page`; its id. */
async function message(page: { name: string }, body: Record<string, unknown> = {}): Promise<string> {
  const response = await api.request('POST', '/api/message', {
    body: { apiKey: fx.creator.displayApiKey, pageName: page.name, message: `note ${++sequence}`, ...body },
    headers: { 'content-type': 'application/json' },
  })
  expect(response.status).toBe(200)
  return response.headers.get('x-message-id')!
}

/** A message scheduled an hour ahead: its deliveries wait, pending, while a test changes who receives them. */
const scheduled = (page: { name: string }) => message(page, { sendAt: new Date(Date.now() + HOUR).toISOString() })

const STATES = ['pending', 'held', 'sent', 'failed', 'pruned', 'expired', 'cancelled', 'undelivered'] as const

/** Polls until the message's report has `counts` (every targeted device in exactly one state); the report. */
const settled = (page: { id: string }, messageId: string, counts: Record<string, number>) =>
  eventually(async () => {
    const response = await api.request('GET', `/api/v1/pages/${page.id}/messages/${messageId}`, { key: fx.creatorKey })
    expect(response.status).toBe(200)
    const report = response.body.data
    expect(STATES.reduce((sum, state) => sum + report[state], 0)).toBe(report.targeted)
    expect(report).toMatchObject(counts)
    return report
  }, 10_000)

/** Makes a message's waiting deliveries due now (its scheduled time, a hold's end or a retry's time moved into the past). */
async function dueNow(messageId: string) {
  await sql(`update messages set send_at = now() - interval '1 second' where id = $1 and send_at is not null`, [messageId])
  await sql(`update deliveries set next_attempt_at = now() - interval '1 second' where message_id = $1 and state in ('pending', 'held')`, [messageId])
}

const sendsOf = (messageId: string, token: string) => fcm.sends.filter((each) => each.token === token && each.message.data?.messageId === messageId)

async function deliveryOf(messageId: string, token: string) {
  const [row] = await sql<{ state: string; attempts: number; lastError: string | null }>(
    `select state, attempts, last_error as "lastError" from deliveries where message_id = $1 and device_token = $2`,
    [messageId, token],
  )
  return row
}

/** A user of a new organization, signed in: someone the phone may be handed to. */
async function strangerElsewhere(): Promise<{ user: TestUser; session: string }> {
  const user = await api.createUser(await api.createOrganization(), 'member', { password: `stranger password ${++sequence}` })
  return { user, session: await signIn(api, user) }
}

describe('a scheduled message, when it goes out', () => {
  test('does not reach a device its user removed: pruned, counted in the report', async () => {
    const page = await newPage()
    const leaving = await member(page)
    const staying = await member(page)
    const sent = await scheduled(page)
    const removed = await api.request('DELETE', `/api/devices/${encodeURIComponent(leaving.token)}`, { headers: { authorization: `Bearer ${leaving.session}` } })
    expect(removed.status).toBe(204)

    await dueNow(sent)
    await settled(page, sent, { targeted: 2, sent: 1, pruned: 1, pending: 0 })
    expect(sendsOf(sent, leaving.token)).toEqual([])
    expect(sendsOf(sent, staying.token)).toHaveLength(1)
    expect((await deliveryOf(sent, leaving.token))!.lastError).toContain('removed')
  })

  test('does not reach a user deactivated since: cancelled', async () => {
    const page = await newPage()
    const deactivated = await member(page)
    const staying = await member(page)
    const sent = await scheduled(page)
    await api.deactivateUser(deactivated.user.id)

    await dueNow(sent)
    await settled(page, sent, { targeted: 2, sent: 1, cancelled: 1, pending: 0 })
    expect(sendsOf(sent, deactivated.token)).toEqual([])
    expect(sendsOf(sent, staying.token)).toHaveLength(1)
    expect((await deliveryOf(sent, deactivated.token))!.lastError).toContain('deactivated')
  })

  test('does not reach a user removed from the page since: cancelled', async () => {
    const page = await newPage()
    const removed = await member(page)
    const staying = await member(page)
    const sent = await scheduled(page)
    expect((await api.request('DELETE', `/api/v1/pages/${page.id}/access/${removed.user.id}`, { key: fx.creatorKey })).status).toBe(200)

    await dueNow(sent)
    await settled(page, sent, { targeted: 2, sent: 1, cancelled: 1, pending: 0 })
    expect(sendsOf(sent, removed.token)).toEqual([])
    expect(sendsOf(sent, staying.token)).toHaveLength(1)
    expect((await deliveryOf(sent, removed.token))!.lastError).toContain('access to the page')
  })

  test('never reaches a phone handed to a user of another organization: pruned, and the device stays theirs', async () => {
    const page = await newPage()
    const former = await member(page)
    const staying = await member(page)
    const sent = await scheduled(page)
    const newOwner = await strangerElsewhere()
    await register(newOwner.session, former.token)

    await dueNow(sent)
    await settled(page, sent, { targeted: 2, sent: 1, pruned: 1, pending: 0 })
    expect(sendsOf(sent, former.token)).toEqual([])
    expect(sendsOf(sent, staying.token)).toHaveLength(1)
    expect(await sql('select organization_id as "organizationId", user_id as "userId" from devices where token = $1', [former.token])).toEqual([
      { organizationId: newOwner.user.organizationId, userId: newOwner.user.id },
    ])
  })

  test('never reaches a phone handed to another user of the same organization: pruned, and the new owner keeps the device', async () => {
    const page = await newPage()
    const former = await member(page)
    const sent = await scheduled(page)
    // A colleague who does not see the page signs in on the phone.
    const colleague = await api.createUser(fx.organizationId, 'member', { password: `colleague password ${++sequence}` })
    await register(await signIn(api, colleague), former.token)

    await dueNow(sent)
    await settled(page, sent, { targeted: 1, pruned: 1, pending: 0 })
    expect(sendsOf(sent, former.token)).toEqual([])
    expect(await sql('select user_id as "userId" from devices where token = $1 and organization_id = $2', [former.token, fx.organizationId])).toEqual([{ userId: colleague.id }])
  })
})

describe('a held or retried delivery, when it goes out', () => {
  test('a push held by quiet hours does not reach a user removed from the page meanwhile: cancelled', async () => {
    const page = await newPage()
    const sleeper = await member(page)
    const awake = await member(page)
    const clock = (instant: number) => new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(instant))
    const quietHours = { start: clock(Date.now() - HOUR), end: clock(Date.now() + HOUR), timeZone: 'UTC' }
    expect((await api.request('PUT', '/api/v1/users/me/notifications', { key: sleeper.session, body: { quietHours, mutedPageIds: [] } })).status).toBe(200)

    const sent = await message(page)
    await settled(page, sent, { targeted: 2, held: 1, sent: 1 })
    expect((await api.request('DELETE', `/api/v1/pages/${page.id}/access/${sleeper.user.id}`, { key: fx.creatorKey })).status).toBe(200)
    // Their quiet hours end (removed), and the hold comes due.
    expect((await api.request('PUT', '/api/v1/users/me/notifications', { key: sleeper.session, body: { quietHours: null, mutedPageIds: [] } })).status).toBe(200)

    await dueNow(sent)
    await settled(page, sent, { targeted: 2, held: 0, sent: 1, cancelled: 1 })
    expect(sendsOf(sent, sleeper.token)).toEqual([])
    expect(sendsOf(sent, awake.token)).toHaveLength(1)
  })

  test('a retry does not reach a phone handed to a user of another organization meanwhile: pruned after the one failed attempt', async () => {
    const page = await newPage()
    const former = await member(page)
    responder = (token, attempt) => (token === former.token && attempt === 1 ? FCM_ERRORS.internal() : undefined)
    try {
      const sent = await message(page)
      // Its first attempt failed: it waits for a retry.
      await eventually(async () => expect(await deliveryOf(sent, former.token)).toMatchObject({ state: 'pending', attempts: 1 }), 10_000)
      expect(sendsOf(sent, former.token).map((each) => each.status)).toEqual([500])

      const newOwner = await strangerElsewhere()
      await register(newOwner.session, former.token)
      await dueNow(sent)
      await settled(page, sent, { targeted: 1, pruned: 1, pending: 0 })
      expect(sendsOf(sent, former.token).map((each) => each.status)).toEqual([500])
    } finally {
      responder = () => undefined
    }
  })
})
