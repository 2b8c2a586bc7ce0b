/**
 * The push plugin's routes: `POST /api/message` and `/api/devices` (list, register, remove)
 * beside the display API (same answers: JSON `{message, detail, field?}`), and the delivery
 * reports in API v1.
 */
import { Type } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { Timestamp, UuidString } from '../../src/http/models'
import { cursorParameter, pageQuery, pageRequest } from '../../src/http/pagination'
import type { Database } from '../../src/db'
import type { V1Kit } from '../../src/http/v1'
import { routeOf, type Logger } from '../../src/log'
import { requestIdOf } from '../../src/http/request-id'
import type { Sessions } from '../auth/api'
import {
  checkBody,
  displayErrorDoc,
  displayFailure,
  displayJson,
  DISPLAY_TAGS,
  failureDocs,
  header,
  invalidApiKeyDoc,
  invalidSessionDoc,
  json,
  limitExceededDoc,
  mobileSession,
  NOT_ENVELOPE,
  refusalResponse,
  requireJson,
  usageHeaderDocs,
  usageHeaders,
} from '../display/api'
import { DeviceBody, listDevices, PLATFORMS, registerDevice, removeDevice, WebPushDeviceBody, type NewDevice } from './devices'
import { validSubscription, type WebPushSubscription } from './webpush'
import { NOTIFY_JS, SERVICE_WORKER_JS } from './browser'
import { readCookie, SESSION_COOKIE } from '../../src/http/credentials'
import { checkTarget } from '../../src/net/targets'
import { ApiError } from '../../src/http/errors'
import { MessageBody, type MessageService } from './messages'
import { NotificationPreferences, type PreferenceService } from './preferences'
import { ReceiptBody, recordReceipt } from './receipts'

// ---- OpenAPI: the handlers check bodies with the same schemas (compiled once) and build every
// answer themselves, so nothing more runs per request (no Elysia body/response schema). The error
// and header shapes are the display API's (the display plugin's public face).

const displayTags = DISPLAY_TAGS

const messageDetail = {
  tags: displayTags,
  summary: "Send a push notification to a page's audience (display key in the body); counts on the same daily limit as POST /api/component.",
  description: `${NOT_ENVELOPE} Answers once the message and one delivery per recipient device are committed; the outbox delivers afterwards (report: GET /api/v1/pages/{pageId}/messages/{messageId}). Recipients: every registered device of the page's creator and of the active users on its access list (directly or through a team), each device once. Every call with a valid key counts, except one refused with 429.`,
  security: [],
  requestBody: {
    required: true,
    content: json(MessageBody),
  },
  responses: {
    200: {
      description: 'Recorded and dispatched.',
      headers: { 'X-Message-Id': header('The message id: its delivery report.', true, { type: 'string', format: 'uuid' }), ...usageHeaderDocs(true) },
      content: { 'text/plain': { schema: { type: 'string', const: 'Message sent successfully' } as object } },
    },
    400: displayErrorDoc('invalidRequest: not JSON, or a missing, unknown or invalid field (`field` names it). Counted, with the X-RateLimit-* headers, when the key is valid.', ['invalidRequest'], usageHeaderDocs(false)),
    401: invalidApiKeyDoc,
    403: displayErrorDoc("readOnlyAccess: the key's user is a viewer of the page; only editors, its creator and administrators message it (counted).", ['readOnlyAccess'], usageHeaderDocs(true)),
    404: displayErrorDoc("pageNotFound: no such page, or not one the key's user can use (counted).", ['pageNotFound'], usageHeaderDocs(true)),
    429: limitExceededDoc,
    ...failureDocs,
  },
}

const Platform = Type.Union(PLATFORMS.map((platform) => Type.Literal(platform)))
const vapidKeyDetail = {
  tags: displayTags,
  summary: "The VAPID public key (base64url) a browser subscribes with: `pushManager.subscribe({userVisibleOnly: true, applicationServerKey})`. Public.",
  description: NOT_ENVELOPE,
  security: [],
  responses: {
    200: { description: 'The key.', content: json(Type.Object({ publicKey: Type.String({ description: 'An uncompressed P-256 public key, base64url (87 characters).' }) }, { additionalProperties: false })) },
    ...failureDocs,
  },
}

