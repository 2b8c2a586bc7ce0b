/**
 * The `notifications` plugin: people learn about their work. Changes to work items and entries
 * are queued in their transactions (one row each, whoever watches) and fanned out, by the core
 * outbox runner, into one inbox thread per user and work item: the assignee, the mentioned and the
 * watchers of the work item and of its project, as far as they can view it. With the push plugin,
 * a thread update is pushed to the user's devices when its reason is one they push (by default
 * `assigned` and `mentioned`), and a thread read or done is cleared from them.
 */
import { Type } from '@sinclair/typebox'
import { definePlugin } from '../../src/plugin'
import { ProjectAccessRef } from '../projects/api'
import { PreferenceSectionsRef, UserNotifierRef } from '../push/api'
import { WorkItemsRef } from '../work-items/api'
import { activityObserver } from './activity'
import { NotificationFanout } from './fanout'
import { workPreferenceSection } from './preferences'
import { workPushes } from './pushes'
import { notificationRoutes } from './routes'
import { notificationActivities, notificationThreads, projectSubscriptions, workItemSubscriptions, workNotificationSettings } from './schema'
import { createSubscriptions } from './subscriptions'
import { createThreads } from './threads'
import { notificationTools } from './tools'

const NotificationsConfig = Type.Object({
  workers: Type.Boolean({ default: true, description: 'Run fan-out workers in this instance (changes are still queued when false).' }),
  concurrency: Type.Integer({ minimum: 1, maximum: 64, default: 2, description: 'Fan-out workers per instance.' }),
  batchSize: Type.Integer({ minimum: 1, maximum: 1000, default: 50, description: 'Changes one claim fans out, in one transaction.' }),
  pollIntervalMs: Type.Integer({ minimum: 10, default: 1000, description: 'How often idle workers look for queued changes (a change wakes them at once).' }),
})

export default definePlugin({
  name: 'notifications',
  description: 'Watching work items and projects, and an inbox of one thread per work item: assignments, mentions, comments, status changes and new work.',
  dependencies: ['auth', 'projects', 'work-items', 'entries'],
  // With push: threads are pushed to the user's devices, and the preferences per reason are part of theirs.
  optionalDependencies: ['push'],
  config: NotificationsConfig,
  tables: { workItemSubscriptions, projectSubscriptions, notificationThreads, notificationActivities, workNotificationSettings },
  scopes: [
    { name: 'notifications:read', description: 'Read your inbox.' },
    { name: 'notifications:write', description: 'Mark your threads read, unread or done.' },
  ],
  tags: [
    {
      name: 'Notifications',
      description:
        'Your inbox (one thread per work item: assigned, mentioned, commented, status_changed, created) and what you watch. A change reaches the inbox within seconds of its commit, through a queue every instance drains.',
    },
  ],

  async setup({ db, writes, services, changes, outboxes, config, onStop }) {
    const access = services.get(ProjectAccessRef)
    const pushes = workPushes(services.find(UserNotifierRef))
    services.find(PreferenceSectionsRef)?.add(workPreferenceSection)
    onStop(changes.observe(activityObserver))
    await outboxes.run(new NotificationFanout(db, access, config, pushes), { workers: config.workers })
    return {
      threads: createThreads({ db, writes, access, pushes }),
      subscriptions: createSubscriptions({ db, access, workItems: services.get(WorkItemsRef) }),
    }
  },
  routes: ({ http }, { threads, subscriptions }) => notificationRoutes(http.v1, threads, subscriptions),
  tools: (_context, { threads, subscriptions }) => notificationTools(threads, subscriptions),
})
