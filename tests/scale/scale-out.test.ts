/**
 * Scale-out: three service processes on one PostgreSQL database, driven at once, with a mixed
 * load running through all of them meanwhile. Daily limits stay exact across instances, key
 * revocations and user deactivations reach every instance's key cache within a second, live
 * dashboard events reach viewers on every instance, and each push is delivered exactly once
 * although every instance runs outbox workers.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { queryText } from '../../src/db'
import { usingServer } from '../helpers/database'
import { SAMPLE_DATA } from '../helpers/display-fixture'
import type { Instance } from '../helpers/instance'
import type { TestUser } from '../helpers/service'
import { webSession } from '../helpers/sessions'
import { call, expectCall, seedFixtures, signIn, startCluster, type Cluster, type Exchange, type Fixtures } from './cluster'
import { startMixedLoad, type LoadReport } from './load'
import { openEventStream, type EventStream } from '../helpers/sse'

const INSTANCES = 3
const DAILY_LIMIT = 60
const LIMIT_CALLS = 96
/**
 * How soon a revocation or deactivation reaches every instance. On the one-machine Citus cluster
 * (three instances under the mixed load and three nodes on two cores) the time includes the probe
 * that sees the 401, and a revoked key's re-read looks it up by hash on every shard: the first 401
 * came 0.7 to 2.06 s after the answer over the runs of 2026-11-27, and past 3 s once in CI
 * (2026-11-29), so the bound there is 10 s. That is still a notice's work, which the control key
 * below proves: without a notice the key cache keeps a key for 300 s.
 */
const PROPAGATION_MS = process.env.TEST_CITUS_URL ? 10_000 : 1000
/**
 * bun's default is 5 s per test (bunfig has no per-test setting); these wait on three processes.
 * On the one-machine Citus cluster the push test alone took 17.9 s (2026-11-27, most of it signing
 * in and registering twelve devices through the coordinator) and ran past 20 s in CI: 60 s there.
 */
const TEST_TIMEOUT_MS = process.env.TEST_CITUS_URL ? 60_000 : 20_000

let cluster: Cluster
let fx: Fixtures
let load: { stop(): Promise<LoadReport> } | undefined
let instances: Instance[]

/** Runs `body`; on failure prints the tail of every instance's log before rethrowing. */
async function diagnosed<T>(body: () => Promise<T>): Promise<T> {
  try {
    return await body()
  } catch (error) {
    for (const instance of instances ?? []) console.error(`--- ${instance.name} (pid ${instance.pid}, ${instance.url}) stderr tail:\n${instance.output().slice(-4000) || '(empty)'}`)
    throw error
  }
}

const since = (start: number) => Math.round(performance.now() - start)

/** Polls `probe` on one instance until it answers 401; returns ms since `start` (Infinity on timeout). */
async function until401(instance: Instance, probe: () => Promise<Exchange>, start: number, timeoutMs = PROPAGATION_MS): Promise<number> {
  for (;;) {
    const answer = await probe()
    if (answer.status === 401) return performance.now() - start
    if (answer.status !== 200) throw new Error(`${instance.name}: expected 200 or 401 while waiting, got ${answer.status} ${answer.text.slice(0, 300)}`)
    if (performance.now() - start > timeoutMs) return Infinity
    await Bun.sleep(5)
  }
}

