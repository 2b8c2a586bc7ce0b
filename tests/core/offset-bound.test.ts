/**
 * Offsets are bounded: on every list (REST and MCP), a page whose offset (page × size) reaches
 * 10,000 rows is a 400 naming `page` whose message points at `cursor` (a list without cursors
 * says to narrow the filters), decided before any row is read; a page below the bound is served
 * (past the end: `data: []` with the right meta), and a cursor walk reaches the rows beyond. The
 * OpenAPI document says so on every `page` parameter.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { SessionsRef } from '../../plugins/auth/api'
import { pageLinks } from '../../src/http/answer'
import { MAX_OFFSET_ROWS, pageRequest } from '../../src/http/pagination'
import { timeLimit } from '../helpers/database'
import { startTestService, type TestService } from '../helpers/service'

/** page × size of each refused request: the bound itself, and past it (the largest page a schema could once take included). */
const REFUSED = ['page=100&size=100', 'page=9999&size=2', 'page=10000&size=1', 'page=500', 'page=10000000', 'page=1000000000000']
/** Just below the bound: served. */
const LAST_ALLOWED = 'page=99&size=100'

let api: TestService
let key: string
let sessionToken: string
/** Every list operation of the served document (a GET taking `page`), its path ids random: input is checked first. */
let lists: Array<{ path: string; session: boolean; cursors: boolean; page: any }> = []

beforeAll(async () => {
  api = await startTestService()
  const organizationId = await api.createOrganization()
  const superadministrator = await api.createUser(organizationId, 'superadministrator')
  key = (await api.createKey(superadministrator.id, api.service.core.scopes.map((scope) => scope.name))).secret
  const sessions = api.service.core.services.get(SessionsRef)
  sessionToken = (await sessions.start((await sessions.verifyCredentials(superadministrator.email, superadministrator.password))!, 'mobile', null)).token
  const document = (await api.request('GET', '/docs/json')).body
  for (const [template, operations] of Object.entries<any>(document.paths)) {
    const parameters: any[] = operations.get?.parameters ?? []
    const page = parameters.find((parameter) => parameter.in === 'query' && parameter.name === 'page')
    if (!page) continue
    lists.push({
      path: template.replace(/\{\w+\}/g, () => crypto.randomUUID()),
      session: JSON.stringify(operations.get.security).includes('sessionToken'),
      cursors: parameters.some((parameter) => parameter.in === 'query' && parameter.name === 'cursor'),
      page,
    })
  }
}, timeLimit(60_000))
afterAll(() => api?.stop())

const get = (path: string, session = false) => api.request('GET', path, { headers: { authorization: `Bearer ${session ? sessionToken : key}` } })

async function callTool(name: string, args: Record<string, unknown>) {
  const response = await api.request('POST', '/mcp', {
    key,
    body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
    headers: { accept: 'application/json, text/event-stream' },
  })
  return response.body.result as { isError?: boolean; structuredContent: any }
}

describe('the offset bound', () => {
  test('every list refuses a page at or past 10,000 rows in, naming page and pointing at cursor; below it the page is read', async () => {
    expect(lists.length).toBeGreaterThan(20)
    for (const list of lists) {
      for (const query of REFUSED) {
        const response = await get(`${list.path}?${query}`, list.session)
        expect(response.status, `${list.path}?${query}: ${response.text}`).toBe(400)
        expect(response.body.errors, `${list.path}?${query}`).toEqual([
          { code: 'BAD_REQUEST', field: 'page', message: expect.stringMatching(list.cursors ? /10,000 rows; use cursor \(meta\.nextCursor or the next link\)/ : /10,000 rows; this list takes no cursor: narrow the filters/) },
        ])
      }
      // Past the bound's check, the request goes on to its other checks (here: an unknown id's 404).
      const below = await get(`${list.path}?${LAST_ALLOWED}`, list.session)
      expect(below.body.errors?.[0]?.field, `${list.path}?${LAST_ALLOWED}: ${below.text}`).not.toBe('page')
    }
  })

  test('every MCP list tool refuses the same pages with the same error', async () => {
    const listed = await api.request('POST', '/mcp', { key, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } })
    const tools = (listed.body.result.tools as Array<{ name: string; inputSchema: any }>).filter((tool) => tool.inputSchema.properties?.page)
    expect(tools.length).toBeGreaterThan(10)
    for (const tool of tools) {
      const required = Object.fromEntries((tool.inputSchema.required ?? []).map((name: string) => [name, crypto.randomUUID()]))
      for (const paging of [{ page: 100, size: 100 }, { page: 10_000, size: 1 }, { page: 500 }]) {
        const result = await callTool(tool.name, { ...required, ...paging })
        const context = `${tool.name} ${JSON.stringify(paging)}: ${JSON.stringify(result.structuredContent)}`
        expect(result.isError, context).toBe(true)
        expect(result.structuredContent.errors, context).toEqual([{ code: 'BAD_REQUEST', field: 'page', message: expect.stringContaining('use cursor') }])
      }
      expect(tool.inputSchema.properties.page.description, tool.name).toContain('10,000 rows')
    }
    const below = await callTool('list_teams', { page: 99, size: 100 })
    expect(below.isError).toBeUndefined()
    expect(below.structuredContent).toEqual({ items: [], meta: { page: 99, size: 100, totalItems: 0, totalPages: 0, nextCursor: null } })
  })

  test('the document says so on every page parameter', () => {
    for (const list of lists) {
      expect(list.page.description, list.path).toContain('page × size may not reach 10,000 rows')
      expect(list.page.description, list.path).toMatch(list.cursors ? /use cursor/ : /narrow the filters/)
    }
  })

  test('on a list past 10,000 rows: the deep page is refused, the page below is served, and its cursor reaches the rest', async () => {
    // An organization of its own: rows inserted in SQL bump no list version, so no page read before may be cached.
    const organizationId = await api.createOrganization()
    const reader = (await api.createKey((await api.createUser(organizationId, 'administrator')).id, ['teams:read'])).secret
    const get = (path: string) => api.request('GET', path, { key: reader })
    const rows = MAX_OFFSET_ROWS + 150
    await api.service.core.db.execute(sql`insert into teams (id, organization_id, name) select gen_random_uuid(), ${organizationId}, 'Team ' || i from generate_series(1, ${rows}) as i`)
    const refused = await get('/api/v1/teams?page=100&size=100')
    expect(refused.status).toBe(400)
    const last = await get(`/api/v1/teams?${LAST_ALLOWED}`)
    expect(last.status).toBe(200)
    expect(last.body.data).toHaveLength(100)
    expect(last.body.meta).toMatchObject({ page: 99, size: 100, totalItems: rows, totalPages: Math.ceil(rows / 100) })
    // Its Link names no refused page: next continues by cursor, and there is no last page number to give.
    const links = last.headers.get('link')!
    expect(links).toContain(`</api/v1/teams?size=100&cursor=${last.body.meta.nextCursor}>; rel="next"`)
    expect(links).not.toContain('rel="last"')
    expect(links).toContain('</api/v1/teams?page=98&size=100>; rel="prev"')

    // The last page by offset hands on a cursor that reaches the rest.
    const seen = new Set<string>(last.body.data.map((team: { id: string }) => team.id))
    let cursor: string | null = last.body.meta.nextCursor
    while (cursor) {
      const page: any = await get(`/api/v1/teams?size=100&cursor=${cursor}`)
      expect(page.status).toBe(200)
      for (const team of page.body.data) seen.add(team.id)
      cursor = page.body.meta.nextCursor
    }
    expect(seen.size).toBe(rows - MAX_OFFSET_ROWS + 100)
  })
})

