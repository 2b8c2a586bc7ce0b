/**
 * Prometheus metrics: `GET /metrics` exists only with `server.metricsToken` and answers
 * only that Bearer token; it reports requests by route pattern, method and status, the database
 * pool, the push outbox depth and display calls, each plugin's metrics only while it is enabled.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture } from '../helpers/display-fixture'
import { startFakeFcm, type FakeFcm } from '../helpers/fake-fcm'
import { startTestService, type TestService } from '../helpers/service'
import { signIn } from '../helpers/sessions'
import { queryText } from '../../src/db'

const TOKEN = 'metrics-token-0123456789abcdef'

let fcm: FakeFcm
let api: TestService
let fx: DisplayFixture

beforeAll(async () => {
  fcm = await startFakeFcm(() => undefined, { redirect: true })
  api = await startTestService({
    provide: fcm.provide,
    // No outbox workers: what a message queues stays pending for the scrape to see.
    config: { server: { metricsToken: TOKEN }, push: { workers: false } },
  })
  fx = await createDisplayFixture(api)
})
afterAll(async () => {
  await api.stop()
  await fcm.close()
})

/** /metrics is not in the OpenAPI document (an operator's endpoint), so its answers skip the contract check. */
const scrape = (service: TestService, token: string | null = TOKEN) =>
  service.request('GET', '/metrics', { unchecked: true, ...(token === null ? {} : { headers: { authorization: `Bearer ${token}` } }) })

