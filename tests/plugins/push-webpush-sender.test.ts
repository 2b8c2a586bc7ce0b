/**
 * The Web Push sender against a local push service that checks VAPID and decrypts like a browser
 * (tests/helpers/webpush-receiver.ts): what arrives, and how each answer is classified.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import https from 'node:https'
import net from 'node:net'
import webPush from 'web-push'
import type { PushResult } from '../../plugins/push/fcm'
import { generateVapidKeys, validSubscription, WebPushSender, type VapidKeys, type WebPushOutgoing, type WebPushSubscription } from '../../plugins/push/webpush'
import { decryptAes128gcm, startWebPushReceiver, verifyVapid, type ReceiverSubscription, type WebPushReceiver } from '../helpers/webpush-receiver'

const BOUND_MS = 10_000
const vapid: VapidKeys = { ...generateVapidKeys(), subject: 'mailto:push@worktrack.example' }

let receiver: WebPushReceiver
let sender: WebPushSender

beforeAll(async () => {
  receiver = await startWebPushReceiver()
  sender = new WebPushSender(vapid, { timeoutMs: 5000, agentOptions: { ca: receiver.ca } })
})

afterAll(async () => {
  await sender.close()
  await receiver.close()
})

const push = (subscription: WebPushSubscription, extra: Partial<WebPushOutgoing> = {}): WebPushOutgoing => ({
  subscription,
  payload: { title: 'Build finished', body: 'All green' },
  ttlSeconds: 60,
  urgency: 'normal',
  ...extra,
})

const pushesTo = (subscription: ReceiverSubscription) => (entry: { subscriptionId: string }) => entry.subscriptionId === subscription.id

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const port = (server.address() as net.AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** POSTs a request web-push built, after `tamper` changed its headers; the status answered. */
function postRequestDetails(subscription: WebPushSubscription, tamper: (headers: Record<string, string>) => void): Promise<number> {
  const details = webPush.generateRequestDetails(subscription, '{"hello":1}', { vapidDetails: vapid, TTL: 60, contentEncoding: 'aes128gcm' })
  const headers = Object.fromEntries(Object.entries(details.headers).map(([name, value]) => [name, String(value)]))
  tamper(headers)
  return new Promise((resolve, reject) => {
    const request = https.request(details.endpoint, { method: 'POST', headers, ca: receiver.ca }, (response) => {
      response.resume()
      response.on('end', () => resolve(response.statusCode ?? 0))
    })
    request.on('error', reject)
    request.end(details.body)
  })
}

describe('what arrives', () => {
  test('the payload arrives decrypted exactly, with the TTL and Urgency given', async () => {
    const subscription = receiver.subscribe()
    const payload = { title: 'Ünïcödé ✓ "quoted"', body: 'x'.repeat(2000), data: { itemId: 'w-17', nested: [1, null, true] } }
    const results = await sender.send([push(subscription, { payload, ttlSeconds: 3600, urgency: 'high' })])
    expect(results).toEqual([{ outcome: 'sent' }])
    const [arrived] = receiver.received(pushesTo(subscription))
    expect(arrived!.payload).toEqual(payload)
    expect(arrived!.headers).toEqual({ ttl: 3600, urgency: 'high', topic: undefined })
  }, BOUND_MS)

  test('a TTL of 0 and normal urgency arrive as given', async () => {
    const subscription = receiver.subscribe()
    expect(await sender.send([push(subscription, { ttlSeconds: 0 })])).toEqual([{ outcome: 'sent' }])
    expect(receiver.received(pushesTo(subscription))[0]!.headers).toEqual({ ttl: 0, urgency: 'normal', topic: undefined })
  }, BOUND_MS)

  test('the VAPID token verifies against the sender key and names the subject', async () => {
    const subscription = receiver.subscribe()
    await sender.send([push(subscription)])
    const [arrived] = receiver.received(pushesTo(subscription))
    expect(arrived!.vapidSubject).toBe(vapid.subject)
    expect(arrived!.vapidPublicKey).toBe(vapid.publicKey)
  }, BOUND_MS)

  test('a collapse key becomes a Topic of at most 32 URL-safe characters, the same for the same key', async () => {
    const subscription = receiver.subscribe()
    const long = 'é work-item 17 / comments & more '.padEnd(64, '#')
    const keys = ['item:17', 'item:17', 'item:18', long]
    const results = await sender.send(keys.map((topic, index) => push(subscription, { topic, payload: { index } })))
    expect(results.every((result) => result.outcome === 'sent')).toBe(true)
    // Concurrent sends may arrive in any order: each is matched to its key by the payload.
    const topics: string[] = []
    for (const arrived of receiver.received(pushesTo(subscription))) topics[(arrived.payload as { index: number }).index] = arrived.headers.topic!
    expect(topics).toHaveLength(4)
    for (const topic of topics) expect(topic).toMatch(/^[A-Za-z0-9_-]{1,32}$/)
    expect(topics[1]).toBe(topics[0]!)
    expect(new Set(topics).size).toBe(3)
  }, BOUND_MS)

  test('a push without a collapse key carries no Topic', async () => {
    const subscription = receiver.subscribe()
    await sender.send([push(subscription)])
    expect(receiver.received(pushesTo(subscription))[0]!.headers.topic).toBeUndefined()
  }, BOUND_MS)
})

