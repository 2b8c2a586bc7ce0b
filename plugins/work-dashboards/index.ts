/**
 * The `work-dashboards` plugin: dashboard components fed by a project's work items (or a saved
 * view of them) — counts, breakdowns, daily series, open work over time and cycle time — kept
 * current within seconds of every change, through a queue every instance drains (recompute.ts).
 */
import { Type } from '@sinclair/typebox'
import { definePlugin } from '../../src/plugin'
import { CustomFieldsRef } from '../custom-fields/api'
import { ComponentFeedsRef } from '../display/api'
import { WorkItemsRef } from '../work-items/api'
import { describeError } from '../../src/log'
import { SourceRecompute } from './queue'
import { markNewDay, markObserver, untilNextDay, viewChanged } from './recompute'
import { sourceRoutes } from './routes'
import { componentSources, workSourceCounts, workSourceItems, workSourceMarks, workSourcePurges } from './schema'
import { createWorkSources } from './sources'

const WorkDashboardsConfig = Type.Object({
  workers: Type.Boolean({ default: true, description: 'Run recompute workers in this instance (changes are still marked when false).' }),
  concurrency: Type.Integer({ minimum: 1, maximum: 64, default: 2, description: 'Recompute workers per instance.' }),
  batchSize: Type.Integer({ minimum: 1, maximum: 10_000, default: 500, description: 'Marks (changes) one claim takes.' }),
  coalesceMs: Type.Integer({ minimum: 0, maximum: 10_000, default: 250, description: "The least time between two recomputations of a project's sources: a burst of changes costs each component at most 1000 / coalesceMs recomputations a second." }),
  pollIntervalMs: Type.Integer({ minimum: 10, default: 1000, description: 'How often idle workers look for marks (a change wakes them at once).' }),
})

export default definePlugin({
  name: 'work-dashboards',
  description: "Dashboard components fed by a project's work items: counts, breakdowns, daily series and cycle time, current within seconds.",
  dependencies: ['auth', 'projects', 'work-items', 'display'],
  // With labels and custom fields: byLabel and byField:<key> measures.
  optionalDependencies: ['labels', 'custom-fields'],
  config: WorkDashboardsConfig,
  tables: { componentSources, workSourceMarks, workSourcePurges, workSourceItems, workSourceCounts },
  tags: [{ name: 'Work dashboards', description: "A component's work source: what of a project's work items it shows, kept current within 2 s of each change." }],

  async setup({ db, writes, services, changes, outboxes, config, onStop, background, log }) {
    const deps = { db, log, work: services.get(WorkItemsRef), feeds: services.get(ComponentFeedsRef), fields: services.find(CustomFieldsRef) }
    const queue = new SourceRecompute(deps, config)
    onStop(changes.observe(markObserver))
    deps.work.onViewChanged(viewChanged)
    const runner = await outboxes.run(queue, { workers: config.workers })
    queue.wake = (organizationId) => runner.wake(organizationId)
    onStop(() => queue.stop())
    // Daily series move by a day at each UTC midnight, changes or not.
    if (background && config.workers) {
      let timer: ReturnType<typeof setTimeout>
      const nextDay = () => {
        timer = setTimeout(() => void markNewDay(db).catch((error) => log.warn('could not mark the daily series of a new day', describeError(error))).finally(nextDay), untilNextDay())
        timer.unref?.()
      }
      nextDay()
      onStop(() => clearTimeout(timer))
    }
    return { sources: createWorkSources({ ...deps, writes, wake: (organizationId) => runner.wake(organizationId) }) }
  },
  routes: ({ http }, { sources }) => sourceRoutes(http.v1, sources),
})
