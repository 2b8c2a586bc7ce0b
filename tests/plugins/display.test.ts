import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { setDailyLimit } from '../../plugins/display/calls/accounts'
import { queryRows } from '../../src/db'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture, type SampleType } from '../helpers/display-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: DisplayFixture
let clock = 1_800_000_000

beforeAll(async () => {
  api = await startTestService()
  fx = await createDisplayFixture(api)
})
afterAll(() => api.stop())

const update = (type: SampleType, data: unknown, options: { key?: string; timestamp?: number; componentId?: string } = {}) =>
  fx.post({ componentId: options.componentId ?? fx.components[type], apiKey: options.key ?? fx.creator.displayApiKey, timestamp: options.timestamp ?? ++clock, data })

const readPage = async () => {
  const response = await api.request('GET', `/api/pages/${fx.pageName}`, { headers: { authorization: `Bearer ${fx.readerSession}` } })
  expect(response.status).toBe(200)
  return response.body as { page: { id: string; name: string }; components: Array<{ id: string; type: string; data: unknown; timestamp: number | null }> }
}
const componentOf = async (type: SampleType) => (await readPage()).components.find((component) => component.id === fx.components[type])!

describe('POST /api/component', () => {
  test.each(Object.keys(SAMPLE_DATA) as SampleType[])('a valid %s update round-trips exactly', async (type) => {
    const timestamp = ++clock + 0.25
    const response = await update(type, SAMPLE_DATA[type], { timestamp })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ message: 'updateSuccess', limitRemaining: expect.any(Number) })
    expect(response.headers.get('x-ratelimit-remaining')).toBe(String(response.body.limitRemaining))
    const stored = await componentOf(type)
    expect(stored.data).toEqual(SAMPLE_DATA[type])
    expect(stored.timestamp).toBe(timestamp)
  })

  const bar = SAMPLE_DATA.barChart
  const invalid: Array<[string, SampleType, unknown, number, string, string | undefined]> = [
    ['bad hex', 'barChart', { ...bar, backgroundColor: '#12345' }, 400, 'invalidRequest', 'data.backgroundColor'],
    ['a named color', 'barChart', { ...bar, backgroundColor: 'red' }, 400, 'invalidRequest', 'data.backgroundColor'],
    ['y as a string', 'barChart', { ...bar, points: [{ x: 'Mon', y: '12', color: '#2563eb' }] }, 400, 'invalidRequest', 'data.points[0].y'],
    ['x as a number', 'barChart', { ...bar, points: [{ x: 1, y: 12, color: '#2563eb' }] }, 400, 'invalidRequest', 'data.points[0].x'],
    ['a missing text object', 'horizontalBox', { ...SAMPLE_DATA.horizontalBox, middleText: undefined }, 400, 'invalidRequest', 'data.middleText'],
    ['an extra field', 'barChart', { ...bar, legend: true }, 400, 'invalidRequest', 'data.legend'],
    ['1,001 points', 'barChart', { ...bar, points: Array.from({ length: 1001 }, (_, i) => ({ x: `${i}`, y: i, color: '#000' })) }, 400, 'invalidRequest', 'data.points'],
    ['an empty color outside a pie', 'lineChart', { ...SAMPLE_DATA.lineChart, points: [{ x: '1', y: 1, color: '' }] }, 400, 'invalidRequest', 'data.points[0].color'],
    ['a size out of range', 'verticalBox', { ...SAMPLE_DATA.verticalBox, topText: { value: 'x', size: 0, color: '#000' } }, 400, 'invalidRequest', 'data.topText.size'],
    ['a height out of range', 'pieChart', { ...SAMPLE_DATA.pieChart, height: 5000 }, 400, 'invalidRequest', 'data.height'],
    ['an unknown type', 'barChart', { ...bar, type: 'gauge' }, 400, 'invalidRequest', 'data.type'],
    ['the wrong type for the component', 'barChart', SAMPLE_DATA.pieChart, 400, 'componentTypeMismatch', 'data.type'],
  ]
  test.each(invalid)('%s is refused (%#), changes nothing and still counts', async (_name, type, data, status, message, field) => {
    await update(type, SAMPLE_DATA[type])
    const before = await componentOf(type)
    const first = await update(type, SAMPLE_DATA[type])
    const response = await update(type, data)
    expect(response.status).toBe(status)
    expect(response.body).toMatchObject({ message, detail: expect.any(String) })
    expect(response.body.field).toBe(field)
    expect(Number(response.headers.get('x-ratelimit-remaining'))).toBe(first.body.limitRemaining - 1)
    expect((await componentOf(type)).data).toEqual(before.data)
  })

  test('a timestamp in milliseconds is read as milliseconds', async () => {
    const seconds = ++clock + 100
    await update('verticalBox', SAMPLE_DATA.verticalBox, { timestamp: seconds * 1000 })
    expect((await componentOf('verticalBox')).timestamp).toBe(seconds)
    // The same instant in seconds is "equal", so it applies; one second earlier is stale.
    expect((await update('verticalBox', SAMPLE_DATA.verticalBox, { timestamp: seconds })).status).toBe(200)
    const stale = await update('verticalBox', SAMPLE_DATA.verticalBox, { timestamp: seconds - 1 })
    expect(stale.status).toBe(409)
    expect(stale.body.message).toBe('staleUpdate')
    clock = seconds + 1
  })

  test('a timestamp past the year 9999 is 400 on timestamp, so no update can make every later one stale', async () => {
    for (const timestamp of [1e300, 253_402_300_800_000]) {
      const response = await update('verticalBox', SAMPLE_DATA.verticalBox, { timestamp })
      expect(response.status, String(timestamp)).toBe(400)
      expect(response.body).toMatchObject({ message: 'invalidRequest', field: 'timestamp' })
    }
    expect((await update('verticalBox', SAMPLE_DATA.verticalBox)).status).toBe(200)
  })

  test('an unknown or malformed key is 401 and counts nothing', async () => {
    const before = (await update('barChart', bar)).body.limitRemaining
    for (const apiKey of ['dpk_nope', `${fx.creator.displayApiKey!.slice(0, -6)}000000`, fx.creator.displayApiKey!.replace('dpk_', 'wtk_')]) {
      const response = await update('barChart', bar, { key: apiKey })
      expect(response.status).toBe(401)
      expect(response.body.message).toBe('invalidApiKey')
      expect(response.headers.get('x-ratelimit-remaining')).toBeNull()
    }
    expect((await update('barChart', bar)).body.limitRemaining).toBe(before - 1)
  })

  test('a component on a page the key owner cannot see is componentNotFound, like an unknown one', async () => {
    const invisible = await update('barChart', bar, { key: fx.outsider.displayApiKey })
    const unknown = await update('barChart', bar, { componentId: '01a20000-0000-7000-8000-000000000000' })
    const malformed = await update('barChart', bar, { componentId: 'nope' })
    for (const response of [invisible, unknown, malformed]) {
      expect(response.status).toBe(404)
      expect(response.body).toMatchObject({ message: 'componentNotFound' })
    }
    // The reader is on the access list as a viewer: the page is visible, feeding it is not (403, see tests/security/page-levels.test.ts).
    expect((await update('barChart', bar, { key: fx.reader.displayApiKey })).status).toBe(403)
  })

  test('a body that is not JSON, or not sent as JSON, is 400', async () => {
    expect((await fx.post(undefined, { raw: '{"componentId": ' })).body).toMatchObject({ message: 'invalidRequest' })
    expect((await fx.post(undefined, { raw: '{"componentId": ' })).status).toBe(400)
    const form = await fx.post(undefined, { raw: 'componentId=x', contentType: 'application/x-www-form-urlencoded' })
    expect(form.status).toBe(400)
    expect(form.body.detail).toContain('application/json')
    expect((await fx.post([1, 2])).status).toBe(400)
    expect((await fx.post({ componentId: fx.components.barChart, timestamp: 1, data: bar })).body).toMatchObject({ message: 'invalidRequest', field: 'apiKey' })
  })

  test('headers describe the limit; the reset is the next UTC midnight', async () => {
    const response = await update('barChart', bar)
    const reset = Number(response.headers.get('x-ratelimit-reset'))
    const midnight = new Date()
    midnight.setUTCHours(24, 0, 0, 0)
    expect(reset).toBe(midnight.getTime() / 1000)
    expect(Number(response.headers.get('x-ratelimit-limit'))).toBe(50_000)
    expect(Number(response.headers.get('x-ratelimit-used')) + Number(response.headers.get('x-ratelimit-remaining'))).toBe(50_000)
  })

  test('over the limit: 429 limitExceeded with limitRemaining 0 and Retry-After, not counted, nothing changed', async () => {
    const tight = await createDisplayFixture(api)
    await setDailyLimit(api.service.core.db, tight.creator.id, 2)
    const call = (i: number) => tight.post({ componentId: tight.components.barChart, apiKey: tight.creator.displayApiKey, timestamp: 100 + i, data: { ...bar, height: 100 + i } })
    expect((await call(1)).body.limitRemaining).toBe(1)
    expect((await call(2)).body.limitRemaining).toBe(0)
    const refused = await call(3)
    expect(refused.status).toBe(429)
    expect(refused.body).toMatchObject({ message: 'limitExceeded', limitRemaining: 0 })
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(refused.headers.get('x-ratelimit-used')).toBe('2')
    const stored = await api.request('GET', `/api/pages/${tight.pageName}`, { headers: { authorization: `Bearer ${tight.readerSession}` } })
    expect(stored.body.components.find((component: { id: string }) => component.id === tight.components.barChart).data.height).toBe(102)
  })
})

