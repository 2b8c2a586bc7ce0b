/**
 * The live page's fragment cache never changes what a page shows: however small the cache and
 * however renders of several pages of two organizations interleave (each evicting the others'
 * fragments between its statements), every render equals a render made without any cache. A
 * chart is never drawn without its data, and no drawing made without its data is cached. The
 * service's cache reports its renders, hits, entries and bytes in `/metrics`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { FragmentCacheRef } from '../../plugins/display/api'
import { FragmentCache } from '../../plugins/display/live/fragments'
import { cellHtml, pageCells } from '../../plugins/display/live/page'
import { SAMPLE_DATA, type SampleType } from '../helpers/display-fixture'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { webSession } from '../helpers/sessions'

const METRICS_TOKEN = 'fragments-metrics-token-0123456789'

let api: TestService
/** The first organization's user, who sees its pages. */
let viewer: TestUser
/** Pages of two organizations, each with components of every type, some of them never fed. */
const pages: string[] = []
/** Each page's organization, which pageCells names. */
const organizationOf = new Map<string, string>()
/** Every fed component with its feeder's display key, for updates between rounds. */
const fed: Array<{ componentId: string; apiKey: string; type: SampleType }> = []
let timestamp = 1_700_000_000

const TYPES = Object.keys(SAMPLE_DATA) as SampleType[]

/** The sample data of `type`, varied by `seed` so that every update draws something new. */
function dataOf(type: SampleType, seed: number): unknown {
  const sample = SAMPLE_DATA[type] as Record<string, any>
  if (!('points' in sample)) return { ...sample, backgroundColor: `#${(seed % 4096).toString(16).padStart(3, '0')}` }
  return { ...sample, points: sample.points.map((point: { y: number }, i: number) => ({ ...point, y: point.y + ((seed * (i + 1)) % 97) })) }
}

beforeAll(async () => {
  api = await startTestService({ plugins: ['auth', 'teams', 'display'], config: { server: { metricsToken: METRICS_TOKEN } } })
  for (let organization = 0; organization < 2; organization++) {
    const organizationId = await api.createOrganization()
    const user = await api.createUser(organizationId)
    viewer ??= user
    const key = (await api.createKey(user.id, ['dashboards:read', 'dashboards:write'])).secret
    for (let p = 0; p < 2; p++) {
      const page = await api.request('POST', '/api/v1/pages', { key, body: { name: `cached-${organization}-${p}` } })
      pages.push(page.body.data.id)
      organizationOf.set(page.body.data.id, organizationId)
      for (let c = 0; c < 6; c++) {
        const type = TYPES[(c + p + organization) % TYPES.length]!
        const component = await api.request('POST', `/api/v1/pages/${page.body.data.id}/components`, { key, body: { type, title: `${type} ${c}` } })
        expect(component.status).toBe(201)
        if (c === 5) continue // never fed: drawn as "No data yet" with and without the cache
        const answer = await api.request('POST', '/api/component', { body: { componentId: component.body.data.id, apiKey: user.displayApiKey, timestamp: ++timestamp, data: dataOf(type, c) } })
        expect(answer.status).toBe(200)
        fed.push({ componentId: component.body.data.id, apiKey: user.displayApiKey!, type })
      }
    }
  }
})
afterAll(() => api.stop())

/** The page's cells as drawn through `cache`, as HTML. */
const drawn = async (cache: FragmentCache, pageId: string) => (await pageCells(api.service.core.db, cache, organizationOf.get(pageId)!, pageId)).map(cellHtml)
/** The page as drawn with no cache at all: every fragment rendered from its data. */
const uncached = (pageId: string) => drawn(new FragmentCache(0), pageId)

describe('the fragment cache', () => {
  test('every render through a tiny cache, interleaved with renders of other pages and organizations, equals a render with no cache', async () => {
    await fc.assert(
      fc.asyncProperty(
        // From no room at all to about six fragments.
        fc.integer({ min: 0, max: 50_000 }),
        fc.array(fc.record({ renders: fc.array(fc.nat(pages.length - 1), { minLength: 1, maxLength: 6 }), update: fc.option(fc.nat(fed.length - 1), { nil: undefined }) }), { minLength: 1, maxLength: 5 }),
        async (capacity, rounds) => {
          const cache = new FragmentCache(capacity)
          for (const round of rounds) {
            if (round.update !== undefined) {
              const { componentId, apiKey, type } = fed[round.update]!
              const answer = await api.request('POST', '/api/component', { body: { componentId, apiKey, timestamp: ++timestamp, data: dataOf(type, timestamp) } })
              expect(answer.status).toBe(200)
            }
            const pagesDrawn = await Promise.all(round.renders.map((page) => drawn(cache, pages[page]!)))
            for (const [i, page] of round.renders.entries()) expect(pagesDrawn[i]).toEqual(await uncached(pages[page]!))
            expect(cache.stats().bytes).toBeLessThanOrEqual(capacity)
          }
        },
      ),
      { numRuns: 60 },
    )
  })

  test('a page larger than the whole cache is drawn complete, and its charts from their data', async () => {
    const expected = await uncached(pages[0]!)
    for (let capacity = 1_000; capacity <= 30_000; capacity += 1_000) {
      const cache = new FragmentCache(capacity)
      for (let i = 0; i < 3; i++) {
        const cells = await drawn(cache, pages[0]!)
        expect(cells).toEqual(expected)
        expect(cells.filter((cell) => cell.includes('No data yet'))).toHaveLength(1)
      }
    }
  })
})

describe("the service's fragment cache in /metrics", () => {
  /** The fragment cache's samples of a scrape. */
  async function scrape() {
    const response = await api.request('GET', '/metrics', { unchecked: true, headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    expect(response.status).toBe(200)
    const text = response.text
    const value = (name: string) => {
      const line = text.split('\n').find((each) => each.startsWith(`${name} `))
      expect(line).toBeDefined()
      return Number(line!.slice(name.length + 1))
    }
    expect(text).toContain('# TYPE worktrack_display_fragment_renders_total counter')
    expect(text).toContain('# TYPE worktrack_display_fragment_cache_bytes gauge')
    return {
      renders: value('worktrack_display_fragment_renders_total'),
      hits: value('worktrack_display_fragment_hits_total'),
      entries: value('worktrack_display_fragment_cache_entries'),
      bytes: value('worktrack_display_fragment_cache_bytes'),
    }
  }

  test('a live page drawn renders its fragments; drawn again, it is served from the cache', async () => {
    const { cookie } = await webSession(api, viewer)
    const draw = async () => {
      const response = await api.service.fetch(new Request('http://localhost/pages/cached-0-0', { headers: { cookie } }))
      expect(response.status).toBe(200)
      return (await response.text()).match(/<section class="component"/g)?.length
    }
    const before = await scrape()
    expect(await draw()).toBe(6)
    const drawn = await scrape()
    expect(drawn.renders).toBe(before.renders + 6)
    expect(drawn.entries).toBe(before.entries + 6)
    expect(drawn.bytes).toBeGreaterThan(before.bytes)
    expect(await draw()).toBe(6)
    const again = await scrape()
    expect(again).toEqual({ ...drawn, hits: drawn.hits + 6 })
    const stats = api.service.core.services.get(FragmentCacheRef).stats()
    expect({ renders: stats.renders, hits: stats.hits, entries: stats.entries, bytes: stats.bytes }).toEqual(again)
  })
})
