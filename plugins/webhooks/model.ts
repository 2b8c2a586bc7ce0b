/** Request and response models of webhooks and their deliveries. */
import { t } from 'elysia'
import { Integer, Timestamp, UuidString } from '../../src/http/models'
import { cursorParameter, pageQuery } from '../../src/http/pagination'
import { URL_MAX } from '../../src/net/targets'

export const DESCRIPTION_MAX = 500
export const EVENTS_MAX = 50

const EventName = t.String({
  minLength: 1,
  maxLength: 100,
  description: 'An event type (`work_item.created`, `project_member.deleted`, `content_order.updated`…, listed in the API description), all of one resource (`work_item.*`), or `*` for all.',
})

export const Webhook = t.Object(
  {
    id: UuidString(),
    url: t.String({ description: 'Where events are POSTed.' }),
    description: t.Union([t.String(), t.Null()]),
    events: t.Array(t.String()),
    projectId: t.Union([UuidString(), t.Null()], { description: "Only this project's events; null: every project the creator can see." }),
    enabled: t.Boolean(),
    disabledReason: t.Union([t.Literal('failing'), t.Null()], { description: '`failing`: disabled by the service after failing for 24 hours without a success.' }),
    createdBy: UuidString({ description: 'The administrator whose project visibility decides which events it receives.' }),
    lastSuccessAt: t.Union([Timestamp(), t.Null()]),
    failingSince: t.Union([Timestamp(), t.Null()], { description: 'The first failure since the last success.' }),
    previousSecretExpiresAt: t.Union([Timestamp(), t.Null()], { description: 'After a rotation: until when the previous secret also signs.' }),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Webhook' },
)

export const WebhookWithSecret = t.Object(
  { ...Webhook.properties, secret: t.String({ description: 'The signing secret (`whsec_` + base64), shown this once.' }) },
  { title: 'WebhookWithSecret' },
)

export const WebhookInput = t.Object(
  {
    url: t.String({ minLength: 1, maxLength: URL_MAX, description: 'An http(s) URL; private and loopback targets are refused unless the operator allows them.' }),
    events: t.Array(EventName, { minItems: 1, maxItems: EVENTS_MAX, uniqueItems: true }),
    projectId: t.Optional(UuidString({ description: "Only this project's events (you must see the project)." })),
    description: t.Optional(t.String({ maxLength: DESCRIPTION_MAX })),
  },
  { additionalProperties: false },
)

export const WebhookPatch = t.Object(
  {
    url: t.Optional(WebhookInput.properties.url),
    events: t.Optional(WebhookInput.properties.events),
    enabled: t.Optional(t.Boolean({ description: 'Enabling a webhook the service disabled starts its failure clock again.' })),
    description: t.Optional(t.Union([t.String({ maxLength: DESCRIPTION_MAX }), t.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const DeliveryStatus = t.Union([t.Literal('pending'), t.Literal('succeeded'), t.Literal('failed')])

export const Delivery = t.Object(
  {
    id: UuidString(),
    webhookId: UuidString(),
    eventId: UuidString({ description: 'The `webhook-id` header: the same on every attempt and redelivery.' }),
    eventType: t.String(),
    projectId: t.Union([UuidString(), t.Null()]),
    status: DeliveryStatus,
    attempts: Integer(),
    lastResponseStatus: t.Union([Integer(), t.Null()], { description: 'The HTTP status of the last attempt (null: no answer).' }),
    lastDurationMs: t.Union([Integer(), t.Null()]),
    lastError: t.Union([t.String(), t.Null()]),
    lastAttemptAt: t.Union([Timestamp(), t.Null()]),
    nextAttemptAt: t.Union([Timestamp(), t.Null()], { description: 'When it is tried next (pending only; it may also wait for earlier events of its project).' }),
    deliveredAt: t.Union([Timestamp(), t.Null()]),
    createdAt: Timestamp(),
  },
  { title: 'WebhookDelivery' },
)

export const DeliveryDetail = t.Object(
  {
    ...Delivery.properties,
    payload: t.Unknown({ description: 'The event as it is sent: `{type, id, occurredAt, organizationId, projectId, actor, data, previous?}` (`previous`: an update\'s old values of the fields that changed).' }),
    lastResponseBody: t.Union([t.String(), t.Null()], { description: 'The start (2 KiB) of the last answer.' }),
  },
  { title: 'WebhookDeliveryDetail' },
)

export const DeliveryQuery = t.Object({ ...pageQuery(), ...cursorParameter(), status: t.Optional(DeliveryStatus) })

export const WebhookParams = t.Object({ webhookId: t.String() })
export const DeliveryParams = t.Object({ webhookId: t.String(), deliveryId: t.String() })

export type WebhookResource = typeof Webhook.static
export type WebhookInput = typeof WebhookInput.static
export type WebhookPatch = typeof WebhookPatch.static
export type DeliveryResource = typeof Delivery.static
export type DeliveryQuery = typeof DeliveryQuery.static
