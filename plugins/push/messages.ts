/**
 * `POST /api/message`: the key is checked, the call counted against the display account's daily
 * limit (the same counter as `POST /api/component`), the message and one delivery per recipient
 * device written — all in ONE statement, so a counted call and its outbox rows commit together
 * or not at all. The outbox delivers afterwards. Also the delivery reports of API v1.
 */
import { queryText, type Database } from '../../src/db'
import { notFound } from '../../src/http/errors'
import type { PageRequest } from '../../src/http/pagination'
import { uuidv7, isUuid } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { isoFromText, selectPage } from '../../src/sql'
import { displayKeyOf, limitExceeded, readOnly, refuseCounted, unknownKey, usageOf, type DisplayError, type Outcome, type UsageRow } from '../display/model'
import { getPage } from '../display/pages-service'
import { ACTOR, actorParameters, DISPLAY_CALL, DISPLAY_USAGE, MAY_EDIT_PAGE, MAY_USE_PAGE } from '../display/schema'

export const MAX_MESSAGE = 4000
const FIELDS = new Set(['apiKey', 'pageName', 'message'])

/** Characters as people count them (code points, so an emoji is one). */
const characters = (text: string) => {
  let n = 0
  for (const _ of text) n++
  return n
}

/** The first problem of a message body, or null. */
function checkMessageBody(body: Record<string, unknown>): DisplayError | null {
  const problem = (field: string, detail: string): DisplayError => ({ message: 'invalidRequest', detail, field })
  for (const key of Object.keys(body)) if (!FIELDS.has(key)) return problem(key, 'Unknown field.')
  const { pageName, message } = body
  if (typeof pageName !== 'string') return problem('pageName', 'Expected a string: the name of the page.')
  if (pageName.length === 0 || pageName.length > 100) return problem('pageName', 'Expected 1..100 characters.')
  if (typeof message !== 'string') return problem('message', 'Expected a string: the text of the notification.')
  if (message.trim().length === 0) return problem('message', 'The message is empty.')
  if (characters(message) > MAX_MESSAGE) return problem('message', `Expected at most ${MAX_MESSAGE} characters.`)
  return null
}

/**
 * $1 key hash, $2 page name, $3 message id, $4 body, $5 the deliveries' first state ('pending',
 * or 'undelivered' when no sender is configured). Recipients: the page's creator and its access
 * list (users, and members of teams on it), active, with their registered devices; each device
 * once (a device belongs to one user).
 */
const SEND_MESSAGE_SQL = `with ${DISPLAY_CALL},
  target as (
    select p.id, p.name, p.organization_id, p.created_by, ${MAY_EDIT_PAGE} as editable from pages p, account a
    where lower(p.name) = lower($2) and ${MAY_USE_PAGE}
  ),
  message as (
    insert into messages (id, organization_id, page_id, page_name, body, sender_id)
    select $3, t.organization_id, t.id, t.name, $4, a.user_id from target t, account a, counted where t.editable
    returning id, page_id, organization_id
  ),
  audience as (
    select created_by as user_id from target where created_by is not null
    union select pa.principal_id from page_access pa, message m where pa.page_id = m.page_id and pa.principal_type = 'user'
    union select tm.user_id from page_access pa join team_members tm on tm.team_id = pa.principal_id, message m
      where pa.page_id = m.page_id and pa.principal_type = 'team'
  ),
  queued as (
    insert into deliveries (message_id, organization_id, device_token, user_id, state)
    select m.id, m.organization_id, d.token, d.user_id, $5 from message m
      join devices d on d.organization_id = m.organization_id
      join audience au on au.user_id = d.user_id
      join users u on u.id = d.user_id and u.status = 'active'
    returning 1
  )
  select ${DISPLAY_USAGE}, (select id from target) as "pageId", (select editable from target) as editable, (select id from message) as "messageId",
    (select count(*)::int from queued) as targeted
  from account a`

interface SendRow extends UsageRow {
  messageId: string | null
  targeted: number
}

/** Records one message (one statement for a valid call, one for a refused body). */
export async function sendMessage(db: Database, body: unknown, senderOn: boolean): Promise<Outcome<{ messageId: string; targeted: number }>> {
  const key = displayKeyOf(body)
  if ('ok' in key) return key
  const { keyHash } = key
  const fields = body as Record<string, unknown>
  const problem = checkMessageBody(fields)
  if (problem) return refuseCounted(db, keyHash, problem)
  const messageId = uuidv7()
  const [row] = await queryText<SendRow>(db, SEND_MESSAGE_SQL, [keyHash, fields.pageName, messageId, fields.message, senderOn ? 'pending' : 'undelivered'])
  if (!row) return unknownKey()
  const usage = usageOf(row)
  if (!usage.counted) return limitExceeded(usage)
  if (!row.pageId) return { ok: false, status: 404, usage, error: { message: 'pageNotFound', detail: 'No such page, or not one this key can use.', field: 'pageName' } }
  if (!row.editable || !row.messageId) return readOnly(usage)
  return { ok: true, usage, messageId: row.messageId, targeted: row.targeted }
}

// ---- delivery reports (API v1) ----------------------------------------------------------------

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

/** One message of a page the actor can see, with its delivery counts; 404 otherwise. */
export async function getMessageReport(db: Database, actor: Actor, pageId: string, messageId: string): Promise<MessageReport> {
  if (!isUuid(pageId) || !isUuid(messageId)) throw notFound('No such message.')
  const [row] = await queryText<MessageReport>(
    db,
    `select ${REPORT_COLUMNS} from messages m join pages p on p.id = m.page_id ${COUNTS}, ${ACTOR}
      where m.id = $4 and m.page_id = $5 and ${MAY_USE_PAGE}`,
    [...actorParameters(actor), messageId, pageId],
  )
  if (!row) throw notFound('No such message.')
  return { ...row, createdAt: isoFromText(row.createdAt) }
}

/** The messages of a page the actor can see, newest first; 404 for a page they cannot see. */
export async function listMessageReports(db: Database, actor: Actor, pageId: string, request: PageRequest) {
  await getPage(db, actor, pageId)
  return selectPage<MessageReport & { total: string }, MessageReport>(
    db,
    `select ${REPORT_COLUMNS}, count(*) over () as total from messages m ${COUNTS} where m.page_id = $1 order by m.created_at desc, m.id desc`,
    `select count(*) as total from messages m where m.page_id = $1`,
    [pageId],
    request,
    ({ total: _total, ...row }) => ({ ...row, createdAt: isoFromText(row.createdAt) }),
  )
}
