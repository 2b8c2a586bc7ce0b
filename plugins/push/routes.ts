/**
 * The push plugin's routes: `POST /api/message` and `/api/devices` beside the display API (same
 * answers: JSON `{message, detail, field?}`), and the delivery reports in API v1.
 */
import { Elysia, t } from 'elysia'
import type { Database } from '../../src/db'
import { ApiError } from '../../src/http/errors'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { Timestamp, UuidString } from '../../src/http/models'
import { pageQuery, pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import type { Logger } from '../../src/log'
import type { Sessions } from '../../src/services/auth'
import { displayFailure, displayJson, refusalResponse, requireJson, usageHeaders } from '../display/model'
import { checkDeviceBody, registerDevice, removeDevice } from './devices'
import { getMessageReport, listMessageReports, sendMessage } from './messages'

const bearerToken = (request: Request) => /^Bearer[ ]+(\S+)[ ]*$/i.exec(request.headers.get('authorization') ?? '')?.[1]

export interface PushRouteOptions {
  /** True when an FCM sender is configured (deliveries start `pending`, else `undelivered`). */
  senderOn: boolean
  /** Called after a message is recorded: the local outbox workers look at once. */
  dispatched: () => void
}

export function pushApiRoutes(db: Database, sessions: Sessions, log: Logger, options: PushRouteOptions) {
  /** The signed-in mobile user, or the 401 answer. */
  const session = async (request: Request) => {
    try {
      return (await sessions.authenticate(bearerToken(request), 'mobile')).user
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return displayJson(401, { message: 'invalidSession', detail: error.message }, error.headers)
      throw error
    }
  }

  return new Elysia({ name: 'push-api' })
    .post(
      '/api/message',
      async ({ request, body }) => {
        const refused = requireJson(request, body)
        if (refused) return refused
        try {
          const outcome = await sendMessage(db, body, options.senderOn)
          if (!outcome.ok) return refusalResponse(outcome)
          if (outcome.targeted > 0) options.dispatched()
          return new Response('Message sent successfully', {
            status: 200,
            headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'x-message-id': outcome.messageId, ...usageHeaders(outcome.usage, 200) },
          })
        } catch (error) {
          return displayFailure(error, log)
        }
      },
      { detail: { hide: true } },
    )
    .post(
      '/api/devices',
      async ({ request, body }) => {
        try {
          const user = await session(request)
          if (user instanceof Response) return user
          const refused = requireJson(request, body)
          if (refused) return refused
          const problem = checkDeviceBody(body)
          if (problem) return displayJson(400, problem)
          const { token, platform } = body as { token: string; platform: string }
          const { created, ...device } = await registerDevice(db, user, token, platform)
          return displayJson(created ? 201 : 200, { device })
        } catch (error) {
          return displayFailure(error, log)
        }
      },
      { detail: { hide: true } },
    )
    .delete(
      '/api/devices/:token',
      async ({ request, params }) => {
        try {
          const user = await session(request)
          if (user instanceof Response) return user
          if (!(await removeDevice(db, user.id, params.token)))
            return displayJson(404, { message: 'deviceNotFound', detail: 'No such device registered by you.' })
          return new Response(null, { status: 204, headers: { 'cache-control': 'no-store' } })
        } catch (error) {
          return displayFailure(error, log)
        }
      },
      { detail: { hide: true } },
    )
}

const tags = ['Dashboards']
const MessageReport = t.Object(
  {
    id: UuidString({ description: 'The X-Message-Id of POST /api/message.' }),
    pageId: UuidString(),
    pageName: t.String({ description: 'The page name the message was sent to (the notification title).' }),
    message: t.String({ description: 'The notification body.' }),
    sentBy: t.Union([UuidString(), t.Null()], { description: "The display account's user." }),
    createdAt: Timestamp(),
    targeted: t.Integer({ minimum: 0, description: 'Devices the message was addressed to (each once).' }),
    sent: t.Integer({ minimum: 0, description: 'Accepted by FCM.' }),
    failed: t.Integer({ minimum: 0, description: 'Refused for good (a 4xx other than a dead token), or still failing after the last retry.' }),
    pruned: t.Integer({ minimum: 0, description: 'The token was gone (UNREGISTERED / invalid); the device was removed.' }),
    pending: t.Integer({ minimum: 0, description: 'Not yet sent, or waiting to be retried.' }),
    undelivered: t.Integer({ minimum: 0, description: 'Recorded while no FCM sender was configured; never sent.' }),
  },
  { title: 'MessageReport' },
)

export function messageReportRoutes(db: Database, v1: V1Kit) {
  return new Elysia({ name: 'push-reports', prefix: '/api/v1/pages' })
    .use(v1)
    .get('/:pageId/messages', ({ actor, params, query }) => listMessageReports(db, actor, params.pageId, pageRequest(query)), {
      scopes: ['dashboards:read'],
      params: t.Object({ pageId: t.String() }),
      query: t.Object(pageQuery()),
      response: responses(PageEnvelope(MessageReport)),
      detail: { tags, summary: 'Messages sent to a page you can see (POST /api/message), newest first, with their delivery counts.' },
    })
    .get('/:pageId/messages/:messageId', ({ actor, params }) => getMessageReport(db, actor, params.pageId, params.messageId), {
      scopes: ['dashboards:read'],
      params: t.Object({ pageId: t.String(), messageId: t.String() }),
      response: responses(Envelope(MessageReport)),
      detail: { tags, summary: 'One message to a page you can see, with its delivery result: targeted, sent, failed, pruned, pending, undelivered.' },
    })
}
