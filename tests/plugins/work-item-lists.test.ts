/**
 * The work-item list's filters, sort, cursors and exact totals (growth within one
 * project): every documented key and operator against an oracle computed from all the items,
 * REST and MCP answering the same, forged cursors refused, and cursor walks that return every
 * row exactly once while rows come and go between pages.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

let api: TestService
let fx: ProjectFixture
let mcp: Client
let http: Listening
const items = () => `/api/v1/projects/${fx.projectId}/work-items`

interface Item {
  id: string
  number: number
  status: string
  priority: number
  assigneeId: string | null
  dueDate: string | null
  position: number
  createdAt: string
  updatedAt: string
}
let all: Item[] = []

const STATUSES = ['todo', 'in_progress', 'done', 'cancelled']

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  http = listen(api)
  mcp = await connectMcp(http.url, fx.keys.viewer)
  // 40 items over every status, priority, assignee (or none) and due date (or none).
  for (let i = 0; i < 40; i++) {
    await fx.as('editor', 'POST', items(), {
      title: `Item ${i}`,
      status: STATUSES[i % 4],
      priority: i % 5,
      assigneeId: i % 3 === 0 ? null : i % 3 === 1 ? fx.users.owner.id : fx.users.editor.id,
      dueDate: i % 4 === 3 ? null : `2027-0${1 + (i % 7)}-1${i % 10}`,
    }, 201)
  }
  all = await readAll(items())
}, timeLimit(60_000))
afterAll(async () => {
  await mcp?.close()
  http?.stop()
  await api.stop()
})

/** Every item of a list, page by page (size 100). */
async function readAll(path: string): Promise<Item[]> {
  const response = await fx.call('viewer', 'GET', `${path}${path.includes('?') ? '&' : '?'}size=100`)
  expect(response.status).toBe(200)
  return response.body.data
}

/** A `Link` header as its targets by relation. */
const linksOf = (response: { headers: Headers }): Record<string, string> =>
  Object.fromEntries(
    (response.headers.get('link') ?? '')
      .split(', ')
      .filter(Boolean)
      .map((part) => {
        const [, target, rel] = /^<([^>]*)>; rel="(\w+)"$/.exec(part)!
        return [rel!, target!]
      }),
  )

/** Walks a list by cursor, `size` at a time; returns the ids in order and every page's meta. */
async function walk(query: string, size: number, between?: (page: number) => Promise<void>) {
  const ids: string[] = []
  const metas: any[] = []
  let cursor: string | null | undefined
  for (let page = 0; page < 200; page++) {
    const path = `${items()}?size=${size}${query ? `&${query}` : ''}${cursor ? `&cursor=${cursor}` : ''}`
    const response = await fx.call('viewer', 'GET', path)
    expect(response.status).toBe(200)
    ids.push(...response.body.data.map((item: Item) => item.id))
    metas.push(response.body.meta)
    cursor = response.body.meta.nextCursor
    if (!cursor) break
    if (between) await between(page)
  }
  return { ids, metas }
}

/** Where `sort=priority` puts an item: urgent (1) first … low (4), then no priority (0) last. */
const urgency = (item: Item) => (item.priority + 4) % 5

const compare = (a: unknown, b: unknown) => (a === b ? 0 : a === null ? 1 : b === null ? -1 : (a as never) < (b as never) ? -1 : 1)

