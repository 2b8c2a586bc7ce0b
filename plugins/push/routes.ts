/**
 * The push plugin's display API routes: `POST /api/message`, `/api/devices` (list, register,
 * remove, receipts), the VAPID key and a browser's subscription, in the display API's convention
 * (src/http/display-api: success bodies as documented, errors `{message, detail, field?}`). Its API
 * v1 routes are in v1-routes.ts.
 */
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import type { Database } from '../../src/db'
import { answerDoc, createDisplayKit, displayErrorDoc, displayJson, displayRoute, header, invalidApiKeyDoc, invalidRequestDoc, json, jsonBody } from '../../src/http/display-api'
import { limitExceededDoc, noContent, refusalResponse, refuse, sameSite, usageHeaderDocs, usageHeaders, validBody } from '../../src/http/display-api'
import type { Logger } from '../../src/log'
import { checkTarget } from '../../src/net/targets'
import type { Sessions } from '../auth/api'
import { NOTIFY_JS, SERVICE_WORKER_JS } from './browser'
import { DeviceAnswer, DeviceBody, DeviceList, listDevices, registerDevice, removeDevice, WebPushDeviceBody, type NewDevice } from './devices'
import { MessageBody, type MessageService } from './messages'
import { ReceiptBody, recordReceipt } from './receipts'
import { validSubscription } from './webpush'

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

/** The device a body asks to register (or a thrown 400): an FCM token, or a browser's Web Push subscription (checked, its endpoint through the address guard). */
async function deviceOf(body: unknown, allowPrivateTargets: boolean): Promise<NewDevice> {
  if ((body as { platform?: unknown } | null)?.platform !== 'webpush') {
    const { token, platform } = validBody(DeviceBody, body)
    return { token, platform }
  }
  const { subscription } = validBody(WebPushDeviceBody, body)
  const reason = validSubscription(subscription)
  if (reason) refuse(400, 'invalidRequest', `subscription is not a usable Web Push subscription: ${reason}.`, 'subscription')
  await checkTarget(subscription.endpoint, allowPrivateTargets, 'subscription.endpoint', 'push.webPush.allowPrivateTargets')
  return { token: subscription.endpoint, platform: 'webpush', p256dh: subscription.keys.p256dh, auth: subscription.keys.auth }
}