describe('how answers are classified', () => {
  const answeredWith = async (status: number, headers?: Record<string, string>) => {
    const subscription = receiver.subscribe()
    receiver.answer(subscription, { status, headers })
    const [result] = await sender.send([push(subscription)])
    // The push did reach the service: the outcome is about its answer, not a failure to send.
    expect(receiver.received(pushesTo(subscription))).toHaveLength(1)
    return result!
  }

  test('410 and 404 prune the subscription', async () => {
    expect(await answeredWith(410)).toEqual({ outcome: 'prune', error: expect.stringContaining('410') })
    expect(await answeredWith(404)).toEqual({ outcome: 'prune', error: expect.stringContaining('404') })
  }, BOUND_MS)

  test('429 with Retry-After: 7 is retried after 7 seconds', async () => {
    expect(await answeredWith(429, { 'retry-after': '7' })).toEqual({ outcome: 'retry', error: expect.stringContaining('429'), retryAfterSeconds: 7 })
  }, BOUND_MS)

  test('503 with Retry-After as an HTTP date is retried after about that long', async () => {
    const result = await answeredWith(503, { 'retry-after': new Date(Date.now() + 120_000).toUTCString() })
    expect(result.outcome).toBe('retry')
    const seconds = (result as { retryAfterSeconds?: number }).retryAfterSeconds
    expect(seconds).toBeGreaterThanOrEqual(118)
    expect(seconds).toBeLessThanOrEqual(121)
  }, BOUND_MS)

  test('500 is retried, with no Retry-After of its own', async () => {
    expect(await answeredWith(500)).toEqual({ outcome: 'retry', error: expect.stringContaining('500'), retryAfterSeconds: undefined })
  }, BOUND_MS)

  test('400, 403 and 413 fail, naming the status', async () => {
    for (const status of [400, 403, 413]) expect(await answeredWith(status)).toEqual({ outcome: 'fail', error: expect.stringContaining(String(status)) })
  }, BOUND_MS)

  test('a closed port is retried', async () => {
    const subscription = receiver.subscribe()
    const port = await closedPort()
    const [result] = await sender.send([push({ ...subscription, endpoint: `https://127.0.0.1:${port}/push/${subscription.id}` })])
    expect(result).toEqual({ outcome: 'retry', error: expect.stringContaining('ECONNREFUSED') })
  }, BOUND_MS)

  test('a push service that never answers is retried once the timeout passes', async () => {
    const silent = net.createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()))
    const quick = new WebPushSender(vapid, { timeoutMs: 300, agentOptions: { ca: receiver.ca } })
    try {
      const subscription = receiver.subscribe()
      const started = Date.now()
      const [result] = await quick.send([push({ ...subscription, endpoint: `https://127.0.0.1:${(silent.address() as net.AddressInfo).port}/push/x` })])
      expect(result!.outcome).toBe('retry')
      expect(Date.now() - started).toBeLessThan(3000)
    } finally {
      await quick.close()
      silent.close()
    }
  }, BOUND_MS)

  test('twenty pushes with mixed answers give their results in order', async () => {
    const answers = [201, 410, 429, 500, 400, 404, 200, 202]
    const expected: Record<number, PushResult['outcome']> = { 200: 'sent', 201: 'sent', 202: 'sent', 400: 'fail', 404: 'prune', 410: 'prune', 429: 'retry', 500: 'retry' }
    const subscriptions = Array.from({ length: 20 }, (_, index) => {
      const subscription = receiver.subscribe()
      receiver.answer(subscription, { status: answers[index % answers.length]! })
      return subscription
    })
    const results = await sender.send(subscriptions.map((subscription, index) => push(subscription, { payload: { index } })))
    expect(results.map((result) => result.outcome)).toEqual(subscriptions.map((_, index) => expected[answers[index % answers.length]!]!))
    for (const [index, subscription] of subscriptions.entries()) expect(receiver.received(pushesTo(subscription))[0]!.payload).toEqual({ index })
  }, BOUND_MS)

  test('an IP-literal endpoint is put to the address guard, and a refusal sends nothing', async () => {
    const refusing = (hostname: string, _options: unknown, callback: (error: Error) => void) => callback(new Error(`${hostname} is not a public address`))
    const guarded = new WebPushSender(vapid, { timeoutMs: 5000, agentOptions: { ca: receiver.ca, lookup: refusing as never } })
    try {
      const subscription = receiver.subscribe()
      const [result] = await guarded.send([push(subscription)])
      expect(result).toEqual({ outcome: 'retry', error: '127.0.0.1 is not a public address' })
      expect(receiver.received(pushesTo(subscription))).toHaveLength(0)
      expect(receiver.refused.filter(pushesTo(subscription))).toHaveLength(0)
    } finally {
      await guarded.close()
    }
  }, BOUND_MS)

  test('a push the receiver cannot decrypt is refused with 400 and fails', async () => {
    const subscription = receiver.subscribe()
    const wrongSecret = { ...subscription, keys: { ...subscription.keys, auth: receiver.subscribe().keys.auth } }
    const [result] = await sender.send([push(wrongSecret)])
    expect(result).toEqual({ outcome: 'fail', error: expect.stringContaining('400') })
    expect(receiver.received(pushesTo(subscription))).toHaveLength(0)
    expect(receiver.refused.filter(pushesTo(subscription))).toEqual([{ subscriptionId: subscription.id, status: 400, reason: expect.stringContaining('cannot decrypt') }])
  }, BOUND_MS)

  test('an invalid subscription or TTL fails without a request', async () => {
    const subscription = receiver.subscribe()
    const results = await sender.send([
      push({ ...subscription, keys: { ...subscription.keys, auth: Buffer.alloc(8).toString('base64url') } }),
      push(subscription, { ttlSeconds: 2_419_201 }),
      push(subscription, { ttlSeconds: 1.5 }),
    ])
    expect(results).toEqual([
      { outcome: 'fail', error: 'auth is not 16 bytes' },
      { outcome: 'fail', error: expect.stringContaining('TTL') },
      { outcome: 'fail', error: expect.stringContaining('TTL') },
    ])
    expect(receiver.received(pushesTo(subscription))).toHaveLength(0)
  }, BOUND_MS)

  test('a VAPID subject that is neither mailto nor https is refused when the sender is built', () => {
    expect(() => new WebPushSender({ ...vapid, subject: 'ftp://example.com' }, { timeoutMs: 1000 })).toThrow(/subject/)
    expect(() => new WebPushSender({ ...vapid, privateKey: 'abc' }, { timeoutMs: 1000 })).toThrow(/private key/)
  })
})

