/**
 * The `webhooks` plugin: organizations subscribe HTTP endpoints to work-tracking events (the
 * change feed's catalog: what the enabled plugins declare), signed per Standard Webhooks, recorded
 * in each change's transaction and delivered in order per webhook and project, at least once, by
 * workers on every instance.
 */
import { Type } from '@sinclair/typebox'
import { describeError } from '../../src/log'
import { definePlugin } from '../../src/plugin'
import { ProjectAccessRef } from '../projects/api'
import { followWebhookChanges, Subscriptions, webhookObserver } from './outbox'
import { webhookRoutes } from './routes'
import { webhookDeliveries, webhookEvents, webhookKeys, webhooks, webhookSequences } from './schema'
import { openSecretBox } from './secrets'
import { createSender } from './sender'
import { createWebhooks } from './service'
import { webhookTools } from './tools'
import { purgeOldDeliveries } from './upkeep'
import { WebhookQueue } from './worker'

const WebhooksConfig = Type.Object({
  allowPrivateTargets: Type.Boolean({
    default: false,
    description: 'Allow targets that resolve to loopback, private, link-local or unique-local addresses (local development and tests only).',
  }),
  encryptionKey: Type.Optional(
    Type.String({ description: 'A 32-byte key (base64 or hex) that seals signing secrets at rest. Unset: a key generated once and kept in the database (see docs/api.md, Webhooks).' }),
  ),
  workers: Type.Boolean({ default: true, description: 'Run delivery workers in this instance (events are still recorded when false).' }),
  concurrency: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: 'Delivery workers per instance.' }),
  streamsPerClaim: Type.Integer({ minimum: 1, maximum: 100, default: 16, description: 'Streams (webhook and project) one worker takes at a time, sent side by side.' }),
  batchSize: Type.Integer({ minimum: 1, maximum: 500, default: 50, description: 'Deliveries of one stream a claim takes, sent in order.' }),
  pollIntervalMs: Type.Integer({ minimum: 10, default: 1000, description: 'How often idle workers look for due deliveries (a change wakes them at once).' }),
  leaseSeconds: Type.Integer({ minimum: 15, default: 60, description: 'How long a claimed stream is held before another worker may take it.' }),
  timeoutMs: Type.Integer({ minimum: 100, maximum: 60_000, default: 10_000, description: 'The most one attempt may take, connection to answer.' }),
  retryDelaysSeconds: Type.Array(Type.Number({ minimum: 0 }), {
    default: [5, 30, 120, 600, 1800, 3600],
    maxItems: 50,
    description: 'Waits before the 2nd, 3rd… attempt after a failure; then every retryEverySeconds.',
  }),
  retryEverySeconds: Type.Number({ minimum: 0, default: 7200, description: 'The wait between attempts once retryDelaysSeconds is used up.' }),
  failAfterHours: Type.Number({ minimum: 0, default: 24, description: 'A delivery failing for this long is failed; a webhook failing this long without a success is disabled.' }),
  maxWebhooksPerOrganization: Type.Integer({ minimum: 1, maximum: 1000, default: 50, description: 'Webhooks one organization may have.' }),
  manualDeliveriesPerMinute: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 10,
    description: 'Test pings and redeliveries one webhook may queue per minute; past it they answer 429 with Retry-After.',
  }),
  visibilityCheckMaxAgeMs: Type.Integer({
    minimum: 0,
    maximum: 60_000,
    default: 1000,
    description: "How old the check that a webhook's creator still sees a delivery's project may be when the delivery is sent (0: checked before every send).",
  }),
  retentionDays: Type.Integer({ minimum: 1, default: 30, description: 'Finished deliveries (and events nothing waits for) older than this are removed.' }),
})

export default definePlugin({
  name: 'webhooks',
  description: 'Signed, durable, in-order HTTP delivery of work-tracking events (Standard Webhooks).',
  dependencies: ['auth', 'projects'],
  config: WebhooksConfig,
  tables: { webhooks, webhookSequences, webhookEvents, webhookDeliveries, webhookKeys },
  placement: {
    webhook_keys: {
      kind: 'reference',
      reason: 'One row, the key that seals signing secrets when none is configured: the same for every organization and node.',
    },
  },
  scopes: [
    { name: 'webhooks:read', description: "Read the organization's webhooks and their deliveries (administrators).", administratorsOnly: true },
    { name: 'webhooks:write', description: 'Create webhooks (administrators); change, test and delete them, rotate secrets and redeliver (their creator or a superadministrator).', administratorsOnly: true },
  ],
  tags: [
    {
      name: 'Webhooks',
      description:
        'Events POSTed to your URL, signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`), in order per webhook and project, at least once; retried after 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 2 h for 24 h. Administrators read webhooks; only a webhook\'s creator or a superadministrator changes, rotates, tests, redelivers or deletes it; a delivery is shown only to readers who can see its project.',
    },
  ],

  async setup({ db, writes, services, config, events, changes, log, onStop, background, instanceId, outboxes }) {
    const access = services.get(ProjectAccessRef)
    const secrets = await openSecretBox(db, config.encryptionKey)
    if (secrets.source === 'database' && background)
      log.warn('webhooks: no webhooks.encryptionKey configured; signing secrets are sealed with a key kept in the database (set one to keep the key apart from the data)')
    const subscriptions = new Subscriptions(db)
    await followWebhookChanges(subscriptions, events, log)
    onStop(changes.observe(webhookObserver(subscriptions, access)))

    const sender = createSender({ timeoutMs: config.timeoutMs, allowPrivateTargets: config.allowPrivateTargets })
    onStop(() => sender.close())
    // Registered after the sender's close: stops run in reverse order, so the workers stop (their streams recorded) first.
    const outbox = await outboxes.run(new WebhookQueue(db, sender, secrets, access, config, log, instanceId), { workers: config.workers, log })
    const wakeWorkers = (organizationId: string) => outbox.wake(organizationId)
    if (config.workers && background) {
      const purge = setInterval(
        () => void purgeOldDeliveries(db, config.retentionDays).catch((error: Error) => log.warn('webhooks: could not remove old deliveries', describeError(error))),
        60 * 60_000,
      )
      purge.unref?.()
      onStop(() => clearInterval(purge))
    }
    const webhookService = createWebhooks({
      db,
      writes,
      events,
      feed: changes,
      access,
      subscriptions,
      secrets,
      wakeWorkers: (organizationId) => wakeWorkers(organizationId),
      allowPrivateTargets: config.allowPrivateTargets,
      maxWebhooksPerOrganization: config.maxWebhooksPerOrganization,
      manualDeliveriesPerMinute: config.manualDeliveriesPerMinute,
    })
    return { webhooks: webhookService }
  },
  routes: ({ http }, { webhooks }) => webhookRoutes(http.v1, webhooks),
  tools: (_context, { webhooks }) => webhookTools(webhooks),
})
