/**
 * A delivery whose target is refused when it is sent (private targets are refused unless
 * `webhooks.allowPrivateTargets`): the sender answers a failed attempt naming the reason, for an
 * address literal in any spelling as for a name, and a delivery queued while private targets were
 * allowed follows the normal failure path once they are not (retried, then failed and the webhook
 * disabled) instead of staying pending forever.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createSender } from '../../plugins/webhooks/sender'
import { eventually, startTestService, type TestService } from '../helpers/service'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'
import { timeLimit, sqlOn } from '../helpers/database'

describe('the connection itself', () => {
  let receiver: WebhookReceiver
  beforeAll(async () => {
    receiver = await startWebhookReceiver()
  })
  afterAll(() => receiver?.close())

  test('a sender without allowPrivateTargets refuses a loopback receiver in every spelling, as a failed attempt naming the reason; with it, the same URL is reached', async () => {
    const strictSender = createSender({ timeoutMs: 2000, allowPrivateTargets: false })
    const laxSender = createSender({ timeoutMs: 2000, allowPrivateTargets: true })
    try {
      const message = { id: 'msg_1', body: '{}', secrets: [`whsec_${Buffer.alloc(32, 1).toString('base64')}`] }
      for (const host of ['127.0.0.1', '[::ffff:7f00:1]', '[0:0:0:0:0:ffff:7f00:1]', '[::ffff:0:7f00:1]', '[64:ff9b:1::7f00:1]', '[::7f00:1]', 'localhost']) {
        const url = `http://${host}:${receiver.port}/refused`
        const attempt = await strictSender.send({ ...message, url })
        expect(attempt).toMatchObject({ ok: false, status: null, body: null })
        expect(`${host}: ${attempt.error}`).toContain('allowPrivateTargets is off')
      }
      expect(receiver.received).toHaveLength(0)
      const allowed = await laxSender.send({ ...message, url: `http://127.0.0.1:${receiver.port}/allowed` })
      expect(allowed).toMatchObject({ ok: true, status: 200 })
      expect(receiver.received.map((request) => request.path)).toEqual(['/allowed'])
    } finally {
      strictSender.close()
      laxSender.close()
    }
  })
})

describe('a delivery to a private target after allowPrivateTargets was turned off', () => {
  const services: TestService[] = []
  let receiver: WebhookReceiver
  afterAll(async () => {
    for (const service of services.reverse()) await service.stop()
    await receiver?.close()
  })

  test('fails like any attempt (reason recorded, retried), then is failed and the webhook disabled past failAfterHours; the receiver gets nothing', async () => {
    receiver = await startWebhookReceiver()
    // Made while private targets were allowed (no workers there)…
    const before = await startTestService({ config: { webhooks: { allowPrivateTargets: true, workers: false } } })
    services.push(before)
    const organization = await before.createOrganization()
    const admin = await before.createUser(organization, 'administrator')
    const key = (await before.createKey(admin.id, ['webhooks:read', 'webhooks:write', 'audit_logs:read'])).secret
    const created = await before.request('POST', '/api/v1/webhooks', { key, body: { url: receiver.urlFor('/private'), events: ['*'] } })
    expect(created.status).toBe(201)
    const hook = created.body.data
    const ping = await before.request('POST', `/api/v1/webhooks/${hook.id}/test`, { key })
    expect(ping.status).toBe(201)

    // …delivered by an instance where they no longer are.
    const after = await startTestService({
      database: before.database,
      config: { webhooks: { allowPrivateTargets: false, pollIntervalMs: 50, leaseSeconds: 15, retryDelaysSeconds: [0.2], retryEverySeconds: 0.2 } },
    })
    services.push(after)
    const sql = sqlOn(after)
    const location = `/api/v1/webhooks/${hook.id}/deliveries/${ping.body.data.id}`

    const retried = await eventually(async () => {
      const delivery = (await after.request('GET', location, { key })).body.data
      if (delivery.attempts < 2) throw new Error(`attempts so far: ${delivery.attempts}`)
      return delivery
    }, 15_000)
    expect(retried).toMatchObject({ status: 'pending', lastResponseStatus: null, deliveredAt: null })
    expect(retried.lastError).toContain('allowPrivateTargets is off')
    expect(retried.nextAttemptAt).not.toBeNull()
    const failing = (await after.request('GET', `/api/v1/webhooks/${hook.id}`, { key })).body.data
    expect(failing.failingSince).not.toBeNull()

    // A day of failures, as far as the clocks know: the next attempt fails the delivery and disables the webhook (both
    // clocks in one statement, so a retry recorded meanwhile cannot disable the webhook and leave the delivery pending).
    await sql(
      `with hook as (update webhooks set failing_since = now() - interval '25 hours' where organization_id = $1 and id = $2)
        update webhook_deliveries set first_attempt_at = now() - interval '25 hours' where organization_id = $1 and webhook_id = $2`,
      [organization, hook.id],
    )
    const failed = await eventually(async () => {
      const delivery = (await after.request('GET', location, { key })).body.data
      if (delivery.status !== 'failed') throw new Error(`still ${delivery.status}`)
      return delivery
    }, 15_000)
    expect(failed).toMatchObject({ status: 'failed', nextAttemptAt: null })
    expect(failed.lastError).toContain('allowPrivateTargets is off')
    const disabled = (await after.request('GET', `/api/v1/webhooks/${hook.id}`, { key })).body.data
    expect(disabled).toMatchObject({ enabled: false, disabledReason: 'failing' })
    const audit = await after.request('GET', '/api/v1/audit-logs?action=webhook.disabled', { key })
    expect(audit.body.data.map((record: { resourceId: string }) => record.resourceId)).toEqual([hook.id])
    expect(receiver.received).toHaveLength(0)
  }, timeLimit(40_000))
})
