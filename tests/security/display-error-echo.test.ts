/**
 * What the display API's answers echo is bounded, as API v1's are (error-echo.test.ts): on every
 * door answering `{message, detail, field?, errors?}` (POST /api/component, POST /api/message,
 * POST /api/devices, POST /api/devices/receipts, POST /push/subscriptions) and on the sign-in door
 * mobile apps use, a 200,000-character field name comes back as its first 64 characters and an
 * ellipsis, and a 200,000-character value is never repeated: the answer stays under 2,000 characters.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createECDH, randomBytes } from 'node:crypto'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture } from '../helpers/display-fixture'
import { startTestService, type TestResponse, type TestService } from '../helpers/service'
import { webSession } from '../helpers/sessions'

const LONG = 'a'.repeat(200_000)
const SHOWN = `${'a'.repeat(64)}…`
/** The most characters any of these answers may take. */
const SMALL = 2_000

let api: TestService
let fx: DisplayFixture
let webCookie: string
let clock = 1_900_000_000

beforeAll(async () => {
  api = await startTestService()
  fx = await createDisplayFixture(api)
  const { reader } = fx
  webCookie = (await webSession(api, reader)).cookie
})
afterAll(() => api.stop())

const component = (extra: Record<string, unknown>, data: unknown = SAMPLE_DATA.barChart) =>
  api.request('POST', '/api/component', { body: { componentId: fx.components.barChart, apiKey: fx.creator.displayApiKey, timestamp: ++clock, data, ...extra } })
const message = (extra: Record<string, unknown>) => api.request('POST', '/api/message', { body: { apiKey: fx.creator.displayApiKey, pageName: fx.pageName, message: 'hello', ...extra } })
const devices = (body: unknown) => api.request('POST', '/api/devices', { body, headers: { authorization: `Bearer ${fx.readerSession}` } })
const receipts = (body: unknown) => api.request('POST', '/api/devices/receipts', { body, headers: { authorization: `Bearer ${fx.readerSession}` } })
const subscriptions = (body: unknown) => api.request('POST', '/push/subscriptions', { body, headers: { cookie: webCookie } })

const subscription = { endpoint: 'https://push.example.com/send/abc', keys: { p256dh: 'BNc', auth: 'tBHI' } }

/** A small 400 invalidRequest whose first problem is `field` (shown at most 64 characters long), listed in `errors` too. */
function expectNamed(response: TestResponse, field: string, detail: string) {
  expect(response.status).toBe(400)
  expect(response.text.length).toBeLessThan(SMALL)
  const { errors, ...first } = response.body
  expect(first).toEqual({ message: 'invalidRequest', detail, field })
  expect(errors).toEqual([first])
}

/** A small 400 that repeats none of the long value. */
function expectSmall(response: TestResponse) {
  expect(response.status).toBe(400)
  expect(response.text.length).toBeLessThan(SMALL)
  expect(response.text).not.toContain('a'.repeat(65))
}

describe('a 200,000-character field name is echoed as its first 64 characters', () => {
  test('POST /api/component: an unknown field of the body', async () => {
    expectNamed(await component({ [LONG]: 1 }), SHOWN, `${SHOWN} is not a known field.`)
  })

  test("POST /api/component: an unknown key in the component's data, and in one of its points", async () => {
    const path = `data.${'a'.repeat(59)}…`
    expectNamed(await component({}, { ...SAMPLE_DATA.barChart, [LONG]: 1 }), path, `${path} is not a known field.`)
    const points = [{ ...SAMPLE_DATA.barChart.points[0], [LONG]: 1 }]
    const pointPath = `data.points[0].${'a'.repeat(49)}…`
    expectNamed(await component({}, { ...SAMPLE_DATA.barChart, points }), pointPath, `${pointPath} is not a known field.`)
  })

  test('POST /api/message: an unknown field', async () => {
    expectNamed(await message({ [LONG]: 1 }), SHOWN, `${SHOWN} is not a known field.`)
  })

  test('POST /api/devices: an unknown field, and an unknown key of a Web Push subscription', async () => {
    expectNamed(await devices({ token: 'token-1', platform: 'android', [LONG]: 1 }), SHOWN, `${SHOWN} is not a known field.`)
    const keysPath = `subscription.keys.${'a'.repeat(46)}…`
    expectNamed(await devices({ platform: 'webpush', subscription: { ...subscription, keys: { ...subscription.keys, [LONG]: 1 } } }), keysPath, `${keysPath} is not a known field.`)
  })

  test('POST /api/devices/receipts: an unknown field', async () => {
    expectNamed(await receipts({ messageId: crypto.randomUUID(), event: 'opened', [LONG]: 1 }), SHOWN, `${SHOWN} is not a known field.`)
  })

  test("POST /push/subscriptions (a browser's): an unknown field of the subscription", async () => {
    const path = `subscription.${'a'.repeat(51)}…`
    expectNamed(await subscriptions({ ...subscription, [LONG]: 1 }), path, `${path} is not a known field.`)
  })

  test('POST /account/api/sessions (the sign-in of mobile apps): an unknown field', async () => {
    const response = await api.request('POST', '/account/api/sessions', { body: { email: fx.reader.email, password: fx.reader.password, [LONG]: 1 } })
    expect(response.status).toBe(400)
    expect(response.text.length).toBeLessThan(SMALL)
    expect(response.body.errors[0]).toMatchObject({ field: SHOWN })
  })
})

describe('a 200,000-character value is never repeated', () => {
  test('POST /api/component: componentId, timestamp, data.type and a color', async () => {
    expectSmall(await component({ componentId: LONG }))
    expectSmall(await component({ timestamp: LONG }))
    expectSmall(await component({}, { ...SAMPLE_DATA.barChart, type: LONG }))
    expectSmall(await component({}, { ...SAMPLE_DATA.barChart, backgroundColor: LONG }))
  })

  test('POST /api/message: pageName and message', async () => {
    expectSmall(await message({ pageName: LONG }))
    expectSmall(await message({ message: LONG }))
  })

  test('POST /api/devices and /api/devices/receipts: a token, an endpoint and a message id', async () => {
    expectSmall(await devices({ token: LONG, platform: 'android' }))
    expectSmall(await devices({ platform: 'webpush', subscription: { ...subscription, endpoint: `https://${LONG}.example/` } }))
    expectSmall(await receipts({ messageId: LONG, event: 'opened' }))
  })

  test("POST /api/devices: a Web Push endpoint whose host is as long as an endpoint may be is named by its first 64 characters when it is refused", async () => {
    // Labels of 60 characters: a host that passes the endpoint's length limit and fails to resolve.
    const host = Array.from({ length: 32 }, () => 'b'.repeat(60)).join('.')
    const keys = { p256dh: createECDH('prime256v1').generateKeys().toString('base64url'), auth: randomBytes(16).toString('base64url') }
    const response = await devices({ platform: 'webpush', subscription: { endpoint: `https://${host}/`, keys } })
    expect(response.status).toBe(400)
    expect(response.text.length).toBeLessThan(600)
    expect(response.text).toContain(`${host.slice(0, 64)}…`)
  })

  test('POST /account/api/sessions: an email', async () => {
    expectSmall(await api.request('POST', '/account/api/sessions', { body: { email: LONG, password: 'x' } }))
  })
})
