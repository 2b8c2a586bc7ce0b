/**
 * The recording side: an observer of the change feed that turns a change people may be told of
 * into one row of `notification_activities`, in the change's own transaction, with one statement
 * (the row, and a NOTIFY at commit naming the organization). Who is told is decided later, by the
 * fan-out (fanout.ts), so a change costs its writer the same whether nobody or 10,000 people
 * watch. A change nobody could be told of (a priority or due date changed) writes nothing.
 */
import type { ChangeEvent, ChangeObserver } from '../../src/changes'
import { queryText, type Transaction } from '../../src/db'
import { uuidv7 } from '../../src/ids'
import { mentionedUsernames } from './mentions'

/** Wakes the fan-out's workers on every instance; carries `{organizationId}`. */
export const ACTIVITY_CHANNEL = 'notification_activity'

/** An excerpt is at most this long. */
export const EXCERPT_MAX = 200

/** What the fan-out needs of one change (the `detail` column). */
export interface ActivityDetail {
  /** The work item's new assignee, when this change assigned it (not to nobody). */
  assigneeId?: string
  /** The status before and after, when this change moved it. */
  status?: { from: string; to: string }
  /** Usernames newly mentioned by this change (in a text it wrote). */
  mentions?: string[]
  /** ≤ EXCERPT_MAX characters: the entry, or what changed. */
  excerpt: string
  /** The work item's creator (`created`) or the entry's author (`commented`): they watch it from now on. */
  watcher?: string
}

export type ActivityKind = 'created' | 'updated' | 'commented'

interface WorkItemData {
  id: string
  title: string
  description: string | null
  status: string
  assigneeId: string | null
  createdBy: string | null
}

interface EntryData {
  id: string
  workItemId: string
  body: string
  authorId: string | null
}

export const excerpt = (text: string) => (text.length <= EXCERPT_MAX ? text : `${text.slice(0, EXCERPT_MAX - 1)}…`)

/** Mentions in the new texts that the old ones did not have (an edit that keeps a mention tells no one again). */
function newMentions(after: ReadonlyArray<string | null | undefined>, before: ReadonlyArray<string | null | undefined>): string[] {
  const had = new Set(mentionedUsernames(...before))
  return mentionedUsernames(...after).filter((username) => !had.has(username))
}

/** The activity a change makes, or undefined when it concerns no one. */
export function activityOf(type: string, data: unknown, previous: Record<string, unknown> | undefined): { workItemId: string; kind: ActivityKind; detail: ActivityDetail } | undefined {
  if (type === 'work_item.created') {
    const item = data as WorkItemData
    const mentions = mentionedUsernames(item.title, item.description)
    return {
      workItemId: item.id,
      kind: 'created',
      detail: {
        excerpt: excerpt(item.description ? `${item.title}: ${item.description}` : item.title),
        ...(item.assigneeId ? { assigneeId: item.assigneeId } : {}),
        ...(mentions.length ? { mentions } : {}),
        ...(item.createdBy ? { watcher: item.createdBy } : {}),
      },
    }
  }
  if (type === 'work_item.updated' && previous) {
    const item = data as WorkItemData
    const detail: ActivityDetail = { excerpt: '' }
    const told: string[] = []
    if ('assigneeId' in previous && item.assigneeId) {
      detail.assigneeId = item.assigneeId
      told.push('assigned')
    }
    if ('status' in previous && previous.status !== item.status) {
      detail.status = { from: String(previous.status), to: item.status }
      told.push(`status ${String(previous.status)} → ${item.status}`)
    }
    if ('title' in previous || 'description' in previous) {
      const before = [('title' in previous ? previous.title : item.title) as string, ('description' in previous ? previous.description : item.description) as string | null]
      const mentions = newMentions([item.title, item.description], before)
      if (mentions.length) {
        detail.mentions = mentions
        told.push(excerpt(item.description ? `${item.title}: ${item.description}` : item.title))
      }
    }
    if (!detail.assigneeId && !detail.status && !detail.mentions) return undefined
    detail.excerpt = excerpt(told.join('; '))
    return { workItemId: item.id, kind: 'updated', detail }
  }
  if (type === 'entry.created') {
    const entry = data as EntryData
    const mentions = mentionedUsernames(entry.body)
    return {
      workItemId: entry.workItemId,
      kind: 'commented',
      detail: { excerpt: excerpt(entry.body), ...(mentions.length ? { mentions } : {}), ...(entry.authorId ? { watcher: entry.authorId } : {}) },
    }
  }
  if (type === 'entry.updated' && previous && 'body' in previous) {
    const entry = data as EntryData
    const mentions = newMentions([entry.body], [previous.body as string])
    if (!mentions.length) return undefined
    return { workItemId: entry.workItemId, kind: 'updated', detail: { excerpt: excerpt(entry.body), mentions } }
  }
  return undefined
}

const OBSERVED = new Set(['work_item.created', 'work_item.updated', 'entry.created', 'entry.updated'])

/** $1 id, $2 organization, $3 work item, $4 project, $5 kind, $6 actor, $7 detail (JSON). */
const RECORD = `with a as (
    insert into notification_activities (id, organization_id, work_item_id, project_id, kind, actor_id, detail)
    values ($1, $2, $3, $4, $5, $6, $7::jsonb)
    returning organization_id
  )
  select pg_notify('${ACTIVITY_CHANNEL}', json_build_object('organizationId', a.organization_id)::text) from a`

export const activityObserver: ChangeObserver = {
  wants: (_organizationId, type, projectId) => projectId !== null && OBSERVED.has(type),
  async observe(tx: Transaction, event: ChangeEvent) {
    const activity = activityOf(event.type, await event.data(), event.previous)
    if (!activity) return
    await queryText(tx, RECORD, [uuidv7(), event.organizationId, activity.workItemId, event.projectId, activity.kind, event.actor.userId, JSON.stringify(activity.detail)])
  },
  // A batch (bulk create or PATCH): the activities of its events in one statement, one notice.
  async observeMany(tx: Transaction, events: readonly ChangeEvent[]) {
    const rows: unknown[][] = []
    for (const event of events) {
      const activity = activityOf(event.type, await event.data(), event.previous)
      if (activity) rows.push([uuidv7(), activity.workItemId, event.projectId, activity.kind, event.actor.userId, JSON.stringify(activity.detail)])
    }
    if (!rows.length) return
    const values = rows.map((_, index) => `($${index * 6 + 2}::uuid, $1::uuid, $${index * 6 + 3}::uuid, $${index * 6 + 4}::uuid, $${index * 6 + 5}, $${index * 6 + 6}::uuid, $${index * 6 + 7}::jsonb)`)
    await queryText(
      tx,
      `with a as (
        insert into notification_activities (id, organization_id, work_item_id, project_id, kind, actor_id, detail) values ${values.join(', ')}
        returning organization_id
      )
      select pg_notify('${ACTIVITY_CHANNEL}', json_build_object('organizationId', o.organization_id)::text) from (select distinct organization_id from a) o`,
      [events[0]!.organizationId, ...rows.flat()],
    )
  },
}
