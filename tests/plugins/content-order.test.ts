import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { reorder } from '../../plugins/content-order/service'
import { queryRows } from '../../src/db'
import { createProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService

beforeAll(async () => {
  api = await startTestService()
})
afterAll(() => api.stop())

async function projectWith(itemCount: number, entriesPerItem = 0) {
  const fx = await createProjectFixture(api)
  const items: string[] = []
  const entries: Record<string, string[]> = {}
  for (let i = 0; i < itemCount; i++) {
    const item = await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: `Item ${i}` }, 201)
    items.push(item.id)
    entries[item.id] = []
    for (let j = 0; j < entriesPerItem; j++) entries[item.id]!.push((await fx.as('editor', 'POST', `/api/v1/work-items/${item.id}/entries`, { body: `Entry ${i}.${j}` }, 201)).id)
  }
  return { fx, items, entries, path: `/api/v1/projects/${fx.projectId}/content-order` }
}

const positions = (table: 'work_items' | 'entries', column: string, id: string) =>
  queryRows<{ id: string; position: number }>(api.service.core.db, sql`select id, position from ${sql.identifier(table)} where ${sql.identifier(column)} = ${id} order by position`)

describe('content order', () => {
  test('the slot rule: named ids fill the positions they held, the others stay', () => {
    expect(reorder(['a', 'b', 'c', 'd'], ['d', 'b'], 'x')).toEqual(['a', 'd', 'c', 'b'])
    expect(reorder(['a', 'b', 'c'], ['c', 'b', 'a'], 'x')).toEqual(['c', 'b', 'a'])
    expect(reorder(['a', 'b'], [], 'x')).toEqual(['a', 'b'])
  })

  test('a mixed reorder of work items and entries round-trips, and the lists follow at once', async () => {
    const { fx, items, entries, path } = await projectWith(3, 3)
    const [i0, i1, i2] = items as [string, string, string]
    const newEntries = { [i1]: [entries[i1]![2]!, entries[i1]![0]!, entries[i1]![1]!] }
    const result = await fx.as('editor', 'PUT', path, { workItems: [i2, i0, i1], entries: newEntries })
    expect(result.workItems).toEqual([i2, i0, i1])
    expect(result.entries[i1]).toEqual(newEntries[i1])
    expect(result.entries[i0]).toEqual(entries[i0])
    expect(await fx.as('viewer', 'GET', path)).toEqual(result)
    const listed = await fx.as('viewer', 'GET', `/api/v1/projects/${fx.projectId}/work-items`)
    expect(listed.map((item: { id: string }) => item.id)).toEqual([i2, i0, i1])
    expect(listed.map((item: { position: number }) => item.position)).toEqual([0, 1, 2])
    const listedEntries = await fx.as('viewer', 'GET', `/api/v1/work-items/${i1}/entries`)
    expect(listedEntries.map((entry: { id: string }) => entry.id)).toEqual(newEntries[i1])
    expect((await positions('entries', 'work_item_id', i1)).map((row) => row.position)).toEqual([0, 1, 2])
  })

  test('any id outside the project is 400 naming it, and nothing changes', async () => {
    const { fx, items, entries, path } = await projectWith(2, 1)
    const other = await projectWith(1, 1)
    const foreignItem = other.items[0]!
    const foreignEntry = other.entries[foreignItem]![0]!
    const before = await fx.as('viewer', 'GET', path)
    const cases: Array<[unknown, string]> = [
      [{ workItems: [items[1], foreignItem] }, 'workItems[1]'],
      [{ workItems: [items[1], items[0]], entries: { [foreignItem]: [foreignEntry] } }, `entries.${foreignItem}`],
      [{ workItems: [items[1], items[0]], entries: { [items[0]!]: [foreignEntry] } }, `entries.${items[0]}[0]`],
      [{ entries: { [items[0]!]: [entries[items[1]!]![0]] } }, `entries.${items[0]}[0]`],
      [{ workItems: [items[0], items[0]] }, 'workItems[1]'],
      ['{"entries": {"__proto__": []}}', 'entries.__proto__'],
    ]
    for (const [body, field] of cases) {
      const rawBody = typeof body === 'string' ? body : JSON.stringify(body)
      const response = await api.request('PUT', path, { key: fx.keys.editor, rawBody, headers: { 'content-type': 'application/json' } })
      expect(response.status).toBe(400)
      expect(response.body.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field })
    }
    expect(await fx.as('viewer', 'GET', path)).toEqual(before)
  })

  test('concurrent reorders and creates never leave duplicate positions', async () => {
    const { fx, items, path } = await projectWith(6)
    const shuffles = Array.from({ length: 8 }, (_, i) => [...items].sort((x, y) => ((x.charCodeAt(30) * (i + 1)) % 7) - ((y.charCodeAt(30) * (i + 1)) % 7)))
    const results = await Promise.all([
      ...shuffles.map((order) => fx.call('editor', 'PUT', path, { workItems: order })),
      ...Array.from({ length: 4 }, (_, i) => fx.call('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: `Late ${i}` })),
    ])
    expect(results.every((response) => response.status < 300)).toBe(true)
    const rows = await positions('work_items', 'project_id', fx.projectId)
    expect(rows).toHaveLength(10)
    expect(new Set(rows.map((row) => row.position)).size).toBe(10)
  })
})
