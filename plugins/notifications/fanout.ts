/**
 * The fan-out: turns each queued change (activity.ts) into the thread updates of everyone it
 * concerns, through the core outbox runner. A worker claims a batch of changes in one
 * organization (`FOR UPDATE SKIP LOCKED`, so no other worker on any instance takes them), and for
 * each one, in the same transaction: holds the work item (`FOR KEY SHARE`, so a deletion waits
 * for this transaction rather than deadlocking with it; a change whose work item is gone is
 * dropped), then finds who is concerned and can view the project now (one read), writes the
 * automatic watches (one insert) and upserts their threads (one upsert); then deletes the batch. A crash
 * anywhere rolls it all back and the changes are claimed again: each change updates each user's
 * thread exactly once.
 *
 * Who is concerned: the new assignee (`assigned`), the active users mentioned (`mentioned`), and
 * for a creation, a comment or a status change, the work item's watchers and the project's
 * (`created`, `commented`, `status_changed`), less those who ignore the work item. Never the
 * actor. The work item's creator, an entry's author, the assignee and the mentioned watch it from
 * then on, unless they ignore it.
 */
import { sql } from 'drizzle-orm'
import { queryText, type Database, type Transaction } from '../../src/db'
import type { OrganizationRound } from '../../src/organization-round'
import type { OutboxQueue } from '../../src/outbox-runner'
import { compileStatement, runStatement } from '../../src/statements'
import type { ProjectAccessService } from '../projects/api'
import { ACTIVITY_CHANNEL, type ActivityDetail, type ActivityKind } from './activity'
import { DEFAULT_PUSH } from './preferences'
import type { WorkPushes } from './pushes'
import { REASON_BIT } from './reasons'

export interface FanoutOptions {
  concurrency: number
  /** Changes one claim takes. */
  batchSize: number
  pollIntervalMs: number
}

interface Claimed {
  id: string
  workItemId: string
  projectId: string
  kind: ActivityKind
  actorId: string | null
  detail: ActivityDetail
  createdAt: string
}

/** $1 organization, $2 how many: the oldest queued changes no other worker holds. */
const CLAIM = `select id, work_item_id as "workItemId", project_id as "projectId", kind, actor_id as "actorId", detail, created_at::text as "createdAt"
  from notification_activities where organization_id = $1
  order by created_at, id limit $2
  for update skip locked`

/** $1 organization, $2 ids: the batch, done. */
const DONE = 'delete from notification_activities where organization_id = $1 and id = any($2::uuid[])'

/** $1 organization, $2 work item: held until the batch commits; no row when it is gone. */
const HOLD = `select w.project_id as "projectId" from work_item_documents w where w.id = $2 and w.organization_id = $1 for key share`

/** The organizations with queued changes, the longest waiting first ($1 at most). */
const DISCOVER = `select organization_id as "organizationId" from notification_activities group by organization_id order by min(created_at) limit $1`

const BACKLOG = `select (select count(*) from (select 1 from notification_activities limit 100000) q)::int as depth,
  coalesce(extract(epoch from now() - (select min(created_at) from notification_activities)), 0)::float8 as "oldestDueSeconds"`

const P = {
  organization: sql.placeholder('organization'),
  item: sql.placeholder('item'),
  project: sql.placeholder('project'),
  actor: sql.placeholder('actor'),
  assignee: sql.placeholder('assignee'),
  mentions: sql.placeholder('mentions'),
  watchBit: sql.placeholder('watchBit'),
  excerpt: sql.placeholder('excerpt'),
  at: sql.placeholder('at'),
}

/** A reason's bit, written into the statement. */
const bit = (reason: keyof typeof REASON_BIT) => sql.raw(String(REASON_BIT[reason]))

/**
 * Who one change concerns, with their reasons' bits: the new assignee, the active users
 * mentioned, and (for a watch bit) the work item's watchers and the project's, less those who
 * ignore the work item; then those who can view the project now, less the actor, less the reasons
 * each has set to `off` (none left: no thread), with the reasons each has set to `push`. One read, every
 * table named with the organization (on Citus, one shard). Columns are named in the first branch,
 * not in a column list after the CTE's name (which a Citus coordinator's plan loses); the user's
 * settings are read by scalar subqueries, as a join with them is one Citus would repartition.
 */
