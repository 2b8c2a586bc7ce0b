/**
 * Background work on a real Citus cluster (docs/scaling.md): the webhook
 * workers and the push outbox claim with `FOR UPDATE SKIP LOCKED` within one organization per
 * statement (Citus refuses a row lock in a query that spans shards), taking the organizations
 * with due work in turn; the sweeps run over every organization without row locks. On a fresh
 * cluster database placed by start-up's migration: webhooks of two organizations arrive in order
 * per webhook and project (a retry holding back its own stream only; a lease of a dead worker
 * running out), push deliveries of two organizations go through the fake FCM (a retry, a pruned
 * token), every sweep runs once, and nothing logs a warning or an error; each claim and each
 * result statement runs on one shard (EXPLAIN on the coordinator: one task).
 *
 * Runs when TEST_CITUS_URL names a database on a Citus coordinator with its workers added (e.g.
 * made by `cluster.sh createdb`); it creates its own database on every node and drops it after.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes, randomUUID } from 'node:crypto'
import { purgeThrottle } from '../../plugins/account/throttle'
import { purgeSessions } from '../../plugins/auth/sessions'
import { CLAIM as PUSH_CLAIM, countPendingDeliveries as pushDepth, DISCOVER as PUSH_DISCOVER, pruneStaleDevices, RECORD as PUSH_RECORD } from '../../plugins/push/outbox'
import { NO_PROJECT } from '../../plugins/webhooks/outbox'
import { countPendingDeliveries as webhookDepth, purgeOldDeliveries } from '../../plugins/webhooks/upkeep'
import { CLAIM as WEBHOOK_CLAIM, DISCOVER as WEBHOOK_DISCOVER, DROP as WEBHOOK_DROP, GRANTED as WEBHOOK_GRANTED, RECORD as WEBHOOK_RECORD } from '../../plugins/webhooks/worker'
import { openDatabase, queryText, type DatabaseHandle } from '../../src/db'
import { purgeIdempotencyKeys } from '../../src/http/idempotency'
import { capturingLogger, type LoggedLine } from '../helpers/logger'
import { FCM_ERRORS, startFakeFcm, type FakeFcm, type Responder as FcmResponder } from '../helpers/fake-fcm'
import { eventually, startTestService, type TestService } from '../helpers/service'
import { startWebhookReceiver, type Answer, type Received, type WebhookReceiver } from '../helpers/webhook-receiver'
import { createClusterDatabase, type ClusterDatabase } from '../helpers/citus-cluster'
import { sqlOn } from '../helpers/database'

const CITUS_URL = process.env.TEST_CITUS_URL
const WAIT_MS = 30_000
/**
 * A failed webhook attempt is retried after this: longer than any test here runs, so a retry goes
 * out only when a test moves its time in SQL (racing a short delay against the writes that make
 * another organization's events lost under load: 3 s once, 8 s in a later run).
 */
const RETRY_SECONDS = 3600


/** EXPLAIN's task count on the coordinator for a statement with its parameters: 1 is a single-shard (router) query. */
async function taskCount(handle: DatabaseHandle, statement: string, parameters: unknown[]): Promise<number> {
  const plan = (await queryText<{ 'QUERY PLAN': string }>(handle.db, `explain (costs off) ${statement}`, parameters)).map((row) => row['QUERY PLAN']).join('\n')
  const counts = [...plan.matchAll(/Task Count: (\d+)/g)].map((match) => Number(match[1]))
  if (!counts.length) throw new Error(`no Citus task count in the plan:\n${plan}`)
  return Math.max(...counts)
}

