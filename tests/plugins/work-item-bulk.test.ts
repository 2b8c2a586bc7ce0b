/**
 * Bulk create and update of work items: up to 100 items in one transaction, all or
 * none. A success answers every item in the request's order (consecutive numbers on create) with
 * one audit record each; any refusal writes nothing (rows, numbers, audit records) and names each
 * failing item (`items[i].field`): invalid fields, too many items, a viewer, an unknown or repeated
 * id, a stale per-item `ifMatch`. `Idempotency-Key` replays a bulk create. Bulk and single
 * PATCHes of the same items, run at once, neither fail nor interleave: every item's history is one
 * chain of committed writes ending in its stored row, with the bulk writes in one order on every
 * item. The MCP tools answer and refuse as REST does.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

let api: TestService
let fx: ProjectFixture
let http: Listening
let mcp: { editor: Client; viewer: Client }
let strangerId: string
const items = () => `/api/v1/projects/${fx.projectId}/work-items`
const bulk = () => `${items()}/bulk`

interface Item {
  id: string
  number: number
  title: string
  updatedAt: string
  [key: string]: unknown
}

/** What the project holds: its work items, their titles and its audit records (all of which a refusal leaves as they were). */
async function snapshot() {
  const db = api.service.core.db
  const rows = await queryRows<{ id: string; title: string; updated_at: unknown }>(db, sql`select id, title, updated_at from work_items where project_id = ${fx.projectId} order by id`)
  const [{ n: audits }] = (await queryRows<{ n: number }>(db, sql`select count(*)::int as n from audit_logs where project_id = ${fx.projectId}`)) as [{ n: number }]
  const [counter] = await queryRows<{ last: number }>(db, sql`select last_number as last from work_item_counters where project_id = ${fx.projectId}`)
  return { rows: rows.map((row) => `${row.id} ${row.title} ${String(row.updated_at)}`), audits, lastNumber: counter?.last ?? 0 }
}
const auditOf = (requestId: string) =>
  queryRows<{ action: string; resource_id: string; changes: any }>(api.service.core.db, sql`select action, resource_id, changes from audit_logs where request_id = ${requestId}`)
/** Creates `n` items in one bulk request and returns them. */
async function seed(n: number, prefix = 'Seed'): Promise<Item[]> {
  return fx.as('editor', 'POST', bulk(), { items: Array.from({ length: n }, (_, i) => ({ title: `${prefix} ${i}` })) }, 200)
}
const fieldsOf = (errors: { code: string; field?: string }[]) => errors.map((error) => ({ code: error.code, field: error.field }))

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  strangerId = (await api.createUser(await api.createOrganization())).id
  http = listen(api)
  mcp = { editor: await connectMcp(http.url, fx.keys.editor), viewer: await connectMcp(http.url, fx.keys.viewer) }
}, timeLimit(60_000))
afterAll(async () => {
  await mcp?.editor.close()
  await mcp?.viewer.close()
  http?.stop()
  await api.stop()
})