describe('filters', () => {
  const owner = () => fx.users.owner.id
  const cases: [string, () => string, (item: Item) => boolean][] = [
    ['one status', () => 'status=done', (item) => item.status === 'done'],
    ['any of two statuses', () => 'status=todo,in_progress', (item) => item.status === 'todo' || item.status === 'in_progress'],
    ['an assignee', () => `assigneeId=${owner()}`, (item) => item.assigneeId === owner()],
    ['no assignee', () => 'assigneeId=none', (item) => item.assigneeId === null],
    ['a bare priority', () => 'priority=2', (item) => item.priority === 2],
    ['priority eq: any of', () => 'priority=eq:1,eq:3', (item) => item.priority === 1 || item.priority === 3],
    ['priority gt', () => 'priority=gt:2', (item) => item.priority > 2],
    ['priority gte', () => 'priority=gte:2', (item) => item.priority >= 2],
    ['priority lt', () => 'priority=lt:2', (item) => item.priority < 2],
    ['priority lte and gte', () => 'priority=gte:1,lte:3', (item) => item.priority >= 1 && item.priority <= 3],
    ['due date range', () => 'dueDate=gte:2027-03-01,lt:2027-06-01', (item) => item.dueDate !== null && item.dueDate >= '2027-03-01' && item.dueDate < '2027-06-01'],
    ['no due date', () => 'dueDate=none', (item) => item.dueDate === null],
    ['created since the 11th item', () => `createdAt=gte:${all[10]!.createdAt}`, (item) => item.createdAt >= all[10]!.createdAt],
    ['updated before the 5th item', () => `updatedAt=lt:${all[4]!.updatedAt}`, (item) => item.updatedAt < all[4]!.updatedAt],
    ['status and priority and assignee', () => `status=todo,done&priority=lte:3&assigneeId=${owner()}`, (item) => ['todo', 'done'].includes(item.status) && item.priority <= 3 && item.assigneeId === owner()],
  ]

  test.each(cases)('%s: exactly the matching items, in content order, with their exact total', async (_name, query, matches) => {
    const expected = all.filter(matches)
    expect(expected.length).toBeGreaterThan(0)
    expect(expected.length).toBeLessThan(all.length)
    const response = await fx.call('viewer', 'GET', `${items()}?${query()}&size=7`)
    expect(response.status).toBe(200)
    expect(response.body.meta).toMatchObject({ page: 0, size: 7, totalItems: expected.length, totalPages: Math.ceil(expected.length / 7) })
    const { ids } = await walk(query(), 7)
    expect(ids).toEqual(expected.map((item) => item.id))
  })

  test.each([
    ['status=blocked', 'status', 'todo, in_progress, done, cancelled'],
    ['status=todo,,done', 'status', 'todo, in_progress'],
    ['assigneeId=someone', 'assigneeId', 'UUID'],
    ['priority=5', 'priority', '0..4'],
    ['priority=gte:x', 'priority', 'gte:'],
    ['priority=between:1', 'priority', 'gte:'],
    ['priority=1.5', 'priority', '0..4'],
    ['createdAt=gte:yesterday', 'createdAt', 'RFC 3339'],
    ['createdAt=gte:2026-02-30T00:00:00Z', 'createdAt', 'RFC 3339'],
    ['dueDate=gte:2027-13-01', 'dueDate', 'YYYY-MM-DD'],
    ['color=red', 'color', 'the filters are status, assigneeId, priority, createdAt, updatedAt, dueDate'],
    ['colour=red', 'colour', 'the filters are'],
    ['sort=title', 'sort', '`title` is no sort key of this list; allowed: position, number, createdAt, updatedAt, priority, dueDate'],
    ['sort=-number,-title', 'sort', '`title` is no sort key of this list; allowed: position, number'],
    ['sort=number,', 'sort', 'An empty sort key; allowed: position'],
    ['sort=priority,-priority', 'sort', 'once'],
    [`priority=${Array.from({ length: 21 }, () => '1').join(',')}`, 'priority', 'At most 20'],
  ])('%s is 400 naming %s and what is allowed', async (query, field, allowed) => {
    const response = await fx.call('viewer', 'GET', `${items()}?${query}`)
    expect(response.status).toBe(400)
    const error = response.body.errors.find((item: { field?: string }) => item.field === field)
    expect(error).toBeDefined()
    expect(error.message).toContain(allowed)
  })

  test('every bad parameter is reported at once', async () => {
    const response = await fx.call('viewer', 'GET', `${items()}?status=nope&priority=9&sort=nope`)
    expect(response.status).toBe(400)
    expect(response.body.errors.map((error: { field: string }) => error.field).sort()).toEqual(['priority', 'sort', 'status'])
  })
})