const Device = Type.Object(
  {
    token: Type.String({ description: "The FCM registration token, or a Web Push subscription's endpoint." }),
    platform: Platform,
    createdAt: Type.String({ format: 'date-time', description: 'When this user registered it.' }),
    lastSeenAt: Type.String({ format: 'date-time', description: 'The last registration or refresh.' }),
  },
  { title: 'Device', additionalProperties: false },
)
const deviceAnswer = (description: string) => ({ description, content: json(Type.Object({ device: Device }, { additionalProperties: false })) })
const sessionRoute = {
  tags: displayTags,
  description: `${NOT_ENVELOPE} Signed in with a mobile session token (\`Authorization: Bearer\`, from POST /account/api/sessions).`,
  security: [{ sessionToken: [] }],
}

const registerDeviceDetail = {
  ...sessionRoute,
  summary: "Register (or refresh) this app's FCM token, or this browser's Web Push subscription (`platform: \"webpush\"`), for push notifications; a device belongs to the user who registered it last. A user keeps at most push.maxDevicesPerUser (20) devices: the one seen least recently goes.",
  requestBody: {
    required: true,
    content: json(Type.Union([DeviceBody, WebPushDeviceBody])),
  },
  responses: {
    200: deviceAnswer('Already yours: refreshed (`lastSeenAt`).'),
    201: deviceAnswer('Registered for you (new, or moved from another user).'),
    400: displayErrorDoc('invalidRequest: not JSON, or a missing, unknown or invalid field (`field` names it).', ['invalidRequest']),
    401: invalidSessionDoc,
    ...failureDocs,
  },
}

const receiptDetail = {
  ...sessionRoute,
  summary: 'Report that a push reached this device (`delivered`) or was opened (`opened`): the message\'s delivery report counts each user once per event.',
  requestBody: { required: true, content: json(ReceiptBody) },
  responses: {
    204: { description: 'Recorded (or already recorded: a repeated receipt counts once).' },
    400: displayErrorDoc('invalidRequest: not JSON, or a missing, unknown or invalid field (`field` names it).', ['invalidRequest']),
    401: invalidSessionDoc,
    404: displayErrorDoc('messageNotFound: no such message went out to one of your devices.', ['messageNotFound']),
    ...failureDocs,
  },
}

const ListedDevice = Type.Object(
  {
    id: Type.String({ pattern: '^[0-9a-f]{16}$', description: 'Stable while the token is registered (derived from it; not the token).' }),
    tokenSuffix: Type.String({ maxLength: 8, description: "The token's last 8 characters (at most half of a shorter token): the token itself is never listed." }),
    platform: Platform,
    createdAt: Type.String({ format: 'date-time', description: 'When you registered it.' }),
    lastSeenAt: Type.String({ format: 'date-time', description: 'The last registration or refresh.' }),
  },
  { title: 'ListedDevice', additionalProperties: false },
)

const listDevicesDetail = {
  ...sessionRoute,
  summary: "Your registered devices, seen most recently first (at most push.maxDevicesPerUser); never another user's, and never a whole token.",
  responses: {
    200: {
      description: 'Your devices (an empty list when you have none).',
      content: json(Type.Object({ devices: Type.Array(ListedDevice) }, { additionalProperties: false })),
    },
    401: invalidSessionDoc,
    ...failureDocs,
  },
}

const removeDeviceDetail = {
  ...sessionRoute,
  summary: 'Unregister one of your devices.',
  parameters: [{ name: 'token', in: 'path', required: true, description: 'The FCM registration token, URL-encoded.', schema: { type: 'string' } as object }],
  responses: {
    204: { description: 'Removed.' },
    401: invalidSessionDoc,
    404: displayErrorDoc('deviceNotFound: no such device registered by you.', ['deviceNotFound']),
    ...failureDocs,
  },
}


