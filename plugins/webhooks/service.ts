/**
 * Webhook management: administrators and superadministrators of the organization read every
 * webhook's configuration; only a webhook's creator or a superadministrator changes, rotates,
 * tests, redelivers or deletes it (others: 403), so its URL receives only what its creator (or a
 * superadministrator, who sees every project) can see. A delivery, and the payload it carries, is
 * shown only to readers who can see its project (others: not listed, 404). Secrets are shown once
 * and sealed at rest; test pings and redeliveries are bounded per webhook. Every change is audited
 * in its transaction and tells every instance to refresh its copy of the organization's
 * subscriptions (outbox.ts).
 */
import { changedFields } from '../../src/audit'
import type { ChangeFeed } from '../../src/changes'
import { queryText, type Database, type Executor, type Transaction } from '../../src/db'
import type { EventBus } from '../../src/events'
import { created } from '../../src/http/answer'
import { ApiError, badRequest, conflict, forbidden, notFound, rateLimited } from '../../src/http/errors'
import type { IdempotentRequest } from '../../src/http/idempotency'
import { listIdentity, Parameters, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid, uuidv7 } from '../../src/ids'
import { isAdministrator, type Actor } from '../../src/services/identity'
import { organizationListPage } from '../../src/organization-lists'
import { isoFromText, selectListPage } from '../../src/sql'
import type { Write, Writes } from '../../src/writes'
import type { ProjectAccessService } from '../projects/api'
import type { DeliveryQuery, DeliveryResource, WebhookInput, WebhookPatch, WebhookResource } from './model'
import { NO_PROJECT, OUTBOX_CHANNEL, recordEvent, WEBHOOKS_CHANNEL, type Subscriptions } from './outbox'
import { DELIVERY_STATUSES } from './schema'
import { generateSigningSecret, type SecretBox } from './secrets'
import { checkTarget } from '../../src/net/targets'

/** The event type of a test ping (not a change: it is in no catalog and goes to one webhook). */
export const PING = 'ping'
/** How long the previous secret still signs after a rotation. */
export const ROTATION_OVERLAP_HOURS = 24

const WEBHOOK_COLUMNS = `w.id, w.url, w.description, w.events, w.project_id as "projectId", w.enabled, w.disabled_reason as "disabledReason",
  w.created_by as "createdBy", w.last_success_at as "lastSuccessAt", w.failing_since as "failingSince",
  case when w.previous_secret_expires_at > now() then w.previous_secret_expires_at end as "previousSecretExpiresAt",
  w.created_at as "createdAt", w.updated_at as "updatedAt"`

const DELIVERY_COLUMNS = `d.id, d.webhook_id as "webhookId", d.event_id as "eventId", e.type as "eventType", e.project_id as "projectId", d.status, d.attempts,
  d.last_response_status as "lastResponseStatus", d.last_duration_ms as "lastDurationMs", d.last_error as "lastError",
  d.last_attempt_at as "lastAttemptAt", case when d.status = 'pending' then d.next_attempt_at end as "nextAttemptAt",
  d.delivered_at as "deliveredAt", d.created_at as "createdAt"`

/** The organization's webhooks ($1), oldest first: the list's only order, which its cursors continue. */
const WEBHOOK_LIST: ListShape = {
  name: 'webhooks',
  filters: {},
  sorts: { createdAt: { column: 'w.created_at', cast: 'timestamptz' } },
  defaultOrder: ['createdAt'],
  tiebreaker: { column: 'w.id', cast: 'uuid' },
}

/**
 * A webhook's deliveries ($1 webhook, $2 organization), newest first, by `status` (one value: the
 * route's schema takes one) as before; a cursor is valid only with the status it was issued for.
 */
const DELIVERY_LIST: ListShape = {
  name: 'webhook-deliveries',
  filters: { status: { type: 'enum', values: DELIVERY_STATUSES, column: 'd.status', description: 'Only deliveries in this status.' } },
  sorts: { createdAt: { column: 'd.created_at', cast: 'timestamptz' } },
  defaultOrder: ['-createdAt'],
  tiebreaker: { column: 'd.id', cast: 'uuid' },
}
const DELIVERIES_FROM = 'webhook_deliveries d join webhook_events e on e.id = d.event_id and e.organization_id = d.organization_id'

type TextTimes<T, K extends keyof T> = Omit<T, K> & { [P in K]: string | null }
type WebhookRow = TextTimes<WebhookResource, 'lastSuccessAt' | 'failingSince' | 'previousSecretExpiresAt' | 'createdAt' | 'updatedAt'>
type DeliveryRow = TextTimes<DeliveryResource, 'lastAttemptAt' | 'nextAttemptAt' | 'deliveredAt' | 'createdAt'>

