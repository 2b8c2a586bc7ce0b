/**
 * The `push` plugin: devices (FCM tokens of signed-in apps), `POST /api/message`, and delivery
 * through firebase-admin from a durable outbox that workers in every instance drain.
 */
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { describeError } from '../../src/log'
import { definePlugin } from '../../src/plugin'
import { SessionsRef } from '../auth/api'
import { DisplayCallsRef, DisplayPagesRef } from '../display/api'
import { FcmOptionsRef } from './api'
import { FcmSender, fcmOptionsFromDisk } from './fcm'
import { countPendingDeliveries, OUTBOX_DEPTH_CAP, Outbox, pruneStaleDevices } from './outbox'
import { messageReportRoutes, pushApiRoutes } from './routes'
import { createMessages } from './messages'
import { deliveries, devices, messages } from './schema'

const PushConfig = Type.Object({
  credentialsFile: Type.Optional(Type.String({ description: 'A Firebase service-account JSON file; default: GOOGLE_APPLICATION_CREDENTIALS. Without either the sender is off.' })),
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

export default definePlugin({
  name: 'push',
  description: 'Devices, POST /api/message, and FCM delivery from a durable outbox (firebase-admin).',
  dependencies: ['auth', 'display'],
  config: PushConfig,
  tables: { devices, messages, deliveries },

  async setup({ db, services, config, events, log, metrics, onStop, background }) {
    metrics.gauge({
      name: 'worktrack_push_outbox_pending',
      help: `Push deliveries waiting to be sent (due or backing off), counted up to ${OUTBOX_DEPTH_CAP} at each scrape.`,
      collect: async (gauge) => gauge.set(await countPendingDeliveries(db)),
    })
    const fcm = services.find(FcmOptionsRef) ?? fcmOptionsFromDisk(config.credentialsFile)
    // A message wakes this instance's workers at once and, through NOTIFY, every other instance's.
    let dispatched = () => {}
    if (!fcm) {
      if (background)
        log.warn('push: no FCM credentials (GOOGLE_APPLICATION_CREDENTIALS or push.credentialsFile); the sender is off and messages are recorded as undelivered')
    } else {
      const sender = new FcmSender(fcm)
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
    const messages = createMessages({ db, calls: services.get(DisplayCallsRef), pages: services.get(DisplayPagesRef), senderOn: Boolean(fcm) })
    return { messages, sessions: services.get(SessionsRef), dispatched, maxDevicesPerUser: config.maxDevicesPerUser }
  },

  routes: ({ db, http, log }, bound) => new Elysia({ name: 'push' }).use(pushApiRoutes({ db, log, ...bound })).use(messageReportRoutes(http.v1, bound.messages)),
})
