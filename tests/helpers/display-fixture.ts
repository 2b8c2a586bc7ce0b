/** A dashboard page with one component of each type, its creator, a reader and an outsider. */
import { renderComponent, type Data } from '../../plugins/display/charts/render'
import { DEFAULT_MAX_DATA_BYTES, storedLength } from '../../plugins/display/calls/update'
import type { TestResponse, TestService, TestUser } from './service'
import { signIn } from './sessions'

export const SAMPLE_DATA = {
  horizontalBox: {
    type: 'horizontalBox',
    backgroundColor: '#1e293b',
    leftText: { value: 'Orders', size: 18, color: '#f8fafc' },
    middleText: { value: '1,204', size: 32, color: '#38bdf8' },
    rightText: { value: '+4%', size: 18, color: '#4ade80' },
  },
  verticalBox: {
    type: 'verticalBox',
    backgroundColor: '#fff7ed',
    topText: { value: 'Uptime', size: 16, color: '#9a3412' },
    bottomText: { value: '99.98%', size: 28, color: '#ea580c' },
  },
  barChart: {
    type: 'barChart',
    backgroundColor: '#f8fafc',
    xNumber: false,
    height: 220,
    points: [
      { x: 'Mon', y: 12, color: '#2563eb' },
      { x: 'Tue', y: 19.5, color: '#7c3aed' },
      { x: 'Wed', y: 7, color: '#db2777' },
    ],
  },
  lineChart: {
    type: 'lineChart',
    backgroundColor: '#ecfeff',
    cubic: true,
    xNumber: true,
    fillColor: '#67e8f9',
    height: 200,
    points: [
      { x: '1', y: 3, color: '#0e7490' },
      { x: '2', y: 8, color: '#0e7490' },
      { x: '4', y: 5, color: '#0e7490' },
    ],
  },
  pieChart: {
    type: 'pieChart',
    backgroundColor: '#fefce8',
    height: 240,
    points: [
      { x: 'A', y: 60, color: '#ca8a04' },
      { x: 'B', y: 30, color: '' },
      { x: 'C', y: 10, color: '#a16207' },
    ],
  },
} as const

export type SampleType = keyof typeof SAMPLE_DATA

export interface DisplayFixture {
  organizationId: string
  creator: TestUser
  reader: TestUser
  outsider: TestUser
  creatorKey: string
  pageId: string
  pageName: string
  components: Record<SampleType, string>
  /** A mobile session token of the reader. */
  readerSession: string
  post(body: unknown, options?: { contentType?: string; raw?: string }): Promise<TestResponse>
}

export async function createDisplayFixture(api: TestService, name = `board-${Math.random().toString(36).slice(2, 8)}`): Promise<DisplayFixture> {
  const organizationId = await api.createOrganization()
  const creator = await api.createUser(organizationId, 'member', { password: 'creator password' })
  const reader = await api.createUser(organizationId, 'member', { password: 'reader password' })
  const outsider = await api.createUser(organizationId, 'member', { password: 'outsider password' })
  const creatorKey = (await api.createKey(creator.id, ['dashboards:read', 'dashboards:write'])).secret
  const v1 = async (method: string, path: string, body?: unknown) => {
    const response = await api.request(method, path, { key: creatorKey, body })
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
    return response.body.data
  }
  const page = await v1('POST', '/api/v1/pages', { name, title: 'Operations' })
  await v1('POST', `/api/v1/pages/${page.id}/access`, { userId: reader.id })
  const components = {} as Record<SampleType, string>
  const layout: Record<SampleType, { x: number; y: number; width: number }> = {
    horizontalBox: { x: 0, y: 0, width: 12 },
    verticalBox: { x: 12, y: 0, width: 6 },
    pieChart: { x: 18, y: 0, width: 6 },
    barChart: { x: 0, y: 6, width: 12 },
    lineChart: { x: 12, y: 6, width: 12 },
  }
  for (const type of Object.keys(SAMPLE_DATA) as SampleType[]) components[type] = (await v1('POST', `/api/v1/pages/${page.id}/components`, { type, title: type, ...layout[type] })).id
  const readerSession = await signIn(api, reader)
  return {
    organizationId,
    creator,
    reader,
    outsider,
    creatorKey,
    pageId: page.id,
    pageName: name,
    components,
    readerSession,
    post: (body, options = {}) =>
      api.request('POST', '/api/component', {
        rawBody: options.raw ?? JSON.stringify(body),
        headers: { 'content-type': options.contentType ?? 'application/json' },
      }),
  }
}

