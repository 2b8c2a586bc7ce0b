/**
 * Search's `status` and `assigneeId` filters (the list grammar): they keep only work items that
 * satisfy them, in every match path (the recent rows, the word index past them, substrings), and
 * relationships through a matching end; entries are not filtered; REST and MCP answer the same.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { sql } from 'drizzle-orm'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

let api: TestService
let fx: ProjectFixture
let http: Listening
let mcp: Client
const STATUSES = ['todo', 'in_progress', 'done', 'cancelled'] as const
interface Item {
  id: string
  status: string
  assigneeId: string | null
}
const items: Item[] = []

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  http = listen(api)
  mcp = await connectMcp(http.url, fx.keys.viewer)
  for (let i = 0; i < 24; i++) {
    const assigneeId = i % 3 === 0 ? null : i % 3 === 1 ? fx.users.owner.id : fx.users.editor.id
    items.push(await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: `Invoice export ${i}`, status: STATUSES[i % 4], assigneeId }, 201))
  }
  await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/relationships`, { sourceWorkItemId: items[1]!.id, targetWorkItemId: items[2]!.id, type: 'blocks' }, 201)
  await fx.as('editor', 'POST', `/api/v1/work-items/${items[0]!.id}/entries`, { body: 'invoice totals are off' }, 201)
}, timeLimit(60_000))
afterAll(async () => {
  await mcp?.close()
  http?.stop()
  await api.stop()
})

const search = (query: string) => fx.call('viewer', 'GET', `/api/v1/projects/${fx.projectId}/search?limit=100&${query}`)

describe('search filters', () => {
  const cases: [string, () => string, (item: Item) => boolean][] = [
    ['one status', () => 'status=done', (item) => item.status === 'done'],
    ['two statuses', () => 'status=todo,in_progress', (item) => item.status === 'todo' || item.status === 'in_progress'],
    ['an assignee', () => `assigneeId=${fx.users.owner.id}`, (item) => item.assigneeId === fx.users.owner.id],
    ['unassigned', () => 'assigneeId=none', (item) => item.assigneeId === null],
    ['status and assignee', () => `status=cancelled&assigneeId=${fx.users.editor.id}`, (item) => item.status === 'cancelled' && item.assigneeId === fx.users.editor.id],
  ]

  // `invoice` matches as a word; `nvoic` only as a substring (the fallback path).
  test.each(cases.flatMap(([name, query, matches]) => ['invoice', 'nvoic'].map((q) => [`${name}, q=${q}`, q, query, matches] as const)))(
    '%s: only matching work items',
    async (_name, q, query, matches) => {
      const response = await search(`q=${q}&${query()}`)
      expect(response.status).toBe(200)
      const expected = items.filter(matches).map((item) => item.id).sort()
      expect(expected.length).toBeGreaterThan(0)
      expect(response.body.data.workItems.map((item: Item) => item.id).sort()).toEqual(expected)
    },
  )

  test('relationships match through an end that passes the filters; entries are not filtered', async () => {
    const ends = await search(`q=invoice&status=${items[1]!.status}`)
    expect(ends.body.data.relationships).toHaveLength(1)
    const neither = await search(`q=invoice&status=cancelled`)
    expect([items[1]!.status, items[2]!.status]).not.toContain('cancelled')
    expect(neither.body.data.relationships).toHaveLength(0)
    expect(neither.body.data.entries).toHaveLength(1)
  })

  test('the index path past the recent rows filters too', async () => {
    // Push the matches out of the most recent rows: 1,000 newer, unrelated work items.
    await api.database.db.execute(sql`
      insert into work_items (id, organization_id, project_id, number, title, status, priority, position, created_by, created_at, updated_at)
      select gen_random_uuid(), ${fx.organizationId}, ${fx.projectId}, 1000 + g, 'unrelated ' || g, 'todo', 0, 1000 + g, ${fx.users.owner.id}, now() + make_interval(secs => g), now() + make_interval(secs => g)
      from generate_series(1, 1100) as g`)
    const response = await search(`q=invoice&assigneeId=${fx.users.owner.id}&status=todo,done`)
    const expected = items.filter((item) => item.assigneeId === fx.users.owner.id && ['todo', 'done'].includes(item.status)).map((item) => item.id).sort()
    expect(response.body.data.workItems.map((item: Item) => item.id).sort()).toEqual(expected)
  })

  test.each([
    ['status=open', 'status'],
    ['assigneeId=someone', 'assigneeId'],
    ['priority=1', 'priority'],
  ])('%s is 400 naming %s', async (query, field) => {
    const response = await search(`q=invoice&${query}`)
    expect(response.status).toBe(400)
    expect(response.body.errors[0].field).toBe(field)
  })

  test('assigneeId=me is the caller: the same answer as their id', async () => {
    const asOwner = (query: string) => fx.call('owner', 'GET', `/api/v1/projects/${fx.projectId}/search?limit=100&${query}`)
    const mine = await asOwner(`q=invoice&assigneeId=me`)
    expect(mine.status).toBe(200)
    expect(mine.body.data.workItems.length).toBeGreaterThan(0)
    expect(mine.body.data).toEqual((await asOwner(`q=invoice&assigneeId=${fx.users.owner.id}`)).body.data)
  })

  test('search_project answers as REST does', async () => {
    const rest = await search(`q=invoice&status=todo,done&assigneeId=none`)
    const tool = await callTool(mcp, 'search_project', { projectId: fx.projectId, q: 'invoice', limit: 100, status: 'todo,done', assigneeId: 'none' })
    expect(tool.isError).toBe(false)
    expect(tool.data).toEqual(rest.body.data)
  })
})
