/** MCP tools of the notifications plugin: the same service functions as the REST routes, the same checks. */
import { t } from 'elysia'
import { filterParameters } from '../../src/http/list-query'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import { MarkReadInput } from './model'
import type { Subscriptions } from './subscriptions'
import { THREAD_LIST, type Threads } from './threads'

export function notificationTools(threads: Threads, subscriptions: Subscriptions) {
  return [
    defineTool({
      name: 'list_notifications',
      description:
        'Your inbox: one thread per work item (reason: assigned, mentioned, status_changed, commented, created), newest activity first; done threads only with done "true". meta.unreadCount: your unread threads.',
      scopes: ['notifications:read'],
      readOnly: true,
      input: t.Object({ ...pageArguments(), ...cursorParameter(), ...filterParameters(THREAD_LIST) }, { additionalProperties: false }),
      run: (actor, input) => threads.list(actor, input, pageRequest(input)),
    }),
    defineTool({
      name: 'mark_notifications_read',
      description: 'Mark your unread threads read: all, those with activity before `before`, or those of `projectId`; or one thread by `notificationId` (read, or done with done: true).',
      scopes: ['notifications:write'],
      input: t.Object(
        {
          ...MarkReadInput.properties,
          notificationId: t.Optional(t.String({ description: 'One thread only (its id from list_notifications).' })),
          done: t.Optional(t.Literal(true, { description: 'With notificationId: done, not only read.' })),
        },
        { additionalProperties: false },
      ),
      run: async (actor, { notificationId, done, ...options }) =>
        notificationId === undefined ? threads.markRead(actor, options) : threads.update(actor, notificationId, done ? { done: true } : { read: true }),
    }),
    defineTool({
      name: 'watch_work_item',
      description: 'Watch a work item (its comments and status changes), or with watching false ignore it (even when you watch its project; assignments and mentions still come). By id or key (ENG-123).',
      scopes: ['work_items:read'],
      input: t.Object(
        { workItemId: t.String({ description: 'The work item id, or its key (ENG-123).' }), watching: t.Optional(t.Boolean({ default: true, description: 'false: ignore it.' })) },
        { additionalProperties: false },
      ),
      run: (actor, { workItemId, watching }) => (watching === false ? subscriptions.ignoreItem(actor, workItemId) : subscriptions.watchItem(actor, workItemId)),
    }),
  ]
}
