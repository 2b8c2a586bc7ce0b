import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { startTestService, type TestService } from '../helpers/service'
import { testTriggers } from '../helpers/test-triggers'

let api: TestService
let key: string
let otherKey: string
let teamsKey: string

beforeAll(async () => {
  api = await startTestService()
  const organization = await api.createOrganization()
  const user = await api.createUser(organization)
  const administrator = await api.createUser(organization, 'administrator')
  teamsKey = (await api.createKey(administrator.id, ['teams:write'])).secret
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

  test('a body refused before any work leaves the key free', async () => {
    const failed = await api.request('POST', '/api/v1/projects', { key, body: { name: '' }, headers: { 'idempotency-key': 'retry-after-400' } })
    expect(failed.status).toBe(400)
    const retried = await create('Fixed', 'retry-after-400')
    expect(retried.status).toBe(201)
  })

  test('a request that fails after claiming its key rolls the claim back, so a corrected retry runs', async () => {
    const db = api.service.core.db
    // A sequence advances even in a transaction that rolls back: the trigger counts every claim.
    // On Citus it runs where the claim's shard is, so each node has its own sequence and a claim
    // counts on one of them.
    const triggers = await testTriggers(api.database)
    try {
      await triggers.onEveryNode('create sequence idempotency_claims')
      await db.execute(sql.raw("create function count_claim() returns trigger language plpgsql as $$ begin perform nextval('idempotency_claims'); return new; end $$"))
      await triggers.createTrigger({ name: 'count_claim', timing: 'after insert', table: 'idempotency_keys', function: 'count_claim' })
      const claims = async () =>
        (await triggers.fromEveryNode<{ n: string }>('select case when is_called then last_value else 0 end as n from idempotency_claims')).reduce((sum, [row]) => sum + Number(row!.n), 0)
      const team = (name: string) => api.request('POST', '/api/v1/teams', { key: teamsKey, body: { name }, headers: { 'idempotency-key': 'retry-after-409' } })
      expect((await api.request('POST', '/api/v1/teams', { key: teamsKey, body: { name: 'Taken' } })).status).toBe(201)

      // The duplicate name is found inside the transaction, after the key was claimed in it.
      const failed = await team('Taken')
      expect(failed.status).toBe(409)
      expect(await claims()).toBe(1)
      expect(await queryRows(db, sql`select 1 from idempotency_keys where key = 'retry-after-409'`)).toEqual([])

      // Not 422 (another body) and not a replay of the 409: the key is free.
      const retried = await team('Free')
      expect(retried.status).toBe(201)
      expect(retried.headers.get('idempotent-replayed')).toBeNull()
      expect(await claims()).toBe(2)
      expect((await team('Free')).headers.get('idempotent-replayed')).toBe('true')
    } finally {
      await triggers.close()
    }
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
