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
import { DisplayCallsRef, DisplayPagesRef } from '../display/api'
import { FcmOptionsRef, type FcmOptions } from './api'
import { FcmSender, fcmOptionsFromDisk, type PushSender } from './fcm'
import { LogSender } from './log-sender'
import { countPendingDeliveries, OUTBOX_DEPTH_CAP, Outbox, pruneStaleDevices } from './outbox'
import { messageReportRoutes, pushApiRoutes } from './routes'
import { createMessages } from './messages'
import { deliveries, devices, messages } from './schema'

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
  retryMaxMs: Type.Integer({ minimum: 1, default: 900_000, description: 'Longest retry delay.' }),
  maxDevicesPerUser: Type.Integer({ minimum: 1, maximum: 1000, default: 20, description: 'Devices one user keeps; registering one more removes the one seen least recently.' }),
  deviceRetentionDays: Type.Integer({ minimum: 1, default: 270, description: 'Devices not registered again for this long are removed.' }),
  pruneIntervalMinutes: Type.Integer({ minimum: 1, default: 60, description: 'How often this instance removes stale devices.' }),
})

const OUTBOX_CHANNEL = 'push_outbox'
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
  description: 'Devices, POST /api/message, and FCM delivery from a durable outbox (firebase-admin; or to the log: push.sender "log").',
  dependencies: ['auth', 'display'],
  config: PushConfig,
  tables: { devices, messages, deliveries },

  async setup({ db, services, config, events, log, metrics, onStop, background }) {
    metrics.gauge({
      name: 'worktrack_push_outbox_pending',
      help: `Push deliveries waiting to be sent (due or backing off), counted up to ${OUTBOX_DEPTH_CAP} at each scrape.`,
      collect: async (gauge) => gauge.set(await countPendingDeliveries(db)),
    })
    const sender = chooseSender(config.sender, () => services.find(FcmOptionsRef) ?? fcmOptionsFromDisk(config.credentialsFile), log)
    if (background && !sender) log.warn(NO_CREDENTIALS)
    if (background && sender instanceof LogSender) log.info(LOG_SENDER_ON)
    // A message wakes this instance's workers at once and, through NOTIFY, every other instance's.
    let dispatched = () => {}
    if (sender) {
      const outbox = new Outbox(db, sender, config, log)
      dispatched = () => {
        outbox.wake()
        events.publish(db, OUTBOX_CHANNEL, null).catch((error: Error) => log.warn('push: could not notify other instances', describeError(error)))
      }
      if (config.workers && background) {
        await events.subscribe(OUTBOX_CHANNEL, () => outbox.wake(), () => outbox.wake())
        outbox.start()
      }
      onStop(async () => {
        await outbox.stop()
        await sender.close()
      })
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
    const messages = createMessages({ db, calls: services.get(DisplayCallsRef), pages: services.get(DisplayPagesRef), senderOn: Boolean(sender) })
    return { messages, sessions: services.get(SessionsRef), dispatched, maxDevicesPerUser: config.maxDevicesPerUser }
  },

  routes: ({ db, http, log }, bound) => new Elysia({ name: 'push' }).use(pushApiRoutes({ db, log, ...bound })).use(messageReportRoutes(http.v1, bound.messages)),
})