describe('the receiver is a fair judge', () => {
  test('it decrypts what web-push encrypts, and nothing with a wrong auth secret or a changed byte', () => {
    const subscription = receiver.subscribe()
    const secrets = receiver.secretsOf(subscription)
    const message = Buffer.from(JSON.stringify({ exact: 'bytes ✓' }))
    const { cipherText } = webPush.encrypt(subscription.keys.p256dh, subscription.keys.auth, message, 'aes128gcm')
    expect(decryptAes128gcm(cipherText, secrets).equals(message)).toBe(true)
    expect(() => decryptAes128gcm(cipherText, { ...secrets, auth: Buffer.alloc(16, 7) })).toThrow()
    const changed = Buffer.from(cipherText)
    changed[changed.length - 20]! ^= 1
    expect(() => decryptAes128gcm(changed, secrets)).toThrow()
  })

  test('it refuses a tampered, misdirected or expired VAPID token', async () => {
    const subscription = receiver.subscribe()
    const swapSubject = (headers: Record<string, string>) => {
      const [, token, key] = /^vapid t=([^,]+), k=(.+)$/.exec(headers.Authorization!)!
      const [header, , signature] = token!.split('.')
      const claims = Buffer.from(JSON.stringify({ aud: receiver.origin, exp: Math.floor(Date.now() / 1000) + 3600, sub: 'mailto:someone@else.example' })).toString('base64url')
      headers.Authorization = `vapid t=${header}.${claims}.${signature}, k=${key}`
    }
    const otherKey = (headers: Record<string, string>) => {
      headers.Authorization = headers.Authorization!.replace(/k=.+$/, `k=${generateVapidKeys().publicKey}`)
    }
    expect(await postRequestDetails(subscription, () => {})).toBe(201)
    expect(await postRequestDetails(subscription, swapSubject)).toBe(401)
    expect(await postRequestDetails(subscription, otherKey)).toBe(401)
    expect(await postRequestDetails(subscription, (headers) => delete headers.Authorization)).toBe(401)

    const { Authorization } = webPush.getVapidHeaders(receiver.origin, vapid.subject, vapid.publicKey, vapid.privateKey, 'aes128gcm')
    expect(verifyVapid(Authorization, receiver.origin).subject).toBe(vapid.subject)
    expect(() => verifyVapid(Authorization, 'https://127.0.0.1:1')).toThrow(/not https:\/\/127.0.0.1:1/)
    expect(() => verifyVapid(Authorization, receiver.origin, Date.now() + 13 * 3600 * 1000)).toThrow(/expired/)
    expect(() => verifyVapid(Authorization, receiver.origin, Date.now() - 13 * 3600 * 1000)).toThrow(/24 hours/)
  }, BOUND_MS)

  test('waitFor gives up at its deadline', async () => {
    const subscription = receiver.subscribe()
    await expect(receiver.waitFor(1, 50, pushesTo(subscription))).rejects.toThrow(/received 0/)
    await sender.send([push(subscription)])
    expect(await receiver.waitFor(1, 1000, pushesTo(subscription))).toHaveLength(1)
  }, BOUND_MS)
})

