/**
 * Test pings and redeliveries are bounded per webhook (the per-key rate limit, off by default,
 * does not bound them): at most `webhooks.manualDeliveriesPerMinute` of them
 * queued within a minute, then 429 RATE_LIMITED with Retry-After, whoever asks, also under
 * concurrent requests. Events of changes do not count. Times are moved in SQL, never waited for.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestService, type TestResponse, type TestService } from '../helpers/service'
import { sqlOn } from '../helpers/database'

const LIMIT = 3

let api: TestService
let chiefKey: string
let adminKey: string

beforeAll(async () => {
  // No workers: deliveries stay queued, and nothing is sent to the (unused) target.
  api = await startTestService({ config: { webhooks: { allowPrivateTargets: true, workers: false, manualDeliveriesPerMinute: LIMIT } } })
  const organization = await api.createOrganization()
  const scopes = api.service.core.scopes.map((scope) => scope.name)
  chiefKey = (await api.createKey((await api.createUser(organization, 'superadministrator')).id, scopes)).secret
  adminKey = (await api.createKey((await api.createUser(organization, 'administrator')).id, scopes)).secret
})
afterAll(() => api?.stop())

const call = (method: string, path: string, key = adminKey, body?: unknown) => api.request(method, path, { key, body })
const sql = sqlOn(() => api)

async function hook(key = adminKey, events = ['work_item.created']): Promise<string> {
  const response = await call('POST', '/api/v1/webhooks', key, { url: 'http://127.0.0.1:9/hook', events })
  if (response.status !== 201) throw new Error(`POST /api/v1/webhooks: ${response.status} ${response.text}`)
  return response.body.data.id
}

const queued = async (webhookId: string) => (await sql<{ n: number }>('select count(*)::int as n from webhook_deliveries where webhook_id = $1', [webhookId]))[0]!.n

function expectLimited(response: TestResponse): number {
  if (response.status !== 429) throw new Error(`expected 429, got ${response.status} ${response.text}`)
  expect(response.body.errors[0].code).toBe('RATE_LIMITED')
  expect(response.body.errors[0].message).toContain('last minute')
  const retryAfter = Number(response.headers.get('retry-after'))
  expect(Number.isInteger(retryAfter)).toBe(true)
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(retryAfter).toBeLessThanOrEqual(60)
  return retryAfter
}

describe('test pings and redeliveries per webhook', () => {
  test(`past ${LIMIT} a minute (tests and redeliveries together) the answer is 429 with Retry-After and nothing is queued; other webhooks and change events do not count`, async () => {
    const id = await hook()
    const first = await call('POST', `/api/v1/webhooks/${id}/test`)
    expect(first.status).toBe(201)
    expect((await call('POST', `/api/v1/webhooks/${id}/test`)).status).toBe(201)
    expect((await call('POST', `/api/v1/webhooks/${id}/deliveries/${first.body.data.id}/redeliver`)).status).toBe(201)
    expectLimited(await call('POST', `/api/v1/webhooks/${id}/test`))
    expectLimited(await call('POST', `/api/v1/webhooks/${id}/deliveries/${first.body.data.id}/redeliver`))
    // A superadministrator is bounded the same way: the limit is the webhook's, not the caller's.
    expectLimited(await call('POST', `/api/v1/webhooks/${id}/test`, chiefKey))
    expect(await queued(id)).toBe(LIMIT)

    // Another webhook has its own budget.
    const other = await hook()
    expect((await call('POST', `/api/v1/webhooks/${other}/test`)).status).toBe(201)

    // Deliveries of changes are not tests: a busy project does not use up the budget.
    const project = await call('POST', '/api/v1/projects', adminKey, { name: 'Busy' })
    expect(project.status).toBe(201)
    const busy = await hook(adminKey, ['work_item.created'])
    for (let i = 0; i < LIMIT + 2; i++) expect((await call('POST', `/api/v1/projects/${project.body.data.id}/work-items`, adminKey, { title: `item ${i}` })).status).toBe(201)
    expect(await queued(busy)).toBe(LIMIT + 2)
    expect((await call('POST', `/api/v1/webhooks/${busy}/test`)).status).toBe(201)
  })

  test('Retry-After counts down to when the oldest leaves the minute, and then one more fits', async () => {
    const id = await hook()
    for (let i = 0; i < LIMIT; i++) expect((await call('POST', `/api/v1/webhooks/${id}/test`)).status).toBe(201)
    const ids = (await sql<{ id: string }>('select id from webhook_deliveries where webhook_id = $1 order by created_at, id', [id])).map((row) => row.id)
    // The oldest was queued 50 s ago, the others 20 s ago: a place frees in about 10 s.
    await sql(`update webhook_deliveries set created_at = now() - interval '50 seconds' where id = $1`, [ids[0]])
    await sql(`update webhook_deliveries set created_at = now() - interval '20 seconds' where id = any($1::uuid[])`, [ids.slice(1)])
    const retryAfter = expectLimited(await call('POST', `/api/v1/webhooks/${id}/test`))
    expect(retryAfter).toBeGreaterThanOrEqual(9)
    expect(retryAfter).toBeLessThanOrEqual(11)

    await sql(`update webhook_deliveries set created_at = now() - interval '61 seconds' where id = $1`, [ids[0]])
    expect((await call('POST', `/api/v1/webhooks/${id}/test`)).status).toBe(201)
    expectLimited(await call('POST', `/api/v1/webhooks/${id}/test`))
    expect(await queued(id)).toBe(LIMIT + 1)
  })

  test(`concurrent tests and redeliveries of one webhook: exactly ${LIMIT} are queued, the rest answer 429`, async () => {
    const id = await hook()
    const ping = await call('POST', `/api/v1/webhooks/${id}/test`)
    expect(ping.status).toBe(201)
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 2 ? call('POST', `/api/v1/webhooks/${id}/test`) : call('POST', `/api/v1/webhooks/${id}/deliveries/${ping.body.data.id}/redeliver`),
      ),
    )
    const statuses = answers.map((answer) => answer.status).sort()
    expect(statuses).toEqual([...Array(LIMIT - 1).fill(201), ...Array(12 - (LIMIT - 1)).fill(429)])
    for (const answer of answers) if (answer.status === 429) expectLimited(answer)
    expect(await queued(id)).toBe(LIMIT)
  })
})
