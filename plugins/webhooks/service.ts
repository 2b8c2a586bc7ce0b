/**
 * Webhook management: administrators and superadministrators of the organization read every
 * webhook's configuration; only a webhook's creator or a superadministrator changes, rotates,
 * tests, redelivers or deletes it (others: 403), so its URL receives only what its creator (or a
 * superadministrator, who sees every project) can see. A delivery, and the payload it carries, is
 * shown only to readers who can see its project (others: not listed, 404; deliveries.ts). Secrets
 * are shown once and sealed at rest; test pings and redeliveries are bounded per webhook. Every
 * change is audited in its transaction and tells every instance to refresh its copy of the
 * organization's subscriptions (outbox.ts).
 */
import { changedFields } from '../../src/audit'
import type { ChangeFeed } from '../../src/changes'
import { queryText, type Database, type Executor, type Transaction } from '../../src/db'
import type { EventBus } from '../../src/events'
import { created } from '../../src/http/answer'
import { ApiError, badRequest, conflict, forbidden, notFound } from '../../src/http/errors'
import type { IdempotentRequest } from '../../src/http/idempotency'
import type { ListShape } from '../../src/http/list-query'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid, uuidv7 } from '../../src/ids'
import { isAdministrator, type Actor } from '../../src/services/identity'
import { organizationListPage } from '../../src/organization-lists'
import { isoFromText } from '../../src/sql'
import type { Write, Writes } from '../../src/writes'
import type { ProjectAccessService } from '../projects/api'
import type { DeliveryQuery, WebhookInput, WebhookPatch, WebhookResource } from './model'
import { deliveryOf, findDelivery, fromDeliveryRow, iso, limitManualDeliveries, listDeliveries, PING, queueRedelivery, type TextTimes } from './deliveries'
import { OUTBOX_CHANNEL, recordEvent, WEBHOOKS_CHANNEL, type Subscriptions } from './outbox'
import { generateSigningSecret, type SecretBox } from './secrets'
import { checkTarget } from '../../src/net/targets'

/** How long the previous secret still signs after a rotation. */
export const ROTATION_OVERLAP_HOURS = 24

const WEBHOOK_COLUMNS = `w.id, w.url, w.description, w.events, w.project_id as "projectId", w.enabled, w.disabled_reason as "disabledReason",
  w.created_by as "createdBy", w.last_success_at as "lastSuccessAt", w.failing_since as "failingSince",
  case when w.previous_secret_expires_at > now() then w.previous_secret_expires_at end as "previousSecretExpiresAt",
  w.created_at as "createdAt", w.updated_at as "updatedAt"`

type WebhookRow = TextTimes<WebhookResource, 'lastSuccessAt' | 'failingSince' | 'previousSecretExpiresAt' | 'createdAt' | 'updatedAt'>

/** The organization's webhooks ($1), oldest first: the list's only order, which its cursors continue. */
const WEBHOOK_LIST: ListShape = {
  name: 'webhooks',
  filters: {},
  sorts: { createdAt: { column: 'w.created_at', cast: 'timestamptz' } },
  defaultOrder: ['createdAt'],
  tiebreaker: { column: 'w.id', cast: 'uuid' },
}

function fromWebhookRow(row: WebhookRow): WebhookResource {
  return {
    ...row,
    lastSuccessAt: iso(row.lastSuccessAt),
    failingSince: iso(row.failingSince),
    previousSecretExpiresAt: iso(row.previousSecretExpiresAt),
    createdAt: isoFromText(row.createdAt!),
    updatedAt: isoFromText(row.updatedAt!),
  }
}

function requireAdministrator(actor: Actor): void {
  if (!isAdministrator(actor)) throw forbidden('Only an administrator or superadministrator may manage webhooks.')
}

/** Changing, rotating, testing, redelivering and deleting: the webhook's creator or a superadministrator (after the webhook was found: 404 first). */
function requireManager(actor: Actor, webhook: WebhookResource): void {
  if (actor.role !== 'superadministrator' && webhook.createdBy !== actor.userId)
    throw forbidden("Only the webhook's creator or a superadministrator may change, rotate, test, redeliver or delete it.")
}

