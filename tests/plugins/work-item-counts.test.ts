/**
 * The maintained counts behind the work-item list's `totalItems` (work_item_counts) stay exact:
 * after random interleavings of concurrent creates, status changes and deletes in two projects,
 * every count equals `count(*)` of the rows, and every list total (unfiltered and per status
 * set) equals the number of rows it shows.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

let api: TestService
let projects: ProjectFixture[] = []
const STATUSES = ['todo', 'in_progress', 'done', 'cancelled'] as const

beforeAll(async () => {
  api = await startTestService()
  const first = await createProjectFixture(api)
  projects = [first, await createProjectFixture(api, first.organizationId)]
}, timeLimit(60_000))
afterAll(() => api.stop())

type Operation =
  | { kind: 'create'; project: number; status: (typeof STATUSES)[number] }
  | { kind: 'status'; project: number; pick: number; status: (typeof STATUSES)[number] }
  | { kind: 'delete'; project: number; pick: number }

const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({ kind: fc.constant('create' as const), project: fc.integer({ min: 0, max: 1 }), status: fc.constantFrom(...STATUSES) }),
  fc.record({ kind: fc.constant('status' as const), project: fc.integer({ min: 0, max: 1 }), pick: fc.nat(), status: fc.constantFrom(...STATUSES) }),
  fc.record({ kind: fc.constant('delete' as const), project: fc.integer({ min: 0, max: 1 }), pick: fc.nat() }),
)

/** The ids of a project's work items (read once per batch: concurrent operations may pick one twice). */
const idsOf = async (fx: ProjectFixture) =>
  (await queryRows<{ id: string }>(api.database.db, sql`select id from work_items where project_id = ${fx.projectId} and organization_id = ${fx.organizationId}`)).map((row) => row.id)

async function run(op: Operation, ids: string[][]): Promise<number> {
  const fx = projects[op.project]!
  const path = `/api/v1/projects/${fx.projectId}/work-items`
  if (op.kind === 'create') return (await fx.call('editor', 'POST', path, { title: 'Counted', status: op.status })).status
  const pool = ids[op.project]!
  if (!pool.length) return 0
  const id = pool[op.pick % pool.length]!
  if (op.kind === 'status') return (await fx.call('editor', 'PATCH', `${path}/${id}`, { status: op.status })).status
  return (await fx.call('editor', 'DELETE', `${path}/${id}`)).status
}

async function expectExact() {
  const counted = await queryRows<{ project: string; status: string; items: number; rows: number }>(
    api.database.db,
    sql`select coalesce(c.project_id, r.project_id) as project, coalesce(c.status, r.status) as status, coalesce(c.items, 0)::int as items, coalesce(r.rows, 0)::int as rows
          from (select * from work_item_counts where organization_id = ${projects[0]!.organizationId}) c
          full join (select project_id, status, count(*) as rows from work_items where organization_id = ${projects[0]!.organizationId} group by project_id, status) r
            on r.project_id = c.project_id and r.status = c.status`,
  )
  for (const row of counted) expect({ ...row, items: row.items }).toEqual({ ...row, items: row.rows })
  for (const fx of projects) {
    const path = `/api/v1/projects/${fx.projectId}/work-items`
    for (const query of ['', 'status=todo', 'status=in_progress,done', 'status=cancelled,todo,done']) {
      const first = await fx.call('viewer', 'GET', `${path}?size=100&${query}`)
      let shown = first.body.data.length
      let cursor = first.body.meta.nextCursor
      while (cursor) {
        const next = await fx.call('viewer', 'GET', `${path}?size=100&${query}&cursor=${cursor}`)
        shown += next.body.data.length
        cursor = next.body.meta.nextCursor
      }
      expect({ query, totalItems: first.body.meta.totalItems }).toEqual({ query, totalItems: shown })
    }
  }
}

test('every maintained count equals count(*) after random concurrent creates, status changes and deletes', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(operation, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 4 }), async (batches) => {
      for (const batch of batches) {
        const ids = await Promise.all(projects.map(idsOf))
        const statuses = await Promise.all(batch.map((op) => run(op, ids)))
        // A delete racing another of the same item may find it gone (404); nothing else may fail.
        for (const status of statuses) expect([0, 200, 201, 404]).toContain(status)
      }
      await expectExact()
    }),
    // Fewer interleavings on a Citus cluster, where each request costs a coordinator-worker hop (as the fuzz suite does).
    { numRuns: process.env.TEST_CITUS_URL ? 4 : 12 },
  )
}, 240_000)

test('a project deleted takes its counts with it', async () => {
  const fx = await createProjectFixture(api)
  await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'Gone soon' }, 201)
  const before = await queryRows<{ n: number }>(api.database.db, sql`select count(*)::int as n from work_item_counts where project_id = ${fx.projectId} and organization_id = ${fx.organizationId}`)
  expect(before[0]!.n).toBe(1)
  await fx.as('owner', 'DELETE', `/api/v1/projects/${fx.projectId}`)
  const after = await queryRows<{ n: number }>(api.database.db, sql`select count(*)::int as n from work_item_counts where project_id = ${fx.projectId} and organization_id = ${fx.organizationId}`)
  expect(after[0]!.n).toBe(0)
})
