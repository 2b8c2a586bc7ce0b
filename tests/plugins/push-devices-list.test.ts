/**
 * `GET /api/devices`: the signed-in user's own devices (mobile session, as `POST /api/devices`),
 * never another user's, and never a whole token (tokens are stored in clear): an id, the token's
 * last characters, platform and times, in the display API's shape.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createDisplayFixture, type DisplayFixture } from '../helpers/display-fixture'
import { eventually, startTestService, type TestService, type TestUser } from '../helpers/service'
import { signIn } from '../helpers/sessions'

let api: TestService
let fx: DisplayFixture

beforeAll(async () => {
  api = await startTestService()
  fx = await createDisplayFixture(api)
})
afterAll(() => api.stop())

const bearer = (session: string) => ({ authorization: `Bearer ${session}` })
const register = (session: string, token: string, platform: string) => api.request('POST', '/api/devices', { body: { token, platform }, headers: bearer(session) })
const list = (session: string) => api.request('GET', '/api/devices', { headers: bearer(session) })
/** A token shaped like FCM's (~160 characters). */
const fcmToken = (label: string) => `${label}:APA91b${crypto.randomUUID().replaceAll('-', '')}${'x'.repeat(100)}${crypto.randomUUID().slice(0, 8)}`

describe('GET /api/devices', () => {
  test("lists the caller's devices, seen most recently first, with the token masked to its last 8 characters", async () => {
    const session = await signIn(api, fx.reader)
    const phone = fcmToken('phone')
    const tablet = fcmToken('tablet')
    expect((await register(session, phone, 'android')).status).toBe(201)
    expect((await register(session, tablet, 'ios')).status).toBe(201)

    const first = await list(session)
    expect(first.status).toBe(200)
    expect(first.headers.get('content-type')).toStartWith('application/json')
    expect(first.headers.get('cache-control')).toBe('no-store')
    expect(first.body).toEqual({
      devices: [
        { id: expect.stringMatching(/^[0-9a-f]{16}$/), tokenSuffix: tablet.slice(-8), platform: 'ios', createdAt: expect.any(String), lastSeenAt: expect.any(String) },
        { id: expect.stringMatching(/^[0-9a-f]{16}$/), tokenSuffix: phone.slice(-8), platform: 'android', createdAt: expect.any(String), lastSeenAt: expect.any(String) },
      ],
    })
    for (const token of [phone, tablet]) expect(first.text).not.toContain(token.slice(0, -8))
    const [tabletId, phoneId] = first.body.devices.map((device: { id: string }) => device.id)
    expect(tabletId).not.toBe(phoneId)

    // Refreshing the phone puts it first; ids stay as they were. (A refresh's time has milliseconds,
    // a new row's microseconds: the refresh comes once the clock is past the tablet's millisecond.)
    await eventually(async () => expect(Date.now()).toBeGreaterThan(Date.parse(first.body.devices[0].lastSeenAt) + 1))
    expect((await register(session, phone, 'android')).status).toBe(200)
    const again = await list(session)
    expect(again.body.devices.map((device: { id: string }) => device.id)).toEqual([phoneId, tabletId])
    expect(Date.parse(again.body.devices[0].lastSeenAt)).toBeGreaterThanOrEqual(Date.parse(again.body.devices[0].createdAt))

    // Removed with DELETE /api/devices/{token}: gone from the list.
    expect((await api.request('DELETE', `/api/devices/${encodeURIComponent(tablet)}`, { headers: bearer(session) })).status).toBe(204)
    expect((await list(session)).body.devices.map((device: { id: string }) => device.id)).toEqual([phoneId])
  })

  test("never shows another user's devices, in the same organization or another; a token moves with its owner", async () => {
    const creatorSession = await signIn(api, fx.creator)
    const outsiderSession = await signIn(api, fx.outsider)
    const stranger = await api.createUser(await api.createOrganization(), 'member', { password: 'stranger password' })
    const strangerSession = await signIn(api, stranger)
    const creatorToken = fcmToken('creator')
    const outsiderToken = fcmToken('outsider')
    const strangerToken = fcmToken('stranger')
    expect((await register(creatorSession, creatorToken, 'web')).status).toBe(201)
    expect((await register(outsiderSession, outsiderToken, 'android')).status).toBe(201)
    expect((await register(strangerSession, strangerToken, 'ios')).status).toBe(201)

    const suffixes = async (session: string) => (await list(session)).body.devices.map((device: { tokenSuffix: string }) => device.tokenSuffix)
    expect(await suffixes(creatorSession)).toEqual([creatorToken.slice(-8)])
    expect(await suffixes(outsiderSession)).toEqual([outsiderToken.slice(-8)])
    expect(await suffixes(strangerSession)).toEqual([strangerToken.slice(-8)])

    // The outsider signs in on the creator's phone: the token is the outsider's now, and only theirs.
    expect((await register(outsiderSession, creatorToken, 'web')).status).toBe(201)
    expect(await suffixes(creatorSession)).toEqual([])
    expect(await suffixes(outsiderSession)).toEqual([creatorToken.slice(-8), outsiderToken.slice(-8)])
  })

  test('a short token shows at most half of itself', async () => {
    const user = await api.createUser(fx.organizationId, 'member', { password: 'short token password' })
    const session = await signIn(api, user)
    expect((await register(session, 'short-tok1', 'web')).status).toBe(201)
    expect((await register(session, 'abc', 'web')).status).toBe(201)
    // 10 characters show 5; 3 show 1 (the newest first).
    expect((await list(session)).body.devices.map((device: { tokenSuffix: string }) => device.tokenSuffix)).toEqual(['c', '-tok1'])
  })

  test('no live mobile session gets 401 invalidSession, as POST /api/devices does', async () => {
    const apiKey = (await api.createKey(fx.creator.id, ['dashboards:read'])).secret
    for (const authorization of [undefined, 'Bearer not-a-session', `Bearer ${apiKey}`]) {
      const response = await api.request('GET', '/api/devices', { headers: authorization ? { authorization } : {} })
      expect(response.status).toBe(401)
      expect(response.body.message).toBe('invalidSession')
      expect(response.headers.get('www-authenticate')).toStartWith('Bearer')
    }
  })

  test('is described in the OpenAPI document as POST /api/devices is: display API, mobile session, its answers', async () => {
    const document = (await api.request('GET', '/docs/json')).body
    const list = document.paths['/api/devices'].get
    const register = document.paths['/api/devices'].post
    expect(list.tags).toEqual(register.tags)
    expect(list.security).toEqual([{ sessionToken: [] }])
    expect(Object.keys(list.responses).sort()).toEqual(['200', '401', '500', '503'])
    const body = list.responses['200'].content['application/json'].schema
    expect(Object.keys(body.properties)).toEqual(['devices'])
    expect(Object.keys(body.properties.devices.items.properties ?? document.components.schemas.ListedDevice.properties).sort()).toEqual(['createdAt', 'id', 'lastSeenAt', 'platform', 'tokenSuffix'])
    expect(list.responses['401']).toEqual(register.responses['401'])
  })
})
