/**
 * The `push` plugin: devices (FCM tokens of signed-in apps), `POST /api/message`, and delivery
 * through firebase-admin (or, with `push.sender: "log"`, to the service log) from a durable
 * outbox that workers in every instance drain.
 */
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { describeError, type Logger } from '../../src/log'
import { definePlugin } from '../../src/plugin'
import { SessionsRef } from '../auth/api'
import { DisplayCallsRef, DisplayPagesRef, LivePageExtensionsRef } from '../display/api'
import { FcmOptionsRef, PageNotifierRef, PreferenceSectionsRef, UserNotifierRef, WebPushAgentRef, type FcmOptions, type PreferenceSection } from './api'
import { pinnedLookup } from '../../src/net/targets'
import { openVapidKeys } from './vapid'
import { WebPushSender } from './webpush'
import { uuidv7 } from '../../src/ids'
import { FcmSender, fcmOptionsFromDisk, type PushSender } from './fcm'
import { LogSender } from './log-sender'
import { OUTBOX_CHANNEL, PushQueue, pruneStaleDevices } from './outbox'
import { createPreferences } from './preferences'
import { pushApiRoutes } from './routes'
import { messageReportRoutes, preferenceRoutes } from './v1-routes'
import { createMessages, recordMessage } from './messages'
import { recordUserPushes } from './user-pushes'
import { deliveries, devices, messageReceipts, messages, notificationPreferences, pushVapidKeys } from './schema'

const PushConfig = Type.Object({
  sender: Type.Union([Type.Literal('fcm'), Type.Literal('log')], {
    default: 'fcm',
    description:
      '"fcm": firebase-admin to FCM (off without credentials). "log", for development without Firebase: each push is written to the service log (info) as its FCM message and recorded sent; credentials are not read.',
  }),
  credentialsFile: Type.Optional(Type.String({ description: 'A Firebase service-account JSON file; default: GOOGLE_APPLICATION_CREDENTIALS. Without either, sender "fcm" is off.' })),
  workers: Type.Boolean({ default: true, description: 'Run outbox workers in this instance (messages are still accepted when false).' }),
  concurrency: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: 'Outbox workers per instance.' }),
  batchSize: Type.Integer({ minimum: 1, maximum: 500, default: 500, description: 'Deliveries per claim: one sendEach call.' }),
  pollIntervalMs: Type.Integer({ minimum: 10, default: 1000, description: 'How often idle workers look for due deliveries (a message sent here wakes them at once).' }),
  leaseSeconds: Type.Integer({ minimum: 1, default: 60, description: 'How long a claimed delivery is held before another worker may take it.' }),
  maxAttempts: Type.Integer({ minimum: 1, default: 8, description: 'Attempts before a transient failure is final (failed).' }),
  retryBaseMs: Type.Integer({ minimum: 1, default: 1000, description: 'First retry delay; doubles per attempt, with jitter.' }),
  retryMaxMs: Type.Integer({ minimum: 1, default: 900_000, description: "Longest retry delay. A push service's Retry-After is honoured up to this or an hour, whichever is longer, and never past the message's TTL." }),
  maxDevicesPerUser: Type.Integer({ minimum: 1, maximum: 1000, default: 20, description: 'Devices one user keeps; registering one more removes the one seen least recently.' }),
  deviceRetentionDays: Type.Integer({ minimum: 1, default: 270, description: 'Devices not registered again for this long are removed.' }),
  pruneIntervalMinutes: Type.Integer({ minimum: 1, default: 60, description: 'How often this instance removes stale devices.' }),
  webPush: Type.Object(
    {
      subject: Type.String({
        pattern: '^(mailto:|https://)\\S+$',
        default: 'mailto:webpush@worktrack.invalid',
        description: 'The VAPID subject push services may contact you at: `mailto:you@example.com` or an https URL. Set it in production: some push services (Apple) refuse the placeholder.',
      }),
      publicKey: Type.Optional(Type.String({ description: 'The VAPID public key (base64url, `npx web-push generate-vapid-keys`); with privateKey. Default: a key pair generated once and kept in the database.' })),
      privateKey: Type.Optional(Type.String({ writeOnly: true, description: 'The VAPID private key (base64url); with publicKey.' })),
      allowPrivateTargets: Type.Boolean({ default: false, description: 'Allow subscription endpoints that resolve to loopback, private or other non-public addresses (tests, private push services).' }),
      timeoutMs: Type.Integer({ minimum: 100, default: 10_000, description: 'The longest one Web Push request may take.' }),
    },
    { default: {}, additionalProperties: false, description: "Web Push to browsers (RFC 8030, VAPID), without Firebase: devices registered with platform \"webpush\"." },
  ),
})

const NO_CREDENTIALS =
  'push: no FCM credentials (GOOGLE_APPLICATION_CREDENTIALS or push.credentialsFile); the sender is off and messages are recorded as undelivered (to see pushes without Firebase, set push.sender: "log")'
const LOG_SENDER_ON = 'push: push.sender is "log": each push is written to this log as its FCM message and recorded sent; nothing goes to FCM'

