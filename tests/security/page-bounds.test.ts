/**
 * Bounded dashboard pages: at most `display.maxComponentsPerPage` components (409 past
 * it, also under concurrent creates), and the live page is assembled from SVG fragments cached per
 * component version: a repeated GET renders nothing again; an update re-renders only its component.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { FragmentCacheRef } from '../../plugins/display/api'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { webSession } from '../helpers/sessions'

let api: TestService
let creator: TestUser
let creatorKey: string
let cookie: string

beforeAll(async () => {
  api = await startTestService({ config: { display: { maxComponentsPerPage: 20, maxStreamsPerUser: 2 } } })
  const organization = await api.createOrganization()
  creator = await api.createUser(organization)
  creatorKey = (await api.createKey(creator.id, ['dashboards:read', 'dashboards:write'])).secret
  cookie = (await webSession(api, creator, { displayName: 'Creator' })).cookie
})
afterAll(() => api.stop())

const createPage = async (name: string) => (await api.request('POST', '/api/v1/pages', { key: creatorKey, body: { name } })).body.data as { id: string; name: string }
const addComponent = (pageId: string) => api.request('POST', `/api/v1/pages/${pageId}/components`, { key: creatorKey, body: { type: 'barChart' } })

describe('components per page', () => {
  test('the component past the limit is 409 CONFLICT naming the limit', async () => {
    const page = await createPage('capped')
    for (let i = 0; i < 20; i++) expect((await addComponent(page.id)).status).toBe(201)
    const refused = await addComponent(page.id)
    expect(refused.status).toBe(409)
    expect(refused.body.errors[0]).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('20') })
  })

  test('concurrent creates never pass the limit', async () => {
    const page = await createPage('raced')
    const answers = await Promise.all(Array.from({ length: 30 }, () => addComponent(page.id)))
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(20)
    expect(answers.filter((answer) => answer.status === 409)).toHaveLength(10)
    const listed = await api.request('GET', `/api/v1/pages/${page.id}/components?size=100`, { key: creatorKey })
    expect(listed.body.meta.totalItems).toBe(20)
  })
})

describe('the live page is built from cached fragments', () => {
  test('20 bar charts of 1,000 points: a repeated GET renders no fragment again; an update re-renders one', async () => {
    const page = await createPage('heavy')
    const ids: string[] = []
    for (let i = 0; i < 20; i++) ids.push((await addComponent(page.id)).body.data.id)
    const points = Array.from({ length: 1000 }, (_, i) => ({ x: `day ${i}`, y: (i * 37) % 101, color: '#2563eb' }))
    let timestamp = 1_700_000_000
    for (const componentId of ids) {
      const data = { type: 'barChart', backgroundColor: '#ffffff', xNumber: false, height: 300, points }
      expect((await api.request('POST', '/api/component', { body: { componentId, apiKey: creator.displayApiKey, timestamp: ++timestamp, data } })).status).toBe(200)
    }
    const cache = api.service.core.services.get(FragmentCacheRef)
    const get = async () => {
      const response = await api.service.fetch(new Request(`http://localhost/pages/${page.name}`, { headers: { cookie } }))
      expect(response.status).toBe(200)
      return response.text()
    }
    const first = await get()
    const afterFirst = cache.stats().renders
    const second = await get()
    expect(cache.stats().renders).toBe(afterFirst)
    expect(second).toBe(first)
    const data = { type: 'barChart', backgroundColor: '#ffffff', xNumber: false, height: 300, points: points.slice(0, 10) }
    expect((await api.request('POST', '/api/component', { body: { componentId: ids[3], apiKey: creator.displayApiKey, timestamp: ++timestamp, data } })).status).toBe(200)
    await get()
    expect(cache.stats().renders).toBe(afterFirst + 1)
    expect(cache.stats().bytes).toBeLessThanOrEqual(cache.stats().maxBytes)
  })
})

describe('live streams per user', () => {
  test('one user holds at most display.maxStreamsPerUser streams open on an instance; a closed one frees its place', async () => {
    const page = await createPage('streamed')
    const open = () => {
      const controller = new AbortController()
      const response = api.service.fetch(new Request(`http://localhost/pages/${page.name}/events`, { headers: { cookie }, signal: controller.signal }))
      return { response, close: () => controller.abort() }
    }
    const first = open()
    const second = open()
    expect((await first.response).status).toBe(200)
    expect((await second.response).status).toBe(200)
    const third = await open().response
    expect(third.status).toBe(429)
    expect(await third.json()).toMatchObject({ message: 'tooManyStreams' })
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0)
    await (await first.response).body!.cancel()
    first.close()
    const again = open()
    expect((await again.response).status).toBe(200)
    await (await again.response).body!.cancel()
    await (await second.response).body!.cancel()
  })
})