describe('limit exactness across two instances', () => {
  test('limit 200, 400 concurrent calls on two instances: exactly 200 succeed, and their limitRemaining are 0..199', async () => {
    const other = await startTestService({ database: api.database })
    try {
      const tight = await createDisplayFixture(api)
      await setDailyLimit(api.service.core.db, tight.creator.id, 200)
      const responses = await Promise.all(
        Array.from({ length: 400 }, (_, i) =>
          (i % 2 ? api : other).request('POST', '/api/component', {
            body: { componentId: tight.components.lineChart, apiKey: tight.creator.displayApiKey, timestamp: 1000 + i, data: SAMPLE_DATA.lineChart },
          }),
        ),
      )
      const succeeded = responses.filter((response) => response.status === 200 || response.status === 409)
      const refused = responses.filter((response) => response.status === 429)
      expect(succeeded).toHaveLength(200)
      expect(refused).toHaveLength(200)
      const remaining = succeeded.map((response) => Number(response.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b)
      expect(remaining).toEqual(Array.from({ length: 200 }, (_, i) => i))
    } finally {
      await other.stop()
    }
  })
})

describe('pages and components through API v1', () => {
  test('names are unique per organization (any case); the access list takes users and teams of the organization', async () => {
    const duplicate = await api.request('POST', '/api/v1/pages', { key: fx.creatorKey, body: { name: fx.pageName.toUpperCase() } })
    expect(duplicate.status).toBe(409)
    expect(duplicate.body.errors[0]).toMatchObject({ existingId: fx.pageId, field: 'name' })
    expect((await api.request('POST', '/api/v1/pages', { key: fx.creatorKey, body: { name: 'has spaces' } })).status).toBe(400)
    const stranger = await api.createUser(await api.createOrganization())
    const grant = await api.request('POST', `/api/v1/pages/${fx.pageId}/access`, { key: fx.creatorKey, body: { userId: stranger.id } })
    expect(grant.status).toBe(400)
    expect(grant.body.errors[0].field).toBe('userId')
    const access = await api.request('GET', `/api/v1/pages/${fx.pageId}/access`, { key: fx.creatorKey })
    expect(access.body.data.map((entry: { principalId: string }) => entry.principalId)).toEqual([fx.reader.id])

    // Teams: one of the organization is granted; one of another organization is refused, naming teamId.
    const teamOf = async (organizationId: string, name: string) => {
      const administrator = await api.createUser(organizationId, 'administrator')
      const key = (await api.createKey(administrator.id, ['teams:write'])).secret
      const created = await api.request('POST', '/api/v1/teams', { key, body: { name } })
      expect(created.status).toBe(201)
      return created.body.data.id as string
    }
    const ownTeam = await teamOf(fx.organizationId, 'Board watchers')
    const foreignTeam = await teamOf(stranger.organizationId, 'Foreign watchers')
    const teamGrant = await api.request('POST', `/api/v1/pages/${fx.pageId}/access`, { key: fx.creatorKey, body: { teamId: ownTeam } })
    expect(teamGrant.status).toBe(201)
    expect(teamGrant.body.data).toMatchObject({ principalType: 'team', principalId: ownTeam, name: 'Board watchers' })
    const foreignGrant = await api.request('POST', `/api/v1/pages/${fx.pageId}/access`, { key: fx.creatorKey, body: { teamId: foreignTeam } })
    expect(foreignGrant.status).toBe(400)
    expect(foreignGrant.body.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field: 'teamId' })
    const withTeam = await api.request('GET', `/api/v1/pages/${fx.pageId}/access`, { key: fx.creatorKey })
    expect(withTeam.body.data.map((entry: { principalType: string; principalId: string }) => [entry.principalType, entry.principalId])).toEqual([
      ['user', fx.reader.id],
      ['team', ownTeam],
    ])
  })

  test('readers read, only the creator or an administrator manages, others see nothing', async () => {
    const readerKey = (await api.createKey(fx.reader.id, ['dashboards:read', 'dashboards:write'])).secret
    const outsiderKey = (await api.createKey(fx.outsider.id, ['dashboards:read', 'dashboards:write'])).secret
    expect((await api.request('GET', `/api/v1/pages/${fx.pageId}/components`, { key: readerKey })).body.meta.totalItems).toBe(5)
    expect((await api.request('PATCH', `/api/v1/pages/${fx.pageId}`, { key: readerKey, body: { title: 'x' } })).status).toBe(403)
    expect((await api.request('GET', `/api/v1/pages/${fx.pageId}`, { key: outsiderKey })).status).toBe(404)
    expect((await api.request('GET', '/api/v1/pages', { key: outsiderKey })).body.data.map((page: { id: string }) => page.id)).not.toContain(fx.pageId)
    const admin = await api.createUser(fx.organizationId, 'administrator')
    const adminKey = (await api.createKey(admin.id, ['dashboards:write', 'dashboards:read'])).secret
    expect((await api.request('PATCH', `/api/v1/pages/${fx.pageId}/components/${fx.components.pieChart}`, { key: adminKey, body: { title: 'Share', width: 8 } })).body.data).toMatchObject({
      title: 'Share',
      width: 8,
      type: 'pieChart',
    })
  })

  test('a component read through v1 carries its data and timestamp', async () => {
    await update('horizontalBox', SAMPLE_DATA.horizontalBox, { timestamp: ++clock })
    const read = await api.request('GET', `/api/v1/pages/${fx.pageId}/components/${fx.components.horizontalBox}`, { key: fx.creatorKey })
    expect(read.body.data).toMatchObject({ type: 'horizontalBox', data: SAMPLE_DATA.horizontalBox, timestamp: clock })
  })
})

