/**
 * Idempotency records commit with the change they answer: a committed POST always
 * replays its first answer, even when that answer was lost on the way to the client; a POST whose
 * transaction rolled back leaves its key free.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { registry } from '../../plugins'
import { queryRows } from '../../src/db'
import { listen, type Listening } from '../helpers/http'
import { probePlugin } from '../helpers/probe-plugin'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let http: Listening
let key: string
let adminKey: string

beforeAll(async () => {
  api = await startTestService({ registry: [...registry, probePlugin] })
  http = listen(api)
  const organization = await api.createOrganization()
  const user = await api.createUser(organization, 'administrator')
  key = (await api.createKey(user.id, ['projects:write', 'projects:read', 'probe:write'])).secret
  adminKey = (await api.createKey(user.id, ['teams:write', 'teams:read'])).secret
})
afterAll(async () => {
  http.stop()
  await api.stop()
})

const count = async (query: ReturnType<typeof sql>) => Number((await queryRows<{ n: number }>(api.service.core.db, query))[0]!.n)

describe('the record commits with the change', () => {
  test('a change that committed but whose answer failed replays its answer on retry, and runs once', async () => {
    const post = () => api.request('POST', '/api/v1/probe/commit-then-fail', { key, body: { name: 'lost-answer' }, headers: { 'idempotency-key': 'lost-answer-1' }, unchecked: true })
    const first = await post()
    expect(first.status).toBe(500)
    const retried = await post()
    expect(retried.status).toBe(201)
    expect(retried.body.data).toEqual({ name: 'lost-answer' })
    expect(retried.headers.get('idempotent-replayed')).toBe('true')
    expect(await count(sql`select count(*)::int as n from audit_logs where action = 'probe.committed' and resource_id = 'lost-answer'`)).toBe(1)
  })

  test('a request refused inside its transaction leaves its key free for a corrected retry', async () => {
    const name = `Taken ${Math.random().toString(36).slice(2, 8)}`
    expect((await api.request('POST', '/api/v1/teams', { key: adminKey, body: { name } })).status).toBe(201)
    const refused = await api.request('POST', '/api/v1/teams', { key: adminKey, body: { name: name.toUpperCase() }, headers: { 'idempotency-key': 'duplicate-team-1' } })
    expect(refused.status).toBe(409)
    const corrected = await api.request('POST', '/api/v1/teams', { key: adminKey, body: { name: `${name} two` }, headers: { 'idempotency-key': 'duplicate-team-1' } })
    expect(corrected.status).toBe(201)
    expect(corrected.headers.get('idempotent-replayed')).toBeNull()
  })

  test('concurrent requests with one key: one runs, the others wait for it and replay its answer', async () => {
    const post = () => api.request('POST', '/api/v1/projects', { key, body: { name: 'Concurrent once' }, headers: { 'idempotency-key': 'concurrent-once-1' } })
    const answers = await Promise.all(Array.from({ length: 8 }, post))
    expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(201))
    expect(new Set(answers.map((answer) => answer.body.data.id)).size).toBe(1)
    expect(answers.filter((answer) => answer.headers.get('idempotent-replayed') === 'true')).toHaveLength(7)
    expect(await count(sql`select count(*)::int as n from projects where name = 'Concurrent once'`)).toBe(1)
  })
})

describe('clients that lose their connection and retry', () => {
  test('30 POSTs aborted at random points, each retried with its key until answered: exactly one project each', async () => {
    const names: string[] = []
    for (let i = 0; i < 30; i++) {
      const name = `Aborted ${i} ${Math.random().toString(36).slice(2, 6)}`
      names.push(name)
      const send = (signal?: AbortSignal) =>
        fetch(`${http.url}/api/v1/projects`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `abort-${i}-${name.slice(-4)}` },
          body: JSON.stringify({ name }),
          signal,
        })
      const controller = new AbortController()
      const first = send(controller.signal).catch(() => null)
      setTimeout(() => controller.abort(), Math.floor(Math.random() * 12))
      await first
      let answer: Response | null = null
      for (let attempt = 0; attempt < 50 && (!answer || answer.status !== 201); attempt++) answer = await send()
      expect(answer!.status).toBe(201)
      expect((await answer!.json()).data.name).toBe(name)
    }
    for (const name of names) expect(await count(sql`select count(*)::int as n from projects where name = ${name}`)).toBe(1)
  })
})
