/** API v1 routes of webhooks over the bound webhook service. */
import { Elysia } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { Deleted } from '../../src/http/models'
import { cursorParameter, pageQuery, pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import { t } from 'elysia'
import { Delivery, DeliveryDetail, DeliveryParams, DeliveryQuery, Webhook, WebhookInput, WebhookParams, WebhookPatch, WebhookWithSecret } from './model'
import type { WebhookService } from './service'

const tags = ['Webhooks']

const MANUAL_LIMITS =
  '409 when the webhook is disabled. Test pings and redeliveries are bounded per webhook: past `webhooks.manualDeliveriesPerMinute` (default 10) of them queued within a minute, the answer is 429 `RATE_LIMITED` with `Retry-After` (seconds until one more fits), whoever asks.'

export function webhookRoutes(v1: V1Kit, webhooks: WebhookService) {
  return new Elysia({ name: 'webhooks', prefix: '/api/v1/webhooks' })
    .use(v1)
    .get('', ({ actor, query }) => webhooks.list(actor, pageRequest(query)), {
      scopes: ['webhooks:read'],
      query: t.Object({ ...pageQuery(), ...cursorParameter() }),
      response: responses(PageEnvelope(Webhook)),
      detail: { tags, summary: "The organization's webhooks, oldest first (administrators: every webhook's configuration, never its secret)." },
    })
    .post(
      '',
      ({ actor, body, idempotency }) => webhooks.create(actor, body, idempotency),
      {
        scopes: ['webhooks:write'],
        body: WebhookInput,
        response: responses(Envelope(WebhookWithSecret), { status: 201, extra: [409, 422] }),
        detail: { tags, summary: 'Subscribe a URL to events (administrators); the signing `secret` is returned this once. 409 past the per-organization limit.' },
      },
    )
    .get('/:webhookId', ({ actor, params }) => webhooks.get(actor, params.webhookId), {
      scopes: ['webhooks:read'],
      params: WebhookParams,
      response: responses(Envelope(Webhook)),
      detail: { tags, summary: 'A webhook (administrators).' },
    })
    .patch('/:webhookId', ({ actor, params, body }) => webhooks.update(actor, params.webhookId, body), {
      scopes: ['webhooks:write'],
      params: WebhookParams,
      body: WebhookPatch,
      response: responses(Envelope(Webhook)),
      detail: { tags, summary: "Change a webhook's URL, events, description or `enabled` (its creator or a superadministrator; other administrators: 403)." },
    })
    .delete('/:webhookId', ({ actor, params }) => webhooks.delete(actor, params.webhookId), {
      scopes: ['webhooks:write'],
      params: WebhookParams,
      response: responses(Envelope(Deleted)),
      detail: { tags, summary: 'Delete a webhook and its deliveries (its creator or a superadministrator; other administrators: 403).' },
    })
    .post('/:webhookId/rotate-secret', ({ actor, params, idempotency }) => webhooks.rotateSecret(actor, params.webhookId, idempotency), {
      scopes: ['webhooks:write'],
      params: WebhookParams,
      response: responses(Envelope(WebhookWithSecret), { extra: [409, 422] }),
      detail: {
        tags,
        summary: 'A new signing secret, returned this once; the previous one also signs (a second `v1,` signature) for 24 hours (its creator or a superadministrator; other administrators: 403).',
      },
    })
    .post(
      '/:webhookId/test',
      ({ actor, params, idempotency }) => webhooks.test(actor, params.webhookId, idempotency),
      {
        scopes: ['webhooks:write'],
        params: WebhookParams,
        response: responses(Envelope(Delivery), { status: 201, extra: [409, 422] }),
        detail: {
          tags,
          summary: 'Queue a `ping` event (data: the webhook) to this webhook; the delivery is returned (its creator or a superadministrator; other administrators: 403).',
          description: MANUAL_LIMITS,
        },
      },
    )
    .get('/:webhookId/deliveries', ({ actor, params, query }) => webhooks.deliveries(actor, params.webhookId, query, pageRequest(query)), {
      scopes: ['webhooks:read'],
      params: WebhookParams,
      query: DeliveryQuery,
      response: responses(PageEnvelope(Delivery)),
      detail: {
        tags,
        summary: "A webhook's deliveries, newest first: status, attempts, last response status and duration, next attempt; only those of projects you can see (and pings; a superadministrator sees all).",
      },
    })
    .get('/:webhookId/deliveries/:deliveryId', ({ actor, params }) => webhooks.delivery(actor, params.webhookId, params.deliveryId), {
      scopes: ['webhooks:read'],
      params: DeliveryParams,
      response: responses(Envelope(DeliveryDetail)),
      detail: { tags, summary: 'A delivery with the payload it sends and the start of the last answer (404 when its project is one you cannot see).' },
    })
    .post(
      '/:webhookId/deliveries/:deliveryId/redeliver',
      ({ actor, params, idempotency }) => webhooks.redeliver(actor, params.webhookId, params.deliveryId, idempotency),
      {
        scopes: ['webhooks:write'],
        params: DeliveryParams,
        response: responses(Envelope(Delivery), { status: 201, extra: [409, 422] }),
        detail: {
          tags,
          summary: "Send a delivery's event again: a new delivery with the same `webhook-id` (its creator or a superadministrator; other administrators: 403).",
          description: MANUAL_LIMITS,
        },
      },
    )
}
