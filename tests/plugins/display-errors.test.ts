/**
 * The display API's refusals: every problem of a body reported at once (the documented
 * `{message, detail, field?}` is the first, `errors` lists them all), in the service's words, and
 * data of another component type answered `componentTypeMismatch`, counted, nothing stored.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture, type SampleType } from '../helpers/display-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: DisplayFixture
let clock = 1_900_000_000

beforeAll(async () => {
  api = await startTestService()
  fx = await createDisplayFixture(api)
})
afterAll(() => api.stop())

const update = (type: SampleType, data: unknown, extra: Record<string, unknown> = {}) =>
  fx.post({ componentId: fx.components[type], apiKey: fx.creator.displayApiKey, timestamp: ++clock, data, ...extra })

/** The validator's own phrasing, which no answer may carry. */
const RAW = /Expected|Unexpected property|greater or equal|less or equal|union value|\^#|\{\d+\}/

const storedData = async (type: SampleType) => {
  const response = await api.request('GET', `/api/pages/${fx.pageName}`, { headers: { authorization: `Bearer ${fx.readerSession}` } })
  return (response.body.components as Array<{ id: string; data: unknown }>).find((component) => component.id === fx.components[type])!.data
}

describe('POST /api/component refusals', () => {
  test('a body with several problems reports every one; the first is the documented {message, detail, field}', async () => {
    const bar = SAMPLE_DATA.barChart
    const response = await update('barChart', { ...bar, backgroundColor: 'red', height: 0, legend: true, points: [{ x: 1, y: 2, color: '#000' }] }, { timestamp: 'soon' })
    expect(response.status).toBe(400)
    const { errors, ...first } = response.body
    expect(first).toEqual(errors[0])
    expect(errors.map((error: { field: string }) => error.field).sort()).toEqual(['data.backgroundColor', 'data.height', 'data.legend', 'data.points[0].x', 'timestamp'])
    for (const error of errors) {
      expect(error.message).toBe('invalidRequest')
      expect(error.detail).not.toMatch(RAW)
    }
    const detail = Object.fromEntries(errors.map((error: { field: string; detail: string }) => [error.field, error.detail]))
    expect(detail['data.backgroundColor']).toBe('data.backgroundColor must be a color like #33aaff (# and 3, 4, 6 or 8 hex digits).')
    expect(detail['data.height']).toBe('data.height must be an integer from 1 to 4096.')
    expect(detail['data.legend']).toBe('data.legend is not a known field.')
    expect(detail['data.points[0].x']).toBe('data.points[0].x must be a string of at most 200 characters.')
    expect(detail.timestamp).toBe('timestamp must be a number from 0 to 253402300799999.')
  })

  test('a missing field is reported as required, an unknown type lists the five', async () => {
    const { cubic: _, ...withoutCubic } = SAMPLE_DATA.lineChart
    const missing = await update('lineChart', withoutCubic)
    expect(missing.status).toBe(400)
    expect(missing.body).toMatchObject({ message: 'invalidRequest', field: 'data.cubic', detail: 'data.cubic is required.' })
    const unknown = await update('barChart', { ...SAMPLE_DATA.barChart, type: 'gauge' })
    expect(unknown.body).toMatchObject({ field: 'data.type', detail: 'data.type must be one of horizontalBox, verticalBox, barChart, lineChart, pieChart.' })
  })

  test('a refused body reports at most 20 problems', async () => {
    const points = Array.from({ length: 50 }, () => ({ x: 1, y: 'no', color: 'red' }))
    const response = await update('barChart', { ...SAMPLE_DATA.barChart, points })
    expect(response.status).toBe(400)
    expect(response.body.errors).toHaveLength(20)
  })

  test('line-chart data sent to a bar chart is componentTypeMismatch, counted, nothing stored', async () => {
    const remaining = Number((await update('barChart', SAMPLE_DATA.barChart)).headers.get('x-ratelimit-remaining'))
    const stored = await storedData('barChart')
    // Labelled as the component, or as what it is, or bar data labelled a line chart: all another type's data.
    const cases = [
      { ...SAMPLE_DATA.lineChart, type: 'barChart' },
      { ...SAMPLE_DATA.barChart, type: 'lineChart' },
      { ...SAMPLE_DATA.horizontalBox, type: 'barChart' },
    ]
    let used = remaining
    for (const data of cases) {
      const response = await update('barChart', data)
      expect(response.status, JSON.stringify(data)).toBe(400)
      expect(response.body).toMatchObject({ message: 'componentTypeMismatch', field: 'data.type' })
      expect(response.body.detail).toStartWith('The component is a barChart;')
      expect(Number(response.headers.get('x-ratelimit-remaining'))).toBe(--used)
    }
    expect(await storedData('barChart')).toEqual(stored)
  })

  test('data that only lacks fields of its own type is invalidRequest naming them, not a mismatch', async () => {
    // A bar chart without xNumber has the fields of a pie chart; it says it is a bar chart, for a bar chart.
    const { xNumber: _, ...withoutXNumber } = SAMPLE_DATA.barChart
    const response = await update('barChart', withoutXNumber)
    expect(response.body).toMatchObject({ message: 'invalidRequest', field: 'data.xNumber', detail: 'data.xNumber is required.' })
  })

  test('another type\'s data for a component that does not exist is the body\'s problems (400), as before', async () => {
    const response = await fx.post({ componentId: '01a20000-0000-7000-8000-000000000000', apiKey: fx.creator.displayApiKey, timestamp: ++clock, data: { ...SAMPLE_DATA.lineChart, type: 'barChart' } })
    expect(response.status).toBe(400)
    expect(response.body.message).toBe('invalidRequest')
    expect(response.body.errors.map((error: { field: string }) => error.field).sort()).toEqual(['data.cubic', 'data.fillColor'])
  })
})

describe('POST /api/devices refusals', () => {
  test('a platform outside the list names the allowed ones, in the service\'s words', async () => {
    const response = await api.request('POST', '/api/devices', {
      headers: { authorization: `Bearer ${fx.readerSession}` },
      body: { token: 'has spaces', platform: 'blackberry' },
    })
    expect(response.status).toBe(400)
    const detail = Object.fromEntries(response.body.errors.map((error: { field: string; detail: string }) => [error.field, error.detail]))
    expect(detail.platform).toBe('platform must be one of "android", "ios", "web".')
    expect(detail.token).toBe('token must be in the form: The FCM registration token: 1..4096 printable characters, no spaces.')
    for (const text of Object.values(detail)) expect(text).not.toMatch(RAW)
  })
})
