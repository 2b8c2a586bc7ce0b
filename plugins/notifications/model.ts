/** Request and response models of notifications and subscriptions. */
import { t } from 'elysia'
import { Timestamp, UuidString } from '../../src/http/models'
import { WORK_ITEM_STATUSES } from '../work-items/api'
import { REASONS } from './reasons'

const ReasonSchema = t.Union(
  REASONS.map((reason) => t.Literal(reason)),
  { description: 'assigned (someone made you the assignee), mentioned (@you), status_changed, commented, created (in a project you watch).' },
)

export const NotificationThread = t.Object(
  {
    id: UuidString(),
    reason: { ...ReasonSchema, description: 'The strongest of `reasons`: assigned > mentioned > status_changed > commented > created.' },
    reasons: t.Array(ReasonSchema, { description: 'Every reason since the thread was last read, strongest first.' }),
    workItem: t.Object({
      id: UuidString(),
      projectId: UuidString(),
      number: t.Integer({ minimum: 1 }),
      title: t.String(),
      status: t.Union(WORK_ITEM_STATUSES.map((status) => t.Literal(status))),
    }),
    actor: t.Union([t.Object({ id: UuidString(), displayName: t.String() }), t.Null()], { description: 'Who did the latest of it.' }),
    excerpt: t.String({ maxLength: 200, description: 'The latest entry, or what changed (at most 200 characters).' }),
    unread: t.Boolean(),
    updatedAt: Timestamp({ description: 'The latest activity.' }),
    readAt: t.Union([Timestamp(), t.Null()]),
    doneAt: t.Union([Timestamp(), t.Null()], { description: 'Set by `done`; new activity clears it (the thread comes back).' }),
  },
  { title: 'NotificationThread' },
)

export const ThreadPatch = t.Union(
  [
    t.Object({ read: t.Boolean({ description: 'Read (true) or unread again (false).' }) }, { additionalProperties: false }),
    t.Object({ done: t.Literal(true, { description: 'Done: read, and left out of the default list until new activity.' }) }, { additionalProperties: false }),
  ],
  { title: 'NotificationThreadPatch' },
)

export const MarkReadInput = t.Object(
  {
    before: t.Optional(Timestamp({ description: 'Only threads whose latest activity is before this time (default: all).' })),
    projectId: t.Optional(UuidString({ description: 'Only threads of work items in this project.' })),
  },
  { additionalProperties: false, title: 'NotificationMarkRead' },
)

export const MarkedRead = t.Object({ marked: t.Integer({ minimum: 0, description: 'How many threads were unread and are read now.' }) }, { title: 'NotificationsMarkedRead' })

export const SubscriptionState = t.Object(
  {
    watching: t.Boolean(),
    reason: t.Union(
      [...['manual', 'created', 'assigned', 'mentioned', 'commented', 'project', 'ignored'].map((reason) => t.Literal(reason)), t.Null()],
      { description: 'manual (you said so), created, assigned, mentioned, commented (automatic), project (you watch its project), ignored (you said not to), or null.' },
    ),
  },
  { title: 'Subscription' },
)
