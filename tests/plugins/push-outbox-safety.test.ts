/**
 * The push queue when what it talks to misbehaves: push services answering 429 with a Retry-After
 * no timestamp holds (or a far-off, negative or unreadable one), and write-backs of results that
 * fail (a test trigger refuses them), with two organizations in one batch. A hostile answer delays
 * only its own delivery, and within the retry policy's bounds; a result that cannot be written
 * sends nobody else's push again; every other device gets each message exactly once. The queue is
 * driven one batch at a time through the real FCM path (the fake FCM server) and real Web Push
 * (a local push service); the service's own workers are off, and leases are run out in SQL.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { WebPushAgentRef } from '../../plugins/push/api'
import { FcmSender } from '../../plugins/push/fcm'
import { PushQueue } from '../../plugins/push/outbox'
import { generateVapidKeys, WebPushSender } from '../../plugins/push/webpush'
import { backoffSeconds, OutboxRunner } from '../../src/outbox-runner'
import { FCM_ERRORS, startFakeFcm, type FakeFcm, type Responder } from '../helpers/fake-fcm'
import { capturingLogger } from '../helpers/logger'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { signIn } from '../helpers/sessions'
import { testTriggers, type TestTriggers } from '../helpers/test-triggers'
import { startWebPushReceiver, type ReceiverSubscription, type WebPushReceiver } from '../helpers/webpush-receiver'
import { sqlOn } from '../helpers/database'

/** The queue's options: retries back off from 0.2 s to at most 0.4 s, three attempts, a minute's lease (run out in SQL). */
const OPTIONS = { batchSize: 500, concurrency: 1, pollIntervalMs: 1000, leaseSeconds: 60, maxAttempts: 3, retryBaseMs: 200, retryMaxMs: 400 }

/** The longest a push service's Retry-After may delay a retry when the policy's own longest delay is shorter (docs/display.md). */
const RETRY_AFTER_BOUND_SECONDS = 3600

let fcm: FakeFcm
let receiver: WebPushReceiver
let api: TestService
let triggers: TestTriggers
let queue: PushQueue
let responder: Responder = () => undefined
const logged: Array<{ level: string; message: string }> = []

beforeAll(async () => {
  fcm = await startFakeFcm((token, attempt) => responder(token, attempt), { redirect: true })
  receiver = await startWebPushReceiver()
  api = await startTestService({
    provide: (services) => {
      fcm.provide(services)
      services.provide(WebPushAgentRef, { ca: receiver.ca })
    },
    config: { push: { workers: false, webPush: { allowPrivateTargets: true, timeoutMs: 5000 } } },
  })
  triggers = await testTriggers(api.database)
  const senders = {
    fcm: new FcmSender(fcm.options()),
    webPush: new WebPushSender({ ...generateVapidKeys(), subject: 'mailto:push@worktrack.example' }, { timeoutMs: 5000, agentOptions: { ca: receiver.ca } }),
  }
  queue = new PushQueue(api.service.core.db, senders, OPTIONS, capturingLogger(logged))
})
afterAll(async () => {
  await triggers.close()
  await api.stop()
  await receiver.close()
  await fcm.close()
})

const sql = sqlOn(() => api)

/** One batch, as a worker takes it: a fresh round discovers every organization with due deliveries and claims in each. */
const batch = () => new OutboxRunner(queue, capturingLogger(logged)).runOnce()

/** Leases run out: deliveries still `sending` (their results never written) are due again. */
const leasesRunOut = () => sql(`update deliveries set lease_until = now() - interval '1 second' where state = 'sending'`)

let sequence = 0

interface Tenant {
  organizationId: string
  displayKey: string
  creatorKey: string
  page: { id: string; name: string }
}