const TITLE = CITUS_URL ? 'background work on a Citus cluster' : 'background work on a Citus cluster (skipped: set TEST_CITUS_URL to a Citus coordinator database)'
describe.skipIf(!CITUS_URL)(TITLE, () => {
  const name = `wt_citus_bg_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`
  const logged: LoggedLine[] = []
  let cluster: ClusterDatabase
  let handle: DatabaseHandle
  let api: TestService
  let fcm: FakeFcm
  let receiver: WebhookReceiver
  let fcmResponder: FcmResponder = () => undefined
  let webhookResponder: (request: Received) => Answer = () => 200
  const sql = sqlOn(() => handle)

  beforeAll(async () => {
    cluster = await createClusterDatabase(CITUS_URL!, name)
    handle = await openDatabase(cluster.url, { maxConnections: 10 })
    fcm = await startFakeFcm((token, attempt) => fcmResponder(token, attempt), { redirect: true })
    receiver = await startWebhookReceiver((request) => webhookResponder(request))
    api = await startTestService({
      database: { ...handle, url: cluster.url },
      provide: fcm.provide,
      // Every warning and error, the first of each printed, so a failure shows its cause.
      log: capturingLogger(logged, { levels: ['warn', 'error'], fields: true, echo: true }),
      config: {
        webhooks: {
          allowPrivateTargets: true,
          encryptionKey: randomBytes(32).toString('base64'),
          pollIntervalMs: 50,
          retryDelaysSeconds: [RETRY_SECONDS],
          retryEverySeconds: RETRY_SECONDS,
          leaseSeconds: 15,
        },
        push: { pollIntervalMs: 50, retryBaseMs: 200, retryMaxMs: 400, maxAttempts: 3, leaseSeconds: 5 },
      },
    })
  }, 120_000)

  afterAll(async () => {
    await api?.stop()
    await receiver?.close()
    await fcm?.close()
    await handle?.close()
    await cluster?.drop()
  }, 120_000)

  /** A new organization, its administrator and a key holding every scope. */
  async function tenant(label: string) {
    const organizationId = await api.createOrganization(`Background ${label}`)
    const user = await api.createUser(organizationId, 'administrator')
    const { secret } = await api.createKey(user.id, api.service.core.scopes.map((scope) => scope.name))
    const as = async (method: string, path: string, body?: unknown) => {
      const response = await api.request(method, path, { key: secret, body })
      if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
      return response.body?.data
    }
    return { organizationId, user, as }
  }

  test('every claim and result statement names one organization, so Citus runs it on one shard; a claim over every organization is refused', async () => {
    const organizationId = randomUUID()
    const webhookId = randomUUID()
    expect(await taskCount(handle, WEBHOOK_CLAIM, [16, 50, 60, 'explain', organizationId])).toBe(1)
    expect(await taskCount(handle, WEBHOOK_RECORD, [organizationId, webhookId, 'explain', [], [], [], [], [], [], [], [], [], 24])).toBe(1)
    expect(await taskCount(handle, WEBHOOK_DROP, [organizationId, [randomUUID()]])).toBe(1)
    expect(await taskCount(handle, WEBHOOK_GRANTED, [organizationId, webhookId, randomUUID()])).toBe(1)
    expect(await taskCount(handle, PUSH_CLAIM, [500, 60, organizationId, true])).toBe(1)
    expect(await taskCount(handle, PUSH_RECORD, [[], [], [], [], [], organizationId])).toBe(1)
    // Not vacuous: the discoveries read every shard (no row locks), and a row lock over every organization is what Citus refuses.
    expect(await taskCount(handle, WEBHOOK_DISCOVER, [1000])).toBeGreaterThan(1)
    expect(await taskCount(handle, PUSH_DISCOVER, [1000, true])).toBeGreaterThan(1)
    await expect(sql(`select id from deliveries where state = 'pending' order by next_attempt_at limit 10 for update skip locked`)).rejects.toThrow(
      'could not run distributed query with FOR UPDATE/SHARE commands',
    )
  })

  test('webhooks of two organizations arrive in order per webhook and project; a retry holds back its own stream only', async () => {
    const a = await tenant('A')
    const b = await tenant('B')
    await a.as('POST', '/api/v1/webhooks', { url: receiver.urlFor('/a'), events: ['*'] })
    await b.as('POST', '/api/v1/webhooks', { url: receiver.urlFor('/b'), events: ['*'] })
    const projectA = await a.as('POST', '/api/v1/projects', { name: 'A project' })
    const projectB = await b.as('POST', '/api/v1/projects', { name: 'B project' })

    // A's first work item event fails once: A's later events wait behind it, B's go out meanwhile.
    let failedAt = 0
    webhookResponder = (request) => {
      if (request.path === '/a' && request.json?.data?.title === 'A 1' && request.nth === 1) {
        failedAt = Date.now()
        return 500
      }
      return 200
    }
    await a.as('POST', `/api/v1/projects/${projectA.id}/work-items`, { title: 'A 1' })
    await eventually(async () => expect(failedAt).toBeGreaterThan(0), WAIT_MS)
    for (let i = 2; i <= 6; i++)
      await Promise.all([
        a.as('POST', `/api/v1/projects/${projectA.id}/work-items`, { title: `A ${i}` }),
        b.as('POST', `/api/v1/projects/${projectB.id}/work-items`, { title: `B ${i}` }),
      ])
    const expected = async (organizationId: string) =>
      (await sql<{ id: string }>(`select id from webhook_events where organization_id = $1 order by seq, id`, [organizationId])).map((row) => row.id)
    const [eventsA, eventsB] = [await expected(a.organizationId), await expected(b.organizationId)]
    expect([eventsA.length, eventsB.length]).toEqual([7, 6])
    // B's stream goes out in full while A's waits behind its failed work item event (its project's
    // creation went out before it).
    await eventually(async () => expect(receiver.unique('/b').map((request) => request.id)).toEqual(eventsB), WAIT_MS)
    const heldAt = Date.now()
    expect(receiver.unique('/a').map((request) => request.id)).toEqual(eventsA.slice(0, 2))
    expect(receiver.received.filter((request) => request.path === '/a').length).toBe(2)
    // Its retry falls due (set in SQL rather than waited for): A's stream then goes out, in order.
    const moved = await sql(`update webhook_deliveries set next_attempt_at = now() where organization_id = $1 and status = 'pending' and attempts = 1 returning id`, [a.organizationId])
    expect(moved.length).toBe(1)
    await eventually(async () => {
      expect(receiver.unique('/a').map((request) => request.id)).toEqual(eventsA)
      expect(receiver.unique('/b').map((request) => request.id)).toEqual(eventsB)
    }, WAIT_MS)
    const retried = receiver.received.find((request) => request.path === '/a' && request.json?.data?.title === 'A 1' && request.nth === 2)!
    expect(retried.at).toBeGreaterThanOrEqual(heldAt)
    const items = (path: string) => receiver.unique(path).filter((request) => request.json?.type === 'work_item.created' && request.json?.data?.title !== 'A 1')
    expect(items('/a').length).toBe(5)
    for (const request of items('/a')) expect(request.at).toBeGreaterThanOrEqual(retried.at)
    expect(items('/b').length).toBe(5)
    for (const request of items('/b')) expect(request.at).toBeLessThanOrEqual(heldAt)
    expect(receiver.duplicates()).toBe(1)
    // A delivery is marked after its receiver answered: wait for the workers' last results to commit.
    await eventually(async () => {
      const [pending] = await sql<{ n: number }>(`select count(*)::int as n from webhook_deliveries where status = 'pending'`)
      expect(pending!.n).toBe(0)
    }, WAIT_MS)
    webhookResponder = () => 200
  }, 60_000)

  test('a stream leased by a worker that died goes out, in order, once the lease runs out (no notification: a discovery finds it)', async () => {
    const c = await tenant('C')
    const hook = await c.as('POST', '/api/v1/webhooks', { url: receiver.urlFor('/c'), events: ['*'] })
    // Two pings queued and leased by a worker that then died, as the claim leaves them: nobody is told.
    const events = [randomUUID(), randomUUID()]
    await sql(
      `with e as (
         insert into webhook_events (id, organization_id, seq, type, via, data)
         select id, $2, seq, 'ping', 'api', '{}' from unnest($1::uuid[]) with ordinality as x(id, seq) returning id, seq
       )
       insert into webhook_deliveries (id, organization_id, webhook_id, event_id, project_key, seq, lease_until, leased_by)
       select gen_random_uuid(), $2, $3, e.id, $4, e.seq, now() + interval '2 seconds', 'a dead worker' from e`,
      [events, c.organizationId, hook.id, NO_PROJECT],
    )
    const leasedAt = Date.now()
    await eventually(async () => expect(receiver.unique('/c').map((request) => request.id)).toEqual(events), WAIT_MS)
    expect(receiver.unique('/c')[0]!.at - leasedAt).toBeGreaterThanOrEqual(1500)
  }, 60_000)

  test("a webhook failing for the whole window is disabled with its audit record, in one transaction; a deleted project's events still go out in order", async () => {
    const d = await tenant('D')
    const project = await d.as('POST', '/api/v1/projects', { name: 'D project' })
    webhookResponder = (request) => (request.path === '/d-failing' ? 500 : 200)
    const failing = await d.as('POST', '/api/v1/webhooks', { url: receiver.urlFor('/d-failing'), events: ['*'], projectId: project.id })
    const kept = await d.as('POST', '/api/v1/webhooks', { url: receiver.urlFor('/d'), events: ['*'] })
    await d.as('POST', `/api/v1/projects/${project.id}/work-items`, { title: 'D 1' })
    await eventually(async () => expect((await d.as('GET', `/api/v1/webhooks/${failing.id}`)).failingSince).toBeTruthy(), WAIT_MS)
    // A day and an hour of failures, as far as the clocks know, and the retry due now.
    await sql(`update webhooks set failing_since = now() - interval '25 hours' where id = $1 and organization_id = $2`, [failing.id, d.organizationId])
    await sql(
      `update webhook_deliveries set first_attempt_at = now() - interval '25 hours', next_attempt_at = now()
        where webhook_id = $1 and organization_id = $2 and first_attempt_at is not null`,
      [failing.id, d.organizationId],
    )
    await eventually(async () => expect(await d.as('GET', `/api/v1/webhooks/${failing.id}`)).toMatchObject({ enabled: false, disabledReason: 'failing' }), WAIT_MS)
    const audited = await sql(`select via from audit_logs where organization_id = $1 and action = 'webhook.disabled' and resource_id = $2`, [d.organizationId, failing.id])
    expect(audited).toEqual([{ via: 'system' }])

    await d.as('DELETE', `/api/v1/projects/${project.id}`)
    const events = (
      await sql<{ id: string }>(
        `select e.id from webhook_events e join webhook_deliveries x on x.event_id = e.id and x.organization_id = e.organization_id
          where x.webhook_id = $1 and x.organization_id = $2 order by e.seq, e.id`,
        [kept.id, d.organizationId],
      )
    ).map((row) => row.id)
    await eventually(async () => expect(receiver.unique('/d').map((request) => request.id)).toEqual(events), WAIT_MS)
    expect(receiver.unique('/d').map((request) => request.json?.type)).toEqual(['work_item.created', 'project.deleted'])
    webhookResponder = () => 200
  }, 60_000)

  test('the push outbox delivers the messages of two organizations through FCM: a retry, a pruned token losing its device', async () => {
    const seeded = [await tenant('Push A'), await tenant('Push B')]
    const tokensOf = seeded.map((_, i) => Array.from({ length: 30 }, (_, n) => `org${i}-device${n}:APA91b${randomBytes(6).toString('hex')}`))
    const tokens = tokensOf.flat()
    const retried = tokens[3]!
    const gone = tokens[40]!
    fcmResponder = (token, attempt) => (token === gone ? FCM_ERRORS.unregistered() : token === retried && attempt === 1 ? FCM_ERRORS.internal() : undefined)
    const messages: string[] = []
    for (const [i, { organizationId, user }] of seeded.entries()) {
      const pageId = randomUUID()
      await sql(`insert into pages (id, organization_id, name, created_by) values ($1, $2, $3, $4)`, [pageId, organizationId, `page-${i}`, user.id])
      await sql(`insert into devices (token, user_id, organization_id, platform) select unnest($1::text[]), $2, $3, 'android'`, [tokensOf[i], user.id, organizationId])
      const messageId = randomUUID()
      messages.push(messageId)
      // What POST /api/message writes: the message and one pending delivery per device.
      await sql(`insert into messages (id, organization_id, page_id, page_name, body, sender_id) values ($1, $2, $3, $4, 'Hello', $5)`, [messageId, organizationId, pageId, `page-${i}`, user.id])
      await sql(`insert into deliveries (message_id, organization_id, device_token, user_id, state) select $1, $2, token, user_id, 'pending' from devices where organization_id = $2`, [
        messageId,
        organizationId,
      ])
    }
    // The workers find the deliveries by themselves (a discovery); POST /api/message would also notify them.
    await eventually(async () => {
      const rows = await sql<{ state: string; n: number }>(`select state, count(*)::int as n from deliveries where message_id = any($1::uuid[]) group by state order by state`, [messages])
      expect(rows).toEqual([
        { state: 'pruned', n: 1 },
        { state: 'sent', n: 59 },
      ])
    }, WAIT_MS)
    expect(new Set(fcm.delivered().map((send) => send.token))).toEqual(new Set(tokens.filter((token) => token !== gone)))
    expect(fcm.sends.filter((send) => send.token === retried).map((send) => send.status)).toEqual([500, 200])
    expect(await sql(`select 1 from devices where token = $1`, [gone])).toEqual([])
    expect(await pushDepth(handle.db)).toBe(0)
    fcmResponder = () => undefined
  }, 60_000)

  test('every sweep runs once over every organization, removing what it should', async () => {
    const { organizationId, user } = await tenant('Sweeps')
    const old = "now() - interval '400 days'"
    await sql(`insert into sessions (id, organization_id, user_id, kind, token_hash, expires_at, created_at) values ($1, $2, $3, 'web', $4, ${old}, ${old})`, [
      randomUUID(),
      organizationId,
      user.id,
      randomBytes(16).toString('hex'),
    ])
    await sql(`insert into devices (token, user_id, organization_id, platform, last_seen_at) values ($1, $2, $3, 'ios', ${old})`, [`stale-${randomUUID()}`, user.id, organizationId])
    await sql(`insert into idempotency_keys (api_key_id, organization_id, key, request_hash, created_at) values ($1, $2, 'old', 'x', ${old})`, [randomUUID(), organizationId])
    await sql(`insert into sign_in_throttle (key, failures, window_start) values ($1, 1, ${old})`, [`ip:sweep-${randomUUID()}`])
    // An event past retention with a finished delivery past retention, and a pending delivery whose webhook is gone.
    const webhookId = randomUUID()
    const eventId = randomUUID()
    await sql(`insert into webhook_events (id, organization_id, seq, type, via, data, occurred_at) values ($1, $2, 1, 'project.created', 'api', '{}', ${old})`, [eventId, organizationId])
    await sql(
      `insert into webhook_deliveries (id, organization_id, webhook_id, event_id, project_key, seq, status, created_at) values
         (gen_random_uuid(), $1, $2, $3, $2, 1, 'succeeded', ${old}), (gen_random_uuid(), $1, $2, $3, $2, 2, 'pending', now())`,
      [organizationId, webhookId, eventId],
    )
    const left = async (table: string) => (await sql<{ n: number }>(`select count(*)::int as n from ${table} where organization_id = $1`, [organizationId]))[0]!.n

    expect(await purgeSessions(handle.db)).toBe(1)
    expect(await left('sessions')).toBe(0)
    expect(await pruneStaleDevices(handle.db, 270)).toBe(1)
    expect(await purgeOldDeliveries(handle.db, 30)).toBe(2)
    expect([await left('webhook_deliveries'), await left('webhook_events')]).toEqual([0, 0])
    await purgeIdempotencyKeys(handle.db)
    expect(await left('idempotency_keys')).toBe(0)
    expect(await purgeThrottle(handle.db, 60)).toBeGreaterThanOrEqual(1)
    expect(await webhookDepth(handle.db)).toBe(0)
    expect(await pushDepth(handle.db)).toBe(0)
  }, 60_000)

  test('nothing logged a warning or an error (but the disabling of the failing webhook)', () => {
    const expected = 'webhooks: a webhook failing without a success was disabled'
    expect(logged.filter((line) => line.message === expected)).toHaveLength(1)
    expect(logged.filter((line) => line.message !== expected).map((line) => `${line.level} ${line.message} ${line.fields?.code ?? ''}`)).toEqual([])
  })
})
