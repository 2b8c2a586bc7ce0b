import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let key: string
let otherKey: string

beforeAll(async () => {
  api = await startTestService()
  const organization = await api.createOrganization()
  const user = await api.createUser(organization)
  key = (await api.createKey(user.id, ['projects:write', 'projects:read'])).secret
  otherKey = (await api.createKey(user.id, ['projects:write'])).secret
})
afterAll(() => api.stop())

const create = (name: string, idempotencyKey: string, withKey = key) =>
  api.request('POST', '/api/v1/projects', { key: withKey, body: { name }, headers: { 'idempotency-key': idempotencyKey } })
const projectCount = async () => Number((await queryRows<{ n: number }>(api.service.core.db, sql`select count(*) as n from projects`))[0]!.n)

describe('Idempotency-Key on POST', () => {
  test('the same key and body replays the first response and creates nothing new', async () => {
    const before = await projectCount()
    const first = await create('Once', 'create-once-1')
    const second = await create('Once', 'create-once-1')
    expect(first.status).toBe(201)
    expect(second.status).toBe(201)
    expect(second.body.data).toEqual(first.body.data)
    expect(second.headers.get('idempotent-replayed')).toBe('true')
    expect(await projectCount()).toBe(before + 1)
  })

  test('the same key with a different body is 422 IDEMPOTENCY_MISMATCH', async () => {
    await create('First body', 'mismatch-1')
    const response = await create('Second body', 'mismatch-1')
    expect(response.status).toBe(422)
    expect(response.body.errors[0].code).toBe('IDEMPOTENCY_MISMATCH')
  })

  test('keys are per API key: another key may reuse the value', async () => {
    const mine = await create('Shared value', 'shared-1')
    const theirs = await create('Shared value', 'shared-1', otherKey)
    expect(theirs.status).toBe(201)
    expect(theirs.body.data.id).not.toBe(mine.body.data.id)
  })

  test('a failed request frees its key, so a corrected retry runs', async () => {
    const failed = await api.request('POST', '/api/v1/projects', { key, body: { name: '' }, headers: { 'idempotency-key': 'retry-after-400' } })
    expect(failed.status).toBe(400)
    const retried = await create('Fixed', 'retry-after-400')
    expect(retried.status).toBe(201)
  })

  test('concurrent requests with one key create one project', async () => {
    const before = await projectCount()
    const responses = await Promise.all(Array.from({ length: 5 }, () => create('Concurrent', 'concurrent-1')))
    const statuses = responses.map((response) => response.status)
    expect(statuses.filter((status) => status === 201).length).toBeGreaterThanOrEqual(1)
    expect(statuses.every((status) => status === 201 || status === 409)).toBe(true)
    expect(await projectCount()).toBe(before + 1)
  })

  test('a malformed key is 400', async () => {
    const response = await create('Bad key', 'x'.repeat(300))
    expect(response.status).toBe(400)
    expect(response.body.errors[0].field).toBe('Idempotency-Key')
  })
})