/** A new organization with a page its creator feeds (the creator has no devices). */
async function tenant(): Promise<Tenant> {
  const organizationId = await api.createOrganization()
  const creator = await api.createUser(organizationId, 'member')
  const creatorKey = (await api.createKey(creator.id, ['dashboards:read', 'dashboards:write'])).secret
  const page = await api.request('POST', '/api/v1/pages', { key: creatorKey, body: { name: `safety-${++sequence}` } })
  expect(page.status).toBe(201)
  return { organizationId, displayKey: creator.displayApiKey!, creatorKey, page: { id: page.body.data.id, name: page.body.data.name } }
}

/** A new member of the tenant's page, signed in (a mobile session). */
async function member(at: Tenant): Promise<{ user: TestUser; session: string }> {
  const user = await api.createUser(at.organizationId, 'member', { password: `member password ${++sequence}` })
  expect((await api.request('POST', `/api/v1/pages/${at.page.id}/access`, { key: at.creatorKey, body: { userId: user.id } })).status).toBe(201)
  return { user, session: await signIn(api, user) }
}

/** Registers a new FCM token for the member; the token. */
async function phone(of: { session: string }): Promise<string> {
  const token = `safety-${++sequence}:APA91b${Math.random().toString(36).slice(2, 14)}`
  const response = await api.request('POST', '/api/devices', { body: { token, platform: 'android' }, headers: { authorization: `Bearer ${of.session}` } })
  expect(response.status).toBe(201)
  return token
}

/** Registers a new Web Push subscription for the member, answered 201 unless `answer` says otherwise. */
async function browser(of: { session: string }, answer?: { status: number; headers?: Record<string, string> }): Promise<ReceiverSubscription> {
  const subscription = receiver.subscribe()
  if (answer) receiver.answer(subscription, answer)
  const body = { platform: 'webpush', subscription: { endpoint: subscription.endpoint, keys: subscription.keys } }
  expect((await api.request('POST', '/api/devices', { body, headers: { authorization: `Bearer ${of.session}` } })).status).toBe(201)
  return subscription
}

async function message(at: Tenant, options: Record<string, unknown> = {}): Promise<string> {
  const response = await api.request('POST', '/api/message', { body: { apiKey: at.displayKey, pageName: at.page.name, message: `note ${++sequence}`, ...options } })
  expect(response.status).toBe(200)
  return response.headers.get('x-message-id')!
}

/** How many times a device was handed the message: FCM sends (any answer) or pushes the push service received. */
function handedTo(device: string | ReceiverSubscription, messageId: string): number {
  if (typeof device === 'string') return fcm.sends.filter((each) => each.token === device && each.message.data?.messageId === messageId).length
  return receiver.received((each) => each.subscriptionId === device.id && (each.payload as { data: { messageId: string } }).data.messageId === messageId).length
}

const tokenOf = (device: string | ReceiverSubscription) => (typeof device === 'string' ? device : device.endpoint)

/** The states of the messages' deliveries, by device token. */
async function statesOf(messageIds: string[]): Promise<Map<string, string[]>> {
  const rows = await sql<{ token: string; state: string }>(`select device_token as token, state from deliveries where message_id = any($1::uuid[]) order by message_id`, [messageIds])
  const states = new Map<string, string[]>()
  for (const row of rows) states.set(row.token, [...(states.get(row.token) ?? []), row.state])
  return states
}

/**
 * Makes the write-back of results (a `sending` delivery becoming anything else) fail for the rows
 * `condition` matches: the first `times` times, or always (null). A sequence counts them, as it
 * is not rolled back with the refused statement. Returns its removal.
 */
async function refuseWriteBacks(name: string, condition: string, times: number | null): Promise<() => Promise<void>> {
  await triggers.onEveryNode(`create sequence ${name}_count`)
  await sql(`create function ${name}() returns trigger language plpgsql as $$
    begin
      if ${times === null ? 'true' : `nextval('${name}_count') <= ${times}`} then
        raise exception 'this write-back is refused by a test';
      end if;
      return new;
    end $$`)
  await triggers.createTrigger({ name, timing: 'before update', table: 'deliveries', condition: `old.state = 'sending' and new.state <> 'sending' and ${condition}`, function: name })
  return () => triggers.dropTrigger(name, 'deliveries')
}

