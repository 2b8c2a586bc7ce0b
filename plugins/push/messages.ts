/**
 * `POST /api/message`: a counted display call on the named page (the display plugin's seam):
 * the key checked, the call counted against the display account's daily limit (the same counter
 * as `POST /api/component`), then the message and one delivery per recipient device written by
 * this plugin's own statements — all in ONE transaction, so a counted call and its outbox rows
 * commit together or not at all. Recipients come from display's read model `page_viewers` and
 * auth's `user_directory` (active users). The outbox delivers afterwards. Also the delivery
 * reports of API v1.
 */
import { FormatRegistry, Type } from '@sinclair/typebox'
import { sql, type Placeholder, type SQL } from 'drizzle-orm'
import { queryText, type Database, type Executor, type Transaction } from '../../src/db'
import { conflict, notFound, type ApiError } from '../../src/http/errors'
import type { Writes } from '../../src/writes'
import { listIdentity, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid, uuidv7 } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { isoFromText, selectListPage } from '../../src/sql'
import { compileStatement, runStatement } from '../../src/statements'
import { checkBody, invalidRequest, type DisplayError, type Outcome } from '../../src/http/display-api'
import type { DisplayCalls, DisplayPages, PageCall } from '../display/api'

export const MAX_MESSAGE = 4000
/** FCM's longest time to live: 4 weeks. */
export const MAX_TTL_SECONDS = 2_419_200
/** How far ahead a message may be scheduled, and how far past a sendAt may be (sent at once). */
const MAX_SCHEDULE_MS = 30 * 86_400_000
const MAX_PAST_MS = 3_600_000

/** Characters as people count them (code points, so an emoji is one). */
const characters = (text: string) => {
  let n = 0
  for (const _ of text) n++
  return n
}

FormatRegistry.Set('notification-text', (text) => text.trim().length > 0 && characters(text) <= MAX_MESSAGE)

/** The body of `POST /api/message`: checked with this schema, and documented by it. */
export const MessageBody = Type.Object(
  {
    apiKey: Type.String({ description: 'Your display key, `dpk_…`.' }),
    pageName: Type.String({ minLength: 1, maxLength: 100, description: 'The page, in any case; its name is the notification title.' }),
    message: Type.String({
      minLength: 1,
      maxLength: MAX_MESSAGE,
      format: 'notification-text',
      description: `The notification body: 1..${MAX_MESSAGE} characters (code points), not only whitespace.`,
    }),
    priority: Type.Optional(
      Type.Union([Type.Literal('high'), Type.Literal('normal')], {
        description: "`high` (the default) wakes the device at once; `normal` lets it wait for a convenient moment (FCM android.priority, apns-priority 10 or 5, Web Push Urgency).",
      }),
    ),
    ttlSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_TTL_SECONDS,
        description: "How long the push services keep the message for a device that is offline (FCM's ttl, apns-expiration, Web Push TTL; default 4 weeks); also how long quiet hours may hold it: once it has run out, a held push is dropped (`expired`). 0: now or never.",
      }),
    ),
    collapseKey: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: '^[\\x20-\\x7e]+$',
        description: 'Messages with the same key replace each other on a device that has not shown them yet (FCM collapse_key, apns-collapse-id, Web Push Topic): 1..64 printable ASCII characters.',
      }),
    ),
    sendAt: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'Schedules the message: sent within a minute of this time, at most 30 days ahead (a time up to an hour past sends at once). Until it goes out, DELETE /api/v1/pages/{pageId}/messages/{messageId} cancels it. The call counts now.',
      }),
    ),
    critical: Type.Optional(Type.Boolean({ description: "Sent through recipients' quiet hours (default false: a push during someone's quiet hours waits until they end)." })),
  },
  { title: 'MessageInput', additionalProperties: false },
)

/**
 * MessageBody as it is checked: JSON Schema (and so the document) counts `maxLength` in code
 * points, TypeBox in UTF-16 units, where an emoji is two; so the check leaves the length to the
 * format, which counts code points.
 */
const { maxLength: _unitsNotCodePoints, ...messageText } = MessageBody.properties.message
const MessageCheck = Type.Object({ ...MessageBody.properties, message: Type.String(messageText) }, { additionalProperties: false })

