/**
 * Share link views (`/s/<token>` and its events stream) need no account, so they are rate-limited
 * per link and per client address: past `display.sharedViewsPerLinkPerMinute` or
 * `display.sharedViewsPerAddressPerMinute` the answer is 429 with Retry-After. The address is the
 * socket's peer; X-Forwarded-For counts only behind `server.trustProxy`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import display from '../../plugins/display'
import { WindowCounter } from '../../plugins/display/live/view-limits'
import { startTestService, type TestService } from '../helpers/service'

let linkLimited: TestService
let addressLimited: TestService
let proxied: TestService
let key: string
let pageId: string

beforeAll(async () => {
  linkLimited = await startTestService({ plugins: ['auth', 'teams', 'display'], config: { display: { sharedViewsPerLinkPerMinute: 3, sharedViewsPerAddressPerMinute: 1000 } } })
  const plugins = ['auth', 'teams', 'display']
  addressLimited = await startTestService({ plugins, database: linkLimited.database, config: { display: { sharedViewsPerLinkPerMinute: 1000, sharedViewsPerAddressPerMinute: 4 } } })
  proxied = await startTestService({ plugins, database: linkLimited.database, config: { server: { trustProxy: true }, display: { sharedViewsPerAddressPerMinute: 2 } } })
  const organizationId = await linkLimited.createOrganization()
  const user = await linkLimited.createUser(organizationId)
  key = (await linkLimited.createKey(user.id, ['dashboards:read', 'dashboards:write'])).secret
  pageId = (await linkLimited.request('POST', '/api/v1/pages', { key, body: { name: 'limited' } })).body.data.id
})
afterAll(async () => {
  await proxied.stop()
  await addressLimited.stop()
  await linkLimited.stop()
})

const newLink = async (): Promise<string> => (await linkLimited.request('POST', `/api/v1/pages/${pageId}/share-links`, { key, body: {} })).body.data.url

/** GETs `path` on `service` as the socket peer `ip`; the stream of an events answer is closed at once. */
async function view(service: TestService, path: string, ip: string, headers: Record<string, string> = {}) {
  const response = await service.service.fetch(new Request(`http://localhost${path}`, { headers }), { ip })
  const text = path.endsWith('/events') && response.status === 200 ? (await response.body?.cancel(), '') : await response.text()
  return { status: response.status, headers: response.headers, text }
}

function expectTooMany(answer: { status: number; headers: Headers }) {
  expect(answer.status).toBe(429)
  const wait = Number(answer.headers.get('retry-after'))
  expect(wait).toBeGreaterThanOrEqual(1)
  expect(wait).toBeLessThanOrEqual(60)
}

describe('share link views are rate-limited', () => {
  test('per link: past the limit its page and its stream are 429 with Retry-After, from any address; another link is not', async () => {
    const url = await newLink()
    expect((await view(linkLimited, url, '192.0.2.1')).status).toBe(200)
    expect((await view(linkLimited, `${url}/events`, '192.0.2.2')).status).toBe(200)
    expect((await view(linkLimited, url, '192.0.2.3')).status).toBe(200)
    const page = await view(linkLimited, url, '192.0.2.4')
    expectTooMany(page)
    expect(page.headers.get('content-type')).toStartWith('text/html')
    const stream = await view(linkLimited, `${url}/events`, '192.0.2.5')
    expectTooMany(stream)
    expect(JSON.parse(stream.text)).toMatchObject({ message: 'tooManyRequests' })
    expect((await view(linkLimited, await newLink(), '192.0.2.4')).status).toBe(200)
  })

  test('per address: past the limit every share link is 429 from that address (unknown tokens too), and X-Forwarded-For does not escape it', async () => {
    const [first, second] = [await newLink(), await newLink()]
    expect((await view(addressLimited, first, '198.51.100.7')).status).toBe(200)
    expect((await view(addressLimited, `${second}/events`, '198.51.100.7')).status).toBe(200)
    expect((await view(addressLimited, '/s/dsl_not-a-token', '198.51.100.7')).status).toBe(404)
    expect((await view(addressLimited, second, '198.51.100.7')).status).toBe(200)
    expectTooMany(await view(addressLimited, first, '198.51.100.7'))
    expectTooMany(await view(addressLimited, '/s/dsl_not-a-token', '198.51.100.7'))
    expectTooMany(await view(addressLimited, `${first}/events`, '198.51.100.7', { 'x-forwarded-for': '203.0.113.99' }))
    expect((await view(addressLimited, first, '198.51.100.8')).status).toBe(200)
  })

  test('behind a trusted proxy the address is the one the proxy saw', async () => {
    const url = await newLink()
    const proxy = '10.0.0.1'
    expect((await view(proxied, url, proxy, { 'x-forwarded-for': '203.0.113.1' })).status).toBe(200)
    expect((await view(proxied, url, proxy, { 'x-forwarded-for': '203.0.113.1' })).status).toBe(200)
    expectTooMany(await view(proxied, url, proxy, { 'x-forwarded-for': '203.0.113.1' }))
    // A client's own X-Forwarded-For entry (left of the proxy's) changes nothing.
    expectTooMany(await view(proxied, url, proxy, { 'x-forwarded-for': '198.51.100.1, 203.0.113.1' }))
    expect((await view(proxied, url, proxy, { 'x-forwarded-for': '203.0.113.2' })).status).toBe(200)
  })

  test('the limits are in the display config schema, with their defaults', () => {
    const properties = (display.config as unknown as { properties: Record<string, { default: number }> }).properties
    expect(properties.sharedViewsPerLinkPerMinute!.default).toBe(300)
    expect(properties.sharedViewsPerAddressPerMinute!.default).toBe(60)
  })
})

describe('the window counter', () => {
  test('a window admits `limit` views, says how long until it ends, and starts again when it has', () => {
    let now = 1_000_000
    const counter = new WindowCounter(2, 60_000, 100, () => now)
    expect([counter.take('a'), counter.take('a')]).toEqual([0, 0])
    expect(counter.take('a')).toBe(60)
    now += 45_500
    expect(counter.take('a')).toBe(15)
    expect(counter.take('b')).toBe(0)
    now += 14_500
    expect(counter.take('a')).toBe(0)
  })

  test('it remembers at most maxKeys keys however many addresses come', () => {
    const now = 1_000_000
    const counter = new WindowCounter(1, 60_000, 100, () => now)
    for (let i = 0; i < 10_000; i++) counter.take(`address ${i}`)
    expect((counter as unknown as { windows: Map<string, unknown> }).windows.size).toBeLessThanOrEqual(100)
    // The newest keep their count.
    expect(counter.take('address 9999')).toBeGreaterThan(0)
  })
})
