/**
 * A webhook's deliveries as its readers see them (listed, or one with the payload it carries: only
 * those of projects the reader can see) and the manual ones its managers queue (test pings,
 * redeliveries: the statements and the per-webhook limit on them). Who may do what is the
 * service's (service.ts); these run once it has decided.
 */
import { sql, type SQL } from 'drizzle-orm'
import { queryText, type Database, type Executor } from '../../src/db'
import { notFound, rateLimited } from '../../src/http/errors'
import { listIdentity, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { isoFromText, selectListPage } from '../../src/sql'
import type { ProjectAccessService } from '../projects/api'
import type { DeliveryQuery, DeliveryResource } from './model'
import { NO_PROJECT } from './outbox'
import { DELIVERY_STATUSES } from './schema'

/** The event type of a test ping (not a change: it is in no catalog and goes to one webhook). */
export const PING = 'ping'

const DELIVERY_COLUMNS = `d.id, d.webhook_id as "webhookId", d.event_id as "eventId", e.type as "eventType", e.project_id as "projectId", d.status, d.attempts,
  d.last_response_status as "lastResponseStatus", d.last_duration_ms as "lastDurationMs", d.last_error as "lastError",
  d.last_attempt_at as "lastAttemptAt", case when d.status = 'pending' then d.next_attempt_at end as "nextAttemptAt",
  d.delivered_at as "deliveredAt", d.created_at as "createdAt"`

/**
 * A webhook's deliveries, newest first, by `status` (one value: the route's schema takes one) as
 * before; a cursor is valid only with the status it was issued for.
 */
const DELIVERY_LIST: ListShape = {
  name: 'webhook-deliveries',
  filters: { status: { type: 'enum', values: DELIVERY_STATUSES, column: 'd.status', description: 'Only deliveries in this status.' } },
  sorts: { createdAt: { column: 'd.created_at', cast: 'timestamptz' } },
  defaultOrder: ['-createdAt'],
  tiebreaker: { column: 'd.id', cast: 'uuid' },
}
const DELIVERIES_FROM = 'webhook_deliveries d join webhook_events e on e.id = d.event_id and e.organization_id = d.organization_id'

/** A resource whose `K` timestamps are read as text (the drivers leave them so). */
export type TextTimes<T, K extends keyof T> = Omit<T, K> & { [P in K]: string | null }
export type DeliveryRow = TextTimes<DeliveryResource, 'lastAttemptAt' | 'nextAttemptAt' | 'deliveredAt' | 'createdAt'>

/** A timestamp read as text, in ISO 8601 (null stays null). */
export const iso = (text: string | null) => (text === null ? null : isoFromText(text))

export function fromDeliveryRow(row: DeliveryRow): DeliveryResource {
  return { ...row, lastAttemptAt: iso(row.lastAttemptAt), nextAttemptAt: iso(row.nextAttemptAt), deliveredAt: iso(row.deliveredAt), createdAt: isoFromText(row.createdAt!) }
}

/** One delivery of the webhook the reader may see (its project's), with the payload it carries; 404 otherwise. */
export async function findDelivery(
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

/** 429 with Retry-After once the webhook has queued `perMinute` tests and redeliveries in the last minute (its row is locked: concurrent requests count one after another). */
export async function limitManualDeliveries(tx: Executor, organizationId: string, webhookId: string, perMinute: number): Promise<void> {
  const [{ count, retryAfter }] = (await queryText<{ count: number; retryAfter: number | null }>(tx, MANUAL_IN_LAST_MINUTE, [webhookId, organizationId, perMinute])) as [
    { count: number; retryAfter: number | null },
  ]
  if (count >= perMinute) throw rateLimited(retryAfter ?? 60, `This webhook already queued ${count} test pings and redeliveries in the last minute, the most it may; retry later.`)
}

/** Queues the delivery's event again as the new delivery `id`, at the end of its project's sequence (the stream's order, and whoever holds its lease, stay as they are). */
export async function queueRedelivery(tx: Executor, organizationId: string, deliveryId: string, id: string): Promise<void> {
  const [{ seq }] = (await queryText<{ seq: string | number }>(tx, TAKE_REDELIVERY_SEQ, [deliveryId, organizationId])) as [{ seq: string | number }]
  await queryText(tx, INSERT_REDELIVERY, [id, deliveryId, organizationId, String(seq)])
}

/** The webhook's latest delivery whose `where` column is `value`, as listed. */
export async function deliveryOf(executor: Executor, organizationId: string, webhookId: string, where: 'd.event_id' | 'd.id', value: string): Promise<DeliveryResource> {
  const [row] = await queryText<DeliveryRow>(
    executor,
    `select ${DELIVERY_COLUMNS} from webhook_deliveries d join webhook_events e on e.id = d.event_id and e.organization_id = d.organization_id
      where d.webhook_id = $1 and d.organization_id = $2 and ${where} = $3 order by d.created_at desc limit 1`,
    [webhookId, organizationId, value],
  )
  return fromDeliveryRow(row!)
}

/**
 * A page of the webhook's deliveries, newest first, by page or cursor: the query and cursor are
 * checked first, then `allowed` (the reader may read the webhook, which exists), then the page is
 * read, with only deliveries of projects the reader can see (pings have none; a superadministrator
 * sees every one).
 */
export async function listDeliveries(db: Database, access: ProjectAccessService, actor: Actor, webhookId: string, input: DeliveryQuery, request: PageRequest, allowed: () => Promise<unknown>) {
  const query = parseListQuery(DELIVERY_LIST, { status: input.status })
  const identity = listIdentity(DELIVERY_LIST, `${actor.organizationId} ${webhookId}`, query)
  const after = readCursor(request, identity, query.order)
  await allowed()
  // The webhook id is bound as given: the statement runs only once `allowed` has found it.
  const conditions: SQL[] = [sql`d.webhook_id = ${webhookId}`, sql`d.organization_id = ${actor.organizationId}`, ...query.conditions]
  if (actor.role !== 'superadministrator') conditions.push(sql`(d.project_key = ${NO_PROJECT} or d.project_key in (${access.visibleProjects(actor)}))`)
  return selectListPage<DeliveryRow, DeliveryResource>(
    db,
    {
      columns: DELIVERY_COLUMNS,
      from: DELIVERIES_FROM,
      conditions,
      order: query.order,
      total: sql`select count(*) from ${sql.raw(DELIVERIES_FROM)} where ${sql.join(conditions, sql` and `)}`,
      identity,
      after,
    },
    request,
    fromDeliveryRow,
  )
}