describe('sort', () => {
  const sorts: [string, (a: Item, b: Item) => number][] = [
    ['number', (a, b) => a.number - b.number],
    ['-number', (a, b) => b.number - a.number],
    // Priority is urgency: 1 urgent … 4 low, then 0 (no priority) last.
    ['priority', (a, b) => urgency(a) - urgency(b) || compare(a.id, b.id)],
    ['-priority', (a, b) => urgency(b) - urgency(a) || compare(b.id, a.id)],
    ['dueDate', (a, b) => compare(a.dueDate, b.dueDate) || compare(a.id, b.id)],
    ['-dueDate', (a, b) => compare(b.dueDate, a.dueDate) || compare(b.id, a.id)],
    ['-priority,dueDate', (a, b) => urgency(b) - urgency(a) || compare(a.dueDate, b.dueDate) || compare(a.id, b.id)],
    ['priority,-dueDate', (a, b) => urgency(a) - urgency(b) || compare(b.dueDate, a.dueDate) || compare(b.id, a.id)],
    ['-updatedAt', (a, b) => compare(b.updatedAt, a.updatedAt) || compare(b.id, a.id)],
    ['createdAt', (a, b) => compare(a.createdAt, b.createdAt) || compare(a.id, b.id)],
  ]

  test.each(sorts)('sort=%s orders the whole list, and a cursor walk of 3 at a time returns it exactly', async (sort, order) => {
    const expected = [...all].sort(order).map((item) => item.id)
    expect((await readAll(`${items()}?sort=${sort}`)).map((item) => item.id)).toEqual(expected)
    const { ids, metas } = await walk(`sort=${sort}`, 3)
    expect(ids).toEqual(expected)
    expect(metas.at(-1).nextCursor).toBeNull()
    expect(metas.slice(1).every((meta) => meta.page === undefined && meta.totalItems === all.length)).toBe(true)
  })
})

describe('cursors', () => {
  test('the first page links its next page by cursor, as a cursor page does; the last page has no next', async () => {
    const first = await fx.call('viewer', 'GET', `${items()}?size=30&status=todo,done,in_progress,cancelled`)
    const cursor = first.body.meta.nextCursor
    expect(typeof cursor).toBe('string')
    expect(linksOf(first)).toEqual({
      first: `${items()}?size=30&status=todo%2Cdone%2Cin_progress%2Ccancelled&page=0`,
      next: `${items()}?size=30&status=todo%2Cdone%2Cin_progress%2Ccancelled&cursor=${cursor}`,
      last: `${items()}?size=30&status=todo%2Cdone%2Cin_progress%2Ccancelled&page=1`,
    })
    const second = await fx.call('viewer', 'GET', `${items()}?size=30&status=todo,done,in_progress,cancelled&cursor=${cursor}`)
    expect(second.body.meta).toEqual({ requestId: expect.any(String), size: 30, totalItems: 40, totalPages: 2, nextCursor: null })
    expect(second.body.data).toHaveLength(10)
    expect(second.headers.get('link')).not.toContain('rel="next"')
    expect(second.headers.get('link')).toContain('rel="first"')
  })

  test('a cursor is valid only for the list, filters and sort that issued it', async () => {
    const page = await fx.call('viewer', 'GET', `${items()}?size=5&status=todo`)
    const cursor = page.body.meta.nextCursor as string
    const other = await createProjectFixture(api, fx.organizationId)
    const refusals = [
      `${items()}?cursor=${cursor}`, // without the filter
      `${items()}?status=done&cursor=${cursor}`, // another filter
      `${items()}?status=todo&sort=-number&cursor=${cursor}`, // another sort
      `/api/v1/projects/${other.projectId}/work-items?status=todo&cursor=${cursor}`, // another project
      `${items()}?status=todo&cursor=${cursor.slice(0, -3)}`, // truncated
      `${items()}?status=todo&cursor=${'A'.repeat(2000)}`, // too long
      `${items()}?status=todo&cursor=${Buffer.from('["x",1]').toString('base64url')}`, // forged
      `${items()}?status=todo&cursor=%00%01`, // not base64url
    ]
    for (const path of refusals) {
      const response = await api.request('GET', path, { key: path.includes(other.projectId) ? other.keys.viewer : fx.keys.viewer })
      expect({ path, status: response.status }).toEqual({ path, status: 400 })
      expect(response.body.errors[0].field).toBe('cursor')
    }
    // A forged cursor that claims this list's identity but carries values of the wrong types.
    const [identity] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as [string]
    for (const keys of [['x', '2026-01-01 00:00:00+00', fx.projectId], [1, '2026-01-01 00:00:00+00', fx.projectId], ['1', 'tomorrow', fx.projectId], ['1', '2026-01-01 00:00:00+00', "'; drop table work_items; --"], [null, null, null]]) {
      const forged = Buffer.from(JSON.stringify([identity, ...keys])).toString('base64url')
      const response = await fx.call('viewer', 'GET', `${items()}?status=todo&cursor=${forged}`)
      expect(response.status).toBe(400)
      expect(response.body.errors[0].field).toBe('cursor')
    }
  })

  test('a cursor on a project the caller cannot see answers as on a project that does not exist', async () => {
    const stranger = await createProjectFixture(api)
    const valid = (await fx.call('viewer', 'GET', `${items()}?size=5`)).body.meta.nextCursor
    for (const cursor of [valid, 'A'.repeat(10)]) {
      const invisible = await api.request('GET', `${items()}?cursor=${cursor}`, { key: stranger.keys.owner })
      const missing = await api.request('GET', `/api/v1/projects/${crypto.randomUUID()}/work-items?cursor=${cursor}`, { key: stranger.keys.owner })
      expect(invisible.status).toBe(missing.status)
      expect(invisible.body.errors).toEqual(missing.body.errors)
    }
  })

  test('a walk returns every row present throughout exactly once while rows are created and deleted between pages', async () => {
    // Victims sit at the end of the order: each is deleted before the walk reaches it.
    const victims: string[] = []
    for (let i = 0; i < 8; i++) victims.push((await fx.as('editor', 'POST', items(), { title: `Victim ${i}` }, 201)).id)
    const throughout = (await readAll(items())).map((item) => item.id).filter((id) => !victims.includes(id))
    const added: string[] = []
    const { ids } = await walk('', 4, async (page) => {
      added.push((await fx.as('editor', 'POST', items(), { title: `Between ${page}` }, 201)).id)
      if (victims.length) await fx.as('editor', 'DELETE', `${items()}/${victims.shift()}`)
    })
    expect(new Set(ids).size).toBe(ids.length)
    expect(ids.filter((id) => throughout.includes(id))).toEqual(throughout)
    for (const id of added) expect(ids).toContain(id)
    expect(ids.length).toBe(throughout.length + added.length)
    for (const id of [...added, ...victims]) await fx.as('editor', 'DELETE', `${items()}/${id}`)
  })

  test('following Link rel="next" from the first page walks every item exactly once, by cursor', async () => {
    for (const query of ['', 'sort=-priority', 'status=todo,done&sort=dueDate']) {
      const expected = (await readAll(`${items()}${query ? `?${query}` : ''}`)).map((item) => item.id)
      const ids: string[] = []
      let target: string | undefined = `${items()}?size=7${query ? `&${query}` : ''}`
      let pages = 0
      while (target) {
        const response = await fx.call('viewer', 'GET', target)
        expect(response.status).toBe(200)
        ids.push(...response.body.data.map((item: Item) => item.id))
        const links = linksOf(response)
        // From the first page on, `next` continues by cursor (the page's meta.nextCursor), never by page number.
        if (links.next) {
          expect(new URL(links.next, 'http://service').searchParams.get('cursor'), query).toBe(response.body.meta.nextCursor)
          expect(links.next).not.toContain('page=')
        } else expect(response.body.meta.nextCursor).toBeNull()
        if (pages > 0) expect(response.body.meta.page).toBeUndefined()
        target = links.next
        pages++
      }
      expect(pages).toBe(Math.ceil(expected.length / 7))
      expect(ids).toEqual(expected)
    }
  })
})