/** What the push routes use, bound at setup. */
export interface PushRouteDeps {
  db: Database
  log: Logger
  sessions: Sessions
  messages: MessageService
  /** Called after a message is recorded: the local outbox workers look at once. */
  dispatched: () => void
  /** Devices one user keeps (push.maxDevicesPerUser). */
  maxDevicesPerUser: number
  /** push.webPush.allowPrivateTargets: subscription endpoints may resolve to non-public addresses. */
  allowPrivateTargets: boolean
  /** The VAPID public key browsers subscribe with (base64url). */
  vapidPublicKey: string
}

/** The device a body asks to register, or the 400 answer: an FCM token, or a browser's Web Push subscription (checked, its endpoint through the address guard). */
async function deviceOf(body: unknown, allowPrivateTargets: boolean): Promise<NewDevice | Response> {
  if ((body as { platform?: unknown } | null)?.platform !== 'webpush') {
    const problem = checkBody(DeviceBody, body)
    if (problem) return displayJson(400, problem)
    const { token, platform } = body as { token: string; platform: NewDevice['platform'] }
    return { token, platform }
  }
  const problem = checkBody(WebPushDeviceBody, body)
  if (problem) return displayJson(400, problem)
  const { subscription } = body as { subscription: WebPushSubscription }
  const reason = validSubscription(subscription)
  if (reason) return displayJson(400, { message: 'invalidRequest', detail: `subscription is not a usable Web Push subscription: ${reason}.`, field: 'subscription' })
  try {
    await checkTarget(subscription.endpoint, allowPrivateTargets, 'subscription.endpoint', 'push.webPush.allowPrivateTargets')
  } catch (error) {
    if (error instanceof ApiError) return displayJson(400, { message: 'invalidRequest', detail: error.message, field: 'subscription.endpoint' })
    throw error
  }
  return { token: subscription.endpoint, platform: 'webpush', p256dh: subscription.keys.p256dh, auth: subscription.keys.auth }
}

