/**
 * Priority means urgency (as Linear): 0 no priority, 1 urgent, 2 high, 3 medium, 4 low.
 * `sort=priority` lists urgent first and no priority last, `-priority` the reverse, by page and by
 * cursor; `priority` filters still compare the numbers. A sorted page is a range of
 * work_items_project_urgency_idx (project_id, (priority + 4) % 5, id): its plan reads that index,
 * forwards or backwards, from the cursor's keys, and sorts nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { listStatement } from '../../plugins/work-items/api'
import type { Actor } from '../../src/services/identity'
import { timeLimit } from '../helpers/database'
import { explainAnalyze, planNodes } from '../helpers/plans'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: ProjectFixture
const items = () => `/api/v1/projects/${fx.projectId}/work-items`

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  for (let i = 0; i < 25; i++) await fx.as('editor', 'POST', items(), { title: `Item ${i}`, priority: (i * 3) % 5 }, 201)
}, timeLimit(60_000))
afterAll(() => api?.stop())

/** The priorities of a walk by cursor, `size` at a time, and the ids seen. */
async function walk(query: string, size: number) {
  const priorities: number[] = []
  const ids: string[] = []
  let cursor: string | null = null
  for (let page = 0; page < 50; page++) {
    const response = await fx.call('viewer', 'GET', `${items()}?size=${size}&${query}${cursor ? `&cursor=${cursor}` : ''}`)
    expect(response.status).toBe(200)
    for (const item of response.body.data) {
      priorities.push(item.priority)
      ids.push(item.id)
    }
    cursor = response.body.meta.nextCursor
    if (!cursor) break
  }
  return { priorities, ids }
}

const runs = (values: number[]) => values.filter((value, index) => index === 0 || values[index - 1] !== value)

describe('sort=priority', () => {
  test('urgent first, then high, medium, low, and no priority last; each item once, by cursor', async () => {
    const { priorities, ids } = await walk('sort=priority', 4)
    expect(priorities).toHaveLength(25)
    expect(new Set(ids).size).toBe(25)
    expect(runs(priorities)).toEqual([1, 2, 3, 4, 0])
  })

  test('-priority: no priority first, then low … urgent last', async () => {
    const { priorities, ids } = await walk('sort=-priority', 3)
    expect(new Set(ids).size).toBe(25)
    expect(runs(priorities)).toEqual([0, 4, 3, 2, 1])
  })

  test('pages by number agree with the cursor walk', async () => {
    const { ids } = await walk('sort=priority', 25)
    const pages: string[] = []
    for (let page = 0; page < 5; page++) pages.push(...(await fx.as('viewer', 'GET', `${items()}?sort=priority&size=5&page=${page}`)).map((item: { id: string }) => item.id))
    expect(pages).toEqual(ids)
  })

  test('priority filters compare the numbers: gte:2 keeps 2, 3, 4 (not urgent 1), sorted by urgency', async () => {
    expect(runs((await walk('sort=priority&priority=gte:2', 4)).priorities)).toEqual([2, 3, 4])
    expect(runs((await walk('sort=priority&priority=lt:2', 4)).priorities)).toEqual([1, 0])
    expect(runs((await walk('sort=-priority&priority=1,0', 2)).priorities)).toEqual([0, 1])
  })
})

describe('the index serves the order', () => {
  const actor = () => ({ organizationId: fx.organizationId, userId: fx.users.viewer.id }) as Actor
  /**
   * Index names (with their scan direction) and sort nodes of the list statement's plan, as the
   * planner makes it for a project too large to read whole and sort (25 rows are cheaper to sort):
   * scans and sorts priced out, so a sort remains only when no index gives the order.
   */
  async function plan(builtBy: 'database' | 'service', input: Record<string, unknown>, cursor?: string) {
    const { text, values } = await listStatement(actor(), fx.projectId, input, { page: 0, size: 5, cursor }, builtBy)
    const nodes = planNodes(await explainAnalyze(api.service.core.db, text, values, { enable_seqscan: 'off', enable_bitmapscan: 'off', enable_sort: 'off' }))
    return {
      indexes: nodes.flatMap((node) => (node['Index Name'] ? [`${node['Scan Direction']} ${node['Index Name']}`] : [])),
      sorts: nodes.filter((node) => node['Node Type'].includes('Sort')).length,
      rows: nodes.find((node) => node['Index Name'] === 'work_items_project_urgency_idx')?.['Actual Rows'],
    }
  }

  // On Citus the plan is the coordinator's (a distributed scan naming no index); the statement's
  // routing to one shard is tests/architecture/citus-hot-paths.test.ts's.
  const onCitus = Boolean(process.env.TEST_CITUS_URL)
  // Both statements: the page's rows, and its JSON written by the database (server.listPagesBuiltBy),
  // whose numbering of the page's rows must cost no sort of its own.
  test.skipIf(onCitus).each([
    ['priority', 'Forward', 'service'],
    ['-priority', 'Backward', 'service'],
    ['priority', 'Forward', 'database'],
    ['-priority', 'Backward', 'database'],
  ] as const)(`sort=%s: a %s scan of the urgency index from the cursor, no sort (pages built by the %s)${onCitus ? " (skipped on Citus: the plan shown is the coordinator's, without the workers' indexes)" : ''}`, async (sort, direction, builtBy) => {
    // The control: an order no index of the project gives (priority, then due date) keeps its sort.
    expect((await plan(builtBy, { sort: `${sort},dueDate` })).sorts).toBeGreaterThan(0)
    const first = await plan(builtBy, { sort })
    expect(first.indexes).toContain(`${direction} work_items_project_urgency_idx`)
    expect(first.sorts).toBe(0)
    // Six rows: the page and one more (a next page exists); not the project's 25.
    expect(first.rows).toBe(6)
    const cursor = (await fx.call('viewer', 'GET', `${items()}?sort=${sort}&size=5`)).body.meta.nextCursor
    const next = await plan(builtBy, { sort }, cursor)
    expect(next.indexes).toContain(`${direction} work_items_project_urgency_idx`)
    expect(next.sorts).toBe(0)
    expect(next.rows).toBe(6)
  })
})
