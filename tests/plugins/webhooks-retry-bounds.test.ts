/**
 * Webhook retry delays and the failure window come from the configuration, which sets them no
 * upper bound: however large they are, a failed attempt is recorded (its retry due within a year,
 * the longest wait the worker gives), never left leased to be sent again and again. The
 * configuration is absurd on purpose; the receiver always fails.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { queryText } from '../../src/db'
import { eventually, startTestService, type TestService } from '../helpers/service'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'

const ABSURD = 1e13
const YEAR_SECONDS = 366 * 86_400

let api: TestService
let receiver: WebhookReceiver

beforeAll(async () => {
  receiver = await startWebhookReceiver(() => 500)
  api = await startTestService({
    config: {
      webhooks: { allowPrivateTargets: true, pollIntervalMs: 50, leaseSeconds: 15, retryDelaysSeconds: [ABSURD], retryEverySeconds: ABSURD, failAfterHours: ABSURD },
      plugins: { disabled: ['alerts'] },
    },
  })
})
afterAll(async () => {
  await api.stop()
  await receiver.close()
})

test('a failed attempt is recorded, its retry due within a year, whatever delay and window are configured; it is sent once', async () => {
  const organizationId = await api.createOrganization()
  const admin = await api.createUser(organizationId, 'administrator')
  const key = (await api.createKey(admin.id, ['webhooks:read', 'webhooks:write'])).secret
  const created = await api.request('POST', '/api/v1/webhooks', { key, body: { url: receiver.urlFor('/absurd'), events: ['*'] } })
  expect(created.status).toBe(201)
  const ping = await api.request('POST', `/api/v1/webhooks/${created.body.data.id}/test`, { key })
  expect(ping.status).toBe(201)

  const recorded = await eventually(async () => {
    const [row] = await queryText<{ status: string; attempts: number; leased: boolean; waitSeconds: number; lastStatus: number }>(
      api.service.core.db,
      `select status, attempts, lease_until is not null as leased, extract(epoch from next_attempt_at - now())::float8 as "waitSeconds",
        last_response_status as "lastStatus" from webhook_deliveries where organization_id = $1 and id = $2`,
      [organizationId, ping.body.data.id],
    )
    expect(row).toMatchObject({ status: 'pending', attempts: 1, leased: false, lastStatus: 500 })
    return row!
  }, 10_000)
  expect(recorded.waitSeconds).toBeGreaterThan(YEAR_SECONDS - 60)
  // The read's now() is its transaction's start, which on a busy server can precede the recording
  // transaction's now() by the time the read waits between its Parse and its snapshot (50 ms seen):
  // a second's slack, against waits that would otherwise be years or overflow.
  expect(recorded.waitSeconds).toBeLessThanOrEqual(YEAR_SECONDS + 1)
  expect(receiver.received.filter((request) => request.path === '/absurd')).toHaveLength(1)
})