/** Delivery states a message starts with: `pending` with an FCM sender, else `undelivered` (Web Push deliveries always start `pending`). */
export type FirstState = 'pending' | 'undelivered'

/** The number of rows a statement wrote, whichever driver ran it (postgres.js `count`, PGlite `affectedRows`). */
const rowsWritten = (result: unknown) => Number((result as { count?: number }).count ?? (result as { affectedRows?: number }).affectedRows ?? 0)

/** A message's options as checked (absent ones as null: the defaults). */
export interface MessageOptions {
  priority: 'high' | 'normal'
  ttlSeconds: number | null
  collapseKey: string | null
  /** ISO time; null: at once. */
  sendAt: string | null
  critical: boolean
}

/** The options of a body MessageCheck accepted, or the problem with its sendAt (400, counted). */
function messageOptions(body: Record<string, unknown>, now = Date.now()): MessageOptions | DisplayError {
  let sendAt: string | null = null
  if (typeof body.sendAt === 'string') {
    const at = Date.parse(body.sendAt)
    if (at > now + MAX_SCHEDULE_MS) return { message: 'invalidRequest', detail: 'sendAt must be at most 30 days ahead.', field: 'sendAt' }
    if (at < now - MAX_PAST_MS) return { message: 'invalidRequest', detail: 'sendAt must not be more than an hour in the past.', field: 'sendAt' }
    // A time already past is sent at once (a client's clock may run a little behind).
    if (at > now) sendAt = new Date(at).toISOString()
  }
  return {
    priority: body.priority === 'normal' ? 'normal' : 'high',
    ttlSeconds: typeof body.ttlSeconds === 'number' ? body.ttlSeconds : null,
    collapseKey: typeof body.collapseKey === 'string' ? body.collapseKey : null,
    sendAt,
    critical: body.critical === true,
  }
}

/**
 * Writes the message and one delivery per recipient device, in the display call's transaction:
 * recipients from display's read model `page_viewers` and auth's `user_directory` (active users),
 * each device once, but none of a user who muted the page. A scheduled message's deliveries are
 * due at its sendAt. Both statements name the page's organization (on Citus, its shard).
 */
export async function recordMessage(
  tx: Transaction,
  page: Omit<PageCall, 'userId'> & { userId: string | null },
  message: { id: string; title?: string; body: string; state: FirstState; options: MessageOptions },
): Promise<{ messageId: string; targeted: number }> {
  const { priority, ttlSeconds, collapseKey, sendAt, critical } = message.options
  await tx.execute(
    sql`insert into messages (id, organization_id, page_id, page_name, title, body, sender_id, priority, ttl_seconds, collapse_key, send_at, critical)
      values (${message.id}, ${page.organizationId}, ${page.pageId}, ${page.pageName}, ${message.title ?? null}, ${message.body}, ${page.userId}, ${priority}, ${ttlSeconds}, ${collapseKey}, ${sendAt}::timestamptz, ${critical})`,
  )
  const queued = await tx.execute(sql`insert into deliveries (message_id, organization_id, device_token, user_id, state, next_attempt_at)
    select ${message.id}::uuid, d.organization_id, d.token, d.user_id, case when d.platform = 'webpush' then 'pending' else ${message.state}::text end,
      coalesce(${sendAt}::timestamptz, now()) from page_viewers v
      join devices d on d.user_id = v.user_id and d.organization_id = v.organization_id
      join user_directory u on u.id = d.user_id and u.organization_id = d.organization_id and u.status = 'active'
    where v.page_id = ${page.pageId}::uuid and v.organization_id = ${page.organizationId}::uuid
      and not exists (select 1 from notification_preferences n where n.user_id = d.user_id and n.organization_id = d.organization_id and ${page.pageId}::uuid = any(n.muted_page_ids))`)
  return { messageId: message.id, targeted: rowsWritten(queued) }
}

export interface MessageDeps {
  db: Database
  writes: Writes
  calls: DisplayCalls
  pages: DisplayPages
  /** True when an FCM sender is configured (deliveries start `pending`, else `undelivered`). */
  senderOn: boolean
}

export interface MessageReport {
  id: string
  pageId: string
  pageName: string
  title: string
  message: string
  sentBy: string | null
  createdAt: string
  priority: 'high' | 'normal'
  ttlSeconds: number | null
  collapseKey: string | null
  sendAt: string | null
  critical: boolean
  cancelledAt: string | null
  targeted: number
  pending: number
  held: number
  sent: number
  failed: number
  pruned: number
  expired: number
  cancelled: number
  undelivered: number
  delivered: number
  opened: number
}

