/**
 * Receipts, `POST /api/devices/receipts`: an app says a message reached the device (`delivered`)
 * or that its user opened it (`opened`). Each counts once per user and event, and only for a
 * message that went out to one of that user's devices; the message's delivery report counts them.
 */
import { Type } from '@sinclair/typebox'
import { queryText, type Database } from '../../src/db'

export const RECEIPT_EVENTS = ['delivered', 'opened'] as const

export const ReceiptBody = Type.Object(
  {
    messageId: Type.String({ format: 'uuid', description: 'The `messageId` of the push (its data field).' }),
    event: Type.Union(
      RECEIPT_EVENTS.map((event) => Type.Literal(event)),
      { description: '`delivered`: the push reached this device; `opened`: its user opened it.' },
    ),
  },
  { title: 'ReceiptInput', additionalProperties: false },
)

/**
 * Records the user's receipt; false when no delivery of the message to one of the user's devices
 * has gone out (or is going: FCM may hand it over before the outbox records it sent). A repeated
 * receipt changes nothing. Two statements on the user's organization (on Citus, its shard): Citus
 * refuses a subquery in an INSERT.
 */
export async function recordReceipt(db: Database, user: { id: string; organizationId: string }, messageId: string, event: (typeof RECEIPT_EVENTS)[number]): Promise<boolean> {
  const [sent] = await queryText<{ ok: boolean }>(
    db,
    `select exists (select 1 from deliveries where organization_id = $1 and user_id = $2 and message_id = $3 and state in ('sending', 'sent')) as ok`,
    [user.organizationId, user.id, messageId],
  )
  if (!sent?.ok) return false
  await queryText(
    db,
    'insert into message_receipts (message_id, user_id, organization_id, event) values ($1, $2, $3, $4) on conflict (message_id, user_id, event, organization_id) do nothing',
    [messageId, user.id, user.organizationId, event],
  )
  return true
}
