/**
 * A forged cursor is refused when decoded: each of a real cursor's keys replaced by a value of the
 * right shape that its column's type cannot hold (an integer past int32, day 30 of February, year
 * 0000, hour 24, an offset PostgreSQL refuses, a malformed UUID, a NUL in text) is a 400 naming
 * `cursor`, on REST and MCP alike, and never reaches the database as an unexpected error; while
 * every value a column does hold (a number written out with hundreds of decimals) goes on.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { timeLimit } from '../helpers/database'
import { capturingLogger } from '../helpers/logger'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: ProjectFixture
let key: string
const lines: Array<{ level: string; message: string }> = []

/** Lists of every sort key type (int, timestamptz, date, numeric, text, uuid), each holding two rows at least. */
const lists: Array<{ name: string; path: () => string }> = [
  { name: 'work items (position, createdAt)', path: () => `/api/v1/projects/${fx.projectId}/work-items?` },
  { name: 'work items by priority', path: () => `/api/v1/projects/${fx.projectId}/work-items?sort=-priority&` },
  { name: 'work items by due date (nullable)', path: () => `/api/v1/projects/${fx.projectId}/work-items?sort=dueDate&` },
  { name: 'work items by a number field', path: () => `/api/v1/projects/${fx.projectId}/work-items?sort=field.points&` },
  { name: 'work items by a date field', path: () => `/api/v1/projects/${fx.projectId}/work-items?sort=field.due&` },
  { name: 'work items by a text field', path: () => `/api/v1/projects/${fx.projectId}/work-items?sort=field.notes&` },
  { name: 'work items across projects (updatedAt descending)', path: () => '/api/v1/work-items?' },
  { name: 'work items across projects by priority and due date', path: () => '/api/v1/work-items?sort=priority,dueDate&' },
  { name: 'work items across projects by a number field', path: () => `/api/v1/work-items?projectId=${fx.projectId}&sort=field.points&` },
  { name: 'entries (updatedAt descending, position)', path: () => `/api/v1/work-items/${items[0]}/entries?sort=-updatedAt,position&` },
  { name: 'relationships (createdAt)', path: () => `/api/v1/projects/${fx.projectId}/relationships?` },
  { name: 'labels (name)', path: () => '/api/v1/labels?' },
  { name: 'custom fields (key)', path: () => '/api/v1/custom-fields?' },
  { name: 'teams (createdAt)', path: () => '/api/v1/teams?' },
  { name: 'users (username)', path: () => '/api/v1/users?' },
]
const items: string[] = []
/** Custom field ids by key. */
const fields: Record<string, string> = {}

beforeAll(async () => {
  api = await startTestService({ log: capturingLogger(lines) })
  fx = await createProjectFixture(api)
  const superadministrator = await api.createUser(fx.organizationId, 'superadministrator')
  key = (await api.createKey(superadministrator.id, api.service.core.scopes.map((scope) => scope.name))).secret
  for (const [name, type] of [['points', 'number'], ['due', 'date'], ['notes', 'text']] as const) {
    fields[name] = (await admin('POST', '/api/v1/custom-fields', { key: name, name, type })).id
    await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/custom-fields`, { fieldId: fields[name] }, 201)
  }
  for (let i = 0; i < 3; i++) {
    const fields = { points: i + 0.5, due: `2026-0${i + 1}-15`, notes: `note ${i}` }
    items.push((await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: `Item ${i}`, priority: i, dueDate: i ? `2026-12-0${i}` : null, fields }, 201)).id)
    await fx.as('owner', 'POST', `/api/v1/work-items/${items[0]}/entries`, { body: `Entry ${i}` }, 201)
    await admin('POST', '/api/v1/labels', { name: `label ${i}` })
    await admin('POST', '/api/v1/teams', { name: `Team ${i}` })
  }
  for (const target of items.slice(1)) await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/relationships`, { sourceWorkItemId: items[0], targetWorkItemId: target, type: 'blocks' }, 201)
}, timeLimit(60_000))
afterAll(() => api?.stop())

async function admin(method: string, path: string, body?: unknown) {
  const response = await api.request(method, path, { key, body })
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
  return response.body.data
}

const decode = (cursor: string) => JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as (string | null)[]
const encode = (parts: readonly (string | null)[]) => Buffer.from(JSON.stringify(parts)).toString('base64url')

