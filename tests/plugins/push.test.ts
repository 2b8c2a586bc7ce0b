/**
 * The push plugin end to end: devices, POST /api/message, and delivery through the real
 * firebase-admin code path to a local fake FCM server (tests/helpers/fake-fcm.ts).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { setDailyLimit } from '../../plugins/display/calls/accounts'
import { queryText } from '../../src/db'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture } from '../helpers/display-fixture'
import { FCM_ERRORS, startFakeFcm, type FakeFcm, type Responder } from '../helpers/fake-fcm'
import { eventually, startTestService, type TestService, type TestUser } from '../helpers/service'
import { signIn } from '../helpers/sessions'

let fcm: FakeFcm
let api: TestService
let fx: DisplayFixture
/** What the fake answers; each test sets its own. */
let responder: Responder = () => undefined

beforeAll(async () => {
  fcm = await startFakeFcm((token, attempt) => responder(token, attempt), { redirect: true })
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
beforeEach(() => {
  responder = () => undefined
})

let tokenSequence = 0
const newToken = (label: string) => `${label}-${++tokenSequence}:APA91b${Math.random().toString(36).slice(2, 14)}`

async function register(session: string, token: string, platform = 'android') {
  return api.request('POST', '/api/devices', { body: { token, platform }, headers: { authorization: `Bearer ${session}` } })
}

/** Registers a new device for `user`; its token. */
async function deviceOf(user: TestUser, platform = 'android'): Promise<string> {
  const token = newToken(user.username)
  expect((await register(await signIn(api, user), token, platform)).status).toBe(201)
  return token
}

const send = (body: Record<string, unknown>, apiKey = fx.creator.displayApiKey) =>
  api.request('POST', '/api/message', { body: { apiKey, ...body }, headers: { 'content-type': 'application/json' } })

const report = async (messageId: string, pageId = fx.pageId) => {
  const response = await api.request('GET', `/api/v1/pages/${pageId}/messages/${messageId}`, { key: fx.creatorKey })
  expect(response.status).toBe(200)
  return response.body.data
}

const sendsTo = (token: string) => fcm.sends.filter((send) => send.token === token)

describe('devices', () => {
  test('register, refresh and remove with a mobile session; a token moves to the newest user', async () => {
    const session = fx.readerSession
    const token = newToken('moving')
    const first = await register(session, token, 'ios')
    expect(first.status).toBe(201)
    expect(first.body.device).toEqual({ token, platform: 'ios', createdAt: expect.any(String), lastSeenAt: expect.any(String) })
    const again = await register(session, token, 'ios')
    expect(again.status).toBe(200)
    expect(Date.parse(again.body.device.lastSeenAt)).toBeGreaterThanOrEqual(Date.parse(first.body.device.lastSeenAt))

    // The outsider signs in on the same phone: the token is theirs now, and only theirs.
    const outsiderSession = await signIn(api, fx.outsider)
    expect((await register(outsiderSession, token, 'ios')).status).toBe(201)
    const [row] = await queryText<{ userId: string }>(api.service.core.db, 'select user_id as "userId" from devices where token = $1', [token])
    expect(row!.userId).toBe(fx.outsider.id)
    const removeByFormer = await api.request('DELETE', `/api/devices/${encodeURIComponent(token)}`, { headers: { authorization: `Bearer ${session}` } })
    expect(removeByFormer.status).toBe(404)
    expect(removeByFormer.body.message).toBe('deviceNotFound')
    expect((await api.request('DELETE', `/api/devices/${encodeURIComponent(token)}`, { headers: { authorization: `Bearer ${outsiderSession}` } })).status).toBe(204)
    expect(await queryText(api.service.core.db, 'select 1 from devices where token = $1', [token])).toEqual([])
    // Found by the fuzz suite (500 on PostgreSQL): a token no device can have is simply not found.
    for (const impossible of ['a%00b', 'a%20b', `${'x'.repeat(4097)}`]) {
      const removed = await api.request('DELETE', `/api/devices/${impossible}`, { headers: { authorization: `Bearer ${outsiderSession}` } })
      expect(removed.status).toBe(404)
      expect(removed.body.message).toBe('deviceNotFound')
    }
  })

  test('bad bodies get 400 invalidRequest naming the field; no session gets 401', async () => {
    const session = fx.readerSession
    const bad: Array<[unknown, string | undefined]> = [
      [{ token: 'a b', platform: 'android' }, 'token'],
      [{ token: '', platform: 'android' }, 'token'],
      [{ token: 'x'.repeat(4097), platform: 'android' }, 'token'],
      [{ token: 'abc', platform: 'blackberry' }, 'platform'],
      [{ token: 'abc' }, 'platform'],
      [{ token: 'abc', platform: 'web', extra: 1 }, 'extra'],
      [[], undefined],
    ]
    for (const [body, field] of bad) {
      const response = await api.request('POST', '/api/devices', { body, headers: { authorization: `Bearer ${session}` } })
      expect(response.status).toBe(400)
      expect(response.body).toMatchObject({ message: 'invalidRequest' })
      expect(response.body.field).toBe(field)
    }
    const broken = await api.request('POST', '/api/devices', { rawBody: '{"token":', headers: { authorization: `Bearer ${session}`, 'content-type': 'application/json' } })
    expect(broken.status).toBe(400)
    for (const authorization of [undefined, 'Bearer not-a-session', `Bearer ${fx.creatorKey}`]) {
      const response = await api.request('POST', '/api/devices', { body: { token: 'abc', platform: 'web' }, headers: authorization ? { authorization } : {} })
      expect(response.status).toBe(401)
      expect(response.body.message).toBe('invalidSession')
    }
    expect(await queryText(api.service.core.db, `select 1 from devices where token = 'abc'`, [])).toEqual([])
  })
})

describe('POST /api/message', () => {
  test('reaches every device of every active user with access to the page, each once, with the documented FCM message', async () => {
    const org = fx.organizationId
    const teamMember = await api.createUser(org, 'member', { password: 'team member password' })
    const administrator = await api.createUser(org, 'administrator', { password: 'admin password' })
    const leaver = await api.createUser(org, 'member', { password: 'leaver password' })
    const stranger = await api.createUser(await api.createOrganization(), 'member', { password: 'stranger password' })
    const adminKey = (await api.createKey(administrator.id, ['teams:write', 'team_members:write', 'dashboards:write'])).secret
    const team = await api.request('POST', '/api/v1/teams', { key: adminKey, body: { name: `Night shift ${tokenSequence}` } })
    expect(team.status).toBe(201)
    expect((await api.request('POST', `/api/v1/teams/${team.body.data.id}/members`, { key: adminKey, body: { userId: teamMember.id } })).status).toBe(201)
    for (const grant of [{ teamId: team.body.data.id }, { userId: leaver.id }])
      expect((await api.request('POST', `/api/v1/pages/${fx.pageId}/access`, { key: fx.creatorKey, body: grant })).status).toBe(201)

    const expected = [
      await deviceOf(fx.creator, 'android'),
      await deviceOf(fx.reader, 'android'),
      await deviceOf(fx.reader, 'ios'),
      await deviceOf(teamMember, 'web'),
    ]
    const excluded = [await deviceOf(fx.outsider), await deviceOf(administrator), await deviceOf(leaver), await deviceOf(stranger)]
    await api.deactivateUser(leaver.id)

    const before = fcm.sends.length
    const response = await send({ pageName: fx.pageName.toUpperCase(), message: 'Disk usage above 90% on db-2 ✅' })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toStartWith('text/plain')
    expect(response.text).toBe('Message sent successfully')
    const messageId = response.headers.get('x-message-id')!
    expect(messageId).toMatch(/^[0-9a-f-]{36}$/)
    expect(Number(response.headers.get('x-ratelimit-remaining'))).toBeGreaterThan(0)

    const done = await eventually(async () => {
      const result = await report(messageId)
      expect(result.sent).toBe(4)
      return result
    }, 5000)
    expect(done).toMatchObject({ id: messageId, pageId: fx.pageId, pageName: fx.pageName, message: 'Disk usage above 90% on db-2 ✅', sentBy: fx.creator.id, targeted: 4, failed: 0, pruned: 0, pending: 0, undelivered: 0 })

    const sends = fcm.sends.slice(before)
    expect(sends.map((send) => send.token).sort()).toEqual([...expected].sort())
    for (const token of excluded) expect(sendsTo(token)).toEqual([])
    for (const send of sends) {
      expect(send.path).toBe('/v1/projects/demo-project/messages:send')
      expect(send.authorization).toBe('Bearer test-access-token')
      expect(send.message).toEqual({
        token: send.token,
        notification: { title: fx.pageName, body: 'Disk usage above 90% on db-2 ✅' },
        data: { pageName: fx.pageName, messageId, sentAt: done.createdAt },
        android: { priority: 'high' },
        apns: { headers: { 'apns-priority': '10', 'apns-push-type': 'alert' }, payload: { aps: { sound: 'default' } } },
        webpush: { headers: { Urgency: 'high' } },
      })
    }
    // Revert the grants this test made, so later tests count only their own recipients.
    await api.request('DELETE', `/api/v1/pages/${fx.pageId}/access/${team.body.data.id}`, { key: fx.creatorKey })
    await queryText(api.service.core.db, 'delete from devices where user_id = any($1::uuid[])', [[teamMember.id, administrator.id, fx.outsider.id, stranger.id]])
  })

  test('the key must be valid and the page one its user can use; bad bodies are 400 and counted', async () => {
    const unknownKey = await send({ pageName: fx.pageName, message: 'hi' }, `dpk_${'A'.repeat(42)}`)
    expect(unknownKey.status).toBe(401)
    expect(unknownKey.body.message).toBe('invalidApiKey')

    const outsiderCall = await send({ pageName: fx.pageName, message: 'hi' }, fx.outsider.displayApiKey)
    expect(outsiderCall.status).toBe(404)
    expect(outsiderCall.body).toMatchObject({ message: 'pageNotFound', field: 'pageName' })
    const missing = await send({ pageName: 'no-such-page', message: 'hi' })
    expect(missing.status).toBe(404)
    expect(missing.body.message).toBe('pageNotFound')

    const limit = Number((await send({ pageName: fx.pageName, message: 'x' })).headers.get('x-ratelimit-used'))
    const invalid: Array<[Record<string, unknown>, string]> = [
      [{ pageName: fx.pageName, message: '' }, 'message'],
      [{ pageName: fx.pageName, message: '   ' }, 'message'],
      [{ pageName: fx.pageName, message: 'x'.repeat(4001) }, 'message'],
      [{ pageName: fx.pageName }, 'message'],
      [{ pageName: fx.pageName, message: 42 }, 'message'],
      [{ message: 'hi' }, 'pageName'],
      [{ pageName: fx.pageName, message: 'hi', color: 'red' }, 'color'],
    ]
    for (const [body, field] of invalid) {
      const response = await send(body)
      expect(response.status).toBe(400)
      expect(response.body).toMatchObject({ message: 'invalidRequest', field })
    }
    // Each counted: the usage went up by one per call.
    const after = await send({ pageName: fx.pageName, message: 'y' })
    expect(Number(after.headers.get('x-ratelimit-used'))).toBe(limit + invalid.length + 1)

    // 4,000 characters as people count them (emoji are one character each).
    expect((await send({ pageName: fx.pageName, message: '🚀'.repeat(4000) })).status).toBe(200)
    const notJson = await api.request('POST', '/api/message', { rawBody: `{"apiKey":"${fx.creator.displayApiKey}"`, headers: { 'content-type': 'application/json' } })
    expect(notJson.status).toBe(400)
    expect(notJson.body.message).toBe('invalidRequest')
    const wrongType = await api.request('POST', '/api/message', { rawBody: 'apiKey=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(wrongType.status).toBe(400)
  })

  test('a refused call writes no message', async () => {
    const count = async () => Number((await queryText<{ n: string }>(api.service.core.db, 'select count(*) as n from messages', []))[0]!.n)
    const before = await count()
    await send({ pageName: 'no-such-page', message: 'hi' })
    await send({ pageName: fx.pageName, message: '' })
    await send({ pageName: fx.pageName, message: 'hi' }, fx.outsider.displayApiKey)
    expect(await count()).toBe(before)
  })

  test('/api/message and /api/component share one exact daily counter; 429 writes nothing', async () => {
    const owner = await api.createUser(fx.organizationId, 'member')
    await setDailyLimit(api.service.core.db, owner.id, 4)
    const ownerKey = (await api.createKey(owner.id, ['dashboards:write'])).secret
    const page = await api.request('POST', '/api/v1/pages', { key: ownerKey, body: { name: `limited-${tokenSequence}` } })
    const component = await api.request('POST', `/api/v1/pages/${page.body.data.id}/components`, { key: ownerKey, body: { type: 'verticalBox' } })
    const update = () =>
      api.request('POST', '/api/component', {
        body: { componentId: component.body.data.id, apiKey: owner.displayApiKey, timestamp: Date.now() / 1000, data: SAMPLE_DATA.verticalBox },
        headers: { 'content-type': 'application/json' },
      })
    const message = () => send({ pageName: page.body.data.name, message: 'hello' }, owner.displayApiKey)

    expect((await message()).headers.get('x-ratelimit-remaining')).toBe('3')
    expect((await update()).body.limitRemaining).toBe(2)
    expect((await message()).headers.get('x-ratelimit-remaining')).toBe('1')
    expect((await update()).body.limitRemaining).toBe(0)
    const refused = await message()
    expect(refused.status).toBe(429)
    expect(refused.body).toMatchObject({ message: 'limitExceeded', limitRemaining: 0 })
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await update()).status).toBe(429)
    const [messages] = await queryText<{ n: string }>(api.service.core.db, 'select count(*) as n from messages where page_id = $1', [page.body.data.id])
    expect(Number(messages!.n)).toBe(2)
  })

  test('concurrent messages and updates never pass the limit together', async () => {
    const owner = await api.createUser(fx.organizationId, 'member')
    await setDailyLimit(api.service.core.db, owner.id, 10)
    const ownerKey = (await api.createKey(owner.id, ['dashboards:write'])).secret
    const page = await api.request('POST', '/api/v1/pages', { key: ownerKey, body: { name: `race-${tokenSequence}` } })
    const component = await api.request('POST', `/api/v1/pages/${page.body.data.id}/components`, { key: ownerKey, body: { type: 'verticalBox' } })
    const calls = Array.from({ length: 30 }, (_, i) =>
      i % 2
        ? send({ pageName: page.body.data.name, message: `m${i}` }, owner.displayApiKey)
        : api.request('POST', '/api/component', {
            body: { componentId: component.body.data.id, apiKey: owner.displayApiKey, timestamp: 1_700_000_000 + i, data: SAMPLE_DATA.verticalBox },
            headers: { 'content-type': 'application/json' },
          }),
    )
    const statuses = (await Promise.all(calls)).map((response) => response.status)
    expect(statuses.filter((status) => status === 429)).toHaveLength(20)
    expect(statuses.filter((status) => status !== 429).every((status) => status === 200 || status === 409)).toBe(true)
    const [messages] = await queryText<{ n: string }>(api.service.core.db, 'select count(*) as n from messages where page_id = $1', [page.body.data.id])
    expect(Number(messages!.n)).toBe(statuses.filter((status, i) => i % 2 === 1 && status === 200).length)
  })
})

describe('delivery outcomes', () => {
  test('UNREGISTERED and an invalid token prune the device; other 4xx fail without retry', async () => {
    const gone = await deviceOf(fx.reader)
    const invalid = await deviceOf(fx.reader)
    const mismatched = await deviceOf(fx.reader)
    responder = (token) =>
      token === gone ? FCM_ERRORS.unregistered() : token === invalid ? FCM_ERRORS.invalidToken() : token === mismatched ? FCM_ERRORS.senderMismatch() : undefined
    const response = await send({ pageName: fx.pageName, message: 'prune me' })
    const messageId = response.headers.get('x-message-id')!
    const result = await eventually(async () => {
      const current = await report(messageId)
      expect(current.pending).toBe(0)
      return current
    }, 5000)
    expect(result).toMatchObject({ pruned: 2, failed: 1 })
    expect(result.sent).toBe(result.targeted - 3)
    const left = await queryText<{ token: string }>(api.service.core.db, 'select token from devices where token = any($1::text[])', [[gone, invalid, mismatched]])
    expect(left.map((row) => row.token)).toEqual([mismatched])
    expect(sendsTo(mismatched)).toHaveLength(1)
    expect(sendsTo(gone)).toHaveLength(1)
    // The pruned device is not addressed again.
    responder = () => undefined
    const next = await send({ pageName: fx.pageName, message: 'after pruning' })
    await eventually(async () => expect((await report(next.headers.get('x-message-id')!)).pending).toBe(0), 5000)
    expect(sendsTo(gone)).toHaveLength(1)
    await queryText(api.service.core.db, 'delete from devices where token = $1', [mismatched])
  })

  test('503 then 200: delivered once (the SDK retries 503 itself)', async () => {
    const flaky = await deviceOf(fx.reader)
    responder = (token, attempt) => (token === flaky && attempt === 1 ? FCM_ERRORS.unavailable() : undefined)
    const messageId = (await send({ pageName: fx.pageName, message: 'flaky' })).headers.get('x-message-id')!
    await eventually(async () => expect((await report(messageId)).pending).toBe(0), 8000)
    expect(sendsTo(flaky).map((send) => send.status)).toEqual([503, 200])
    expect(fcm.delivered().filter((send) => send.token === flaky)).toHaveLength(1)
    expect((await report(messageId)).failed).toBe(0)
  })

  test('500 is retried by the outbox with backoff until it succeeds', async () => {
    const token = await deviceOf(fx.reader)
    responder = (each, attempt) => (each === token && attempt <= 2 ? FCM_ERRORS.internal() : undefined)
    const messageId = (await send({ pageName: fx.pageName, message: 'internal' })).headers.get('x-message-id')!
    await eventually(async () => expect((await report(messageId)).pending).toBe(0), 8000)
    const attempts = sendsTo(token)
    expect(attempts.map((send) => send.status)).toEqual([500, 500, 200])
    // Backoff: base 200 ms with jitter in [½, 1] — at least 100 ms, then at least 200 ms.
    expect(attempts[1]!.receivedAt - attempts[0]!.receivedAt).toBeGreaterThanOrEqual(100)
    expect(attempts[2]!.receivedAt - attempts[1]!.receivedAt).toBeGreaterThanOrEqual(200)
    const [row] = await queryText<{ attempts: number; state: string }>(api.service.core.db, 'select attempts, state from deliveries where device_token = $1 and message_id = $2', [token, messageId])
    expect(row).toEqual({ attempts: 3, state: 'sent' })
  })

  test('429 with Retry-After waits at least that long', async () => {
    const token = await deviceOf(fx.reader)
    responder = (each, attempt) => (each === token && attempt === 1 ? FCM_ERRORS.quota(1) : undefined)
    const messageId = (await send({ pageName: fx.pageName, message: 'slow down' })).headers.get('x-message-id')!
    await eventually(async () => expect((await report(messageId)).pending).toBe(0), 8000)
    const attempts = sendsTo(token)
    expect(attempts.map((send) => send.status)).toEqual([429, 200])
    expect(attempts[1]!.receivedAt - attempts[0]!.receivedAt).toBeGreaterThanOrEqual(1000)
  })

  test('a failure that never ends is failed after maxAttempts, with its last error kept', async () => {
    const token = await deviceOf(fx.reader)
    responder = (each) => (each === token ? FCM_ERRORS.internal() : undefined)
    const messageId = (await send({ pageName: fx.pageName, message: 'doomed' })).headers.get('x-message-id')!
    await eventually(async () => expect((await report(messageId)).pending).toBe(0), 8000)
    expect(sendsTo(token)).toHaveLength(3)
    const [row] = await queryText<{ state: string; lastError: string }>(api.service.core.db, 'select state, last_error as "lastError" from deliveries where device_token = $1', [token])
    expect(row!.state).toBe('failed')
    expect(row!.lastError).toContain('messaging/internal-error')
    expect((await report(messageId)).failed).toBe(1)
    await queryText(api.service.core.db, 'delete from devices where token = $1', [token])
  })

  test('a delivery whose worker died (lease run out) is sent again', async () => {
    const token = await deviceOf(fx.reader)
    // A message whose delivery some dead worker claimed a minute ago.
    const [page] = await queryText<{ id: string }>(api.service.core.db, 'select id from pages where id = $1', [fx.pageId])
    const messageId = crypto.randomUUID()
    await queryText(api.service.core.db, `insert into messages (id, organization_id, page_id, page_name, body) values ($1, $2, $3, $4, 'orphan')`, [messageId, fx.organizationId, page!.id, fx.pageName])
    await queryText(
      api.service.core.db,
      `insert into deliveries (message_id, organization_id, device_token, user_id, state, attempts, lease_until) values ($1, $2, $3, $4, 'sending', 1, now() - interval '1 minute')`,
      [messageId, fx.organizationId, token, fx.reader.id],
    )
    await eventually(async () => expect((await report(messageId)).sent).toBe(1), 5000)
    expect(sendsTo(token).filter((send) => send.message.data?.messageId === messageId)).toHaveLength(1)
  })
})

describe('delivery reports', () => {
  test('readers of the page see messages; others get 404; the list is newest first', async () => {
    const first = (await send({ pageName: fx.pageName, message: 'one' })).headers.get('x-message-id')!
    const second = (await send({ pageName: fx.pageName, message: 'two' })).headers.get('x-message-id')!
    const readerKey = (await api.createKey(fx.reader.id, ['dashboards:read'])).secret
    const outsiderKey = (await api.createKey(fx.outsider.id, ['dashboards:read'])).secret
    const list = await api.request('GET', `/api/v1/pages/${fx.pageId}/messages?size=2`, { key: readerKey })
    expect(list.status).toBe(200)
    expect(list.body.data.map((message: { id: string }) => message.id)).toEqual([second, first])
    expect(list.body.meta).toMatchObject({ page: 0, size: 2 })
    expect((await api.request('GET', `/api/v1/pages/${fx.pageId}/messages/${first}`, { key: readerKey })).body.data.message).toBe('one')
    for (const path of [`/api/v1/pages/${fx.pageId}/messages/${first}`, `/api/v1/pages/${fx.pageId}/messages`])
      expect((await api.request('GET', path, { key: outsiderKey })).status).toBe(404)
    const noScope = (await api.createKey(fx.reader.id, ['projects:read'])).secret
    expect((await api.request('GET', `/api/v1/pages/${fx.pageId}/messages/${first}`, { key: noScope })).status).toBe(403)
    expect((await api.request('GET', `/api/v1/pages/${fx.pageId}/messages/not-a-uuid`, { key: readerKey })).status).toBe(404)
    expect((await api.request('GET', `/api/v1/pages/${crypto.randomUUID()}/messages/${first}`, { key: readerKey })).status).toBe(404)
  })
})
