/**
 * Alerts on three service processes sharing one PostgreSQL database: a burst of concurrent
 * display updates crossing a rule's threshold, spread over the instances, fires it exactly once,
 * and a burst back under it resolves it exactly once (one history row, one audit record, one
 * push message and one FCM send per transition); a rule with `forSeconds`, which every instance's
 * sweep races to fire, fires once too.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestDatabase, usingServer, type TestDatabase, sqlOn } from '../helpers/database'
import { SAMPLE_DATA, createDisplayFixture, type DisplayFixture } from '../helpers/display-fixture'
import { startFakeFcm, type FakeFcm } from '../helpers/fake-fcm'
import { startInstance, type Instance } from '../helpers/instance'
import { eventually, startTestService, type TestService } from '../helpers/service'

const INSTANCES = 3
const BURST = 45
const WAIT_MS = 20_000
const INSTANCE_CONFIG = {
  auth: { passwordHashLogN: 10 },
  database: { maxConnections: 6 },
  push: { pollIntervalMs: 50 },
  alerts: { sweepIntervalSeconds: 0.1 },
}
/** The in-process service makes the fixture and the rules; it never sweeps and sends nothing itself (the instances do). */
const SEED_CONFIG = { alerts: { workers: false }, push: { workers: false } }

const box = (value: number) => ({ ...SAMPLE_DATA.horizontalBox, middleText: { ...SAMPLE_DATA.horizontalBox.middleText, value: String(value) } })
const tall = (value: number) => ({ ...SAMPLE_DATA.verticalBox, bottomText: { ...SAMPLE_DATA.verticalBox.bottomText, value: String(value) } })