describe('hostile Retry-After', () => {
  test("the backoff honours a Retry-After up to the policy's longest delay or an hour, never a negative or unreadable one", () => {
    const policyMaxMs = 400
    for (const [asked, expected] of [
      [1e13, RETRY_AFTER_BOUND_SECONDS],
      [Number.POSITIVE_INFINITY, RETRY_AFTER_BOUND_SECONDS],
      [120, 120],
    ] as const)
      expect(backoffSeconds(1, 200, policyMaxMs, asked)).toBe(expected)
    // A longer policy maximum is the bound itself.
    expect(backoffSeconds(1, 200, 7_200_000, 1e13)).toBe(7200)
    for (const asked of [-5, Number.NaN, Number.NEGATIVE_INFINITY]) {
      const delay = backoffSeconds(1, 200, policyMaxMs, asked)
      // The policy's own backoff: 0.1 to 0.2 s for a first attempt.
      expect(delay).toBeGreaterThanOrEqual(0.1)
      expect(delay).toBeLessThanOrEqual(0.2)
    }
  })

  test("a push service's Retry-After, however hostile, delays only its own delivery and within the policy's bounds; every other device gets each message once", async () => {
    const a = await tenant()
    const b = await tenant()
    const hostile = await member(a)
    const hostileAnswers = ['10000000000000', '9'.repeat(400), 'Fri, 31 Dec 9999 23:59:59 GMT', '-5', 'soon']
    const hostileBrowsers = await Promise.all(hostileAnswers.map((value) => browser(hostile, { status: 429, headers: { 'retry-after': value } })))
    const hostilePhone = await phone(hostile)
    responder = (token) => (token === hostilePhone ? FCM_ERRORS.quota('10000000000000') : undefined)
    const colleague = await member(a)
    const colleagueDevices = [await phone(colleague), await browser(colleague)]
    const elsewhere = await member(b)
    const elsewhereDevices = [await phone(elsewhere), await browser(elsewhere)]

    try {
      const plain = await message(a)
      const shortLived = await message(a, { ttlSeconds: 600 })
      const other = await message(b)
      // One batch holds both organizations' deliveries: 2 × 8 of A's, 2 of B's.
      expect(await batch()).toEqual({ handled: 18, full: false })

      // Nothing is left claimed (to be sent again when its lease runs out): the well-behaved are sent, the hostile wait for a retry.
      const states = await statesOf([plain, shortLived, other])
      for (const device of colleagueDevices) expect(states.get(tokenOf(device))).toEqual(['sent', 'sent'])
      for (const device of elsewhereDevices) expect(states.get(tokenOf(device))).toEqual(['sent'])
      for (const device of [...hostileBrowsers, hostilePhone]) expect(states.get(tokenOf(device))).toEqual(['pending', 'pending'])
      for (const messageId of [plain, shortLived]) for (const device of [...colleagueDevices, ...hostileBrowsers, hostilePhone]) expect(handedTo(device, messageId)).toBe(1)
      for (const device of elsewhereDevices) expect(handedTo(device, other)).toBe(1)

      // Each retry is due within the bounds: the policy's (at most an hour for a Retry-After), and what is left of the TTL.
      const waits = await sql<{ messageId: string; seconds: number }>(
        `select message_id as "messageId", extract(epoch from next_attempt_at - now())::float8 as seconds from deliveries where message_id = any($1::uuid[]) and state = 'pending'`,
        [[plain, shortLived]],
      )
      expect(waits).toHaveLength(12)
      for (const { messageId, seconds } of waits) {
        expect(seconds).toBeGreaterThan(-5)
        expect(seconds).toBeLessThanOrEqual(messageId === shortLived ? 600 : RETRY_AFTER_BOUND_SECONDS)
      }
      // The hostile values that name a wait (huge or far off) are held to the bound, not ignored.
      const longest = Math.max(...waits.filter((wait) => wait.messageId === plain).map((wait) => wait.seconds))
      expect(longest).toBeGreaterThan(RETRY_AFTER_BOUND_SECONDS - 60)
      // The retries are not this test's business (nor the next tests' batches).
      await sql(`update deliveries set state = 'cancelled' where message_id = any($1::uuid[]) and state = 'pending'`, [[plain, shortLived]])
    } finally {
      responder = () => undefined
    }
  })
})