const iso = (text: string | null) => (text === null ? null : isoFromText(text))

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

function fromDeliveryRow(row: DeliveryRow): DeliveryResource {
  return { ...row, lastAttemptAt: iso(row.lastAttemptAt), nextAttemptAt: iso(row.nextAttemptAt), deliveredAt: iso(row.deliveredAt), createdAt: isoFromText(row.createdAt!) }
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

async function findDelivery(
  executor: Executor,
  access: ProjectAccessService,
  actor: Actor,
  webhookId: string,
  deliveryId: string,
): Promise<DeliveryRow & { payload: unknown; lastResponseBody: string | null }> {
  if (!isUuid(deliveryId)) throw notFound('No such delivery.')
  const [row] = await queryText<DeliveryRow & { payload: unknown; lastResponseBody: string | null; data: unknown; previous: unknown; occurredAt: string; actorUserId: string | null; via: string }>(
    executor,
    `select ${DELIVERY_COLUMNS}, d.last_response_body as "lastResponseBody", e.data, e.previous, e.occurred_at as "occurredAt", e.actor_user_id as "actorUserId", e.via
      from webhook_deliveries d join webhook_events e on e.id = d.event_id and e.organization_id = d.organization_id
      where d.id = $1 and d.webhook_id = $2 and d.organization_id = $3`,
    [deliveryId, webhookId, actor.organizationId],
  )
  if (!row || !(await readerSees(executor, access, actor, row.projectId))) throw notFound('No such delivery.')
  const { data, previous, occurredAt, actorUserId, via, ...delivery } = row
  const payload = {
    type: row.eventType,
    id: row.eventId,
    occurredAt: isoFromText(occurredAt),
    organizationId: actor.organizationId,
    projectId: row.projectId,
    actor: { userId: actorUserId, via },
    data,
    ...(previous === null || previous === undefined ? {} : { previous }),
  }
  return { ...delivery, payload }
}

/**
 * Whether the reader sees a delivery's project: one of no project (a ping), one they can see now,
 * or any for a superadministrator (deleted projects included, as in the audit log).
 */
async function readerSees(executor: Executor, access: ProjectAccessService, actor: Actor, projectId: string | null): Promise<boolean> {
  if (projectId === null || actor.role === 'superadministrator') return true
  return (await access.projectsVisibleTo(executor, actor.organizationId, actor.userId, [projectId])).size > 0
}

/**
 * $1 webhook, $2 organization, $3 the limit: the test pings and redeliveries (a redelivery is
 * placed after its event's own position: `d.seq <> e.seq`) the webhook queued in the last minute,
 * and in how many seconds enough of them have left the minute for one more.
 */
const MANUAL_IN_LAST_MINUTE = `select count(*)::int as count,
    extract(epoch from (array_agg(d.created_at order by d.created_at))[greatest((count(*) - $3::int + 1)::int, 1)] + interval '1 minute' - now())::float8 as "retryAfter"
  from webhook_deliveries d join webhook_events e on e.id = d.event_id and e.organization_id = d.organization_id
  where d.webhook_id = $1 and d.organization_id = $2 and d.created_at > now() - interval '1 minute' and (e.type = '${PING}' or d.seq <> e.seq)`

/**
 * A redelivery takes two statements, each one task on the organization's shard on Citus. As one
 * statement Citus refused it: an INSERT … SELECT under a data-modifying CTE went to the shard with
 * the CTE's tables still the distributed ones (a distributed statement inside a shard's, which the
 * worker refuses), and both inserts as CTEs of a SELECT were planned into a broken step. First the
 * next place in the delivery's project sequence ($1 delivery, $2 organization)…
 */
const TAKE_REDELIVERY_SEQ = `insert into webhook_sequences as q (project_key, organization_id, last_seq)
  select project_key, organization_id, 1 from webhook_deliveries where id = $1 and organization_id = $2
  on conflict (project_key, organization_id) do update set last_seq = q.last_seq + 1
  returning last_seq as seq`

/** …and the new delivery there: $1 its id, $2 the delivery redelivered, $3 organization, $4 the place. */
const INSERT_REDELIVERY = `insert into webhook_deliveries (id, organization_id, webhook_id, event_id, project_key, seq, granted)
  select $1, organization_id, webhook_id, event_id, project_key, $4, granted from webhook_deliveries where id = $2 and organization_id = $3`

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

  /** 429 with Retry-After once the webhook has queued `manualDeliveriesPerMinute` tests and redeliveries in the last minute (its row is locked: concurrent requests count one after another). */
  const limitManualDeliveries = async (tx: Executor, actor: Actor, webhookId: string) => {
    const [{ count, retryAfter }] = (await queryText<{ count: number; retryAfter: number | null }>(tx, MANUAL_IN_LAST_MINUTE, [webhookId, actor.organizationId, deps.manualDeliveriesPerMinute])) as [
      { count: number; retryAfter: number | null },
    ]
    if (count >= deps.manualDeliveriesPerMinute)
      throw rateLimited(retryAfter ?? 60, `This webhook already queued ${count} test pings and redeliveries in the last minute, the most it may; retry later.`)
  }

  /** The delivery of `eventId` to the webhook, as listed. */
  const deliveryOf = async (executor: Executor, actor: Actor, webhookId: string, where: string, value: string) => {
    const [row] = await queryText<DeliveryRow>(
      executor,
      `select ${DELIVERY_COLUMNS} from webhook_deliveries d join webhook_events e on e.id = d.event_id and e.organization_id = d.organization_id
        where d.webhook_id = $1 and d.organization_id = $2 and ${where} = $3 order by d.created_at desc limit 1`,
      [webhookId, actor.organizationId, value],
    )
    return fromDeliveryRow(row!)
  }

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
        await limitManualDeliveries(tx, actor, webhook.id)
        const eventId = await recordEvent(tx, { organizationId: actor.organizationId, projectId: null, type: PING, actor: { userId: actor.userId, via: actor.via }, data: webhook }, { only: webhook.id })
        await audit({ action: 'webhook.tested', resourceType: 'webhook', resourceId: webhook.id, projectId: webhook.projectId, changes: { after: { eventId } } })
        return createdDelivery(await deliveryOf(tx, actor, webhook.id, 'd.event_id', eventId))
      }, request)
      deps.wakeWorkers(actor.organizationId)
      return answer
    },

    /** A webhook's deliveries, newest first, by page or cursor (a cursor is checked before the webhook is). */
    async deliveries(actor: Actor, webhookId: string, input: DeliveryQuery, request: PageRequest) {
      // The webhook id is bound as given: the statement runs only once findWebhook has found it.
      const parameters = new Parameters([webhookId, actor.organizationId])
      const query = parseListQuery(DELIVERY_LIST, { status: input.status }, parameters)
      const identity = listIdentity(DELIVERY_LIST, `${actor.organizationId} ${webhookId}`, query)
      const after = readCursor(request, identity, query.order)
      requireAdministrator(actor)
      await findWebhook(db, actor, webhookId)
      const conditions = ['d.webhook_id = $1', 'd.organization_id = $2', ...query.conditions]
      // Only deliveries of projects the reader can see (pings have none); a superadministrator sees every one.
      if (actor.role !== 'superadministrator') {
        const noProject = parameters.bind(NO_PROJECT)
        const visible = access.visibleProjectIds(actor, parameters.values.length + 1)
        parameters.values.push(...visible.parameters)
        conditions.push(`(d.project_key = ${noProject} or d.project_key in (${visible.sql}))`)
      }
      return selectListPage<DeliveryRow, DeliveryResource>(
        db,
        { columns: DELIVERY_COLUMNS, from: DELIVERIES_FROM, conditions, parameters, order: query.order, total: `select count(*) from ${DELIVERIES_FROM} where ${conditions.join(' and ')}`, identity, after },
        request,
        fromDeliveryRow,
      )
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
        await limitManualDeliveries(tx, actor, webhook.id)
        // A new place at the end of its project's sequence: the stream's order (and whoever holds its lease) stays as it is.
        const id = uuidv7()
        const [{ seq }] = (await queryText<{ seq: string | number }>(tx, TAKE_REDELIVERY_SEQ, [original.id, actor.organizationId])) as [{ seq: string | number }]
        await queryText(tx, INSERT_REDELIVERY, [id, original.id, actor.organizationId, String(seq)])
        await events.publish(tx, OUTBOX_CHANNEL, { organizationId: actor.organizationId })
        await audit({ action: 'webhook.redelivered', resourceType: 'webhook', resourceId: webhook.id, projectId: original.projectId, changes: { after: { deliveryId: id, eventId: original.eventId } } })
        return createdDelivery(await deliveryOf(tx, actor, webhook.id, 'd.id', id))
      }, request)
      deps.wakeWorkers(actor.organizationId)
      return answer
    },
  }
}

export type WebhookService = ReturnType<typeof createWebhooks>