describe('bulk create', () => {
  test('answers 200 with every item in order, numbered consecutively, each as GET shows it, audited once each', async () => {
    const before = await snapshot()
    const response = await fx.call('editor', 'POST', bulk(), { items: [{ title: 'One', priority: 2 }, { title: 'Two', status: 'done' }, { title: 'Three', assigneeId: fx.users.viewer.id }] })
    expect(response.status).toBe(200)
    const created: Item[] = response.body.data
    expect(created.map((item) => item.title)).toEqual(['One', 'Two', 'Three'])
    expect(created.map((item) => item.number)).toEqual([before.lastNumber + 1, before.lastNumber + 2, before.lastNumber + 3])
    expect(created[0]).toMatchObject({ priority: 2, status: 'todo', createdBy: fx.users.editor.id, labels: [] })
    expect(created[1]!.status).toBe('done')
    for (const item of created) expect(await fx.as('viewer', 'GET', `${items()}/${item.id}`)).toEqual(item)
    const records = await auditOf(response.body.meta.requestId)
    expect(records.map((record) => [record.action, record.resource_id]).sort()).toEqual(created.map((item) => ['work_item.created', item.id]).sort())
  })

  test('one bad item writes nothing and is named; several are each named; numbers stay consecutive', async () => {
    const before = await snapshot()
    const one = await fx.call('editor', 'POST', bulk(), { items: [{ title: 'Fine' }, { title: '' }, { title: 'Fine too' }] })
    expect(one.status).toBe(400)
    expect(one.body.errors.map((error: { field: string }) => error.field)).toEqual(['items[1].title'])
    const several = await fx.call('editor', 'POST', bulk(), { items: [{ title: '' }, { title: 'Fine' }, { title: 'x', priority: 9 }, { title: 'y', status: 'blocked' }] })
    expect(several.status).toBe(400)
    expect(several.body.errors.map((error: { field: string }) => error.field).sort()).toEqual(['items[0].title', 'items[2].priority', 'items[3].status'])
    // Refused by the service (after the earlier items were inserted in its transaction): each named, all rolled back.
    const late = await fx.call('editor', 'POST', bulk(), { items: [{ title: 'Fine' }, { title: 'Stranger', assigneeId: strangerId }, { title: 'Fine' }, { title: 'Ghost', labels: [crypto.randomUUID()] }] })
    expect(late.status).toBe(400)
    expect(fieldsOf(late.body.errors)).toEqual([{ code: 'BAD_REQUEST', field: 'items[1].assigneeId' }, { code: 'BAD_REQUEST', field: 'items[3].labels[0]' }])
    const ghost = await fx.call('editor', 'POST', bulk(), { items: [{ title: 'Ghost', labels: [crypto.randomUUID()] }] })
    expect(ghost.status).toBe(400)
    expect(fieldsOf(ghost.body.errors)).toEqual([{ code: 'BAD_REQUEST', field: 'items[0].labels[0]' }])
    expect(await snapshot()).toEqual(before)
    const next = await seed(2, 'After refusals')
    expect(next.map((item) => item.number)).toEqual([before.lastNumber + 1, before.lastNumber + 2])
  })

  test('more than 100 items, or none, is 400 and writes nothing; exactly 100 is fine', async () => {
    const before = await snapshot()
    for (const count of [101, 0]) {
      const response = await fx.call('editor', 'POST', bulk(), { items: Array.from({ length: count }, (_, i) => ({ title: `Many ${i}` })) })
      expect({ count, status: response.status, field: response.body.errors[0].field }).toEqual({ count, status: 400, field: 'items' })
    }
    expect(await snapshot()).toEqual(before)
    expect((await seed(100, 'Hundred')).length).toBe(100)
  })

  test('a viewer is refused 403 and nothing is written', async () => {
    const before = await snapshot()
    expect((await fx.call('viewer', 'POST', bulk(), { items: [{ title: 'Viewer' }] })).status).toBe(403)
    const [item] = await seed(1)
    const after = await snapshot()
    expect((await fx.call('viewer', 'PATCH', bulk(), { items: [{ id: item!.id, title: 'Viewer' }] })).status).toBe(403)
    expect(await snapshot()).toEqual(after)
    expect(after.lastNumber).toBe(before.lastNumber + 1)
  })

  test('Idempotency-Key replays the same answer and creates nothing more', async () => {
    const body = { items: [{ title: 'Once A' }, { title: 'Once B' }] }
    const headers = { 'idempotency-key': `bulk-${crypto.randomUUID()}` }
    const first = await api.request('POST', bulk(), { key: fx.keys.editor, body, headers })
    expect(first.status).toBe(200)
    const before = await snapshot()
    const again = await api.request('POST', bulk(), { key: fx.keys.editor, body, headers })
    expect(again.status).toBe(200)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.body.data).toEqual(first.body.data)
    expect(await snapshot()).toEqual(before)
    const other = await api.request('POST', bulk(), { key: fx.keys.editor, body: { items: [{ title: 'Other' }] }, headers })
    expect(other.status).toBe(422)
  })
})

