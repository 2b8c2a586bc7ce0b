/**
 * The push plugin's API v1 routes: a page's messages with their delivery reports (and cancelling
 * one), and the caller's push preferences. Its display API routes are in routes.ts.
 */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { Timestamp, UuidString } from '../../src/http/models'
import { cursorParameter, pageQuery, pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import type { MessageService } from './messages'
import type { PreferenceSection } from './api'
import { preferencesModel, type Preferences, type PreferenceService } from './preferences'

const tags = ['Dashboards']
const MessageReport = t.Object(
  {
    id: UuidString({ description: 'The X-Message-Id of POST /api/message.' }),
    pageId: UuidString(),
    pageName: t.String({ description: 'The page name the message was sent to.' }),
    title: t.String({ description: "The notification title: the page's name, or an alert's `⚠ <component title>`." }),
    message: t.String({ description: 'The notification body.' }),
    sentBy: t.Union([UuidString(), t.Null()], { description: "The display account's user." }),
    createdAt: Timestamp(),
    priority: t.Union([t.Literal('high'), t.Literal('normal')]),
    ttlSeconds: t.Union([t.Integer({ minimum: 0 }), t.Null()], { description: 'null: the push services\' default (4 weeks).' }),
    collapseKey: t.Union([t.String(), t.Null()]),
    sendAt: t.Union([Timestamp(), t.Null()], { description: 'When a scheduled message is due; null: sent at once.' }),
    critical: t.Boolean({ description: 'Sent through quiet hours.' }),
    cancelledAt: t.Union([Timestamp(), t.Null()]),
    targeted: t.Integer({ minimum: 0, description: 'Devices the message was addressed to (each once; none of users who muted the page). Each is in exactly one of the states below.' }),
    pending: t.Integer({ minimum: 0, description: 'Not yet sent: scheduled, going out, or waiting to be retried.' }),
    held: t.Integer({ minimum: 0, description: "Waiting for the end of its user's quiet hours." }),
    sent: t.Integer({ minimum: 0, description: 'Accepted by FCM; with push.sender "log", written to the service log instead.' }),
    failed: t.Integer({ minimum: 0, description: 'Refused for good (a 4xx other than a dead token), or still failing after the last retry.' }),
    pruned: t.Integer({ minimum: 0, description: 'The device was gone: the push service said so (UNREGISTERED / invalid; the device was removed), or it was removed or registered to someone else before the push went out.' }),
    expired: t.Integer({ minimum: 0, description: 'Held by quiet hours (or retried) until its ttlSeconds ran out: dropped.' }),
    cancelled: t.Integer({ minimum: 0, description: 'Not sent: the message was cancelled, or its user muted the page, was deactivated or lost access to the page before it went out.' }),
    undelivered: t.Integer({ minimum: 0, description: 'Recorded while no FCM sender was configured; never sent.' }),
    delivered: t.Integer({ minimum: 0, description: 'Users whose app reported the message delivered (POST /api/devices/receipts), each once.' }),
    opened: t.Integer({ minimum: 0, description: 'Users whose app reported the message opened, each once.' }),
  },
  { title: 'MessageReport' },
)

export function messageReportRoutes(v1: V1Kit, messages: MessageService) {
  return new Elysia({ name: 'push-reports', prefix: '/api/v1/pages' })
    .use(v1)
    .get('/:pageId/messages', ({ actor, params, query }) => messages.reports(actor, params.pageId, pageRequest(query)), {
      scopes: ['dashboards:read'],
      params: t.Object({ pageId: t.String() }),
      query: t.Object({ ...pageQuery(), ...cursorParameter() }),
      response: responses(PageEnvelope(MessageReport)),
      detail: { tags, summary: 'Messages sent to a page you can see (POST /api/message), newest first, with their delivery counts.' },
    })
    .get('/:pageId/messages/:messageId', ({ actor, params }) => messages.report(actor, params.pageId, params.messageId), {
      scopes: ['dashboards:read'],
      params: t.Object({ pageId: t.String(), messageId: t.String() }),
      response: responses(Envelope(MessageReport)),
      detail: { tags, summary: 'One message to a page you can see, with its options and delivery result: how many devices are in each state, and the receipts.' },
    })
    .delete('/:pageId/messages/:messageId', ({ actor, params }) => messages.cancel(actor, params.pageId, params.messageId), {
      scopes: ['dashboards:write'],
      params: t.Object({ pageId: t.String(), messageId: t.String() }),
      response: responses(Envelope(MessageReport), { extra: [409] }),
      detail: {
        tags,
        summary: "Cancel a message none of whose deliveries has gone out (a scheduled one, or one held by quiet hours): its pending and held deliveries become cancelled. The page's editors. 409 once one has gone out; cancelling again answers the same report.",
      },
    })
}

/** `GET/PUT /api/v1/users/me/notifications`: the caller's push preferences, by API key or mobile session. */
export function preferenceRoutes(v1: V1Kit, preferences: PreferenceService, sections: readonly PreferenceSection[]) {
  const answer = preferencesModel(sections, false)
  const input = preferencesModel(sections, true)
  const named = sections.map((section) => ` \`${section.key}\``).join(',')
  return new Elysia({ name: 'push-preferences', prefix: '/api/v1/users/me' })
    .use(v1)
    .get('/notifications', ({ actor }) => preferences.get(actor), {
      signedIn: true,
      response: responses(Envelope(answer)),
      detail: { tags: ['Users'], summary: `Your push preferences: quiet hours and muted pages (none until you set them)${named ? `, and${named}` : ''}.` },
    })
    .put('/notifications', ({ actor, body }) => preferences.put(actor, body as Preferences), {
      signedIn: true,
      body: input,
      response: responses(Envelope(answer)),
      detail: {
        tags: ['Users'],
        summary: `Replace your push preferences. Applies to pushes not yet gone out, scheduled ones included.${named ? ` Of${named}, what the body leaves out stays as it is.` : ''}`,
      },
    })
}