describe.skipIf(!usingServer())('alerts on several instances (needs a PostgreSQL server: TEST_DATABASE_URL; PGlite is one process)', () => {
  let database: TestDatabase
  let seed: TestService
  let fcm: FakeFcm
  let instances: Instance[] = []
  let fx: DisplayFixture
  let device: string
  const sql = sqlOn(() => database)

  async function diagnosed<T>(body: () => Promise<T>): Promise<T> {
    try {
      return await body()
    } catch (error) {
      for (const instance of instances) console.error(`--- ${instance.name} stderr tail:\n${instance.output().slice(-3000) || '(empty)'}`)
      throw error
    }
  }

  /** Feeds the component through instance `k % 3`, all at once; stale answers (409) are fine. */
  async function burst(componentId: string, values: number[], data: (value: number) => unknown = box): Promise<void> {
    const base = Date.now() / 1000
    const answers = await Promise.all(
      values.map(async (value, k) => {
        const response = await fetch(`${instances[k % INSTANCES]!.url}/api/component`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ apiKey: fx.creator.displayApiKey, componentId, timestamp: base + k / 1000, data: data(value) }),
        })
        return response.status
      }),
    )
    expect(answers.every((status) => status === 200 || status === 409)).toBe(true)
    expect(answers.filter((status) => status === 200).length).toBeGreaterThan(0)
  }

  /** What each transition of `alertId` left: history rows, audit records, push messages, FCM sends to the device. */
  async function traces(alertId: string, title: string) {
    const history = await sql<{ transition: string }>('select transition from alert_transitions where organization_id = $1 and alert_id = $2 order by at', [fx.organizationId, alertId])
    const audits = await sql<{ action: string }>(`select action from audit_logs where organization_id = $1 and resource_id = $2 and action like 'alert.%ed' and action <> 'alert.created' order by occurred_at`, [fx.organizationId, alertId])
    const messages = await sql<{ title: string }>('select title from messages where organization_id = $1 and collapse_key = $2 order by created_at', [fx.organizationId, `alert-${alertId}`])
    const sends = fcm.sends.filter((send) => send.token === device && send.message.notification?.title?.endsWith(title)).map((send) => send.message.notification!.title)
    return { history: history.map((row) => row.transition), audits: audits.map((row) => row.action), messages: messages.map((row) => row.title), sends }
  }

  beforeAll(async () => {
    database = await createTestDatabase()
    fcm = await startFakeFcm()
    // With an FCM sender (its workers off), so a push it records (a rule it evaluated after a change) is sent by the instances.
    seed = await startTestService({ database, config: SEED_CONFIG, provide: fcm.provide })
    fx = await createDisplayFixture(seed)
    device = `alerts-instances:APA91b${Math.random().toString(36).slice(2, 14)}`
    const registered = await seed.request('POST', '/api/devices', { body: { token: device, platform: 'android' }, headers: { authorization: `Bearer ${fx.readerSession}` } })
    expect(registered.status).toBe(201)
    const results = await Promise.allSettled(
      Array.from({ length: INSTANCES }, (_, i) => startInstance({ name: `a${i}`, databaseUrl: database.url, config: INSTANCE_CONFIG, fcm: { port: fcm.port, ca: fcm.ca } })),
    )
    instances = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
    const failed = results.find((result) => result.status === 'rejected') as PromiseRejectedResult | undefined
    if (failed) throw failed.reason
  }, 60_000)

  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.stop()))
    await fcm?.close()
    await seed?.stop()
    await database?.close()
  }, 30_000)

  test('concurrent updates crossing the threshold through three instances: one fired, then one resolved, each pushed and audited once', () =>
    diagnosed(async () => {
      const component = fx.components.horizontalBox
      const v1 = (method: string, path: string, body?: unknown) => seed.request(method, path, { key: fx.creatorKey, body })
      expect((await v1('PATCH', `/api/v1/pages/${fx.pageId}/components/${component}`, { title: 'Load' })).status).toBe(200)
      await burst(component, [10])
      const alert = (await v1('POST', `/api/v1/pages/${fx.pageId}/components/${component}/alerts`, { when: 'above', value: 50 })).body.data
      await burst(component, Array.from({ length: BURST }, (_, k) => 60 + k))
      await eventually(async () => expect(await traces(alert.id, 'Load')).toEqual({ history: ['fired'], audits: ['alert.fired'], messages: ['⚠ Load'], sends: ['⚠ Load'] }), WAIT_MS)
      await burst(component, Array.from({ length: BURST }, (_, k) => 40 - k / 2))
      await eventually(
        async () => expect(await traces(alert.id, 'Load')).toEqual({ history: ['fired', 'resolved'], audits: ['alert.fired', 'alert.resolved'], messages: ['⚠ Load', '✓ Load'], sends: ['⚠ Load', '✓ Load'] }),
        WAIT_MS,
      )
    }), 60_000)

  test('a rule with forSeconds, which every instance\'s sweep races to fire, fires once', () =>
    diagnosed(async () => {
      const component = fx.components.verticalBox
      const v1 = (method: string, path: string, body?: unknown) => seed.request(method, path, { key: fx.creatorKey, body })
      expect((await v1('PATCH', `/api/v1/pages/${fx.pageId}/components/${component}`, { title: 'Queue' })).status).toBe(200)
      const alert = (await v1('POST', `/api/v1/pages/${fx.pageId}/components/${component}/alerts`, { when: 'above', value: 5, forSeconds: 60 })).body.data
      await burst(component, Array.from({ length: 9 }, (_, k) => 10 + k), tall)
      await eventually(async () => expect((await sql('select pending_since from component_alerts where organization_id = $1 and id = $2', [fx.organizationId, alert.id]))[0].pending_since).not.toBeNull(), WAIT_MS)
      await sql(`update component_alerts set pending_since = now() - interval '61 seconds' where organization_id = $1 and id = $2`, [fx.organizationId, alert.id])
      await eventually(async () => expect(await traces(alert.id, 'Queue')).toEqual({ history: ['fired'], audits: ['alert.fired'], messages: ['⚠ Queue'], sends: ['⚠ Queue'] }), WAIT_MS)
    }), 60_000)
})