function recipientsStatement(access: ProjectAccessService) {
  const { organization, item, project, actor, assignee, mentions, watchBit } = P
  const visible = access.viewerCondition(sql`${organization}::uuid`, sql`${project}::uuid`, sql`c.user_id`)
  return compileStatement(sql`with c as (
      select ${assignee}::uuid as user_id, ${bit('assigned')} as bits where ${assignee}::uuid is not null
      union all
      select u.id, ${bit('mentioned')} from user_directory u where u.organization_id = ${organization} and u.status = 'active' and u.username = any(${mentions}::text[])
      union all
      select s.user_id, ${watchBit}::int from work_item_subscriptions s
        where ${watchBit}::int > 0 and s.work_item_id = ${item} and s.organization_id = ${organization} and s.watching
      union all
      select ps.user_id, ${watchBit}::int from project_subscriptions ps
        where ${watchBit}::int > 0 and ps.project_id = ${project} and ps.organization_id = ${organization}
          and not exists (select 1 from work_item_subscriptions i where i.work_item_id = ${item} and i.user_id = ps.user_id and i.organization_id = ${organization} and not i.watching)
    )
    select g."userId", (g.bits & ~g.off)::int as bits, g.push from (
      select c.user_id as "userId", bit_or(c.bits)::int as bits,
        coalesce((select ws.off_reasons from work_notification_settings ws where ws.user_id = c.user_id and ws.organization_id = ${organization}), 0)::int as off,
        coalesce((select ws.push_reasons from work_notification_settings ws where ws.user_id = c.user_id and ws.organization_id = ${organization}), ${sql.raw(String(DEFAULT_PUSH))})::int as push
      from c
      where c.user_id is distinct from ${actor}::uuid and ${visible}
      group by c.user_id
    ) g
    where g.bits & ~g.off <> 0`)
}

/**
 * The automatic watches (`userIds` with their `reasons`), never over an existing row (so an ignore
 * stays), in user order. Joined with the organization's users so that Citus runs it on their shard.
 */
const WATCH = compileStatement(sql`insert into work_item_subscriptions (work_item_id, user_id, organization_id, project_id, watching, reason)
  select ${P.item}::uuid, u.id, u.organization_id, ${P.project}::uuid, true, w.reason
  from unnest(${sql.placeholder('userIds')}::uuid[], ${sql.placeholder('reasons')}::text[]) as w(user_id, reason)
  join user_directory u on u.id = w.user_id and u.organization_id = ${P.organization} and u.id = any(${sql.placeholder('userIds')}::uuid[])
  order by u.id
  on conflict do nothing`)

/**
 * The threads of `userIds` (with their reasons' `bits`), upserted in user order: an unread thread
 * adds the reasons, a read or done one starts again from these; the latest activity's actor and
 * excerpt win. A thread's id is derived from its user and work item: a random one would make
 * Citus plan the insert on the coordinator, which it refuses with ON CONFLICT DO UPDATE. One task
 * on the organization's shard (joined with its users, as above).
 */
const UPSERT_THREADS = compileStatement(sql`insert into notification_threads as t (id, organization_id, user_id, work_item_id, project_id, reasons, actor_id, excerpt, unread, activity_at)
  select md5(u.id::text || ${P.item}::text)::uuid, u.organization_id, u.id, ${P.item}::uuid, ${P.project}::uuid, r.bits, ${P.actor}::uuid, ${P.excerpt}, true, ${P.at}::timestamptz
  from unnest(${sql.placeholder('userIds')}::uuid[], ${sql.placeholder('bits')}::int[]) as r(user_id, bits)
  join user_directory u on u.id = r.user_id and u.organization_id = ${P.organization} and u.id = any(${sql.placeholder('userIds')}::uuid[])
  order by u.id
  on conflict (user_id, work_item_id, organization_id) do update set
    reasons = case when t.unread and t.done_at is null then t.reasons | excluded.reasons else excluded.reasons end,
    actor_id = case when excluded.activity_at >= t.activity_at then excluded.actor_id else t.actor_id end,
    excerpt = case when excluded.activity_at >= t.activity_at then excluded.excerpt else t.excerpt end,
    unread = true, done_at = null, activity_at = greatest(t.activity_at, excluded.activity_at)`)