describe('bulk update', () => {
  test('answers 200 with every item changed, in order, audited once each with before/after', async () => {
    const [a, b, c] = await seed(3, 'Patch')
    const response = await fx.call('editor', 'PATCH', bulk(), { items: [{ id: c!.id, title: 'C2' }, { id: a!.id, status: 'done', priority: 3 }, { id: b!.id, dueDate: '2027-05-01' }] })
    expect(response.status).toBe(200)
    expect(response.body.data.map((item: Item) => item.id)).toEqual([c!.id, a!.id, b!.id])
    expect(response.body.data[1]).toMatchObject({ title: 'Patch 0', status: 'done', priority: 3 })
    for (const item of response.body.data) expect(await fx.as('viewer', 'GET', `${items()}/${item.id}`)).toEqual(item)
    const records = await auditOf(response.body.meta.requestId)
    expect(records.length).toBe(3)
    expect(records.find((record) => record.resource_id === c!.id)).toMatchObject({ action: 'work_item.updated', changes: { before: { title: 'Patch 2' }, after: { title: 'C2' } } })
    expect(records.find((record) => record.resource_id === a!.id)!.changes).toEqual({ before: { status: 'todo', priority: 0 }, after: { status: 'done', priority: 3 } })
  })

  test('an unknown id, or one of another project, is 400 naming items[i].id, as is an id named twice; nothing written', async () => {
    const [a, b] = await seed(2, 'Guarded')
    const elsewhere = await createProjectFixture(api, fx.organizationId)
    const foreign = await elsewhere.as('editor', 'POST', `/api/v1/projects/${elsewhere.projectId}/work-items`, { title: 'Elsewhere' }, 201)
    const before = await snapshot()
    for (const unknown of [crypto.randomUUID(), foreign.id]) {
      const response = await fx.call('editor', 'PATCH', bulk(), { items: [{ id: a!.id, title: 'Changed' }, { id: unknown, title: 'Nobody' }] })
      expect(response.status).toBe(400)
      expect(fieldsOf(response.body.errors)).toEqual([{ code: 'BAD_REQUEST', field: 'items[1].id' }])
    }
    const twice = await fx.call('editor', 'PATCH', bulk(), { items: [{ id: a!.id, title: 'First' }, { id: b!.id, title: 'B' }, { id: a!.id.toUpperCase(), title: 'Again' }] })
    expect(twice.status).toBe(400)
    expect(fieldsOf(twice.body.errors)).toEqual([{ code: 'BAD_REQUEST', field: 'items[2].id' }])
    const bad = await fx.call('editor', 'PATCH', bulk(), { items: [{ id: a!.id, title: '' }, { id: 'nope', title: 'x' }, { id: b!.id }] })
    expect(bad.status).toBe(400)
    expect(bad.body.errors.map((error: { field: string }) => error.field)).toEqual(expect.arrayContaining(['items[0].title', 'items[1].id']))
    expect(await snapshot()).toEqual(before)
  })

  test('a stale per-item ifMatch is 412 PRECONDITION_FAILED for the whole request; nothing written', async () => {
    const [a, b] = await seed(2, 'Versioned')
    const etag = (await fx.call('viewer', 'GET', `${items()}/${a!.id}`)).headers.get('etag')!
    const fresh = (await fx.call('viewer', 'GET', `${items()}/${b!.id}`)).headers.get('etag')!
    await fx.as('editor', 'PATCH', `${items()}/${a!.id}`, { title: 'Moved on' })
    const before = await snapshot()
    const stale = await fx.call('editor', 'PATCH', bulk(), { items: [{ id: b!.id, ifMatch: fresh, title: 'B2' }, { id: a!.id, ifMatch: etag, title: 'Overwrite' }] })
    expect(stale.status).toBe(412)
    expect(fieldsOf(stale.body.errors)).toEqual([{ code: 'PRECONDITION_FAILED', field: 'items[1]' }])
    expect(await snapshot()).toEqual(before)
    const current = (await fx.call('viewer', 'GET', `${items()}/${a!.id}`)).headers.get('etag')!
    const ok = await fx.call('editor', 'PATCH', bulk(), { items: [{ id: b!.id, ifMatch: fresh, title: 'B2' }, { id: a!.id, ifMatch: current, title: 'Overwrite' }] })
    expect(ok.status).toBe(200)
    expect(ok.body.data.map((item: Item) => item.title)).toEqual(['B2', 'Overwrite'])
  })

  test('bulk and single PATCHes of the same items at once: all 200, and each item ends at its last committed write', async () => {
    const seeded = await seed(6, 'Contended')
    const ids = seeded.map((item) => item.id)
    const writes: Promise<{ status: number; body: any }>[] = []
    for (let k = 0; k < 4; k++) {
      const order = k % 2 ? [...ids].reverse() : ids
      writes.push(fx.call('editor', 'PATCH', bulk(), { items: order.map((id) => ({ id, title: `b${k}-${ids.indexOf(id)}` })) }))
      for (const [i, id] of ids.entries()) if ((i + k) % 3 === 0) writes.push(fx.call('editor', 'PATCH', `${items()}/${id}`, { title: `s${k}-${i}` }))
    }
    const answers = await Promise.all(writes)
    expect(answers.map((answer) => answer.status)).toEqual(writes.map(() => 200))
    const bulkOrders: string[][] = []
    for (const [i, id] of ids.entries()) {
      // Each committed write read the title the previous one left (before → after): one chain per item.
      const records = await queryRows<{ changes: any }>(api.service.core.db, sql`select changes from audit_logs where resource_id = ${id} and action = 'work_item.updated'`)
      const next = new Map(records.map((record) => [record.changes.before.title as string, record.changes.after.title as string]))
      const chain: string[] = []
      for (let title = `Contended ${i}`; next.has(title); title = next.get(title)!) chain.push(next.get(title)!)
      const written = answers.flatMap((answer) => (Array.isArray(answer.body.data) ? answer.body.data : [answer.body.data])).filter((item: Item) => item.id === id)
      expect(chain.length).toBe(written.length)
      const stored = await fx.as('viewer', 'GET', `${items()}/${id}`)
      expect(stored.title).toBe(chain.at(-1))
      expect(written.find((item: Item) => item.title === stored.title)!.updatedAt).toBe(stored.updatedAt)
      bulkOrders.push(chain.filter((title) => title.startsWith('b')).map((title) => title.split('-')[0]!))
    }
    // The bulk requests are serial: they reached every item in one same order.
    for (const order of bulkOrders) expect(order).toEqual(bulkOrders[0]!)
    expect(bulkOrders[0]!.length).toBe(4)
  })
})

