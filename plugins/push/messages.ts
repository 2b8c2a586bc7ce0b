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
import { sql } from 'drizzle-orm'
import { queryText, type Database, type Transaction } from '../../src/db'
import { notFound } from '../../src/http/errors'
import { listIdentity, Parameters, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid, uuidv7 } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { isoFromText, selectListPage } from '../../src/sql'
import { checkBody, type DisplayCalls, type DisplayPages, type Outcome, type PageCall } from '../display/api'

export const MAX_MESSAGE = 4000

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

/** Delivery states a message starts with: `pending` with an FCM sender, else `undelivered`. */
type FirstState = 'pending' | 'undelivered'

/** The number of rows a statement wrote, whichever driver ran it (postgres.js `count`, PGlite `affectedRows`). */
const rowsWritten = (result: unknown) => Number((result as { count?: number }).count ?? (result as { affectedRows?: number }).affectedRows ?? 0)

/**
 * Writes the message and one delivery per recipient device, in the display call's transaction:
 * recipients from display's read model `page_viewers` and auth's `user_directory` (active users),
 * each device once. Both statements name the page's organization (on Citus, its shard).
 */
async function recordMessage(tx: Transaction, page: PageCall, message: { id: string; body: string; state: FirstState }): Promise<{ messageId: string; targeted: number }> {
  await tx.execute(
    sql`insert into messages (id, organization_id, page_id, page_name, body, sender_id) values (${message.id}, ${page.organizationId}, ${page.pageId}, ${page.pageName}, ${message.body}, ${page.userId})`,
  )
  const queued = await tx.execute(sql`insert into deliveries (message_id, organization_id, device_token, user_id, state)
    select ${message.id}::uuid, d.organization_id, d.token, d.user_id, ${message.state}::text from page_viewers v
      join devices d on d.user_id = v.user_id and d.organization_id = v.organization_id
      join user_directory u on u.id = d.user_id and u.organization_id = d.organization_id and u.status = 'active'
    where v.page_id = ${page.pageId}::uuid and v.organization_id = ${page.organizationId}::uuid`)
  return { messageId: message.id, targeted: rowsWritten(queued) }
}

export interface MessageDeps {
  db: Database
  calls: DisplayCalls
  pages: DisplayPages
  /** True when an FCM sender is configured (deliveries start `pending`, else `undelivered`). */
  senderOn: boolean
}

export interface MessageReport {
  id: string
  pageId: string
  pageName: string
  message: string
  sentBy: string | null
  createdAt: string
  targeted: number
  sent: number
  failed: number
  pruned: number
  pending: number
  undelivered: number
}

const REPORT_COLUMNS = `m.id, m.page_id as "pageId", m.page_name as "pageName", m.body as message, m.sender_id as "sentBy", m.created_at::text as "createdAt",
    c.targeted, c.sent, c.failed, c.pruned, c.pending, c.undelivered`

/** The delivery counts of message `m` of organization $1 (one pass over its deliveries). */
const COUNTS = `cross join lateral (
    select count(*)::int as targeted, count(*) filter (where d.state = 'sent')::int as sent,
      count(*) filter (where d.state = 'failed')::int as failed, count(*) filter (where d.state = 'pruned')::int as pruned,
      count(*) filter (where d.state in ('pending', 'sending'))::int as pending, count(*) filter (where d.state = 'undelivered')::int as undelivered
    from deliveries d where d.message_id = m.id and d.organization_id = $1
  ) c`

/** A page's messages ($1 organization, $2 page), newest first: the list's only order, which its cursors continue. */
const REPORT_LIST: ListShape = {
  name: 'message-reports',
  filters: {},
  sorts: { createdAt: { column: 'm.created_at', cast: 'timestamptz' } },
  defaultOrder: ['-createdAt'],
  tiebreaker: { column: 'm.id', cast: 'uuid' },
}
const MESSAGES_OF = 'm.organization_id = $1 and m.page_id = $2'

/** Messages and their delivery reports, bound once. */
export function createMessages({ db, calls, pages, senderOn }: MessageDeps) {
  return {
    /** Records one message: one transaction for a valid call (the call's statement, the message, its deliveries), one statement for a refused body. */
    async send(body: unknown): Promise<Outcome<{ messageId: string; targeted: number }>> {
      const key = calls.keyOf(body)
      if ('ok' in key) return key
      const problem = checkBody(MessageCheck, body)
      if (problem) return calls.refuseCounted(key.keyHash, problem)
      const { pageName, message } = body as { pageName: string; message: string }
      const state = senderOn ? 'pending' : 'undelivered'
      const outcome = await calls.onPage(key.keyHash, pageName, (tx, page) => recordMessage(tx, page, { id: uuidv7(), body: message, state }))
      if (!outcome.ok) return outcome
      return { ok: true, usage: outcome.usage, ...outcome.result }
    },

    /** One message of a page the actor can see, with its delivery counts; 404 otherwise. */
    async report(actor: Actor, pageId: string, messageId: string): Promise<MessageReport> {
      if (!isUuid(messageId)) throw notFound('No such message.')
      const page = await pages.requireVisible(actor, pageId).catch(() => {
        throw notFound('No such message.')
      })
      const [row] = await queryText<MessageReport>(db, `select ${REPORT_COLUMNS} from messages m ${COUNTS} where m.organization_id = $1 and m.id = $2 and m.page_id = $3`, [actor.organizationId, messageId, page.id])
      if (!row) throw notFound('No such message.')
      return { ...row, createdAt: isoFromText(row.createdAt) }
    },

    /** The messages of a page the actor can see, newest first, by page or cursor; 404 for a page they cannot see. */
    async reports(actor: Actor, pageId: string, request: PageRequest) {
      // The page id is bound as given: the statement runs only once the page is found visible.
      const parameters = new Parameters([actor.organizationId, pageId])
      const query = parseListQuery(REPORT_LIST, {}, parameters)
      const identity = listIdentity(REPORT_LIST, `${actor.organizationId} ${pageId}`, query)
      const after = readCursor(request, identity, query.order)
      await pages.requireVisible(actor, pageId)
      return selectListPage<MessageReport, MessageReport>(
        db,
        { columns: REPORT_COLUMNS, from: `messages m ${COUNTS}`, conditions: [MESSAGES_OF], parameters, order: query.order, total: `select count(*) from messages m where ${MESSAGES_OF}`, identity, after },
        request,
        (row) => ({ ...row, createdAt: isoFromText(row.createdAt) }),
      )
    },
  }
}

export type MessageService = ReturnType<typeof createMessages>