describe('the display account in the account area', () => {
  test("shows the key's prefix and today's usage; rotation shows the new key once and the old one stops at once", async () => {
    const session = await api.request('POST', '/account/api/sessions', { body: { email: fx.creator.email, password: 'creator password' } })
    const auth = { authorization: `Bearer ${session.body.data.token}` }
    await update('barChart', SAMPLE_DATA.barChart)
    const summary = await api.request('GET', '/account/api/display', { headers: auth })
    expect(summary.body.data).toMatchObject({ prefix: fx.creator.displayApiKey!.slice(0, 8), dailyLimit: 50_000 })
    expect(summary.body.data.usedToday).toBeGreaterThan(0)
    const rotated = await api.request('POST', '/account/api/display/rotate', { headers: auth })
    expect(rotated.body.data.apiKey).toMatch(/^dpk_/)
    expect(rotated.body.data.prefix).toBe(rotated.body.data.apiKey.slice(0, 8))
    expect((await update('barChart', SAMPLE_DATA.barChart)).status).toBe(401)
    expect((await update('barChart', SAMPLE_DATA.barChart, { key: rotated.body.data.apiKey })).status).toBe(200)
    fx.creator.displayApiKey = rotated.body.data.apiKey
    const [record] = await queryRows(
      api.service.core.db,
      sql`select action, via, changes from audit_logs where resource_type = 'display_account' and resource_id = ${fx.creator.id} order by occurred_at desc limit 1`,
    )
    expect(record).toMatchObject({ action: 'display_account.rotated', via: 'account' })
    expect(JSON.stringify(record)).not.toContain(rotated.body.data.apiKey.slice(8))
  })
})
