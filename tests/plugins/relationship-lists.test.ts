/**
 * A project's relationships: filters (a work item at either end, type, creation time), cursors,
 * and the maintained counts per type behind `totalItems` (relationship_counts), exact after random
 * concurrent creates, type changes, deletes and deletions of the work items they link.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

let api: TestService
let fx: ProjectFixture
let itemIds: string[] = []
const TYPES = ['blocks', 'relates_to', 'duplicates', 'parent_of'] as const
const relationships = () => `/api/v1/projects/${fx.projectId}/relationships`
const workItems = () => `/api/v1/projects/${fx.projectId}/work-items`

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  for (let i = 0; i < 8; i++) itemIds.push((await fx.as('editor', 'POST', workItems(), { title: `Linked ${i}` }, 201)).id)
  for (let i = 0; i < 7; i++)
    for (const type of TYPES.slice(0, 1 + (i % 4)))
      await fx.as('editor', 'POST', relationships(), { sourceWorkItemId: itemIds[i], targetWorkItemId: itemIds[i + 1], type }, 201)
}, timeLimit(60_000))
afterAll(() => api.stop())

async function readAll(query: string) {
  const ids: string[] = []
  let cursor: string | null = null
  let total = -1
  for (let page = 0; page < 100; page++) {
    const response = await fx.call('viewer', 'GET', `${relationships()}?size=3&${query}${cursor ? `&cursor=${cursor}` : ''}`)
    expect(response.status).toBe(200)
    ids.push(...response.body.data.map((relationship: { id: string }) => relationship.id))
    total = response.body.meta.totalItems
    cursor = response.body.meta.nextCursor
    if (!cursor) break
  }
  return { ids, total }
}

describe('relationship lists', () => {
  test('filters by type and by a work item at either end, walked by cursor, with exact totals', async () => {
    const all = (await fx.as('viewer', 'GET', `${relationships()}?size=100`)) as { id: string; type: string; sourceWorkItemId: string; targetWorkItemId: string }[]
    for (const [query, matches] of [
      ['type=blocks', (r: (typeof all)[number]) => r.type === 'blocks'],
      ['type=duplicates,parent_of', (r: (typeof all)[number]) => r.type === 'duplicates' || r.type === 'parent_of'],
      [`workItemId=${itemIds[3]}`, (r: (typeof all)[number]) => r.sourceWorkItemId === itemIds[3] || r.targetWorkItemId === itemIds[3]],
      [`workItemId=${itemIds[3]}&type=blocks`, (r: (typeof all)[number]) => r.type === 'blocks' && (r.sourceWorkItemId === itemIds[3] || r.targetWorkItemId === itemIds[3])],
      ['sort=-createdAt', () => true],
    ] as const) {
      const expected = all.filter(matches).map((r) => r.id)
      if (query === 'sort=-createdAt') expected.reverse()
      const { ids, total } = await readAll(query)
      expect({ query, ids }).toEqual({ query, ids: expected })
      expect(total).toBe(expected.length)
    }
  })

  test.each([
    ['type=follows', 'type'],
    ['workItemId=abc', 'workItemId'],
    ['status=done', 'status'],
  ])('%s is 400 naming %s', async (query, field) => {
    const response = await fx.call('viewer', 'GET', `${relationships()}?${query}`)
    expect(response.status).toBe(400)
    expect(response.body.errors[0].field).toBe(field)
  })
})

test('relationship counts stay exact under random creates, type changes, deletes and work item deletions', async () => {
  const op = fc.oneof(
    fc.record({ kind: fc.constant('link' as const), a: fc.nat(), b: fc.nat(), type: fc.constantFrom(...TYPES) }),
    fc.record({ kind: fc.constant('retype' as const), pick: fc.nat(), type: fc.constantFrom(...TYPES) }),
    fc.record({ kind: fc.constant('unlink' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('deleteItem' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('addItem' as const) }),
  )
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 10 }), async (batch) => {
      const items = (await queryRows<{ id: string }>(api.database.db, sql`select id from work_items where project_id = ${fx.projectId} and organization_id = ${fx.organizationId}`)).map((row) => row.id)
      const links = (await queryRows<{ id: string }>(api.database.db, sql`select id from relationships where project_id = ${fx.projectId} and organization_id = ${fx.organizationId}`)).map((row) => row.id)
      const statuses = await Promise.all(
        batch.map(async (one) => {
          if (one.kind === 'addItem') return (await fx.call('editor', 'POST', workItems(), { title: 'More' })).status
          if (one.kind === 'link') {
            if (items.length < 2) return 0
            const [a, b] = [items[one.a % items.length]!, items[one.b % items.length]!]
            return (await fx.call('editor', 'POST', relationships(), { sourceWorkItemId: a, targetWorkItemId: b, type: one.type })).status
          }
          if (one.kind === 'deleteItem') return items.length ? (await fx.call('editor', 'DELETE', `${workItems()}/${items[one.pick % items.length]}`)).status : 0
          if (!links.length) return 0
          const id = links[one.pick % links.length]
          return one.kind === 'retype'
            ? (await fx.call('editor', 'PATCH', `${relationships()}/${id}`, { type: one.type })).status
            : (await fx.call('editor', 'DELETE', `${relationships()}/${id}`)).status
        }),
      )
      // Links may be refused (self link, duplicate, an end deleted meanwhile); nothing may fail.
      for (const status of statuses) expect([0, 200, 201, 400, 404, 409]).toContain(status)
      const rows = await queryRows<{ type: string; items: number; rows: number }>(
        api.database.db,
        sql`select t.type, coalesce((select items from relationship_counts c where c.project_id = ${fx.projectId} and c.organization_id = ${fx.organizationId} and c.type = t.type), 0)::int as items,
              (select count(*) from relationships r where r.project_id = ${fx.projectId} and r.organization_id = ${fx.organizationId} and r.type = t.type)::int as rows
            from unnest(array['blocks', 'relates_to', 'duplicates', 'parent_of']) as t(type)`,
      )
      for (const row of rows) expect(row).toEqual({ ...row, items: row.rows })
      const listed = await fx.call('viewer', 'GET', `${relationships()}?size=100`)
      expect(listed.body.meta.totalItems).toBe(listed.body.data.length)
    }),
    // Fewer interleavings on a Citus cluster, where each request costs a coordinator-worker hop (as the fuzz suite does).
    { numRuns: process.env.TEST_CITUS_URL ? 4 : 15 },
  )
}, 240_000)