describe('pageRequest', () => {
  test('a list without cursors is told to narrow its filters; a cursor request is not bounded by page', () => {
    expect(() => pageRequest({ page: 500, size: 20 }, 20, 'filters')).toThrow('page × size may not reach 10,000 rows; this list takes no cursor: narrow the filters to reach the rows beyond.')
    expect(() => pageRequest({ page: 500, size: 20 })).toThrow('page × size may not reach 10,000 rows; use cursor (meta.nextCursor or the next link) to go deeper.')
    expect(pageRequest({ page: 499, size: 20 }, 20, 'filters')).toEqual({ page: 499, size: 20 })
    expect(pageRequest({ page: 500, size: 20, cursor: 'c' })).toEqual({ page: 0, size: 20, cursor: 'c' })
  })
})

describe('pageLinks', () => {
  const url = 'http://example.test/api/v1/teams?size=100&q=a'
  const links = (meta: Parameters<typeof pageLinks>[1]) =>
    Object.fromEntries(pageLinks(url, meta).split(', ').map((part) => /^<([^>]*)>; rel="(\w+)"$/.exec(part)!.slice(1).reverse()))

  test('a list with cursors: next by cursor from the first page on; first, prev and last by page number while the offset is allowed', () => {
    expect(links({ page: 0, size: 100, totalPages: 3, nextCursor: 'c1' })).toEqual({
      first: '/api/v1/teams?size=100&q=a&page=0',
      next: '/api/v1/teams?size=100&q=a&cursor=c1',
      last: '/api/v1/teams?size=100&q=a&page=2',
    })
    expect(links({ page: 1, size: 100, totalPages: 3, nextCursor: 'c2' })).toMatchObject({ prev: '/api/v1/teams?size=100&q=a&page=0', next: '/api/v1/teams?size=100&q=a&cursor=c2' })
    // The last page (null cursor), and a page read by cursor: no prev, and no next after the last.
    expect(links({ page: 2, size: 100, totalPages: 3, nextCursor: null })).toEqual({
      first: '/api/v1/teams?size=100&q=a&page=0',
      prev: '/api/v1/teams?size=100&q=a&page=1',
      last: '/api/v1/teams?size=100&q=a&page=2',
    })
    expect(links({ size: 100, totalPages: 3, nextCursor: 'c3' })).toEqual({
      first: '/api/v1/teams?size=100&q=a&page=0',
      next: '/api/v1/teams?size=100&q=a&cursor=c3',
      last: '/api/v1/teams?size=100&q=a&page=2',
    })
    // Past the bound there is no last page number to give.
    expect(links({ page: 0, size: 100, totalPages: MAX_OFFSET_ROWS / 100 + 5, nextCursor: 'c4' })).toEqual({
      first: '/api/v1/teams?size=100&q=a&page=0',
      next: '/api/v1/teams?size=100&q=a&cursor=c4',
    })
  })

  test('a list without cursors: next by page number, up to the last page the bound allows', () => {
    expect(links({ page: 0, size: 100, totalPages: 3 })).toEqual({
      first: '/api/v1/teams?size=100&q=a&page=0',
      next: '/api/v1/teams?size=100&q=a&page=1',
      last: '/api/v1/teams?size=100&q=a&page=2',
    })
    expect(links({ page: 99, size: 100, totalPages: 200 })).toEqual({ first: '/api/v1/teams?size=100&q=a&page=0', prev: '/api/v1/teams?size=100&q=a&page=98' })
    expect(links({ page: 0, size: 100, totalPages: 0 })).toEqual({ first: '/api/v1/teams?size=100&q=a&page=0', last: '/api/v1/teams?size=100&q=a&page=0' })
  })
})
