/**
 * A live page's size is bounded however its components are filled: every
 * component's SVG is at most MAX_FRAGMENT_BYTES, large series drawn summarised (groups of
 * consecutive points, each drawn at its peak, with a tooltip naming its first and last x, its range
 * and its size; a pie's smallest slices gathered into one), so at the default 100 components the
 * page's HTML is at most 8 MiB. A component's data is at most `display.maxComponentDataKilobytes`
 * as stored (what a live page reads to draw it); more is refused. The largest page this allows is
 * built through the API, and read through `/pages/{name}` and `/s/<token>`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { MAX_FRAGMENT_BYTES, renderComponent, type Data } from '../../plugins/display/charts/render'
import { largestFill, worstCandidates } from '../helpers/display-fixture'
import { DEFAULT_MAX_DATA_BYTES, storedLength } from '../../plugins/display/calls/update'
import { queryRows } from '../../src/db'
import { sql } from 'drizzle-orm'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/time'
import { webSession } from '../helpers/sessions'

const MiB = 1024 * 1024
const bytes = (text: string) => new TextEncoder().encode(text).length
const render = (data: Data, columns = 24) => renderComponent(data.type, data, { columns }).value

/** The marks a variant drew: its bars, points or slices. */
function marks(svg: string): Array<Record<string, string>> {
  return [...svg.matchAll(/<(?:rect class="bar"|circle class="point"|path class="slice"|circle class="slice")([^>]*)>(?:<title>([^<]*)<\/title>)?/g)].map(([, attributes, title]) => ({
    ...Object.fromEntries([...attributes!.matchAll(/([\w-]+)="([^"]*)"/g)].map(([, name, value]) => [name!, value!])),
    title: title ?? '',
  }))
}
const variantsOf = (markup: string) => [...markup.matchAll(/<svg\b[\s\S]*?<\/svg>/g)].map(([svg]) => svg)

describe('a component is drawn within MAX_FRAGMENT_BYTES', () => {
  test('the worst fills of every type, under the default data bound and the largest one configurable (1,000 points with 200-character labels)', () => {
    expect(MAX_FRAGMENT_BYTES * 100).toBeLessThan(8 * MiB - 200_000)
    for (const bound of [DEFAULT_MAX_DATA_BYTES, 1024 * 1024])
      for (const data of worstCandidates(bound)) for (const columns of [1, 6, 12, 24]) expect(bytes(render(data as Data, columns))).toBeLessThanOrEqual(MAX_FRAGMENT_BYTES)
    expect(worstCandidates(1024 * 1024).some((data) => data.points?.length === 1000 && data.points[999].x.length === 200)).toBe(true)
    // CPU only (~190 worst renders): past the default 30 s when the machine's cores are taken by other suites.
  }, timeLimit(120_000))

  test('any data the model admits, any width', () => {
    const label = fc.string({ unit: fc.constantFrom('a', '"', '&', '<', "'", '中', '😀', ' ', '1', '.'), maxLength: 200 })
    const color = fc.constantFrom('#fff', '#2563ebff', '#123456')
    const point = fc.record({ x: label, y: fc.double({ noNaN: true, noDefaultInfinity: true }), color })
    const chart = fc.record({
      type: fc.constantFrom('barChart', 'lineChart', 'pieChart'),
      backgroundColor: color,
      xNumber: fc.boolean(),
      cubic: fc.boolean(),
      fillColor: color,
      height: fc.integer({ min: 1, max: 4096 }),
      // Many points, or few with long labels: both are drawn within the bound.
      points: fc.oneof(fc.array(point, { maxLength: 1000 }), fc.array(point, { minLength: 900, maxLength: 1000 }).map((points) => points.map((p, i) => ({ ...p, x: `${i}${'"'.repeat(190)}` })))),
    })
    fc.assert(
      fc.property(chart, fc.integer({ min: 1, max: 24 }), (data, columns) => {
        expect(bytes(render(data as Data, columns))).toBeLessThanOrEqual(MAX_FRAGMENT_BYTES)
      }),
      { numRuns: 60 },
    )
  })
})

describe('large series are drawn summarised, not cut', () => {
  const points = Array.from({ length: 1000 }, (_, i) => ({ x: `day ${i} ${'of a rather long label '.repeat(8)}`.slice(0, 200), y: i === 700 ? 5000 : i === 300 ? -800 : Math.round(Math.sin(i / 30) * 100), color: '#2563eb' }))

  test('a bar chart of 1,000 points draws groups of consecutive points that cover them all, its peaks included', () => {
    for (const svg of variantsOf(render({ type: 'barChart', backgroundColor: '#ffffff', xNumber: false, height: 300, points } as Data))) {
      const bars = marks(svg)
      const width = Number(/viewBox="0 0 (\d+)/.exec(svg)![1])
      expect(bars.length).toBeLessThanOrEqual(width / 2)
      expect(bars.length).toBeGreaterThan(10)
      // Every point is in exactly one group, in order.
      expect(bars.reduce((sum, bar) => sum + Number(bar['data-count'] ?? 1), 0)).toBe(1000)
      expect(bars.map((bar) => Number(bar['data-x']!.split(' ')[1]))).toEqual([...bars.map((bar) => Number(bar['data-x']!.split(' ')[1]))].sort((a, b) => a - b))
      expect(bars.some((bar) => bar['data-y'] === '5000')).toBe(true)
      expect(bars.some((bar) => bar['data-y'] === '-800')).toBe(true)
      const peak = bars.find((bar) => bar['data-y'] === '5000')!
      expect(peak.title).toMatch(/^day \d+ of a rather long .*? – day \d+ of a rather long .*?: -?[\d,.]+ to 5,000 \(\d+ bars\)$/)
    }
  })

  test('a line chart keeps its envelope; a pie gathers its smallest slices into one', () => {
    for (const svg of variantsOf(render({ type: 'lineChart', backgroundColor: '#ffffff', xNumber: false, cubic: true, fillColor: '#67e8f9', height: 300, points } as Data))) {
      const circles = marks(svg)
      expect(circles.length).toBeLessThan(1000)
      expect(circles.reduce((sum, circle) => sum + Number(circle['data-count'] ?? 1), 0)).toBe(1000)
      expect(circles.some((circle) => circle['data-y'] === '5000')).toBe(true)
    }
    const pie = points.map((point, i) => ({ ...point, y: i < 5 ? 10_000 : 1, color: '' }))
    for (const svg of variantsOf(render({ type: 'pieChart', backgroundColor: '#ffffff', height: 300, points: pie } as Data))) {
      const slices = marks(svg)
      expect(slices.length).toBeLessThan(1000)
      expect(slices.slice(0, 5).map((slice) => slice['data-y'])).toEqual(['10000', '10000', '10000', '10000', '10000'])
      const others = slices.at(-1)!
      expect(others['data-x']).toBe(`${others['data-count']} others`)
      expect(slices.length - 1 + Number(others['data-count'])).toBe(1000)
    }
  })

  test('a chart whose points fit is drawn point by point, with whole labels in its tooltips', () => {
    const few = points.slice(0, 20)
    for (const svg of variantsOf(render({ type: 'barChart', backgroundColor: '#ffffff', xNumber: false, height: 300, points: few } as Data, 12))) {
      const bars = marks(svg)
      expect(bars).toHaveLength(20)
      expect(bars.every((bar) => bar['data-count'] === undefined)).toBe(true)
      expect(bars[0]!.title).toBe(`${few[0]!.x}: ${few[0]!.y}`)
    }
  })
})

describe('the largest page', () => {
  let api: TestService
  beforeAll(async () => {
    api = await startTestService({ plugins: ['auth', 'teams', 'display'] })
  })
  afterAll(() => api.stop())

  test('100 components filled the worst way: /pages/{name} and /s/<token> are at most 8 MiB', async () => {
    const organizationId = await api.createOrganization()
    const user = await api.createUser(organizationId)
    const key = (await api.createKey(user.id, ['dashboards:read', 'dashboards:write'])).secret
    const v1 = async (method: string, path: string, body?: unknown) => {
      const response = await api.request(method, path, { key, body })
      if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
      return response.body.data
    }
    const fill = largestFill()
    const name = `p${'-'.repeat(99)}`
    const page = await v1('POST', '/api/v1/pages', { name, title: '"'.repeat(200) })
    let timestamp = 1_700_000_000
    for (let i = 0; i < 100; i++) {
      const component = await v1('POST', `/api/v1/pages/${page.id}/components`, { type: fill.type, title: '"'.repeat(200), x: 0, width: 24 })
      const posted = await api.request('POST', '/api/component', { body: { componentId: component.id, apiKey: user.displayApiKey, timestamp: ++timestamp, data: fill }, unchecked: true })
      expect(posted.status).toBe(200)
      if (i === 0) {
        // What the bound counts is what the database stores and gives back.
        const [row] = await queryRows<{ stored: number }>(api.service.core.db, sql`select octet_length(data::text)::int as stored from components where id = ${component.id}`)
        expect(row!.stored).toBe(storedLength(fill))
        expect(row!.stored).toBeLessThanOrEqual(DEFAULT_MAX_DATA_BYTES)
      }
    }
    expect((await api.request('POST', `/api/v1/pages/${page.id}/components`, { key, body: { type: fill.type } })).status).toBe(409)
    const session = await webSession(api, user, { displayName: 'Creator' })
    const link = await v1('POST', `/api/v1/pages/${page.id}/share-links`, {})
    for (const [path, headers] of [[`/pages/${name}`, { cookie: `wt_session=${session.token}` }], [link.url, {}]] as const) {
      const response = await api.service.fetch(new Request(`http://localhost${path}`, { headers }))
      expect(response.status).toBe(200)
      const body = await response.arrayBuffer()
      console.info(`${path.startsWith('/s/') ? '/s/<token>' : '/pages/{name}'}: ${body.byteLength.toLocaleString('en')} bytes`)
      expect(body.byteLength).toBeLessThanOrEqual(8 * MiB)
      expect(new TextDecoder().decode(body).match(/<section class="component"/g)).toHaveLength(100)
    }
  }, 120_000)
})

describe('the data of a component is bounded as stored', () => {
  let api: TestService
  let bigger: TestService
  beforeAll(async () => {
    api = await startTestService({ plugins: ['auth', 'teams', 'display'] })
    bigger = await startTestService({ plugins: ['auth', 'teams', 'display'], database: api.database, config: { display: { maxComponentDataKilobytes: 1024 } } })
  })
  afterAll(async () => {
    await bigger.stop()
    await api.stop()
  })

  test('data past display.maxComponentDataKilobytes is 400 naming data, counted; 1,000 short points pass; the limit is configurable', async () => {
    const organizationId = await api.createOrganization()
    const user = await api.createUser(organizationId)
    const key = (await api.createKey(user.id, ['dashboards:read', 'dashboards:write'])).secret
    const page = await api.request('POST', '/api/v1/pages', { key, body: { name: 'bounded' } })
    const component = await api.request('POST', `/api/v1/pages/${page.body.data.id}/components`, { key, body: { type: 'barChart' } })
    let timestamp = 1_700_000_000
    const post = (service: TestService, points: Array<{ x: string; y: number; color: string }>) =>
      service.request('POST', '/api/component', {
        body: { componentId: component.body.data.id, apiKey: user.displayApiKey, timestamp: ++timestamp, data: { type: 'barChart', backgroundColor: '#ffffff', xNumber: false, height: 300, points } },
        unchecked: true,
      })
    // The audit's case: 1,000 points with 200-character labels (about 240 KB).
    const long = Array.from({ length: 1000 }, (_, i) => ({ x: `${i} ${'label '.repeat(40)}`.slice(0, 200), y: i, color: '#2563eb' }))
    // Few bytes posted, many stored: jsonb writes 1e308 out in 309 digits.
    const huge = Array.from({ length: 1000 }, () => ({ x: 'x', y: 1.7976931348623157e308, color: '#2563eb' }))
    for (const points of [long, huge]) {
      const refused = await post(api, points)
      expect(refused.status).toBe(400)
      expect(refused.body).toMatchObject({ message: 'invalidRequest', field: 'data', detail: expect.stringContaining('131,072') })
      expect(refused.headers.get('x-ratelimit-used')).not.toBeNull()
    }
    const usual = Array.from({ length: 1000 }, (_, i) => ({ x: new Date(Date.UTC(2026, 0, 1) + i * 3_600_000).toISOString(), y: Math.round(Math.sin(i / 20) * 1e6) / 100, color: '#2563eb' }))
    expect((await post(api, usual)).status).toBe(200)
    expect((await post(bigger, long)).status).toBe(200)
  })
})