/** Which watchers a change tells, as a bit (0: none, only the assignee and the mentioned). */
function watchBitOf(kind: ActivityKind, detail: ActivityDetail): number {
  if (kind === 'created') return REASON_BIT.created
  if (kind === 'commented') return REASON_BIT.commented
  return detail.status ? REASON_BIT.status_changed : 0
}

export class NotificationFanout implements OutboxQueue {
  readonly name = 'notifications'
  readonly channel = ACTIVITY_CHANNEL
  readonly concurrency: number
  readonly pollIntervalMs: number
  private readonly recipients: ReturnType<typeof recipientsStatement>

  constructor(
    private readonly db: Database,
    access: ProjectAccessService,
    private readonly options: FanoutOptions,
    private readonly pushes: WorkPushes,
  ) {
    this.concurrency = options.concurrency
    this.pollIntervalMs = options.pollIntervalMs
    this.recipients = recipientsStatement(access)
  }

  async discover(limit: number): Promise<string[]> {
    return (await queryText<{ organizationId: string }>(this.db, DISCOVER, [limit])).map((row) => row.organizationId)
  }

  async backlog(): Promise<{ depth: number; oldestDueSeconds: number }> {
    const [row] = await queryText<{ depth: number; oldestDueSeconds: number }>(this.db, BACKLOG, [])
    return { depth: Number(row?.depth ?? 0), oldestDueSeconds: Number(row?.oldestDueSeconds ?? 0) }
  }

  async runOnce(round: OrganizationRound, stopping: () => boolean): Promise<{ handled: number; full: boolean }> {
    const wanted = this.options.batchSize
    let handled = 0
    await round.claim(
      wanted,
      1,
      async (organizationId, share) => {
        if (stopping()) return 0
        const { changes, queued } = await this.db.transaction((tx) => this.fanOut(tx, organizationId, share))
        if (queued) this.pushes.dispatched()
        handled += changes
        return changes
      },
      () => {},
    )
    return { handled, full: handled >= wanted }
  }

  /** Claims up to `wanted` changes of the organization, fans each out (threads, then pushes) and deletes them, in `tx`; how many, and the pushes' deliveries queued. */
  async fanOut(tx: Transaction, organizationId: string, wanted: number): Promise<{ changes: number; queued: number }> {
    const claimed = await queryText<Claimed>(tx, CLAIM, [organizationId, wanted])
    let queued = 0
    for (const change of claimed) {
      const [held] = await queryText<{ projectId: string }>(tx, HOLD, [organizationId, change.workItemId])
      if (!held) continue
      const { detail } = change
      const values = {
        organization: organizationId,
        item: change.workItemId,
        project: held.projectId,
        actor: change.actorId,
        assignee: detail.assigneeId ?? null,
        mentions: detail.mentions ?? [],
        watchBit: watchBitOf(change.kind, detail),
        excerpt: detail.excerpt,
        at: change.createdAt,
      }
      const recipients = (await runStatement<{ userId: string; bits: number; push: number }>(tx, this.recipients, values)).map((row) => ({ userId: row.userId, bits: Number(row.bits), push: Number(row.push) }))
      // The creator or the entry's author, the assignee and the mentioned watch it from now on.
      const watchers = new Map<string, string>()
      if (detail.watcher) watchers.set(detail.watcher, change.kind === 'commented' ? 'commented' : 'created')
      for (const { userId, bits } of recipients)
        if (bits & (REASON_BIT.assigned | REASON_BIT.mentioned)) watchers.set(userId, bits & REASON_BIT.assigned ? 'assigned' : 'mentioned')
      if (watchers.size) await runStatement(tx, WATCH, { ...values, userIds: [...watchers.keys()], reasons: [...watchers.values()] })
      if (recipients.length)
        await runStatement(tx, UPSERT_THREADS, { ...values, userIds: recipients.map((row) => row.userId), bits: recipients.map((row) => row.bits) })
      queued += await this.pushes.changed(tx, { organizationId, workItemId: change.workItemId, projectId: held.projectId, actorId: change.actorId, kind: change.kind, detail }, recipients)
    }
    if (claimed.length) await queryText(tx, DONE, [organizationId, claimed.map((change) => change.id)])
    return { changes: claimed.length, queued }
  }
}
