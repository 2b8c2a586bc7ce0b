/**
 * `POST /api/message`: a counted display call on the named page (the display plugin's seam):
 * the key checked, the call counted against the display account's daily limit (the same counter
 * as `POST /api/component`), the message and one delivery per recipient device written — all in
 * ONE statement, so a counted call and its outbox rows commit together or not at all. Recipients
 * come from display's read model `page_viewers` and auth's `user_directory` (active users). The
 * outbox delivers afterwards. Also the delivery reports of API v1.
 */
import { FormatRegistry, Type } from '@sinclair/typebox'
import { queryText, type Database } from '../../src/db'
import { notFound } from '../../src/http/errors'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid, uuidv7 } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { isoFromText, selectPage } from '../../src/sql'
import { checkBody, type DisplayCalls, type DisplayPages, type Outcome } from '../display/api'

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

/** Display's `target` is the page; these CTEs write the message and its deliveries ($first message id, +1 body, +2 first state). */
const MESSAGE_EFFECT = (first: number) => `message as (
    insert into messages (id, organization_id, page_id, page_name, body, sender_id)
    select $${first}, t.organization_id, t.id, t.name, $${first + 1}, a.user_id from target t, account a, counted where t.editable
    returning id, page_id, organization_id
  ),
  queued as (
    insert into deliveries (message_id, organization_id, device_token, user_id, state)
    select m.id, m.organization_id, d.token, d.user_id, $${first + 2} from message m
      join page_viewers v on v.page_id = m.page_id
      join devices d on d.user_id = v.user_id and d.organization_id = m.organization_id
      join user_directory u on u.id = d.user_id and u.status = 'active'
    returning 1
  )`

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

/** The delivery counts of message `m` (one pass over its deliveries, index-only). */
const COUNTS = `cross join lateral (
    select count(*)::int as targeted, count(*) filter (where d.state = 'sent')::int as sent,
      count(*) filter (where d.state = 'failed')::int as failed, count(*) filter (where d.state = 'pruned')::int as pruned,
      count(*) filter (where d.state in ('pending', 'sending'))::int as pending, count(*) filter (where d.state = 'undelivered')::int as undelivered
    from deliveries d where d.message_id = m.id
  ) c`

/** Messages and their delivery reports, bound once. */
export function createMessages({ db, calls, pages, senderOn }: MessageDeps) {
  return {
    /** Records one message: one statement for a valid call, one for a refused body. */
    async send(body: unknown): Promise<Outcome<{ messageId: string; targeted: number }>> {
      const key = calls.keyOf(body)
      if ('ok' in key) return key
      const problem = checkBody(MessageCheck, body)
      if (problem) return calls.refuseCounted(key.keyHash, problem)
      const { pageName, message } = body as { pageName: string; message: string }
      const outcome = await calls.onPage<{ messageId: string; targeted: number }>(key.keyHash, pageName, {
        ctes: MESSAGE_EFFECT,
        columns: `(select id from message) as "messageId", (select count(*)::int from queued) as targeted`,
        parameters: [uuidv7(), message, senderOn ? 'pending' : 'undelivered'],
      })
      if (!outcome.ok) return outcome
      return { ok: true, usage: outcome.usage, messageId: outcome.row.messageId, targeted: outcome.row.targeted }
    },

    /** One message of a page the actor can see, with its delivery counts; 404 otherwise. */
    async report(actor: Actor, pageId: string, messageId: string): Promise<MessageReport> {
      if (!isUuid(messageId)) throw notFound('No such message.')
      const page = await pages.requireVisible(actor, pageId).catch(() => {
        throw notFound('No such message.')
      })
      const [row] = await queryText<MessageReport>(db, `select ${REPORT_COLUMNS} from messages m ${COUNTS} where m.id = $1 and m.page_id = $2`, [messageId, page.id])
      if (!row) throw notFound('No such message.')
      return { ...row, createdAt: isoFromText(row.createdAt) }
    },

    /** The messages of a page the actor can see, newest first; 404 for a page they cannot see. */
    async reports(actor: Actor, pageId: string, request: PageRequest) {
      const page = await pages.requireVisible(actor, pageId)
      return selectPage<MessageReport & { total: string }, MessageReport>(
        db,
        `select ${REPORT_COLUMNS}, count(*) over () as total from messages m ${COUNTS} where m.page_id = $1 order by m.created_at desc, m.id desc`,
        `select count(*) as total from messages m where m.page_id = $1`,
        [page.id],
        request,
        ({ total: _total, ...row }) => ({ ...row, createdAt: isoFromText(row.createdAt) }),
      )
    },
  }
}

export type MessageService = ReturnType<typeof createMessages>
