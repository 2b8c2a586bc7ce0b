/**
 * Housekeeping of the outbox: the depth /metrics reports, and removal of what is finished. Both
 * run over every organization without row locks, which Citus runs on every shard.
 */
import { queryText, type Database } from '../../src/db'

/** The most pending deliveries one scrape counts: a bounded walk of the pending index, whatever the backlog. */
export const DELIVERY_DEPTH_CAP = 100_000

export async function countPendingDeliveries(db: Database): Promise<number> {
  const [row] = await queryText<{ n: number }>(db, `select count(*)::int as n from (select 1 from webhook_deliveries where status = 'pending' limit $1) pending`, [DELIVERY_DEPTH_CAP])
  return row?.n ?? 0
}

/**
 * Removes finished deliveries older than `days` and deliveries whose webhook is gone (a deleted
 * organization's), then events older than that which no pending delivery still needs; the number
 * of deliveries removed.
 */
export async function purgeOldDeliveries(db: Database, days: number): Promise<number> {
  const [row] = await queryText<{ n: number }>(
    db,
    `with gone as (
        delete from webhook_deliveries d
        where (d.status <> 'pending' and d.created_at < now() - $1 * interval '1 day')
           or not exists (select 1 from webhooks w where w.id = d.webhook_id and w.organization_id = d.organization_id)
        returning 1
      ) select count(*)::int as n from gone`,
    [days],
  )
  // The pending deliveries are matched on the event's organization too: on Citus that keeps the
  // check on the event's own shard (co-located), instead of gathering every pending event id.
  await queryText(
    db,
    `delete from webhook_events e where e.occurred_at < now() - $1 * interval '1 day'
      and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.organization_id = e.organization_id and d.status = 'pending')`,
    [days],
  )
  return row?.n ?? 0
}