describe.skipIf(!usingServer())('scale-out: three instances on one database (needs a PostgreSQL server: TEST_DATABASE_URL; PGlite is one process)', () => {
  beforeAll(async () => {
    const started = performance.now()
    cluster = await startCluster(INSTANCES)
    instances = cluster.instances
    const up = since(started)
    fx = await seedFixtures(cluster, DAILY_LIMIT)
    const seeded = since(started)
    load = await startMixedLoad({
      instances,
      projectId: fx.project.projectId,
      editorKey: fx.project.editorKey,
      viewerKey: fx.project.viewerKey,
      displayKey: fx.display.creator.displayApiKey!,
      componentId: fx.display.components.verticalBox,
    }, 4)
    console.log(`${INSTANCES} instances (${instances.map((i) => i.url).join(', ')}) up at ${up} ms, seeded at ${seeded} ms, under load at ${since(started)} ms`)
    // On the one-machine Citus cluster seeding alone once took 35 s (CI, 2026-11-27).
  }, process.env.TEST_CITUS_URL ? 120_000 : 40_000)

  afterAll(async () => {
    await load?.stop().catch(() => {})
    await cluster?.stop()
  }, 20_000)

  test('a daily limit is exact when component updates and messages for one account hit every instance at once', () =>
    diagnosed(async () => {
      const { limiter } = fx
      const apiKey = limiter.user.displayApiKey!
      const calls = await Promise.all(
        Array.from({ length: LIMIT_CALLS }, async (_, i) => {
          const instance = instances[i % INSTANCES]!
          const exchange =
            i % 2 === 0
              ? await call(instance, 'POST', '/api/component', { body: { componentId: limiter.componentId, apiKey, timestamp: 1_950_000_000, data: SAMPLE_DATA.barChart } })
              : await call(instance, 'POST', '/api/message', { body: { apiKey, pageName: limiter.pageName, message: `limit probe ${i}` } })
          return { instance: instance.name, kind: i % 2 === 0 ? 'component' : 'message', ...exchange }
        }),
      )
      const succeeded = calls.filter((c) => c.status === 200)
      const refused = calls.filter((c) => c.status === 429)
      const other = calls.filter((c) => c.status !== 200 && c.status !== 429)
      const byInstance = Object.fromEntries(instances.map((i) => [i.name, succeeded.filter((c) => c.instance === i.name).length]))
      console.log(`limit ${limiter.limit}: ${LIMIT_CALLS} concurrent calls → ${succeeded.length} × 200 (per instance ${JSON.stringify(byInstance)}), ${refused.length} × 429, ${other.length} other`)
      expect(other.map((c) => `${c.instance} ${c.kind}: ${c.status} ${c.text.slice(0, 200)}`)).toEqual([])
      expect(succeeded).toHaveLength(limiter.limit)
      expect(refused).toHaveLength(LIMIT_CALLS - limiter.limit)
      // Each counted call saw its own position in the count: no two shared one, none was skipped.
      const used = succeeded.map((c) => Number(c.headers.get('x-ratelimit-used'))).sort((a, b) => a - b)
      expect(used).toEqual(Array.from({ length: limiter.limit }, (_, i) => i + 1))
      for (const c of refused) {
        expect(c.headers.get('x-ratelimit-remaining')).toBe('0')
        expect(Number(c.headers.get('retry-after'))).toBeGreaterThan(0)
        if (c.kind === 'component') expect(c.body).toMatchObject({ message: 'limitExceeded', limitRemaining: 0 })
      }
      const [stored] = await queryText<{ calls: number }>(cluster.database.db, 'select coalesce(sum(calls), 0)::int as calls from display_usage where user_id = $1', [limiter.user.id])
      expect(stored!.calls).toBe(limiter.limit)
      // One more call anywhere is refused and not counted; every instance reports the same usage.
      expect((await call(instances[1]!, 'POST', '/api/message', { body: { apiKey, pageName: limiter.pageName, message: 'one too many' } })).status).toBe(429)
      const session = await signIn(instances[0]!, limiter.user)
      for (const instance of instances)
        expect((await expectCall(instance, 200, 'GET', '/account/api/display', { bearer: session })).body.data).toMatchObject({ dailyLimit: limiter.limit, usedToday: limiter.limit })
    }),
    TEST_TIMEOUT_MS,
  )

  test(`a key revoked through one instance is refused by every instance within ${PROPAGATION_MS / 1000} s, although each had it cached`, () =>
    diagnosed(async () => {
      const session = await signIn(instances[0]!, fx.revokee)
      const created = await expectCall(instances[1]!, 201, 'POST', '/account/api/keys', { bearer: session, body: { name: 'scale probe', scopes: ['users:read'] } })
      const { key, secret } = created.body.data as { key: { id: string }; secret: string }
      const me = (instance: Instance) => call(instance, 'GET', '/api/v1/users/me', { bearer: secret })
      for (const instance of instances) for (let i = 0; i < 2; i++) expect((await me(instance)).status).toBe(200)

      const revoked = await expectCall(instances[2]!, 200, 'DELETE', `/account/api/keys/${key.id}`, { bearer: session })
      const committed = performance.now()
      expect(revoked.body.data.revokedAt).toBeString()
      const times = await Promise.all(instances.map((instance) => until401(instance, () => me(instance), committed)))
      console.log(`key revoked via ${instances[2]!.name} (DELETE took ${Math.round(revoked.ms)} ms); first 401 after the answer: ${instances.map((i, n) => `${i.name} ${Math.round(times[n]!)} ms`).join(', ')}`)
      for (const time of times) expect(time).toBeLessThan(PROPAGATION_MS)
      for (const instance of instances) expect((await me(instance)).status).toBe(401)

      // Control: a key revoked behind the service's back (SQL, no notice) is still served from every
      // cache, so the refusals above were the notice's doing, not a cache miss.
      const control = await expectCall(instances[0]!, 201, 'POST', '/account/api/keys', { bearer: session, body: { name: 'scale control', scopes: ['users:read'] } })
      const controlSecret = control.body.data.secret as string
      for (const instance of instances) expect((await call(instance, 'GET', '/api/v1/users/me', { bearer: controlSecret })).status).toBe(200)
      // In the key's organization: on Citus an update by id alone touches every shard and, beside the
      // mixed load's writes, once held requests for over 10 s (CI, 2026-11-27).
      await queryText(cluster.database.db, 'update api_keys set revoked_at = now() where id = $1 and organization_id = $2', [control.body.data.key.id, fx.project.organizationId])
      // A witness key revoked through the service afterwards: once every instance refuses it, any
      // notice about the control key would have arrived too.
      const witness = await expectCall(instances[0]!, 201, 'POST', '/account/api/keys', { bearer: session, body: { name: 'scale witness', scopes: ['users:read'] } })
      const witnessSecret = witness.body.data.secret as string
      for (const instance of instances) expect((await call(instance, 'GET', '/api/v1/users/me', { bearer: witnessSecret })).status).toBe(200)
      const witnessRevoked = performance.now()
      await expectCall(instances[1]!, 200, 'DELETE', `/account/api/keys/${witness.body.data.key.id}`, { bearer: session })
      const witnessTimes = await Promise.all(instances.map((instance) => until401(instance, () => call(instance, 'GET', '/api/v1/users/me', { bearer: witnessSecret }), witnessRevoked)))
      for (const time of witnessTimes) expect(time).toBeLessThan(PROPAGATION_MS)
      for (const instance of instances) expect((await call(instance, 'GET', '/api/v1/users/me', { bearer: controlSecret })).status).toBe(200)
    }),
    TEST_TIMEOUT_MS,
  )

  test(`a deactivated user's keys and sessions stop on every instance within ${PROPAGATION_MS / 1000} s`, () =>
    diagnosed(async () => {
      const { secret } = await cluster.seed.createKey(fx.leaver.id, ['users:read'])
      const session = await signIn(instances[1]!, fx.leaver)
      const me = (instance: Instance) => call(instance, 'GET', '/api/v1/users/me', { bearer: secret })
      const keys = (instance: Instance) => call(instance, 'GET', '/account/api/keys', { bearer: session })
      for (const instance of instances) {
        expect((await me(instance)).status).toBe(200)
        expect((await keys(instance)).status).toBe(200)
      }
      await cluster.seed.deactivateUser(fx.leaver.id) // the operator CLI's path: commit, then NOTIFY
      const committed = performance.now()
      const [keyTimes, sessionTimes] = await Promise.all([
        Promise.all(instances.map((instance) => until401(instance, () => me(instance), committed))),
        Promise.all(instances.map((instance) => until401(instance, () => keys(instance), committed))),
      ])
      console.log(`user deactivated: key refused after ${keyTimes.map((t, n) => `${instances[n]!.name} ${Math.round(t)} ms`).join(', ')}; session refused after ${sessionTimes.map((t, n) => `${instances[n]!.name} ${Math.round(t)} ms`).join(', ')}`)
      for (const time of [...keyTimes, ...sessionTimes]) expect(time).toBeLessThan(PROPAGATION_MS)
    }),
    TEST_TIMEOUT_MS,
  )

  test('a component update sent to any instance reaches live viewers on all three', () =>
    diagnosed(async () => {
      const reader = fx.display.readers[0]!
      const web = await webSession(cluster.seed, reader, { displayName: 'Reader' })
      const streams: EventStream[] = []
      try {
        for (const instance of instances) streams.push(await openEventStream(`${instance.url}/pages/${fx.display.pageName}/events`, { cookie: `wt_session=${web.token}` }))
        const componentId = fx.display.components.horizontalBox
        const latencies: string[] = []
        for (const [n, sender] of instances.entries()) {
          const value = `live via ${sender.name} ${Math.random().toString(36).slice(2, 8)}`
          const data = { ...SAMPLE_DATA.horizontalBox, middleText: { ...SAMPLE_DATA.horizontalBox.middleText, value } }
          const sent = performance.now()
          await expectCall(sender, 200, 'POST', '/api/component', { body: { componentId, apiKey: fx.display.creator.displayApiKey, timestamp: 2_000_000_000 + n, data } })
          const received = await Promise.all(streams.map((stream) => stream.waitFor((e) => e.event === 'component' && e.data.id === componentId && e.data.data?.middleText?.value === value, 3000)))
          latencies.push(`from ${sender.name}: ${received.map((e, i) => `${instances[i]!.name} ${e ? `${Math.round(e.receivedAt - sent)} ms` : 'NOT RECEIVED'}`).join(', ')}`)
          for (const event of received) {
            expect(event).not.toBeNull()
            expect(event!.data).toMatchObject({ id: componentId, type: 'horizontalBox', data })
            expect(event!.data.html).toContain(value)
            expect(event!.receivedAt - sent).toBeLessThan(2000)
          }
        }
        console.log(`live events (POST sent → event on each stream): ${latencies.join('; ')}`)
      } finally {
        for (const stream of streams) stream.close()
      }
    }),
    TEST_TIMEOUT_MS,
  )

  test('messages sent through different instances reach each device exactly once though every instance runs workers', () =>
    diagnosed(async () => {
      const { display } = fx
      const recipients: TestUser[] = [display.creator, ...display.readers]
      const tokens: string[] = []
      const begun = performance.now()
      for (const [u, user] of recipients.entries()) {
        const session = await signIn(instances[u % INSTANCES]!, user)
        for (let d = 0; d < 3; d++) {
          const token = `scale-${u}-${d}:APA91b${Math.random().toString(36).slice(2)}`
          await expectCall(instances[(u + d) % INSTANCES]!, 201, 'POST', '/api/devices', { bearer: session, body: { token, platform: d === 2 ? 'ios' : 'android' } })
          tokens.push(token)
        }
      }
      const messages = await Promise.all(
        Array.from({ length: 6 }, async (_, m) => {
          const via = instances[m % INSTANCES]!
          const text = `scale message ${m} via ${via.name}`
          const sent = await expectCall(via, 200, 'POST', '/api/message', { body: { apiKey: display.creator.displayApiKey, pageName: display.pageName, message: text } })
          return { id: sent.headers.get('x-message-id')!, text, via: via.name, sentAt: performance.now() }
        }),
      )
      const ids = new Set(messages.map((m) => m.id))
      const registered = since(begun)
      const ours = () => cluster.fcm.sends.filter((send) => ids.has(send.message.data?.messageId ?? ''))
      const expected = messages.length * tokens.length
      const started = performance.now()
      while (ours().filter((s) => s.status === 200).length < expected && performance.now() - started < (process.env.TEST_CITUS_URL ? 30_000 : 12_000)) await Bun.sleep(20)
      const allDeliveredMs = since(started)
      // Each send follows a claim, and a claim raises `attempts`: once every delivery is `sent` after
      // exactly one claim, no worker holds one or can take one again, so no duplicate is still to come.
      const deliveries = () =>
        queryText<{ settled: string; total: string }>(
          cluster.database.db,
          `select count(*) filter (where state = 'sent' and attempts = 1) as settled, count(*) as total from deliveries where message_id = any($1::uuid[])`,
          [[...ids]],
        ).then(([row]) => ({ settled: Number(row!.settled), total: Number(row!.total) }))
      let outbox = await deliveries()
      while (outbox.settled < expected && performance.now() - started < (process.env.TEST_CITUS_URL ? 40_000 : 15_000)) {
        await Bun.sleep(20)
        outbox = await deliveries()
      }
      expect(outbox).toEqual({ settled: expected, total: expected })
      const sends = ours()
      const bySender: Record<string, number> = {}
      for (const send of sends) {
        const sender = send.authorization?.replace('Bearer test-access-token-', '') ?? '?' // instance.ts names each instance's token
        bySender[sender] = (bySender[sender] ?? 0) + 1
      }
      console.log(`push: ${messages.length} messages × ${tokens.length} devices; ${sends.length} sends received (all accepted within ${allDeliveredMs} ms of the last POST, all settled ${since(started)} ms after it; sign-ins, devices and POSTs took ${registered} ms), by sending instance ${JSON.stringify(bySender)}`)

      const counts = new Map<string, number>()
      for (const send of sends) {
        const pair = `${send.message.data?.messageId} ${send.token}`
        counts.set(pair, (counts.get(pair) ?? 0) + 1)
      }
      const wrong: string[] = []
      for (const message of messages)
        for (const token of tokens) {
          const sent = counts.get(`${message.id} ${token}`) ?? 0
          if (sent !== 1) wrong.push(`message ${message.id} (via ${message.via}) → ${token}: ${sent} sends`)
        }
      expect(wrong).toEqual([])
      expect(sends).toHaveLength(expected)
      expect(sends.every((send) => send.status === 200 && tokens.includes(send.token))).toBe(true)
      for (const message of messages) {
        const send = sends.find((s) => s.message.data?.messageId === message.id)!
        expect(send.message.notification).toEqual({ title: display.pageName, body: message.text })
      }
      for (const [m, message] of messages.entries()) {
        const report = await expectCall(instances[(m + 1) % INSTANCES]!, 200, 'GET', `/api/v1/pages/${display.pageId}/messages/${message.id}`, { bearer: display.creatorKey })
        expect(report.body.data).toMatchObject({ targeted: tokens.length, sent: tokens.length, pending: 0, failed: 0, pruned: 0 })
      }
    }),
    TEST_TIMEOUT_MS,
  )

  test('the mixed load through all three instances met no server error', () =>
    diagnosed(async () => {
      const report = await load!.stop()
      load = undefined
      console.log(`mixed load: ${report.total} operations in ${report.seconds.toFixed(1)} s, per instance ${JSON.stringify(report.perInstance)}`)
      for (const [name, op] of Object.entries(report.operations)) console.log(`  ${name}: ${op.count} × ${JSON.stringify(op.statuses)}, p50 ${op.p50Ms} ms, max ${op.maxMs} ms`)
      expect(report.failures.slice(0, 20)).toEqual([])
      expect(report.serverErrors).toBe(0)
      expect(Object.keys(report.operations)).toHaveLength(12)
      for (const instance of instances) expect(report.perInstance[instance.name]).toBeGreaterThan(0)
    }),
    TEST_TIMEOUT_MS,
  )
})