describe('write-backs that fail', () => {
  test("an organization's results refused once are written one by one; the other organization's are written; every device gets the message once", async () => {
    const a = await tenant()
    const b = await tenant()
    const devices = { a: [] as Array<string | ReceiverSubscription>, b: [] as Array<string | ReceiverSubscription> }
    for (const [at, list] of [[a, devices.a], [a, devices.a], [b, devices.b]] as const) {
      const someone = await member(at)
      list.push(await phone(someone), await browser(someone))
    }
    const removeFault = await refuseWriteBacks('refuse_first_write_back', `new.organization_id = '${a.organizationId}'::uuid`, 1)
    try {
      const forA = await message(a)
      const forB = await message(b)
      expect(await batch()).toEqual({ handled: 6, full: false })

      const states = await statesOf([forA, forB])
      for (const device of [...devices.a, ...devices.b]) expect(states.get(tokenOf(device))).toEqual(['sent'])
      expect(logged.some((line) => line.level === 'warn' && line.message.includes('one by one'))).toBe(true)

      // Nothing is left claimed: once every lease has run out, the next batch finds nothing.
      await leasesRunOut()
      expect(await batch()).toEqual({ handled: 0, full: false })
      for (const device of devices.a) expect(handedTo(device, forA)).toBe(1)
      for (const device of devices.b) expect(handedTo(device, forB)).toBe(1)
    } finally {
      await removeFault()
    }
  })

  test('a delivery whose result can never be written is the only one sent again, at most maxAttempts times, and then failed', async () => {
    const a = await tenant()
    const b = await tenant()
    const someone = await member(a)
    const poisoned = await phone(someone)
    const siblings = [await phone(someone), await browser(await member(a))]
    const elsewhere = await phone(await member(b))
    const removeFault = await refuseWriteBacks('refuse_every_write_back', `new.device_token = '${poisoned}'`, null)
    let forA = ''
    let forB = ''
    try {
      forA = await message(a)
      forB = await message(b)
      expect(await batch()).toEqual({ handled: 4, full: false })
      const states = await statesOf([forA, forB])
      expect(states.get(poisoned)).toEqual(['sending'])
      for (const device of [...siblings, elsewhere]) expect(states.get(tokenOf(device))).toEqual(['sent'])

      // Each time its lease runs out it is claimed again: sent until it has been claimed maxAttempts times, then not.
      for (let pass = 2; pass <= OPTIONS.maxAttempts + 2; pass++) {
        await leasesRunOut()
        expect(await batch()).toEqual({ handled: 1, full: false })
      }
      expect(handedTo(poisoned, forA)).toBe(OPTIONS.maxAttempts)
      expect(logged.some((line) => line.level === 'error' && line.message.includes('could not be recorded'))).toBe(true)
    } finally {
      await removeFault()
    }
    // Once its result can be written, it is recorded failed without being sent again.
    await leasesRunOut()
    expect(await batch()).toEqual({ handled: 1, full: false })
    const [row] = await sql<{ state: string; lastError: string }>(`select state, last_error as "lastError" from deliveries where message_id = $1 and device_token = $2`, [forA, poisoned])
    expect(row).toEqual({ state: 'failed', lastError: expect.stringContaining('without a recorded result') })
    expect(handedTo(poisoned, forA)).toBe(OPTIONS.maxAttempts)
    for (const device of siblings) expect(handedTo(device, forA)).toBe(1)
    expect(handedTo(elsewhere, forB)).toBe(1)
  })
})
