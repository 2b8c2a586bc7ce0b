/**
 * A work item's entries: filters (kind, author, dates), sort, cursors and the maintained counts
 * per kind behind `totalItems` (entry_counts), exact after random concurrent creates, kind
 * changes and deletes, on REST and MCP alike.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

let api: TestService
let fx: ProjectFixture
let http: Listening
let mcp: Client
let workItemId: string
const entries = () => `/api/v1/work-items/${workItemId}/entries`
const KINDS = ['comment', 'note', 'log'] as const

interface Entry {
  id: string
  kind: string
  authorId: string
  position: number
  createdAt: string
  updatedAt: string
}
let all: Entry[] = []

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  http = listen(api)
  mcp = await connectMcp(http.url, fx.keys.viewer)
  workItemId = (await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'Discussed' }, 201)).id
  for (let i = 0; i < 24; i++) await fx.as(i % 2 ? 'editor' : 'owner', 'POST', entries(), { body: `Entry ${i}`, kind: KINDS[i % 3] }, 201)
  all = (await fx.as('viewer', 'GET', `${entries()}?size=100`)) as Entry[]
}, timeLimit(60_000))
afterAll(async () => {
  await mcp?.close()
  http?.stop()
  await api.stop()
})

async function walk(query: string, size: number) {
  const ids: string[] = []
  let cursor: string | null = null
  let total = -1
  for (let page = 0; page < 100; page++) {
    const response = await fx.call('viewer', 'GET', `${entries()}?size=${size}&${query}${cursor ? `&cursor=${cursor}` : ''}`)
    expect(response.status).toBe(200)
    ids.push(...response.body.data.map((entry: Entry) => entry.id))
    total = response.body.meta.totalItems
    cursor = response.body.meta.nextCursor
    if (!cursor) break
  }
  return { ids, total }
}

describe('entry lists', () => {
  const cases: [string, () => string, (entry: Entry) => boolean][] = [
    ['a kind', () => 'kind=note', (entry) => entry.kind === 'note'],
    ['two kinds', () => 'kind=comment,log', (entry) => entry.kind !== 'note'],
    ['an author', () => `authorId=${fx.users.owner.id}`, (entry) => entry.authorId === fx.users.owner.id],
    ['an author and a kind', () => `authorId=${fx.users.editor.id}&kind=comment`, (entry) => entry.authorId === fx.users.editor.id && entry.kind === 'comment'],
    ['created after the 6th', () => `createdAt=gt:${all[5]!.createdAt}`, (entry) => entry.createdAt > all[5]!.createdAt],
    ['updated up to the 9th', () => `updatedAt=lte:${all[8]!.updatedAt}`, (entry) => entry.updatedAt <= all[8]!.updatedAt],
  ]
  test.each(cases)('%s: the matching entries in content order, walked by cursor, with their exact total', async (_name, query, matches) => {
    const expected = all.filter(matches).map((entry) => entry.id)
    expect(expected.length).toBeGreaterThan(0)
    expect(expected.length).toBeLessThan(all.length)
    const { ids, total } = await walk(query(), 5)
    expect(ids).toEqual(expected)
    expect(total).toBe(expected.length)
  })

  test('sort=-createdAt reverses creation order, walked by cursor', async () => {
    const expected = [...all].sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1)).map((entry) => entry.id)
    expect((await walk('sort=-createdAt', 4)).ids).toEqual(expected)
  })

  test.each([
    ['kind=reply', 'kind', 'comment, note, log'],
    ['authorId=someone', 'authorId', 'a user id (a UUID) or `me`'],
    ['status=done', 'status', 'the filters are kind, authorId, createdAt, updatedAt'],
    ['sort=priority', 'sort', 'allowed: position, createdAt, updatedAt'],
  ])('%s is 400 naming %s', async (query, field, allowed) => {
    const response = await fx.call('viewer', 'GET', `${entries()}?${query}`)
    expect(response.status).toBe(400)
    expect(response.body.errors[0]).toMatchObject({ field })
    expect(response.body.errors[0].message).toContain(allowed)
  })

  test("a work item's cursor is refused on another work item's entries", async () => {
    const other = (await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'Other' }, 201)).id
    const cursor = (await fx.call('viewer', 'GET', `${entries()}?size=2`)).body.meta.nextCursor
    const response = await fx.call('viewer', 'GET', `/api/v1/work-items/${other}/entries?cursor=${cursor}`)
    expect(response.status).toBe(400)
    expect(response.body.errors[0].field).toBe('cursor')
  })

  test('list_entries answers as REST does, cursor included', async () => {
    const rest = await fx.call('viewer', 'GET', `${entries()}?kind=note,log&size=3`)
    const tool = await callTool(mcp, 'list_entries', { workItemId, kind: 'note,log', size: 3 })
    expect(tool.data.items).toEqual(rest.body.data)
    const next = await callTool(mcp, 'list_entries', { workItemId, kind: 'note,log', size: 3, cursor: tool.data.meta.nextCursor })
    const restNext = await fx.call('viewer', 'GET', `${entries()}?kind=note,log&size=3&cursor=${rest.body.meta.nextCursor}`)
    expect(next.data.items).toEqual(restNext.body.data)
  })
})

test('entry counts stay exact under random concurrent creates, kind changes and deletes', async () => {
  const item = (await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'Counted' }, 201)).id
  const path = `/api/v1/work-items/${item}/entries`
  const op = fc.oneof(
    fc.record({ kind: fc.constant('create' as const), entryKind: fc.constantFrom(...KINDS) }),
    fc.record({ kind: fc.constant('change' as const), pick: fc.nat(), entryKind: fc.constantFrom(...KINDS) }),
    fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
  )
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (batch) => {
      const ids = (await queryRows<{ id: string }>(api.database.db, sql`select id from entries where work_item_id = ${item} and organization_id = ${fx.organizationId}`)).map((row) => row.id)
      const statuses = await Promise.all(
        batch.map((one) => {
          if (one.kind === 'create') return fx.call('owner', 'POST', path, { body: 'x', kind: one.entryKind }).then((r) => r.status)
          if (!ids.length) return 0
          const id = ids[one.pick % ids.length]
          return one.kind === 'change' ? fx.call('owner', 'PATCH', `${path}/${id}`, { kind: one.entryKind }).then((r) => r.status) : fx.call('owner', 'DELETE', `${path}/${id}`).then((r) => r.status)
        }),
      )
      for (const status of statuses) expect([0, 200, 201, 404]).toContain(status)
      const rows = await queryRows<{ kind: string; items: number; rows: number }>(
        api.database.db,
        sql`select k.kind, coalesce((select items from entry_counts c where c.work_item_id = ${item} and c.organization_id = ${fx.organizationId} and c.kind = k.kind), 0)::int as items,
              (select count(*) from entries e where e.work_item_id = ${item} and e.organization_id = ${fx.organizationId} and e.kind = k.kind)::int as rows
            from unnest(array['comment', 'note', 'log']) as k(kind)`,
      )
      for (const row of rows) expect(row.items).toBe(row.rows)
      for (const query of ['', 'kind=note', 'kind=comment,log']) {
        const response = await fx.call('viewer', 'GET', `${path}?size=100&${query}`)
        expect(response.body.meta.totalItems).toBe(response.body.data.length)
      }
    }),
    // Fewer interleavings on a Citus cluster, where each request costs a coordinator-worker hop (as the fuzz suite does).
    { numRuns: process.env.TEST_CITUS_URL ? 4 : 15 },
  )
}, 240_000)