/** Values of the same shape as `value` (PostgreSQL's text of its type) that the type cannot hold. */
function forgeries(value: string | null): string[] {
  if (value === null) return []
  if (/^-?\d+$/.test(value)) return ['9999999999', '2147483648', '-2147483649']
  if (/^\d{4}-\d{2}-\d{2} /.test(value))
    return ['0000-01-01 00:00:00+00', '2026-02-30 12:00:00+00', '2025-02-29 12:00:00+00', '2026-11-21 24:00:00+00', '2026-11-21 23:60:00+00', '2026-11-21 23:59:60+00', '2026-11-21 10:00:00+16', '2026-11-21 10:00:00+02:60']
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return ['0000-01-01', '2026-02-30', '2026-13-01']
  if (/^[0-9a-f]{8}-/.test(value)) return ['0b6f4f8e-2c1d-4f7a-9a39-6f1f2b7d8c9z', '0b6f4f8e2c1d4f7a9a396f1f2b7d8c90', '{0b6f4f8e-2c1d-4f7a-9a39-6f1f2b7d8c90}']
  if (/^-?\d+\.\d+$/.test(value)) return []
  return ['a\u0000b']
}

/** Every forged cursor of a real one: one key at a time replaced by each of its forgeries. */
function forgedCursors(cursor: string): Array<{ cursor: string; forged: string }> {
  const [identity, ...keys] = decode(cursor)
  return keys.flatMap((value, index) =>
    forgeries(value).map((forged) => ({ cursor: encode([identity!, ...keys.map((each, at) => (at === index ? forged : each))]), forged: `key ${index} ${JSON.stringify(value)} → ${JSON.stringify(forged)}` })),
  )
}

describe('forged cursor keys', () => {
  test('on every list, each forged key is 400 naming cursor, and nothing unexpected is logged', async () => {
    const from = lines.length
    for (const list of lists) {
      const first = await api.request('GET', `${list.path()}size=1`, { key })
      expect(first.status, `${list.name}: ${first.text}`).toBe(200)
      const cursor = first.body.meta.nextCursor as string
      expect(cursor, list.name).toBeString()
      // The real cursor goes on; its forgeries do not.
      expect((await api.request('GET', `${list.path()}size=1&cursor=${cursor}`, { key })).status, list.name).toBe(200)
      const forged = forgedCursors(cursor)
      expect(forged.length, list.name).toBeGreaterThan(0)
      for (const each of forged) {
        const response = await api.request('GET', `${list.path()}size=1&cursor=${each.cursor}`, { key })
        expect(response.status, `${list.name}, ${each.forged}: ${response.text}`).toBe(400)
        expect(response.body.errors, `${list.name}, ${each.forged}`).toEqual([expect.objectContaining({ code: 'BAD_REQUEST', field: 'cursor' })])
      }
    }
    expect(lines.slice(from).filter((line) => line.level === 'error')).toEqual([])
  })

  test('a real cursor goes on however many decimals its number key has', async () => {
    const projectId = (await fx.as('owner', 'POST', '/api/v1/projects', { name: 'Tiny numbers' })).id
    await fx.as('owner', 'POST', `/api/v1/projects/${projectId}/custom-fields`, { fieldId: fields.points }, 201)
    for (const points of [5e-324, 1.2345e-300, 0.5]) await fx.as('owner', 'POST', `/api/v1/projects/${projectId}/work-items`, { title: `${points}`, fields: { points } }, 201)
    let path = `/api/v1/projects/${projectId}/work-items?sort=field.points&size=1`
    const titles: string[] = []
    for (let page = 0; page < 3; page++) {
      const response = await api.request('GET', path, { key })
      expect(response.status, response.text).toBe(200)
      titles.push(...response.body.data.map((item: { title: string }) => item.title))
      path = `/api/v1/projects/${projectId}/work-items?sort=field.points&size=1&cursor=${response.body.meta.nextCursor}`
    }
    expect(titles).toEqual(['5e-324', '1.2345e-300', '0.5'])
  })

  test('a forged key on an MCP list tool: a refused call naming cursor', async () => {
    const from = lines.length
    const call = async (args: Record<string, unknown>) => {
      const response = await api.request('POST', '/mcp', {
        key,
        body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_work_items', arguments: { projectId: fx.projectId, size: 1, ...args } } },
        headers: { accept: 'application/json, text/event-stream' },
      })
      return response.body.result as { isError?: boolean; structuredContent: any }
    }
    const cursor = (await call({})).structuredContent.meta.nextCursor as string
    for (const each of forgedCursors(cursor)) {
      const result = await call({ cursor: each.cursor })
      expect(result.isError, each.forged).toBe(true)
      expect(result.structuredContent.errors, each.forged).toEqual([expect.objectContaining({ code: 'BAD_REQUEST', field: 'cursor' })])
    }
    expect(lines.slice(from).filter((line) => line.level === 'error')).toEqual([])
  })
})
