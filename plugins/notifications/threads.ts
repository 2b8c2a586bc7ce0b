/**
 * The inbox: a user's threads, newest activity first, by cursor; read, unread and done; mark-read.
 * A thread is shown only while its user can view the work item's project (the projects plugin's
 * rule, in the same statement), and goes with its work item. Another user's thread is 404. The
 * read state is the user's own: it is not audited (as subscriptions are not).
 */
import { sql, type SQL } from 'drizzle-orm'
import type { Database } from '../../src/db'
import { Page } from '../../src/http/answer'
import { badRequest, notFound, requireReferences } from '../../src/http/errors'
import { listIdentity, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import type { IdempotentRequest } from '../../src/http/idempotency'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { isoFromText, selectListPage } from '../../src/sql'
import { runQuery } from '../../src/statements'
import type { Writes } from '../../src/writes'
import type { ProjectAccessService } from '../projects/api'
import type { WorkPushes } from './pushes'
import { REASON_BIT, REASONS, reasonsOf, strongest, type Reason } from './reasons'

export interface ThreadResource {
  id: string
  reason: Reason
  reasons: Reason[]
  workItem: { id: string; projectId: string; number: number; title: string; status: string }
  actor: { id: string; displayName: string } | null
  excerpt: string
  unread: boolean
  updatedAt: string
  readAt: string | null
  doneAt: string | null
}

interface ThreadRow {
  id: string
  reasons: number
  workItemId: string
  projectId: string
  number: number
  title: string
  status: string
  actorId: string | null
  actorName: string | null
  excerpt: string
  unread: boolean
  activityAt: string
  readAt: string | null
  doneAt: string | null
}

const toThread = (row: ThreadRow): ThreadResource => ({
  id: row.id,
  reason: strongest(row.reasons),
  reasons: reasonsOf(row.reasons),
  workItem: { id: row.workItemId, projectId: row.projectId, number: Number(row.number), title: row.title, status: row.status },
  actor: row.actorId ? { id: row.actorId, displayName: row.actorName ?? '' } : null,
  excerpt: row.excerpt,
  unread: row.unread,
  updatedAt: isoFromText(row.activityAt),
  readAt: row.readAt === null ? null : isoFromText(row.readAt),
  doneAt: row.doneAt === null ? null : isoFromText(row.doneAt),
})

/** The columns of a thread (`t`), its work item (`w`) and its latest actor, named in `organization`. */
const columns = (organization: SQL) => sql`t.id, t.reasons, t.work_item_id as "workItemId", t.project_id as "projectId", w.number, w.title, w.status,
  t.actor_id as "actorId", (select a.display_name from user_directory a where a.id = t.actor_id and a.organization_id = ${organization}) as "actorName",
  t.excerpt, t.unread, t.activity_at::text as "activityAt", t.read_at::text as "readAt", t.done_at::text as "doneAt"`

const from = (organization: SQL) => sql`notification_threads t join work_item_documents w on w.id = t.work_item_id and w.organization_id = ${organization}`

/** `reason=`: threads holding any of these reasons since last read. */
const REASON_VALUES = sql.raw(REASONS.map((reason) => `('${reason}', ${REASON_BIT[reason]})`).join(', '))

export const THREAD_LIST: ListShape = {
  name: 'notifications',
  filters: {
    unread: { type: 'enum', values: ['true', 'false'], column: sql`(t.unread::text)`, description: 'Only unread (`true`) or read (`false`) threads.' },
    done: { type: 'enum', values: ['true', 'false'], column: sql`((t.done_at is not null)::text)`, description: 'Done threads (`true`; left out by default) or the others (`false`).' },
    reason: {
      type: 'enum',
      values: REASONS,
      column: 'rb.reason',
      within: (condition) => sql`exists (select 1 from (values ${REASON_VALUES}) as rb(reason, bit) where t.reasons & rb.bit <> 0 and ${condition})`,
      description: 'Threads holding any of these reasons since they were last read.',
    },
    projectId: { type: 'uuid', many: 20, column: 't.project_id', description: 'Only threads of work items in these projects.' },
  },
  sorts: { updatedAt: { column: 't.activity_at', cast: 'timestamptz' } },
  defaultOrder: ['-updatedAt'],
  tiebreaker: { column: 't.id', cast: 'uuid' },
}

export interface ThreadPatch {
  read?: boolean
  done?: true
}

export function createThreads(deps: { db: Database; writes: Writes; access: ProjectAccessService; pushes: WorkPushes }) {
  const { db, access, pushes } = deps

  /** The caller's own threads, of projects they can view now. */
  const mine = (actor: Actor) => [
    sql`t.organization_id = ${actor.organizationId}`,
    sql`t.user_id = ${actor.userId}`,
    sql`t.project_id in (${access.visibleProjects(actor)})`,
  ]

  async function unreadCount(actor: Actor): Promise<number> {
    const [row] = await runQuery<{ n: number }>(db, sql`select count(*)::int as n from notification_threads t where ${sql.join([...mine(actor), sql`t.unread and t.done_at is null`], sql` and `)}`)
    return Number(row?.n ?? 0)
  }

  async function get(actor: Actor, threadId: string): Promise<ThreadResource> {
    if (!isUuid(threadId)) throw notFound('No such notification.')
    const organization = sql`${actor.organizationId}`
    const [row] = await runQuery<ThreadRow>(db, sql`select ${columns(organization)} from ${from(organization)} where ${sql.join([...mine(actor), sql`t.id = ${threadId}`], sql` and `)}`)
    if (!row) throw notFound('No such notification.')
    return toThread(row)
  }

  return {
    unreadCount,
    get,

    /** One page of the caller's threads; `meta.unreadCount`: their unread threads that are not done, whatever the filters. */
    async list(actor: Actor, query: Record<string, unknown>, request: PageRequest): Promise<Page<ThreadResource>> {
      const parsed = parseListQuery(THREAD_LIST, query)
      const identity = listIdentity(THREAD_LIST, `${actor.organizationId}\n${actor.userId}`, parsed)
      const after = readCursor(request, identity, parsed.order)
      const organization = sql`${actor.organizationId}`
      const conditions = [...mine(actor), ...parsed.conditions, ...(parsed.values.done ? [] : [sql`t.done_at is null`])]
      const [page, unread] = await Promise.all([
        selectListPage<ThreadRow, ThreadResource>(
          db,
          {
            columns: columns(organization),
            from: from(organization),
            conditions,
            order: parsed.order,
            total: sql`select count(*) from ${from(organization)} where ${sql.join(conditions, sql` and `)}`,
            identity,
            after,
          },
          request,
          toThread,
        ),
        unreadCount(actor),
      ])
      return new Page(page.items, { ...page.meta, unreadCount: unread })
    },

    /** `{read: true|false}` or `{done: true}` on the caller's thread; the thread as it is then. */
    async update(actor: Actor, threadId: string, patch: ThreadPatch): Promise<ThreadResource> {
      const before = await get(actor, threadId)
      // A done thread is read; doing it again changes nothing (its times stay). now() stays out of
      // CASE and COALESCE, which Citus refuses in an UPDATE of a distributed table.
      const change = patch.done
        ? sql`done_at = now(), unread = false, read_at = now() where done_at is null and`
        : patch.read === true
          ? sql`unread = false, read_at = now() where unread and`
          : patch.read === false
            ? sql`unread = true, read_at = null where`
            : undefined
      if (!change) throw badRequest('Send `read` (true or false) or `done` (true).', 'body')
      // A thread that stops being unread is cleared from the user's devices, in the same transaction.
      const queued = await db.transaction(async (tx) => {
        const changed = await runQuery(tx, sql`update notification_threads set ${change} id = ${before.id} and organization_id = ${actor.organizationId} and user_id = ${actor.userId} returning id`)
        return changed.length && before.unread && (patch.done || patch.read) ? pushes.cleared(tx, actor.organizationId, actor.userId!, [before.id]) : 0
      })
      if (queued) pushes.dispatched()
      return get(actor, threadId)
    },

    /** Marks the caller's unread threads read: those with activity before `before` (default: all), of `projectId` when given; how many. */
    async markRead(actor: Actor, options: { before?: string; projectId?: string }, request?: IdempotentRequest): Promise<{ marked: number }> {
      const conditions = [...mine(actor), sql`t.unread`]
      if (options.before !== undefined) conditions.push(sql`t.activity_at < ${options.before}::timestamptz`)
      if (options.projectId !== undefined) {
        // A project the caller cannot see is refused as an unknown one: 400 naming the field.
        const visible = (await access.viewableProjects(actor, [options.projectId])).count > 0
        requireReferences([options.projectId], new Set(visible ? [options.projectId.toLowerCase()] : []), () => 'projectId', 'No such project.')
        conditions.push(sql`t.project_id = ${options.projectId}`)
      }
      // A unit of work without a list scope (the read state is the user's own, not audited), so an
      // Idempotency-Key replays the first answer rather than marking again.
      // The threads marked are cleared from the user's devices (the newest MAX_CLEARED), in the same transaction.
      let queued = 0
      const answer = await deps.writes.change(
        actor,
        null,
        async ({ tx }) => {
          const rows = await runQuery<{ id: string; at: string }>(
            tx,
            sql`update notification_threads t set unread = false, read_at = now() where ${sql.join(conditions, sql` and `)} returning t.id, t.activity_at as at`,
          )
          // The time uncast (the drivers give it as text): Citus allows no cast to text, which is stable, in RETURNING.
          const newest = rows.sort((a, b) => Date.parse(isoFromText(b.at)) - Date.parse(isoFromText(a.at))).map((row) => row.id)
          queued = await pushes.cleared(tx, actor.organizationId, actor.userId!, newest)
          return { marked: rows.length }
        },
        request,
      )
      if (queued) pushes.dispatched()
      return answer
    },
  }
}

export type Threads = ReturnType<typeof createThreads>

