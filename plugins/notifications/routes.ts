/** API v1 routes of the inbox and of watching. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { filterParameters } from '../../src/http/list-query'
import { cursorParameter, pageQuery, pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import { MarkedRead, MarkReadInput, NotificationThread, SubscriptionState, ThreadPatch } from './model'
import type { Subscriptions } from './subscriptions'
import { THREAD_LIST, type Threads } from './threads'

const tags = ['Notifications']
const ThreadParams = t.Object({ notificationId: t.String() })
// Named as the work items' routes name them (one router node).
const ItemParams = t.Object({ workItemId: t.String({ description: 'The work item id, or its key: `ENG-123`.' }) })
const ProjectParams = t.Object({ projectId: t.String() })
const ThreadQuery = t.Object({ ...pageQuery(), ...cursorParameter(), ...filterParameters(THREAD_LIST) }, { additionalProperties: true })
const UnreadCount = { unreadCount: t.Integer({ minimum: 0, description: 'Your unread threads that are not done, whatever the filters.' }) }

export function notificationRoutes(v1: V1Kit, threads: Threads, subscriptions: Subscriptions) {
  return new Elysia({ name: 'notifications', prefix: '/api/v1' })
    .use(v1)
    .get('/notifications', ({ actor, query }) => threads.list(actor, query as Record<string, unknown>, pageRequest(query)), {
      scopesOrSession: ['notifications:read'],
      query: ThreadQuery,
      response: responses(PageEnvelope(NotificationThread, UnreadCount)),
      detail: {
        tags,
        summary: 'Your inbox: one thread per work item, newest activity first (done threads only with `done=true`).',
        description: 'A thread is listed while you can view its project; a deleted work item takes its threads with it.',
      },
    })
    .patch('/notifications/:notificationId', ({ actor, params, body }) => threads.update(actor, params.notificationId, body), {
      scopesOrSession: ['notifications:write'],
      params: ThreadParams,
      body: ThreadPatch,
      response: responses(Envelope(NotificationThread)),
      detail: { tags, summary: 'Mark your thread read (`{read: true}`), unread (`{read: false}`) or done (`{done: true}`). Another user\'s thread is 404.' },
    })
    .post('/notifications/mark-read', ({ actor, body, idempotency }) => threads.markRead(actor, body, idempotency), {
      scopesOrSession: ['notifications:write'],
      body: MarkReadInput,
      response: responses(Envelope(MarkedRead)),
      detail: { tags, summary: 'Mark your unread threads read: all, those with activity before `before`, or those of `projectId`.' },
    })
    .get('/work-items/:workItemId/subscription', ({ actor, params }) => subscriptions.getItem(actor, params.workItemId), {
      scopes: ['work_items:read'],
      params: ItemParams,
      response: responses(Envelope(SubscriptionState)),
      detail: { tags, summary: 'Whether you watch the work item, and why (viewer).' },
    })
    .put('/work-items/:workItemId/subscription', ({ actor, params }) => subscriptions.watchItem(actor, params.workItemId), {
      scopes: ['work_items:read'],
      params: ItemParams,
      response: responses(Envelope(SubscriptionState)),
      detail: { tags, summary: 'Watch the work item: its comments and status changes (viewer).' },
    })
    .delete('/work-items/:workItemId/subscription', ({ actor, params }) => subscriptions.ignoreItem(actor, params.workItemId), {
      scopes: ['work_items:read'],
      params: ItemParams,
      response: responses(Envelope(SubscriptionState)),
      detail: { tags, summary: 'Ignore the work item: no comments, status changes or creation from it, even when you watch its project (assignments and mentions still come).' },
    })
    .get('/projects/:projectId/subscription', ({ actor, params }) => subscriptions.getProject(actor, params.projectId), {
      scopes: ['work_items:read'],
      params: ProjectParams,
      response: responses(Envelope(SubscriptionState)),
      detail: { tags, summary: 'Whether you watch the project (viewer).' },
    })
    .put('/projects/:projectId/subscription', ({ actor, params }) => subscriptions.watchProject(actor, params.projectId), {
      scopes: ['work_items:read'],
      params: ProjectParams,
      response: responses(Envelope(SubscriptionState)),
      detail: { tags, summary: "Watch the project: every work item's creation, comments and status changes (viewer)." },
    })
    .delete('/projects/:projectId/subscription', ({ actor, params }) => subscriptions.unwatchProject(actor, params.projectId), {
      scopes: ['work_items:read'],
      params: ProjectParams,
      response: responses(Envelope(SubscriptionState)),
      detail: { tags, summary: 'Stop watching the project (viewer).' },
    })
}
