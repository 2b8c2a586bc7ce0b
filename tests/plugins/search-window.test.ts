/**
 * Search in a project larger than the recent rows search reads first: a broad term is ranked among
 * the project's most recent rows, a narrow word or substring is found wherever it is, a phrase as a
 * substring among the recent rows.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

const ITEMS = 1_500

let api: TestService
let fx: ProjectFixture

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  // Every title holds "common"; item 1 (the oldest, last updated long ago) also holds a rare word.
  await api.database.db.execute(sql`
    insert into work_items (id, organization_id, project_id, number, title, status, priority, position, created_by, created_at, updated_at)
    select gen_random_uuid(), ${fx.organizationId}, ${fx.projectId}, g, case when g = 1 then 'common zanzibar' else 'common task ' || g end,
      'todo', 0, g - 1, ${fx.users.owner.id}, now() - make_interval(mins => ${ITEMS} - g), now() - make_interval(mins => ${ITEMS} - g)
    from generate_series(1, ${ITEMS}) as g`)
}, timeLimit(60_000))
afterAll(() => api.stop())

const search = async (q: string) => fx.as('viewer', 'GET', `/api/v1/projects/${fx.projectId}/search?q=${encodeURIComponent(q)}&limit=20`)
const numbers = (items: Array<{ number: number }>) => items.map((item) => item.number)

describe('project search in a large project', () => {
  test('a broad term fills the page from the most recently updated rows', async () => {
    const result = await search('common')
    expect(result.workItems).toHaveLength(20)
    // Equal ranks: by creation, among the 1,000 most recently updated items.
    const found = numbers(result.workItems)
    expect(found.every((number) => number > ITEMS - 1_000)).toBe(true)
    expect(found).toEqual([...found].sort((a, b) => a - b))
  })

  test('a narrow word is found in the oldest row, with or without a broad one beside it', async () => {
    expect(numbers((await search('zanzibar')).workItems)).toEqual([1])
    expect(numbers((await search('zanz')).workItems)).toEqual([1])
    expect(numbers((await search('common zanzibar')).workItems)).toEqual([1])
  })

  test('a substring fallback is found in the oldest row', async () => {
    expect(numbers((await search('nzib')).workItems)).toEqual([1])
  })

  test('a phrase is looked for as a substring among the recent rows', async () => {
    // "mmon" starts no word: only the substring finds "common task …".
    const found = numbers((await search('mmon task')).workItems)
    expect(found).toHaveLength(20)
    expect(found.every((number) => number > ITEMS - 300)).toBe(true)
  })
})