/** The sender `push.sender` asks for: the log sender, or FCM when it has credentials; null (off) when it has none. */
function chooseSender(kind: 'fcm' | 'log', fcmOptions: () => FcmOptions | null, log: Logger): PushSender | null {
  if (kind === 'log') return new LogSender(log)
  const options = fcmOptions()
  return options ? new FcmSender(options) : null
}

export default definePlugin({
  name: 'push',
  description: 'Devices, POST /api/message, and delivery from a durable outbox: FCM (firebase-admin; or to the log: push.sender "log") and Web Push to browsers.',
  dependencies: ['auth', 'display'],
  config: PushConfig,
  tables: { devices, messages, deliveries, notificationPreferences, messageReceipts, pushVapidKeys },
  placement: {
    push_vapid_keys: {
      kind: 'reference',
      reason: 'One row, the VAPID key pair Web Push is signed with when none is configured: the same for every organization and node.',
    },
  },

  async setup({ db, writes, services, config, events, log, onStop, background, outboxes }) {
    const sender = chooseSender(config.sender, () => services.find(FcmOptionsRef) ?? fcmOptionsFromDisk(config.credentialsFile), log)
    if (background && !sender) log.warn(NO_CREDENTIALS)
    if (background && sender instanceof LogSender) log.info(LOG_SENDER_ON)
    const vapid = await openVapidKeys(db, config.webPush)
    const webPush = new WebPushSender(
      { publicKey: vapid.publicKey, privateKey: vapid.privateKey, subject: config.webPush.subject },
      { timeoutMs: config.webPush.timeoutMs, agentOptions: { ...services.find(WebPushAgentRef), lookup: pinnedLookup(config.webPush.allowPrivateTargets, 'push.webPush.allowPrivateTargets') as never } },
    )
    onStop(async () => {
      await Promise.all([sender?.close(), webPush.close()])
    })
    // Registered after the senders' close: stops run in reverse order, so the workers stop (their batches recorded) first.
    const outbox = await outboxes.run(new PushQueue(db, { fcm: sender, webPush }, config, log), { workers: config.workers, log })
    // A message wakes one worker here at once and, through NOTIFY, one on every other instance.
    const dispatched = () => {
      outbox.wake()
      events.publish(db, OUTBOX_CHANNEL, null).catch((error: Error) => log.warn('push: could not notify other instances', describeError(error)))
    }
    if (background) {
      const prune = async () => {
        const removed = await pruneStaleDevices(db, config.deviceRetentionDays).catch((error: Error) => {
          log.warn('push: could not remove stale devices', describeError(error))
          return 0
        })
        if (removed) log.info('push: removed stale devices', { count: removed, days: config.deviceRetentionDays })
      }
      // Once soon after start (instances restart more often than the interval), then periodically.
      const first = setTimeout(() => void prune(), 30_000)
      const timer = setInterval(() => void prune(), config.pruneIntervalMinutes * 60_000)
      first.unref?.()
      timer.unref?.()
      onStop(() => {
        clearTimeout(first)
        clearInterval(timer)
      })
    }
    const messages = createMessages({ db, writes, calls: services.get(DisplayCallsRef), pages: services.get(DisplayPagesRef), senderOn: Boolean(sender) })
    // Other plugins' sections of the preferences (work notifications), added in their setup, which runs after this one.
    const sections: PreferenceSection[] = []
    services.provide(PreferenceSectionsRef, { add: (section) => void sections.push(section as PreferenceSection) })
    const preferences = createPreferences(writes, sections)
    services.get(LivePageExtensionsRef).addScript('/push/notify.js')
    services.provide(PageNotifierRef, {
      notify: (tx, notice) =>
        recordMessage(tx, { organizationId: notice.organizationId, pageId: notice.pageId, pageName: notice.pageName, userId: null }, {
          id: uuidv7(),
          title: notice.title,
          body: notice.body,
          state: sender ? 'pending' : 'undelivered',
          options: { priority: 'high', ttlSeconds: null, collapseKey: notice.collapseKey ?? null, sendAt: null, critical: notice.critical ?? false },
        }),
      dispatched: () => dispatched(),
    })
    services.provide(UserNotifierRef, {
      notify: (tx, organizationId, pushes) => recordUserPushes(tx, organizationId, pushes, sender ? 'pending' : 'undelivered'),
      dispatched: () => dispatched(),
    })
    return {
      sections,
      messages,
      preferences,
      sessions: services.get(SessionsRef),
      dispatched,
      maxDevicesPerUser: config.maxDevicesPerUser,
      allowPrivateTargets: config.webPush.allowPrivateTargets,
      vapidPublicKey: vapid.publicKey,
    }
  },

  routes: ({ db, http, log }, { preferences, sections, ...bound }) =>
    new Elysia({ name: 'push' }).use(pushApiRoutes({ db, log, ...bound })).use(messageReportRoutes(http.v1, bound.messages)).use(preferenceRoutes(http.v1, preferences, sections)),
})