const REPORT_COLUMNS = `m.id, m.page_id as "pageId", m.page_name as "pageName", coalesce(m.title, m.page_name) as title, m.body as message, m.sender_id as "sentBy", m.created_at::text as "createdAt",
    m.priority, m.ttl_seconds as "ttlSeconds", m.collapse_key as "collapseKey", m.send_at::text as "sendAt", m.critical, m.cancelled_at::text as "cancelledAt",
    c.targeted, c.pending, c.held, c.sent, c.failed, c.pruned, c.expired, c.cancelled, c.undelivered, r.delivered, r.opened`

/** The delivery and receipt counts of message `m` of `organization` (one pass over its deliveries, one over its receipts). */
const countsOf = (organization: SQL | Placeholder): SQL => sql`cross join lateral (
    select count(*)::int as targeted, count(*) filter (where d.state in ('pending', 'sending'))::int as pending,
      count(*) filter (where d.state = 'held')::int as held, count(*) filter (where d.state = 'sent')::int as sent,
      count(*) filter (where d.state = 'failed')::int as failed, count(*) filter (where d.state = 'pruned')::int as pruned,
      count(*) filter (where d.state = 'expired')::int as expired, count(*) filter (where d.state = 'cancelled')::int as cancelled,
      count(*) filter (where d.state = 'undelivered')::int as undelivered
    from deliveries d where d.message_id = m.id and d.organization_id = ${organization}
  ) c cross join lateral (
    select count(*) filter (where x.event = 'delivered')::int as delivered, count(*) filter (where x.event = 'opened')::int as opened
    from message_receipts x where x.message_id = m.id and x.organization_id = ${organization}
  ) r`

/** A report row as stored, its times as ISO strings. */
const reportOf = (row: MessageReport): MessageReport => ({
  ...row,
  createdAt: isoFromText(row.createdAt),
  sendAt: row.sendAt === null ? null : isoFromText(row.sendAt),
  cancelledAt: row.cancelledAt === null ? null : isoFromText(row.cancelledAt),
})

/** The states a delivery may be cancelled from: it has not gone out. */
const NOT_GONE_OUT = new Set(['pending', 'held', 'cancelled'])

/** A page's messages, newest first: the list's only order, which its cursors continue. */
const REPORT_LIST: ListShape = {
  name: 'message-reports',
  filters: {},
  sorts: { createdAt: { column: 'm.created_at', cast: 'timestamptz' } },
  defaultOrder: ['-createdAt'],
  tiebreaker: { column: 'm.id', cast: 'uuid' },
}
/** The messages of the organization's page, as a condition on `m`. */
const messagesOf = (organizationId: string, pageId: string): SQL => sql`m.organization_id = ${organizationId} and m.page_id = ${pageId}`

const ORGANIZATION = sql.placeholder('organization')
/** One message of the organization's page, with its counts. */
const REPORT = compileStatement(
  sql`select ${sql.raw(REPORT_COLUMNS)} from messages m ${countsOf(ORGANIZATION)} where m.organization_id = ${ORGANIZATION} and m.id = ${sql.placeholder('message')} and m.page_id = ${sql.placeholder('page')}`,
)

