/**
 * MCP under abuse: a JSON-RPC batch is refused, every tool call counts against the
 * per-key rate limit like a REST request, and argument validation stops after 20 errors without
 * copying the arguments.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { t } from 'elysia'
import { queryRows } from '../../src/db'
import { itemsFromValueErrors } from '../../src/http/validation-items'
import { validate } from '../../src/validate'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: ProjectFixture

beforeAll(async () => {
  api = await startTestService({ config: { auth: { requestsPerMinute: 5 } } })
  fx = await createProjectFixture(api)
})
afterAll(() => api.stop())

const workItems = async () => Number((await queryRows<{ n: number }>(api.service.core.db, sql`select count(*)::int as n from work_items where project_id = ${fx.projectId}`))[0]!.n)

/** One raw POST /mcp (no SDK), as a hostile client sends it. */
async function post(key: string, body: unknown) {
  const response = await api.service.fetch(
    new Request('http://localhost/mcp', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(body),
    }),
  )
  const text = await response.text()
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: text ? JSON.parse(text) : null }
}

const call = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })

describe('JSON-RPC batches', () => {
  test('a JSON array of 100 create_work_item calls is refused with a JSON-RPC error and creates nothing', async () => {
    const before = await workItems()
    const batch = Array.from({ length: 100 }, (_, i) => call(i + 1, 'create_work_item', { projectId: fx.projectId, title: `batched ${i}` }))
    const answer = await post(fx.keys.editor, batch)
    expect(answer.status).toBe(400)
    expect(answer.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringContaining('batch') } })
    expect(await workItems()).toBe(before)
  })
})

describe('the per-key rate limit', () => {
  test('counts every tool call: the sixth in a minute is 429 with Retry-After', async () => {
    const key = (await api.createKey(fx.users.editor.id, ['work_items:read', 'work_items:write'])).secret
    for (let i = 0; i < 5; i++) {
      const answer = await post(key, call(i + 1, 'create_work_item', { projectId: fx.projectId, title: `counted ${i}` }))
      expect(answer.status).toBe(200)
      expect(answer.body.result.isError).toBeFalsy()
    }
    const limited = await post(key, call(6, 'create_work_item', { projectId: fx.projectId, title: 'one too many' }))
    expect(limited.status).toBe(429)
    expect(Number(limited.retryAfter)).toBeGreaterThan(0)
  })
})

describe('argument validation is bounded', () => {
  test('400,000 invalid ids in reorder_content: at most 20 errors, each naming its field', async () => {
    const key = (await api.createKey(fx.users.editor.id, ['work_items:write', 'entries:write'])).secret
    const answer = await post(key, call(1, 'reorder_content', { projectId: fx.projectId, workItems: Array.from({ length: 400_000 }, () => 1) }))
    expect(answer.status).toBe(200)
    const result = answer.body.result
    expect(result.isError).toBe(true)
    expect(result.structuredContent.errors.length).toBeLessThanOrEqual(20)
    // The list is over its length limit, and its first items are not ids: both reported, 20 at most.
    expect(result.structuredContent.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field: 'workItems' })
    expect(result.structuredContent.errors[1]).toMatchObject({ code: 'BAD_REQUEST', field: 'workItems[0]' })
  })

  test('error reporting stops reading the validator after 20 fields', () => {
    let produced = 0
    function* errors() {
      for (let i = 0; i < 400_000; i++) {
        produced++
        yield { path: `/workItems/${i}`, message: 'Expected string' }
      }
    }
    const items = itemsFromValueErrors(errors(), 'field', 'input')
    expect(items).toHaveLength(20)
    expect(produced).toBeLessThanOrEqual(21)
  })

  test('validate() neither copies its input nor walks every error', () => {
    const schema = t.Object({ workItems: t.Array(t.String()) })
    const valid = { workItems: ['a', 'b'] }
    expect(validate(schema, valid)).toBe(valid)
    const invalid = { workItems: Array.from({ length: 400_000 }, () => 1) }
    let failure: any
    try {
      validate(schema, invalid)
    } catch (error) {
      failure = error
    }
    expect(failure.items).toHaveLength(20)
    expect(failure.items[19].field).toBe('workItems[19]')
  })
})