const script = (source: string) => () => new Response(source, { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' } })
const VapidKey = Type.Object({ publicKey: Type.String({ description: 'An uncompressed P-256 public key, base64url (87 characters).' }) }, { additionalProperties: false })
const deviceAnswer = (description: string) => answerDoc(description, json(DeviceAnswer))
/** The X-RateLimit-* headers of an answer to a display key known to be valid. */
const counted = usageHeaderDocs(true)

// Each handler checks its own body (validBody: compiled once) and builds its answer, so no Elysia
// body or response schema runs per request; `handle` answers whatever it throws in the display
// API's words, and `displayRoute` documents it.

export function pushApiRoutes({ db, log, sessions, messages, dispatched, maxDevicesPerUser, allowPrivateTargets, vapidPublicKey }: PushRouteDeps) {
  const { plugin, handle } = createDisplayKit({ sessions, log, seed: 'push' })
  const register = async (user: { id: string; organizationId: string }, wanted: NewDevice) => {
    const { created, ...device } = await registerDevice(db, user, wanted, maxDevicesPerUser)
    return displayJson(created ? 201 : 200, { device })
  }
  return new Elysia({ name: 'push-api' })
    .use(plugin)
    .get('/api/push/vapid-key', () => displayJson(200, { publicKey: vapidPublicKey }, { 'cache-control': 'public, max-age=300' }), displayRoute({
      summary: "The VAPID public key (base64url) a browser subscribes with: `pushManager.subscribe({userVisibleOnly: true, applicationServerKey})`. Public.",
      responses: { 200: answerDoc('The key.', json(VapidKey)) },
    }))
    .get('/push/sw.js', script(SERVICE_WORKER_JS), { detail: { hide: true } })
    .get('/push/notify.js', script(NOTIFY_JS), { detail: { hide: true } })
    .post('/push/subscriptions', handle(async ({ request, body, principal }) => {
      if (!sameSite(request)) refuse(403, 'forbidden', "Only this site's own pages may register a subscription.")
      return register(principal.user, await deviceOf({ platform: 'webpush', subscription: jsonBody(request, body) }, allowPrivateTargets))
    }), { web: true, detail: { hide: true } })
    .post('/api/message', handle(async ({ request, body }) => {
      const outcome = await messages.send(jsonBody(request, body))
      if (!outcome.ok) return refusalResponse(outcome)
      if (outcome.targeted > 0) dispatched()
      const headers = { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'x-message-id': outcome.messageId, ...usageHeaders(outcome.usage, 200) }
      return new Response('Message sent successfully', { status: 200, headers })
    }), displayRoute({
      summary: "Send a push notification to a page's audience (display key in the body); counts on the same daily limit as POST /api/component.",
      description: "Answers once the message and one delivery per recipient device are committed; the outbox delivers afterwards (report: GET /api/v1/pages/{pageId}/messages/{messageId}). Recipients: every registered device of the page's creator and of the active users on its access list (directly or through a team), each device once. Every call with a valid key counts, except one refused with 429.",
      body: MessageBody,
      responses: {
        200: answerDoc('Recorded and dispatched.', { 'text/plain': { schema: { type: 'string', const: 'Message sent successfully' } } }, { 'X-Message-Id': header('The message id: its delivery report.', true, { type: 'string', format: 'uuid' }), ...counted }),
        400: invalidRequestDoc(' Counted, with the X-RateLimit-* headers, when the key is valid.', usageHeaderDocs(false)),
        401: invalidApiKeyDoc,
        403: displayErrorDoc("readOnlyAccess: the key's user is a viewer of the page; only editors, its creator and administrators message it (counted).", ['readOnlyAccess'], counted),
        404: displayErrorDoc("pageNotFound: no such page, or not one the key's user can use (counted).", ['pageNotFound'], counted),
        429: limitExceededDoc,
      },
    }))
    .get('/api/devices', handle(async ({ principal }) => displayJson(200, { devices: await listDevices(db, principal.user) })), displayRoute({
      session: 'mobile',
      summary: "Your registered devices, seen most recently first (at most push.maxDevicesPerUser); never another user's, and never a whole token.",
      responses: { 200: answerDoc('Your devices (an empty list when you have none).', json(DeviceList)) },
    }))
    .post('/api/devices', handle(async ({ request, body, principal }) => register(principal.user, await deviceOf(jsonBody(request, body), allowPrivateTargets))), displayRoute({
      session: 'mobile',
      summary: "Register (or refresh) this app's FCM token, or this browser's Web Push subscription (`platform: \"webpush\"`), for push notifications; a device belongs to the user who registered it last. A user keeps at most push.maxDevicesPerUser (20) devices: the one seen least recently goes.",
      body: Type.Union([DeviceBody, WebPushDeviceBody]),
      responses: { 200: deviceAnswer('Already yours: refreshed (`lastSeenAt`).'), 201: deviceAnswer('Registered for you (new, or moved from another user).'), 400: invalidRequestDoc() },
    }))
    .post('/api/devices/receipts', handle(async ({ request, body, principal }) => {
      const { messageId, event } = validBody(ReceiptBody, jsonBody(request, body))
      if (!(await recordReceipt(db, principal.user, messageId, event))) refuse(404, 'messageNotFound', 'No such message went out to your devices.')
      return noContent()
    }), displayRoute({
      session: 'mobile',
      summary: "Report that a push reached this device (`delivered`) or was opened (`opened`): the message's delivery report counts each user once per event.",
      body: ReceiptBody,
      responses: {
        204: answerDoc('Recorded (or already recorded: a repeated receipt counts once).'),
        400: invalidRequestDoc(),
        404: displayErrorDoc('messageNotFound: no such message went out to one of your devices.', ['messageNotFound']),
      },
    }))
    .delete('/api/devices/:token', handle(async ({ params, principal }) => {
      if (!(await removeDevice(db, principal.user, params.token!))) refuse(404, 'deviceNotFound', 'No such device registered by you.')
      return noContent()
    }), displayRoute({
      session: 'mobile',
      summary: 'Unregister one of your devices.',
      parameters: [{ name: 'token', in: 'path', required: true, description: 'The FCM registration token, URL-encoded.', schema: { type: 'string' } }],
      responses: { 204: answerDoc('Removed.'), 404: displayErrorDoc('deviceNotFound: no such device registered by you.', ['deviceNotFound']) },
    }))
}
