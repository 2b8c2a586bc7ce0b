/** A dashboard page with one component of each type, its creator, a reader and an outsider. */
import type { TestResponse, TestService, TestUser } from './service'

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
  const session = await api.request('POST', '/account/api/sessions', { body: { email: reader.email, password: 'reader password' } })
  return {
    organizationId,
    creator,
    reader,
    outsider,
    creatorKey,
    pageId: page.id,
    pageName: name,
    components,
    readerSession: session.body.data.token,
    post: (body, options = {}) =>
      api.request('POST', '/api/component', {
        rawBody: options.raw ?? JSON.stringify(body),
        headers: { 'content-type': options.contentType ?? 'application/json' },
      }),
  }
}