async function findWebhook(executor: Executor, actor: Actor, webhookId: string, lock = false): Promise<WebhookResource> {
  if (!isUuid(webhookId)) throw notFound('No such webhook.')
  const [row] = await queryText<WebhookRow>(executor, `select ${WEBHOOK_COLUMNS} from webhooks w where w.id = $1 and w.organization_id = $2${lock ? ' for update' : ''}`, [
    webhookId,
    actor.organizationId,
  ])
  if (!row) throw notFound('No such webhook.')
  return fromWebhookRow(row)
}

export interface WebhookDeps {
  db: Database
  writes: Writes
  events: EventBus
  feed: ChangeFeed
  access: ProjectAccessService
  subscriptions: Subscriptions
  secrets: SecretBox
  /** Wakes this instance's idle workers to claim in the organization now (others hear the commit's notification). */
  wakeWorkers: (organizationId: string) => void
  allowPrivateTargets: boolean
  maxWebhooksPerOrganization: number
  /** Test pings and redeliveries one webhook may queue per minute (429 past it). */
  manualDeliveriesPerMinute: number
}

export function createWebhooks(deps: WebhookDeps) {
  const { db, writes, events, access, subscriptions, secrets } = deps

  /** 400 naming `events[i]` for a name that is neither `*`, an event type of an enabled plugin, nor `<resource>.*` of one. */
  const checkEvents = (names: readonly string[]) => {
    const known = new Set(deps.feed.types.map((type) => type.name))
    const families = new Set(deps.feed.types.map((type) => `${type.name.slice(0, type.name.indexOf('.'))}.*`))
    names.forEach((name, i) => {
      if (name !== '*' && !known.has(name) && !families.has(name))
        throw badRequest(`Unknown event type "${name.slice(0, 100)}"; use "*", a resource's "<resource>.*" (${[...families].sort().join(', ')}) or one of: ${[...known].sort().join(', ')}.`, `events[${i}]`)
    })
  }

  /** After a commit that changed an organization's webhooks: this instance now, the others by NOTIFY (sent in the transaction). */
  const changed = async <T>(actor: Actor, run: (tx: Transaction, audit: Write['audit']) => Promise<T>, request?: IdempotentRequest): Promise<T> => {
    const result = await writes.change(actor, null, async ({ tx, audit }) => {
      const value = await run(tx, audit)
      await events.publish(tx, WEBHOOKS_CHANNEL, { organizationId: actor.organizationId })
      return value
    }, request)
    await subscriptions.reload(actor.organizationId)
    return result
  }

  const withSecret = (webhook: WebhookResource, secret: string) => ({ ...webhook, secret })
  /**
   * A millisecond after the version read under the row's lock: `updatedAt` moves by at least that
   * (the version If-Match compares) without an UPDATE calling a function on the column, which
   * Citus refuses for STABLE functions such as `updated_at + interval`.
   */
  const justAfter = (updatedAt: string) => new Date(Date.parse(updatedAt) + 1).toISOString()
  /** 201 with the delivery, at its own address (not under the route's path). */
  const createdDelivery = <D extends { id: string; webhookId: string }>(delivery: D) => created(delivery, `/api/v1/webhooks/${delivery.webhookId}/deliveries/${delivery.id}`)

  /** 429 once the webhook has queued its `manualDeliveriesPerMinute` tests and redeliveries in the last minute. */
  const limitManual = (tx: Executor, actor: Actor, webhookId: string) => limitManualDeliveries(tx, actor.organizationId, webhookId, deps.manualDeliveriesPerMinute)

  return {
    /** The organization's webhooks, oldest first, by page or cursor. */
    async list(actor: Actor, request: PageRequest) {
      requireAdministrator(actor)
      return organizationListPage(db, actor.organizationId, { shape: WEBHOOK_LIST, from: 'webhooks w', columns: WEBHOOK_COLUMNS, toItem: fromWebhookRow }, request)
    },

    async get(actor: Actor, webhookId: string) {
      requireAdministrator(actor)
      return findWebhook(db, actor, webhookId)
    },

    async create(actor: Actor, input: WebhookInput, request?: IdempotentRequest) {
      requireAdministrator(actor)
      checkEvents(input.events)
      const url = await checkTarget(input.url, deps.allowPrivateTargets)
      const secret = generateSigningSecret()
      return changed(actor, async (tx, audit) => {
        if (input.projectId) {
          try {
            await access.requireProjectAccess(actor, input.projectId, 'viewer', tx)
          } catch (error) {
            if (error instanceof ApiError && error.status === 404) throw badRequest('No project with this id that you can see.', 'projectId')
            throw error
          }
        }
        // One organization's creations queue up (a transaction lock), so the limit holds under concurrent requests.
        await queryText(tx, `select pg_advisory_xact_lock(hashtextextended('webhooks ' || $1, 0))`, [actor.organizationId])
        const [{ count }] = (await queryText<{ count: number }>(tx, 'select count(*)::int as count from webhooks where organization_id = $1', [actor.organizationId])) as [{ count: number }]
        if (count >= deps.maxWebhooksPerOrganization) throw conflict(`The organization already has ${count} webhooks, the most it may have; delete one first.`)
        const id = uuidv7()
        await queryText(
          tx,
          `insert into webhooks (id, organization_id, url, description, events, project_id, created_by, secret_sealed) values ($1, $2, $3, $4, $5::text[], $6, $7, $8)`,
          [id, actor.organizationId, url, input.description ?? null, input.events, input.projectId ?? null, actor.userId, secrets.seal(secret)],
        )
        await audit({
          action: 'webhook.created',
          resourceType: 'webhook',
          resourceId: id,
          projectId: input.projectId ?? null,
          changes: { after: { url, events: input.events, projectId: input.projectId ?? null, description: input.description ?? null } },
        })
        return created(withSecret(await findWebhook(tx, actor, id), secret))
      }, request)
    },

    async update(actor: Actor, webhookId: string, patch: WebhookPatch) {
      requireAdministrator(actor)
      // Who may change it is known before the target is resolved on their behalf.
      requireManager(actor, await findWebhook(db, actor, webhookId))
      if (patch.events) checkEvents(patch.events)
      const url = patch.url === undefined ? undefined : await checkTarget(patch.url, deps.allowPrivateTargets)
      return changed(actor, async (tx, audit) => {
        const current = await findWebhook(tx, actor, webhookId, true)
        requireManager(actor, current)
        const next: Partial<WebhookResource> = { url, description: patch.description, enabled: patch.enabled }
        const changes = changedFields(current as unknown as Record<string, unknown>, next as Record<string, unknown>) ?? { before: {}, after: {} }
        if (patch.events && patch.events.join('\n') !== current.events.join('\n')) {
          changes.before!.events = current.events
          changes.after!.events = patch.events
        }
        if (!Object.keys(changes.after!).length) return current
        await queryText(
          tx,
          `update webhooks set url = coalesce($3, url), events = coalesce($4::text[], events),
              description = case when $5 then $6 else description end,
              enabled = coalesce($7, enabled),
              -- Enabled again (or disabled by a person): the service's reason and failure clock start over.
              disabled_reason = case when $7::boolean is null then disabled_reason else null end,
              failing_since = case when $7::boolean then null else failing_since end,
              updated_at = greatest(now(), $8::timestamptz)
            where id = $1 and organization_id = $2`,
          [current.id, actor.organizationId, url ?? null, patch.events ?? null, patch.description !== undefined, patch.description ?? null, patch.enabled ?? null, justAfter(current.updatedAt)],
        )
        await audit({ action: 'webhook.updated', resourceType: 'webhook', resourceId: current.id, projectId: current.projectId, changes })
        return findWebhook(tx, actor, current.id)
      })
    },

    async delete(actor: Actor, webhookId: string) {
      requireAdministrator(actor)
      return changed(actor, async (tx, audit) => {
        // Deliveries first, then the webhook: the order a worker recording results takes its locks in.
        const current = await findWebhook(tx, actor, webhookId)
        requireManager(actor, current)
        await queryText(tx, 'delete from webhook_deliveries where webhook_id = $1 and organization_id = $2', [current.id, actor.organizationId])
        const deleted = await queryText(tx, 'delete from webhooks where id = $1 and organization_id = $2 returning id', [current.id, actor.organizationId])
        if (!deleted.length) throw notFound('No such webhook.')
        await audit({ action: 'webhook.deleted', resourceType: 'webhook', resourceId: current.id, projectId: current.projectId, changes: { before: { url: current.url, events: current.events } } })
        return { id: current.id }
      })
    },

    /** A new secret, shown once; the previous one goes on signing (a second signature) for ROTATION_OVERLAP_HOURS. */
    async rotateSecret(actor: Actor, webhookId: string, request?: IdempotentRequest) {
      requireAdministrator(actor)
      const secret = generateSigningSecret()
      return writes.change(actor, null, async ({ tx, audit }) => {
        const current = await findWebhook(tx, actor, webhookId, true)
        requireManager(actor, current)
        await queryText(
          tx,
          `update webhooks set previous_secret_sealed = secret_sealed, previous_secret_expires_at = now() + $3 * interval '1 hour', secret_sealed = $4,
              updated_at = greatest(now(), $5::timestamptz)
            where id = $1 and organization_id = $2`,
          [current.id, actor.organizationId, ROTATION_OVERLAP_HOURS, secrets.seal(secret), justAfter(current.updatedAt)],
        )
        await audit({ action: 'webhook.secret_rotated', resourceType: 'webhook', resourceId: current.id, projectId: current.projectId })
        return withSecret(await findWebhook(tx, actor, current.id), secret)
      }, request)
    },

    /** Queues a `ping` to the webhook (its data: the webhook); the delivery is returned. */
    async test(actor: Actor, webhookId: string, request?: IdempotentRequest) {
      requireAdministrator(actor)
      const answer = await writes.change(actor, null, async ({ tx, audit }) => {
        const webhook = await findWebhook(tx, actor, webhookId, true)
        requireManager(actor, webhook)
        if (!webhook.enabled) throw conflict('The webhook is disabled; enable it before sending a test.')
        await limitManual(tx, actor, webhook.id)
        const eventId = await recordEvent(tx, { organizationId: actor.organizationId, projectId: null, type: PING, actor: { userId: actor.userId, via: actor.via }, data: webhook }, { only: webhook.id })
        await audit({ action: 'webhook.tested', resourceType: 'webhook', resourceId: webhook.id, projectId: webhook.projectId, changes: { after: { eventId } } })
        return createdDelivery(await deliveryOf(tx, actor.organizationId, webhook.id, 'd.event_id', eventId))
      }, request)
      deps.wakeWorkers(actor.organizationId)
      return answer
    },

    /** A webhook's deliveries, newest first, by page or cursor (a cursor is checked before the webhook is). */
    async deliveries(actor: Actor, webhookId: string, input: DeliveryQuery, request: PageRequest) {
      return listDeliveries(db, access, actor, webhookId, input, request, async () => {
        requireAdministrator(actor)
        await findWebhook(db, actor, webhookId)
      })
    },

    async delivery(actor: Actor, webhookId: string, deliveryId: string) {
      requireAdministrator(actor)
      const webhook = await findWebhook(db, actor, webhookId)
      const row = await findDelivery(db, access, actor, webhook.id, deliveryId)
      return { ...fromDeliveryRow(row), payload: row.payload, lastResponseBody: row.lastResponseBody }
    },

    /** Queues the delivery's event again: a new delivery, after what its webhook and project already have queued. */
    async redeliver(actor: Actor, webhookId: string, deliveryId: string, request?: IdempotentRequest) {
      requireAdministrator(actor)
      const answer = await writes.change(actor, null, async ({ tx, audit }) => {
        const webhook = await findWebhook(tx, actor, webhookId, true)
        requireManager(actor, webhook)
        const original = await findDelivery(tx, access, actor, webhook.id, deliveryId)
        if (!webhook.enabled) throw conflict('The webhook is disabled; enable it before redelivering.')
        await limitManual(tx, actor, webhook.id)
        const id = uuidv7()
        await queueRedelivery(tx, actor.organizationId, original.id, id)
        await events.publish(tx, OUTBOX_CHANNEL, { organizationId: actor.organizationId })
        await audit({ action: 'webhook.redelivered', resourceType: 'webhook', resourceId: webhook.id, projectId: original.projectId, changes: { after: { deliveryId: id, eventId: original.eventId } } })
        return createdDelivery(await deliveryOf(tx, actor.organizationId, webhook.id, 'd.id', id))
      }, request)
      deps.wakeWorkers(actor.organizationId)
      return answer
    },
  }
}

export type WebhookService = ReturnType<typeof createWebhooks>