describe('MCP answers as REST does', () => {
  test.each([
    [{ status: 'todo,done', sort: '-priority' }, 'status=todo,done&sort=-priority'],
    [{ priority: 'gte:3', assigneeId: 'none' }, 'priority=gte:3&assigneeId=none'],
    [{ dueDate: 'none', sort: 'number' }, 'dueDate=none&sort=number'],
  ])('list_work_items %j', async (args, query) => {
    const rest = await fx.call('viewer', 'GET', `${items()}?${query}&size=5`)
    const tool = await callTool(mcp, 'list_work_items', { projectId: fx.projectId, size: 5, ...args })
    expect(tool.data.items).toEqual(rest.body.data)
    const { requestId: _requestId, ...meta } = rest.body.meta
    expect(tool.data.meta).toEqual(meta)
    const next = await callTool(mcp, 'list_work_items', { projectId: fx.projectId, size: 5, ...args, cursor: meta.nextCursor })
    const restNext = await fx.call('viewer', 'GET', `${items()}?${query}&size=5&cursor=${meta.nextCursor}`)
    expect(next.data.items).toEqual(restNext.body.data)
  })

  test('an unknown argument or a bad filter is a tool error naming it', async () => {
    const unknown = await callTool(mcp, 'list_work_items', { projectId: fx.projectId, colour: 'red' })
    expect(unknown.isError).toBe(true)
    const bad = await callTool(mcp, 'list_work_items', { projectId: fx.projectId, priority: 'gte:9' })
    expect(bad.isError).toBe(true)
    expect(bad.code).toBe('BAD_REQUEST')
    expect(JSON.stringify(bad.data)).toContain('priority')
  })
})