/** `text` repeated and cut to `units` UTF-16 code units, never splitting a character. */
function filled(prefix: string, text: string, units: number): string {
  let out = prefix
  for (const character of text.repeat(units)) {
    if (out.length + character.length > units) break
    out += character
  }
  return out
}

const candidatesByBound = new Map<number, Array<Record<string, any> & { type: string }>>()

/** `count` points whose labels are `length` characters of `alphabet` (distinct: each starts with its index), with long-winded values. */
function pointsOf(count: number, length: number, alphabet: string, pie = false) {
  return Array.from({ length: count }, (_, i) => ({ x: filled(`${i}`, alphabet, length), y: (pie || i % 2 ? 1 : -1) * (i + 0.123456789012345) * 1.1, color: pie ? '' : '#12345678' }))
}

/** The largest `n` in 1..`high` for which `fits(n)` holds (it holds for 1), by bisection. */
function largest(high: number, fits: (n: number) => boolean): number {
  let low = 1
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (fits(middle)) low = middle
    else high = middle - 1
  }
  return low
}

/**
 * Component data as large as a default service accepts (the model's limits and
 * `display.maxComponentDataKilobytes` as stored), filled in several ways: labels that escape to
 * 5 or 6 bytes a character (`"`, `&`) or take 3 or 4 bytes (中, 😀), 1,000 points with labels as
 * long as fit or 200-character labels on as many points as fit; both curves; boxes of three
 * 1,000-character texts. For bounds on the live page's size.
 */
export function worstCandidates(maxStoredBytes = DEFAULT_MAX_DATA_BYTES): Array<Record<string, any> & { type: string }> {
  const known = candidatesByBound.get(maxStoredBytes)
  if (known) return known
  const candidates: Array<Record<string, any> & { type: string }> = []
  candidatesByBound.set(maxStoredBytes, candidates)
  const text = { value: '"'.repeat(1000), size: 512, color: '#12345678' }
  candidates.push({ type: 'horizontalBox', backgroundColor: '#12345678', leftText: text, middleText: text, rightText: text })
  candidates.push({ type: 'verticalBox', backgroundColor: '#12345678', topText: text, bottomText: text })
  const charts = (points: (pie: boolean) => Array<{ x: string; y: number; color: string }>) => [
    { type: 'barChart', backgroundColor: '#12345678', xNumber: false, height: 4096, points: points(false) },
    { type: 'lineChart', backgroundColor: '#12345678', cubic: true, xNumber: false, fillColor: '#12345678', height: 4096, points: points(false) },
    { type: 'lineChart', backgroundColor: '#12345678', cubic: false, xNumber: false, fillColor: '#12345678', height: 4096, points: points(false) },
    { type: 'pieChart', backgroundColor: '#12345678', height: 4096, points: points(true) },
  ]
  const fits = (points: (pie: boolean) => Array<{ x: string; y: number; color: string }>) => charts(points).every((data) => storedLength(data) <= maxStoredBytes)
  for (const alphabet of ['a', '"', '&', '中', '😀']) {
    const length = largest(200, (n) => fits((pie) => pointsOf(1000, n, alphabet, pie)))
    candidates.push(...charts((pie) => pointsOf(1000, length, alphabet, pie)))
    const count = largest(1000, (n) => fits((pie) => pointsOf(n, 200, alphabet, pie)))
    candidates.push(...charts((pie) => pointsOf(count, 200, alphabet, pie)))
  }
  const numeric = Array.from({ length: 1000 }, (_, i) => ({ x: String(-1.2345678901234567e-3 * (i + 1)), y: (i + 0.123456789012345) * 1.1, color: '#12345678' }))
  candidates.push({ type: 'barChart', backgroundColor: '#12345678', xNumber: true, height: 4096, points: numeric })
  candidates.push({ type: 'lineChart', backgroundColor: '#12345678', cubic: true, xNumber: true, fillColor: '#12345678', height: 4096, points: numeric })
  for (const data of candidates) if (storedLength(data) > maxStoredBytes) throw new Error(`a ${data.type} candidate takes ${storedLength(data)} bytes as stored`)
  return candidates
}

/** The candidate whose drawing in a full-width cell is the largest: what fills the largest page. */
export function largestFill(): Record<string, any> & { type: string } {
  const size = (data: Record<string, any> & { type: string }) => new TextEncoder().encode(renderComponent(data.type, data as Data, { columns: 24 }).value).length
  return worstCandidates()
    .map((data) => ({ data, bytes: size(data) }))
    .reduce((largest, candidate) => (candidate.bytes > largest.bytes ? candidate : largest)).data
}
