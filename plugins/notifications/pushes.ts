/**
 * What the inbox pushes, through the push plugin's `UserNotifier` when it is enabled: a thread
 * update whose reasons include one the user set to `push` (title `<project name> #<number>`, body
 * `<actor> <what happened>: <work item title>`), and, when a thread is read or done, a data-only
 * `work.read` message so each device clears it. Both use the thread's collapse key, so a device
 * shows one notification per thread, and one still waiting on a push service is replaced by its
 * `work.read`.
 */
import { createHash } from 'node:crypto'
import { queryText, type Transaction } from '../../src/db'
import type { UserNotifier, UserPush } from '../push/api'
import type { ActivityDetail, ActivityKind } from './activity'
import { strongest, type Reason } from './reasons'

/** How long push services keep a work notification for an offline device (and quiet hours may hold it): a week. */
export const WORK_PUSH_TTL_SECONDS = 7 * 86_400
/** A notification's body is at most this many characters. */
export const MAX_PUSH_BODY = 240
/** The most threads one read clears from devices (mark-read of more clears the newest; older notifications are long gone). */
export const MAX_CLEARED = 100

/** A thread's id, as the fan-out's upsert derives it: md5 of its user's and work item's ids, as a uuid. */
export function threadIdOf(userId: string, workItemId: string): string {
  const hex = createHash('md5').update(`${userId}${workItemId}`).digest('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** One collapse key per thread: 32 characters, so it is also a valid Web Push topic. */
const collapseKeyOf = (threadId: string) => threadId.replaceAll('-', '')

/** Characters as people count them, cut to `max` with an ellipsis. */
function cut(text: string, max: number): string {
  const characters = [...text]
  return characters.length <= max ? text : `${characters.slice(0, max - 1).join('')}…`
}

const WHAT: Record<Reason, (detail: ActivityDetail, kind: ActivityKind) => string> = {
  assigned: () => 'assigned you',
  mentioned: (_detail, kind) => (kind === 'commented' ? 'mentioned you in a comment' : 'mentioned you'),
  status_changed: (detail) => `moved it to ${detail.status?.to ?? 'a new status'}`,
  commented: () => 'commented',
  created: () => 'created it',
}

/** $1 organization, $2 work item, $3 actor: what a push names. */
const NAMES = `select p.name as "projectName", w.number, w.title,
    (select a.display_name from user_directory a where a.id = $3 and a.organization_id = $1) as "actorName"
  from work_item_documents w join project_directory p on p.id = w.project_id and p.organization_id = $1
  where w.id = $2 and w.organization_id = $1`

export interface WorkPushes {
  /**
   * Records, in the fan-out's transaction, the pushes of one change to the recipients whose
   * reasons (`bits`) include one of their `push` ones; how many deliveries were queued.
   */
  changed(
    tx: Transaction,
    change: { organizationId: string; workItemId: string; projectId: string; actorId: string | null; kind: ActivityKind; detail: ActivityDetail },
    recipients: ReadonlyArray<{ userId: string; bits: number; push: number }>,
  ): Promise<number>
  /** Records, in the read's transaction, a `work.read` message to each device of the user for each thread (at most MAX_CLEARED). */
  cleared(tx: Transaction, organizationId: string, userId: string, threadIds: readonly string[]): Promise<number>
  /** After the transaction committed: wakes the push outbox on every instance. */
  dispatched(): void
}

export function workPushes(notifier: UserNotifier | undefined): WorkPushes {
  if (!notifier) return { changed: async () => 0, cleared: async () => 0, dispatched: () => {} }
  return {
    async changed(tx, change, recipients) {
      const pushed = recipients.filter((row) => (row.bits & row.push) !== 0)
      if (!pushed.length) return 0
      const [names] = await queryText<{ projectName: string; number: number; title: string; actorName: string | null }>(tx, NAMES, [change.organizationId, change.workItemId, change.actorId])
      if (!names) return 0
      const title = `${names.projectName} #${names.number}`
      const pushes: UserPush[] = pushed.map((row) => {
        const threadId = threadIdOf(row.userId, change.workItemId)
        const what = WHAT[strongest(row.bits)](change.detail, change.kind)
        return {
          userId: row.userId,
          notification: { title, body: cut(`${names.actorName ?? 'Someone'} ${what}: ${names.title}`, MAX_PUSH_BODY) },
          data: { type: 'work', threadId, workItemId: change.workItemId, projectId: change.projectId },
          collapseKey: collapseKeyOf(threadId),
          ttlSeconds: WORK_PUSH_TTL_SECONDS,
        }
      })
      return notifier.notify(tx, change.organizationId, pushes)
    },
    cleared(tx, organizationId, userId, threadIds) {
      const pushes: UserPush[] = threadIds.slice(0, MAX_CLEARED).map((threadId) => ({
        userId,
        notification: null,
        data: { type: 'work.read', threadId },
        collapseKey: collapseKeyOf(threadId),
        ttlSeconds: WORK_PUSH_TTL_SECONDS,
        critical: true,
      }))
      return notifier.notify(tx, organizationId, pushes)
    },
    dispatched: () => notifier.dispatched(),
  }
}