const script = (source: string) => () => new Response(source, { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' } })

/** Whether a cookie-authenticated POST comes from this site's own pages (the cookie is SameSite=Strict too): an Origin, when sent, naming this host. */
function sameSite(request: Request): boolean {
  const origin = request.headers.get('origin')
  if (origin === null) return true
  try {
    return new URL(origin).host === (request.headers.get('host') ?? new URL(request.url).host)
  } catch {
    return false
  }
}

export function pushApiRoutes({ db, log, sessions, messages, dispatched, maxDevicesPerUser, allowPrivateTargets, vapidPublicKey }: PushRouteDeps) {
  return new Elysia({ name: 'push-api' })
    .get('/api/push/vapid-key', () => displayJson(200, { publicKey: vapidPublicKey }, { 'cache-control': 'public, max-age=300' }), { detail: vapidKeyDetail })
    .get('/push/sw.js', script(SERVICE_WORKER_JS), { detail: { hide: true } })
    .get('/push/notify.js', script(NOTIFY_JS), { detail: { hide: true } })
    .post(
      '/push/subscriptions',
      async ({ request, body, set, route }) => {
        try {
          const principal = await sessions.authenticate(readCookie(request, SESSION_COOKIE), 'web').catch(() => null)
          if (!principal) return displayJson(401, { message: 'invalidSession', detail: 'Sign in (the account area) first.' })
          if (!sameSite(request)) return displayJson(403, { message: 'forbidden', detail: "Only this site's own pages may register a subscription." })
          const refused = requireJson(request, body)
          if (refused) return refused
          const wanted = await deviceOf({ platform: 'webpush', subscription: body }, allowPrivateTargets)
          if (wanted instanceof Response) return wanted
          const { created, ...device } = await registerDevice(db, principal.user, wanted, maxDevicesPerUser)
          return displayJson(created ? 201 : 200, { device })
        } catch (error) {
          return displayFailure(error, log, { requestId: requestIdOf(set), route: routeOf(request, route) })
        }
      },
      { detail: { hide: true } },
    )
    .post(
      '/api/message',
      async ({ request, body, set, route }) => {
        const refused = requireJson(request, body)
        if (refused) return refused
        try {
          const outcome = await messages.send(body)
          if (!outcome.ok) return refusalResponse(outcome)
          if (outcome.targeted > 0) dispatched()
          return new Response('Message sent successfully', {
            status: 200,
            headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'x-message-id': outcome.messageId, ...usageHeaders(outcome.usage, 200) },
          })
        } catch (error) {
          return displayFailure(error, log, { requestId: requestIdOf(set), route: routeOf(request, route) })
        }
      },
      { detail: messageDetail },
    )
    .get(
      '/api/devices',
      async ({ request, set, route }) => {
        try {
          const principal = await mobileSession(sessions, request)
          if (principal instanceof Response) return principal
          return displayJson(200, { devices: await listDevices(db, principal.user) })
        } catch (error) {
          return displayFailure(error, log, { requestId: requestIdOf(set), route: routeOf(request, route) })
        }
      },
      { detail: listDevicesDetail },
    )
    .post(
      '/api/devices',
      async ({ request, body, set, route }) => {
        try {
          const principal = await mobileSession(sessions, request)
          if (principal instanceof Response) return principal
          const refused = requireJson(request, body)
          if (refused) return refused
          const wanted = await deviceOf(body, allowPrivateTargets)
          if (wanted instanceof Response) return wanted
          const { created, ...device } = await registerDevice(db, principal.user, wanted, maxDevicesPerUser)
          return displayJson(created ? 201 : 200, { device })
        } catch (error) {
          return displayFailure(error, log, { requestId: requestIdOf(set), route: routeOf(request, route) })
        }
      },
      { detail: registerDeviceDetail },
    )
    .post(
      '/api/devices/receipts',
      async ({ request, body, set, route }) => {
        try {
          const principal = await mobileSession(sessions, request)
          if (principal instanceof Response) return principal
          const refused = requireJson(request, body)
          if (refused) return refused
          const problem = checkBody(ReceiptBody, body)
          if (problem) return displayJson(400, problem)
          const { messageId, event } = body as { messageId: string; event: 'delivered' | 'opened' }
          if (!(await recordReceipt(db, principal.user, messageId, event)))
            return displayJson(404, { message: 'messageNotFound', detail: 'No such message went out to your devices.' })
          return new Response(null, { status: 204, headers: { 'cache-control': 'no-store' } })
        } catch (error) {
          return displayFailure(error, log, { requestId: requestIdOf(set), route: routeOf(request, route) })
        }
      },
      { detail: receiptDetail },
    )
    .delete(
      '/api/devices/:token',
      async ({ request, params, set, route }) => {
        try {
          const principal = await mobileSession(sessions, request)
          if (principal instanceof Response) return principal
          if (!(await removeDevice(db, principal.user, params.token)))
            return displayJson(404, { message: 'deviceNotFound', detail: 'No such device registered by you.' })
          return new Response(null, { status: 204, headers: { 'cache-control': 'no-store' } })
        } catch (error) {
          return displayFailure(error, log, { requestId: requestIdOf(set), route: routeOf(request, route) })
        }
      },
      { detail: removeDeviceDetail },
    )
}

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
export function preferenceRoutes(v1: V1Kit, preferences: PreferenceService) {
  return new Elysia({ name: 'push-preferences', prefix: '/api/v1/users/me' })
    .use(v1)
    .get('/notifications', ({ actor }) => preferences.get(actor), {
      signedIn: true,
      response: responses(Envelope(NotificationPreferences)),
      detail: { tags: ['Users'], summary: 'Your push preferences: quiet hours and muted pages (none until you set them).' },
    })
    .put('/notifications', ({ actor, body }) => preferences.put(actor, body), {
      signedIn: true,
      body: NotificationPreferences,
      response: responses(Envelope(NotificationPreferences)),
      detail: { tags: ['Users'], summary: 'Replace your push preferences. Applies to pushes not yet gone out, scheduled ones included.' },
    })
}