describe('MCP answers and refuses as REST does', () => {
  test('bulk_create_work_items and bulk_update_work_items give the shapes REST gives', async () => {
    const created = await callTool(mcp.editor, 'bulk_create_work_items', { projectId: fx.projectId, items: [{ title: 'Tool A', priority: 1 }, { title: 'Tool B' }] })
    expect(created.isError).toBe(false)
    expect(created.data.items.map((item: Item) => item.title)).toEqual(['Tool A', 'Tool B'])
    expect(created.data.items[1].number).toBe(created.data.items[0].number + 1)
    for (const item of created.data.items) expect(await fx.as('viewer', 'GET', `${items()}/${item.id}`)).toEqual(item)
    const [a, b] = created.data.items as Item[]
    const updated = await callTool(mcp.editor, 'bulk_update_work_items', { projectId: fx.projectId, items: [{ id: b!.id, status: 'done' }, { id: a!.id, title: 'Tool A2' }] })
    expect(updated.isError).toBe(false)
    expect(updated.data.items.map((item: Item) => [item.id, item.title, item.status])).toEqual([[b!.id, 'Tool B', 'done'], [a!.id, 'Tool A2', 'todo']])
    for (const item of updated.data.items) expect(await fx.as('viewer', 'GET', `${items()}/${item.id}`)).toEqual(item)
  })

  test('the same refusals, naming the same fields, and nothing written either way', async () => {
    const [a, b] = await seed(2, 'Refused')
    const etag = (await fx.call('viewer', 'GET', `${items()}/${a!.id}`)).headers.get('etag')!
    await fx.as('editor', 'PATCH', `${items()}/${a!.id}`, { priority: 4 })
    const cases: ['POST' | 'PATCH', unknown[]][] = [
      ['POST', [{ title: 'ok' }, { title: '' }]],
      ['POST', [{ title: '' }, { title: 'ok', priority: 9 }]],
      ['POST', [{ title: 'ok', assigneeId: strangerId }, { title: 'ok' }, { title: 'ghost', labels: [crypto.randomUUID()] }]],
      ['POST', Array.from({ length: 101 }, () => ({ title: 'many' }))],
      ['PATCH', [{ id: a!.id, title: 'x' }, { id: crypto.randomUUID(), title: 'y' }]],
      ['PATCH', [{ id: a!.id, title: 'x' }, { id: a!.id, title: 'y' }]],
      ['PATCH', [{ id: b!.id, title: 'x' }, { id: a!.id, ifMatch: etag, title: 'y' }]],
      ['PATCH', [{ id: b!.id, assigneeId: strangerId }, { id: a!.id, title: '' }]],
    ]
    const before = await snapshot()
    for (const [method, list] of cases) {
      const rest = await fx.call('editor', method, bulk(), { items: list })
      const tool = await callTool(mcp.editor, method === 'POST' ? 'bulk_create_work_items' : 'bulk_update_work_items', { projectId: fx.projectId, items: list })
      expect(rest.status).toBeGreaterThanOrEqual(400)
      expect(tool.isError).toBe(true)
      expect({ method, status: tool.data.status, errors: fieldsOf(tool.data.errors) }).toEqual({ method, status: rest.status, errors: fieldsOf(rest.body.errors) })
    }
    const viewer = await callTool(mcp.viewer, 'bulk_create_work_items', { projectId: fx.projectId, items: [{ title: 'Viewer' }] })
    expect({ isError: viewer.isError, status: viewer.data.status }).toEqual({ isError: true, status: 403 })
    expect(await snapshot()).toEqual(before)
  })
})
