/**
 * Writes of a project take their row locks in one order, so concurrent writes wait and never
 * deadlock (a deadlock is a 500): an entry whose kind changes to one its work item has no count
 * row for yet inserts that count row, whose foreign key takes the work item's key-share lock; the
 * entry's write takes that lock first (WorkItemsFace.projectOf with `share`), before the project's
 * version row, as a PATCH or delete of the work item does. Found by the mixed load on PostgreSQL
 * (40P01 on `PATCH …/entries/{id}`); on PGlite, whose transactions run one at a time, this checks
 * the answers only.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

let api: TestService
let fx: ProjectFixture
beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
}, timeLimit(60_000))
afterAll(() => api.stop())

test('entry kind changes racing PATCHes and deletes of their work items answer 200 or 404, never 500', async () => {
  const statuses: Record<number, number> = {}
  for (let round = 0; round < 30; round++) {
    const items = await Promise.all([0, 1, 2].map((n) => fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: `Round ${round}.${n}` }, 201)))
    const entries = await Promise.all(items.map((item) => fx.as('editor', 'POST', `/api/v1/work-items/${item.id}/entries`, { body: 'first', kind: 'comment' }, 201)))
    const answers = await Promise.all(
      items.flatMap((item, n) => [
        // A kind this work item has no count row for yet: the count row is inserted.
        fx.call('editor', 'PATCH', `/api/v1/work-items/${item.id}/entries/${entries[n].id}`, { kind: n === 0 ? 'note' : 'log' }),
        fx.call('editor', 'POST', `/api/v1/work-items/${item.id}/entries`, { body: 'second', kind: 'log' }),
        n === 2
          ? fx.call('editor', 'DELETE', `/api/v1/projects/${fx.projectId}/work-items/${item.id}`)
          : fx.call('editor', 'PATCH', `/api/v1/projects/${fx.projectId}/work-items/${item.id}`, { title: `Renamed ${round}.${n}`, status: 'in_progress' }),
      ]),
    )
    for (const answer of answers) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1
    for (const answer of answers) expect([200, 201, 404]).toContain(answer.status)
  }
  // The deletes raced their entries' writes: those answered 404 or went first; every other write succeeded.
  expect(Object.keys(statuses).filter((status) => Number(status) >= 500)).toEqual([])
})