describe('validSubscription', () => {
  const real = () => {
    const { endpoint, keys } = receiver.subscribe()
    return { endpoint, keys }
  }

  test('accepts a subscription as a browser gives it', () => {
    expect(validSubscription(real())).toBeNull()
  })

  test('refuses http endpoints, credentials, long URLs and non-URLs', () => {
    const { endpoint, keys } = real()
    expect(validSubscription({ endpoint: endpoint.replace('https:', 'http:'), keys })).toMatch(/https/)
    expect(validSubscription({ endpoint: endpoint.replace('https://', 'https://user:secret@'), keys })).toMatch(/credentials/)
    expect(validSubscription({ endpoint: `${endpoint}/${'a'.repeat(2000)}`, keys })).toMatch(/longer/)
    expect(validSubscription({ endpoint: 'not a url', keys })).toMatch(/not a URL/)
    expect(validSubscription({ keys })).toMatch(/endpoint/)
    expect(validSubscription(null)).toMatch(/object/)
  })

  test('refuses short, compressed, off-curve or non-base64url keys', () => {
    const { endpoint, keys } = real()
    const point = Buffer.from(keys.p256dh, 'base64url')
    const compressed = Buffer.concat([Buffer.from([0x02 + (point[64]! & 1)]), point.subarray(1, 33)]).toString('base64url')
    const offCurve = Buffer.from(point)
    offCurve[64]! ^= 1
    const withKeys = (changed: Partial<typeof keys>) => validSubscription({ endpoint, keys: { ...keys, ...changed } })
    expect(withKeys({ p256dh: compressed })).toMatch(/uncompressed/)
    expect(withKeys({ p256dh: point.subarray(0, 64).toString('base64url') })).toMatch(/uncompressed/)
    expect(withKeys({ p256dh: offCurve.toString('base64url') })).toMatch(/curve/)
    expect(withKeys({ p256dh: point.toString('base64') })).toMatch(/base64url/)
    expect(withKeys({ auth: Buffer.alloc(8).toString('base64url') })).toMatch(/16 bytes/)
    expect(withKeys({ auth: `${keys.auth}==` })).toMatch(/base64url/)
    expect(withKeys({ auth: 'a+b/c+d/e+f/g+h/ij+kl' })).toMatch(/base64url/)
    expect(validSubscription({ endpoint })).toMatch(/keys/)
  })
})