/** Messages and their delivery reports, bound once. */
export function createMessages({ db, writes, calls, pages, senderOn }: MessageDeps) {
  const reportRow = async (executor: Executor, organizationId: string, pageId: string, messageId: string) => {
    const [row] = await runStatement<MessageReport>(executor, REPORT, { organization: organizationId, message: messageId, page: pageId })
    if (!row) throw notFound('No such message.')
    return reportOf(row)
  }
  return {
    /** Records one message: one transaction for a valid call (the call's statement, the message, its deliveries), one statement for a refused body. */
    async send(body: unknown): Promise<Outcome<{ messageId: string; targeted: number }>> {
      const key = calls.keyOf(body)
      if ('ok' in key) return key
      const problem = checkBody(MessageCheck, body)
      if (problem) return calls.refuseCharged(key.keyHash, problem)
      const options = messageOptions(body as Record<string, unknown>)
      if ('message' in options) return calls.refuseCharged(key.keyHash, invalidRequest([options]))
      const { pageName, message } = body as { pageName: string; message: string }
      const state = senderOn ? 'pending' : 'undelivered'
      const outcome = await calls.onPage(key.keyHash, pageName, (tx, page) => recordMessage(tx, page, { id: uuidv7(), body: message, state, options }))
      if (!outcome.ok) return outcome
      return { ok: true, usage: outcome.usage, ...outcome.result }
    },

    /** One message of a page the actor can see, with its delivery counts; 404 otherwise. */
    async report(actor: Actor, pageId: string, messageId: string): Promise<MessageReport> {
      if (!isUuid(messageId)) throw notFound('No such message.')
      const page = await pages.requireVisible(actor, pageId).catch(() => {
        throw notFound('No such message.')
      })
      return reportRow(db, actor.organizationId, page.id, messageId)
    },

    /**
     * Cancels a message none of whose deliveries has gone out (page editors): its pending and held
     * deliveries become `cancelled`, in one transaction with its audit record; 409 once one has gone
     * out. The message's row and then its deliveries are locked first, so a worker's claim (which
     * skips locked rows) and the cancel never both take a delivery. Cancelling again answers the same report.
     */
    async cancel(actor: Actor, pageId: string, messageId: string): Promise<MessageReport> {
      if (!isUuid(messageId)) throw notFound('No such message.')
      const page = await pages.requireEditable(actor, pageId).catch((error: ApiError) => {
        throw error.status === 403 ? error : notFound('No such message.')
      })
      return writes.change(actor, null, async ({ tx, audit }) => {
        const [message] = await queryText<{ cancelled: boolean }>(
          tx,
          'select cancelled_at is not null as cancelled from messages where organization_id = $1 and id = $2 and page_id = $3 for update',
          [actor.organizationId, messageId, page.id],
        )
        if (!message) throw notFound('No such message.')
        if (message.cancelled) return reportRow(tx, actor.organizationId, page.id, messageId)
        const states = await queryText<{ state: string; n: number }>(
          tx,
          `with locked as (select state from deliveries where organization_id = $1 and message_id = $2 for update)
            select state, count(*)::int as n from locked group by state`,
          [actor.organizationId, messageId],
        )
        const gone = states.filter((row) => !NOT_GONE_OUT.has(row.state)).reduce((n, row) => n + row.n, 0)
        if (gone > 0) throw conflict(`The message has already gone out to ${gone} device(s); only a message none of whose deliveries has gone out can be cancelled.`)
        const cancelled = await queryText<{ n: number }>(
          tx,
          `with cancelled as (
              update deliveries set state = 'cancelled', lease_until = null, updated_at = now()
              where organization_id = $1 and message_id = $2 and state in ('pending', 'held') returning 1
            ) select count(*)::int as n from cancelled`,
          [actor.organizationId, messageId],
        )
        await queryText(tx, 'update messages set cancelled_at = now() where organization_id = $1 and id = $2', [actor.organizationId, messageId])
        await audit({ action: 'message.cancelled', resourceType: 'message', resourceId: messageId, changes: { after: { pageId: page.id, cancelledDeliveries: cancelled[0]?.n ?? 0 } } })
        return reportRow(tx, actor.organizationId, page.id, messageId)
      })
    },

    /** The messages of a page the actor can see, newest first, by page or cursor; 404 for a page they cannot see. */
    async reports(actor: Actor, pageId: string, request: PageRequest) {
      // The page id is bound as given: the statement runs only once the page is found visible.
      const query = parseListQuery(REPORT_LIST, {})
      const identity = listIdentity(REPORT_LIST, `${actor.organizationId} ${pageId}`, query)
      const after = readCursor(request, identity, query.order)
      await pages.requireVisible(actor, pageId)
      const messages = messagesOf(actor.organizationId, pageId)
      return selectListPage<MessageReport, MessageReport>(
        db,
        {
          columns: REPORT_COLUMNS,
          from: sql`messages m ${countsOf(sql`${actor.organizationId}`)}`,
          conditions: [messages],
          order: query.order,
          total: sql`select count(*) from messages m where ${messages}`,
          identity,
          after,
        },
        request,
        reportOf,
      )
    },
  }
}

export type MessageService = ReturnType<typeof createMessages>
