/**
 * Pushes to users that no page sent (the notifications plugin's, through `UserNotifier`): one
 * message per push, only for an active user with a device, then one delivery per device of each,
 * read back from the messages just written in the same transaction. Two statements, each joined
 * with the organization's users or devices and naming it, so on Citus each runs on its shard.
 * The outbox sends them as it sends a page's, quiet hours and TTL applied; a display account's
 * daily limit never counts them.
 */
import { queryText, type Transaction } from '../../src/db'
import { uuidv7 } from '../../src/ids'
import type { UserPush } from './api'
import type { FirstState } from './messages'

/** $1 organization, then each push's id, user, title, body, data, collapse key, TTL, critical. */
const MESSAGES = `insert into messages (id, organization_id, recipient_id, title, body, data, priority, ttl_seconds, collapse_key, critical)
  select p.id, u.organization_id, u.id, p.title, p.body, p.data, case when p.body is null then 'normal' else 'high' end, p.ttl, p.collapse_key, p.critical::boolean
  from unnest($2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::jsonb[], $7::text[], $8::int[], $9::text[]) as p(id, user_id, title, body, data, collapse_key, ttl, critical)
  join user_directory u on u.id = p.user_id and u.organization_id = $1 and u.status = 'active'
  where exists (select 1 from devices d where d.user_id = u.id and d.organization_id = u.organization_id)`

/** $1 organization, $2 the messages just written, $3 the first state of a device that is not a browser's. */
const DELIVERIES = `insert into deliveries (message_id, organization_id, device_token, user_id, state)
  select m.id, m.organization_id, d.token, d.user_id, case when d.platform = 'webpush' then 'pending' else $3::text end
  from messages m join devices d on d.user_id = m.recipient_id and d.organization_id = m.organization_id
  where m.organization_id = $1 and m.id = any($2::uuid[])
  returning 1 as queued`

export async function recordUserPushes(tx: Transaction, organizationId: string, pushes: readonly UserPush[], state: FirstState): Promise<number> {
  if (!pushes.length) return 0
  const ids = pushes.map(() => uuidv7())
  await queryText(tx, MESSAGES, [
    organizationId,
    ids,
    pushes.map((push) => push.userId),
    pushes.map((push) => push.notification?.title ?? null),
    pushes.map((push) => push.notification?.body ?? null),
    pushes.map((push) => JSON.stringify(push.data)),
    pushes.map((push) => push.collapseKey),
    pushes.map((push) => push.ttlSeconds),
    // As text: postgres.js sends a boolean array as one boolean.
    pushes.map((push) => String(push.critical ?? false)),
  ])
  return (await queryText(tx, DELIVERIES, [organizationId, ids, state])).length
}
