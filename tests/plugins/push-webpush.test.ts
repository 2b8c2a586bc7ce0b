/**
 * Web Push end to end: a browser's subscription registered with POST /api/devices, a message sent
 * with POST /api/message, and the push as a local push service receives it (VAPID checked against
 * the key the service publishes, the payload decrypted with the subscription's own keys:
 * tests/helpers/webpush-receiver.ts). Also the address guard on endpoints, and pruning on 404/410.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { WebPushAgentRef } from '../../plugins/push/api'
import { queryText } from '../../src/db'
import { createDisplayFixture, type DisplayFixture } from '../helpers/display-fixture'
import { startWebPushReceiver, type ReceiverSubscription, type WebPushReceiver } from '../helpers/webpush-receiver'
import { eventually, startTestService, type TestService } from '../helpers/service'

const SUBJECT = 'mailto:ops@worktrack.example'

let receiver: WebPushReceiver
let api: TestService
let fx: DisplayFixture

beforeAll(async () => {
  receiver = await startWebPushReceiver()
  api = await startTestService({
    provide: (services) => services.provide(WebPushAgentRef, { ca: receiver.ca }),
    config: { push: { pollIntervalMs: 50, retryBaseMs: 200, retryMaxMs: 400, maxAttempts: 3, webPush: { subject: SUBJECT, allowPrivateTargets: true, timeoutMs: 5000 } } },
  })
  fx = await createDisplayFixture(api)
})
afterAll(async () => {
  await api.stop()
  await receiver.close()
})

const asJson = (subscription: ReceiverSubscription) => ({ endpoint: subscription.endpoint, expirationTime: null, keys: subscription.keys })

const registerBrowser = (subscription: ReceiverSubscription, session = fx.readerSession) =>
  api.request('POST', '/api/devices', { body: { platform: 'webpush', subscription: asJson(subscription) }, headers: { authorization: `Bearer ${session}` } })

const send = (body: Record<string, unknown>) => api.request('POST', '/api/message', { body: { apiKey: fx.creator.displayApiKey, pageName: fx.pageName, ...body } })

const report = async (messageId: string) => (await api.request('GET', `/api/v1/pages/${fx.pageId}/messages/${messageId}`, { key: fx.creatorKey })).body.data

describe('Web Push', () => {
  test('the VAPID public key is published, the same on every read, and signs the pushes', async () => {
    const first = await api.request('GET', '/api/push/vapid-key')
    expect(first.status).toBe(200)
    expect(first.body.publicKey).toMatch(/^[A-Za-z0-9_-]{87}$/)
    expect(Buffer.from(first.body.publicKey, 'base64url')[0]).toBe(0x04)
    // Kept in the database: read again, the same key (browsers subscribed with it).
    const [row] = await queryText<{ publicKey: string }>(api.service.core.db, 'select public_key as "publicKey" from push_vapid_keys', [])
    expect(row!.publicKey).toBe(first.body.publicKey)
  })

  test('a message reaches a subscribed browser encrypted for it, with the message options as Web Push headers', async () => {
    const subscription = receiver.subscribe()
    const registered = await registerBrowser(subscription)
    expect(registered.status).toBe(201)
    expect(registered.body.device).toEqual({ token: subscription.endpoint, platform: 'webpush', createdAt: expect.any(String), lastSeenAt: expect.any(String) })

    const sent = await send({ message: 'Deploy finished ✅', priority: 'normal', ttlSeconds: 600, collapseKey: 'deploys' })
    expect(sent.status).toBe(200)
    const messageId = sent.headers.get('x-message-id')!
    const [push] = await receiver.waitFor(1, 10_000, (each) => each.subscriptionId === subscription.id)
    expect(push!.payload).toEqual({ title: fx.pageName, body: 'Deploy finished ✅', data: { pageName: fx.pageName, pageId: fx.pageId, messageId, sentAt: expect.any(String) } })
    expect(push!.headers.urgency).toBe('normal')
    // What is left of the TTL when it went out: at most the 600 s asked for, and not much less.
    expect(push!.headers.ttl).toBeLessThanOrEqual(600)
    expect(push!.headers.ttl).toBeGreaterThan(590)
    expect(push!.headers.topic).toMatch(/^[A-Za-z0-9_-]{1,32}$/)
    expect(push!.vapidSubject).toBe(SUBJECT)
    expect(push!.vapidPublicKey).toBe((await api.request('GET', '/api/push/vapid-key')).body.publicKey)
    await eventually(async () => expect((await report(messageId)).sent).toBe(1))
  })

  test('without options a push is urgent and kept four weeks', async () => {
    const subscription = receiver.subscribe()
    expect((await registerBrowser(subscription)).status).toBe(201)
    expect((await send({ message: 'plain' })).status).toBe(200)
    const [push] = await receiver.waitFor(1, 10_000, (each) => each.subscriptionId === subscription.id)
    expect(push!.headers).toEqual({ ttl: 2_419_200, urgency: 'high', topic: undefined })
  })

  test('410 and 404 from the push service remove the subscription (pruned)', async () => {
    const gone = receiver.subscribe()
    const unknown = receiver.subscribe()
    receiver.answer(gone, { status: 410 })
    receiver.answer(unknown, { status: 404 })
    expect((await registerBrowser(gone)).status).toBe(201)
    expect((await registerBrowser(unknown)).status).toBe(201)
    const sent = await send({ message: 'anyone there?' })
    const messageId = sent.headers.get('x-message-id')!
    await eventually(async () => {
      const [left] = await queryText<{ n: number }>(api.service.core.db, 'select count(*)::int as n from devices where token = any($1)', [[gone.endpoint, unknown.endpoint]])
      expect(left!.n).toBe(0)
    })
    const [states] = await queryText<{ pruned: number }>(api.service.core.db, `select count(*) filter (where state = 'pruned')::int as pruned from deliveries where message_id = $1 and device_token = any($2)`, [
      messageId,
      [gone.endpoint, unknown.endpoint],
    ])
    expect(states!.pruned).toBe(2)
  })

  test('a subscription is checked: its keys, https, and its endpoint through the address guard', async () => {
    const good = asJson(receiver.subscribe())
    const refused = async (subscription: unknown) => {
      const response = await api.request('POST', '/api/devices', { body: { platform: 'webpush', subscription }, headers: { authorization: `Bearer ${fx.readerSession}` } })
      expect(response.status).toBe(400)
      expect(response.body.message).toBe('invalidRequest')
      return response.body
    }
    expect((await refused({ ...good, endpoint: good.endpoint.replace('https:', 'http:') })).field).toBe('subscription')
    expect((await refused({ ...good, keys: { ...good.keys, p256dh: good.keys.p256dh.slice(0, 40) } })).field).toBe('subscription')
    expect((await refused({ ...good, keys: { ...good.keys, auth: 'AAAA' } })).field).toBe('subscription')
    expect((await refused({ endpoint: good.endpoint })).field).toBe('subscription.keys')
    expect((await refused({ ...good, extra: 1 })).field).toBe('subscription.extra')
    // Nothing was registered by the refusals.
    const [row] = await queryText<{ n: number }>(api.service.core.db, `select count(*)::int as n from devices where token like 'http://%'`, [])
    expect(row!.n).toBe(0)
  })

  test('with allowPrivateTargets off, an endpoint on a loopback or private address is refused', async () => {
    const guarded = await startTestService({ config: { push: { webPush: { allowPrivateTargets: false } } } })
    try {
      const board = await createDisplayFixture(guarded)
      const subscription = asJson(receiver.subscribe())
      for (const endpoint of [subscription.endpoint, 'https://10.1.2.3/push/x', 'https://[::1]/push/x', 'https://localhost/push/x']) {
        const response = await guarded.request('POST', '/api/devices', {
          body: { platform: 'webpush', subscription: { ...subscription, endpoint } },
          headers: { authorization: `Bearer ${board.readerSession}` },
        })
        expect(response.status).toBe(400)
        expect(response.body.field).toBe('subscription.endpoint')
        expect(response.body.detail).toContain('push.webPush.allowPrivateTargets')
      }
    } finally {
      await guarded.stop()
    }
  })

  test('without FCM credentials, browsers still get their pushes while FCM devices are recorded undelivered', async () => {
    const board = await createDisplayFixture(api)
    const subscription = receiver.subscribe()
    expect((await registerBrowser(subscription, board.readerSession)).status).toBe(201)
    const android = await api.request('POST', '/api/devices', { body: { token: `android-${Date.now()}:APA91b`, platform: 'android' }, headers: { authorization: `Bearer ${board.readerSession}` } })
    expect(android.status).toBe(201)
    const sent = await api.request('POST', '/api/message', { body: { apiKey: board.creator.displayApiKey, pageName: board.pageName, message: 'both' } })
    const messageId = sent.headers.get('x-message-id')!
    await receiver.waitFor(1, 10_000, (each) => each.subscriptionId === subscription.id)
    await eventually(async () => {
      const counts = (await api.request('GET', `/api/v1/pages/${board.pageId}/messages/${messageId}`, { key: board.creatorKey })).body.data
      expect({ targeted: counts.targeted, sent: counts.sent, undelivered: counts.undelivered, pending: counts.pending }).toEqual({ targeted: 2, sent: 1, undelivered: 1, pending: 0 })
    })
    // One push per subscription, however many times the workers looked.
    expect(receiver.received((each) => each.subscriptionId === subscription.id)).toHaveLength(1)
  })
})