/** The value of the sample `name{labels}` in a scrape, or undefined. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((each) => each.startsWith(`${name}${labels ? `{${labels}}` : ''} `))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1))
}

describe('GET /metrics', () => {
  test('does not exist without server.metricsToken', async () => {
    const plain = await startTestService({ plugins: ['auth'] })
    try {
      const response = await plain.request('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })
      expect(response.status).toBe(404)
      expect(response.body.errors[0].code).toBe('NOT_FOUND')
    } finally {
      await plain.stop()
    }
  })

  test('refuses a missing or wrong token with 401', async () => {
    for (const token of [null, 'wrong-token-0123456789abcdef', `${TOKEN}x`, TOKEN.slice(0, -1)]) {
      const response = await scrape(api, token)
      expect(response.status).toBe(401)
      expect(response.headers.get('www-authenticate')).toStartWith('Bearer')
      expect(response.body.errors[0].code).toBe('UNAUTHORIZED')
      expect(response.text).not.toContain('worktrack_')
    }
    const basic = await api.request('GET', '/metrics', { unchecked: true, headers: { authorization: `Basic ${btoa(`x:${TOKEN}`)}` } })
    expect(basic.status).toBe(401)
  })

  test('counts requests by route pattern, method and status, with their latency', async () => {
    const before = await scrape(api)
    expect(before.status).toBe(200)
    expect(before.headers.get('content-type')).toStartWith('text/plain; version=0.0.4')
    const health = (text: string) => sample(text, 'worktrack_http_requests_total', 'route="/health",method="GET",status="200"') ?? 0
    const already = health(before.text)
    for (let i = 0; i < 3; i++) expect((await api.request('GET', '/health')).status).toBe(200)
    await api.request('GET', `/api/v1/pages/${fx.pageId}`, { key: fx.creatorKey })
    await api.request('GET', '/no/such/route/unmatched-path-marker')
    const { text } = await scrape(api)
    expect(health(text)).toBe(already + 3)
    expect(sample(text, 'worktrack_http_request_duration_seconds_count', 'route="/health",method="GET",status="200"')).toBe(already + 3)
    expect(sample(text, 'worktrack_http_request_duration_seconds_bucket', 'route="/health",method="GET",status="200",le="+Inf"')).toBe(already + 3)
    expect(sample(text, 'worktrack_http_requests_total', 'route="/api/v1/pages/:pageId",method="GET",status="200"')).toBe(1)
    expect(sample(text, 'worktrack_http_requests_total', 'route="(unmatched)",method="GET",status="404"')).toBeGreaterThanOrEqual(1)
    // The scrapes themselves are requests too (the 401s of the test before).
    expect(sample(text, 'worktrack_http_requests_total', 'route="/metrics",method="GET",status="401"')).toBe(5)
    expect(text).not.toContain(fx.pageId)
    expect(text).not.toContain('unmatched-path-marker')
  })

  test('reports the database pool', async () => {
    const { text } = await scrape(api)
    // The test databases: PGlite, or a postgres.js pool of 10 (tests/helpers/database.ts).
    expect(sample(text, 'worktrack_database_pool_max_connections')).toBe(api.database.kind === 'pglite' ? 1 : 10)
    expect(sample(text, 'worktrack_http_requests_in_flight')).toBe(1)
  })

  test("reports the process: CPU, resident memory and its peak, heap, event-loop lag", async () => {
    // Some work between two scrapes, so CPU time and the event-loop monitor have something to show.
    const first = (await scrape(api)).text
    for (let i = 0; i < 20; i++) await api.request('GET', '/health')
    const { text } = await scrape(api)
    const rss = sample(text, 'process_resident_memory_bytes')!
    expect(rss).toBeGreaterThan(10 * 1024 * 1024)
    // The peak is at least what is resident now (both in bytes).
    expect(sample(text, 'worktrack_process_peak_resident_memory_bytes')!).toBeGreaterThanOrEqual(rss * 0.9)
    expect(sample(text, 'process_cpu_seconds_total')!).toBeGreaterThan(0)
    expect(sample(text, 'process_cpu_seconds_total')!).toBeGreaterThanOrEqual(sample(first, 'process_cpu_seconds_total')!)
    expect(sample(text, 'nodejs_heap_size_used_bytes')!).toBeGreaterThan(0)
    for (const name of ['nodejs_eventloop_lag_seconds', 'nodejs_eventloop_lag_p99_seconds']) {
      const lag = sample(text, name)
      expect(Number.isFinite(lag)).toBe(true)
      expect(lag!).toBeGreaterThanOrEqual(0)
    }
  })

  test('counts display calls by outcome', async () => {
    const outcome = (text: string, call: string, name: string) => sample(text, 'worktrack_display_calls_total', `call="${call}",outcome="${name}"`) ?? 0
    const before = (await scrape(api)).text
    const update = { componentId: fx.components.verticalBox, apiKey: fx.creator.displayApiKey, timestamp: 2_000_000_000, data: SAMPLE_DATA.verticalBox }
    expect((await fx.post(update)).status).toBe(200)
    expect((await fx.post({ ...update, timestamp: 1_000_000_000 })).status).toBe(409)
    expect((await fx.post({ ...update, apiKey: `dpk_${'A'.repeat(42)}` })).status).toBe(401)
    const after = (await scrape(api)).text
    expect(outcome(after, 'component', 'ok') - outcome(before, 'component', 'ok')).toBe(1)
    expect(outcome(after, 'component', 'staleUpdate') - outcome(before, 'component', 'staleUpdate')).toBe(1)
    expect(outcome(after, 'component', 'invalidApiKey') - outcome(before, 'component', 'invalidApiKey')).toBe(1)
  })

  test("reports each queue's depth and the age of its oldest due item, and counts the message call", async () => {
    const idle = (await scrape(api)).text
    expect(sample(idle, 'worktrack_outbox_depth', 'queue="push"')).toBe(0)
    expect(sample(idle, 'worktrack_outbox_oldest_due_seconds', 'queue="push"')).toBe(0)
    expect(sample(idle, 'worktrack_outbox_depth', 'queue="webhooks"')).toBe(0)
    const session = await signIn(api, fx.reader)
    for (const token of ['metrics-a:APA91bxyz', 'metrics-b:APA91bxyz'])
      expect((await api.request('POST', '/api/devices', { body: { token, platform: 'android' }, headers: { authorization: `Bearer ${session}` } })).status).toBe(201)
    const sent = await api.request('POST', '/api/message', { body: { apiKey: fx.creator.displayApiKey, pageName: fx.pageName, message: 'Disk usage above 90%' } })
    expect(sent.status).toBe(200)
    // Due a minute ago (moved in SQL, not waited for): the age says how far behind the queue is.
    await queryText(api.service.core.db, `update deliveries set next_attempt_at = now() - interval '60 seconds' where state = 'pending'`, [])
    const { text } = await scrape(api)
    expect(sample(text, 'worktrack_outbox_depth', 'queue="push"')).toBe(2)
    expect(sample(text, 'worktrack_outbox_oldest_due_seconds', 'queue="push"')).toBeGreaterThanOrEqual(60)
    expect(sample(text, 'worktrack_outbox_oldest_due_seconds', 'queue="push"')).toBeLessThan(120)
    expect(sample(text, 'worktrack_display_calls_total', 'call="message",outcome="ok"')).toBe(1)
  })

  test('a disabled plugin exports none of its metrics', async () => {
    const withoutPush = await startTestService({ plugins: ['auth', 'teams', 'display'], config: { server: { metricsToken: TOKEN } } })
    try {
      const { status, text } = await scrape(withoutPush)
      expect(status).toBe(200)
      expect(text).not.toContain('worktrack_push_')
      expect(text).not.toContain('queue="push"')
      expect(text).toContain('# TYPE worktrack_display_calls_total counter')
      // Its own registry: the other service's requests are not here.
      expect(sample(text, 'worktrack_http_requests_total', 'route="/health",method="GET",status="200"')).toBeUndefined()
    } finally {
      await withoutPush.stop()
    }
  })
})
