/**
 * The `alerts` plugin: rules on dashboard components (`above` / `below` a value for a while, or
 * `noData`) that fire and resolve exactly once on any number of instances, each transition pushed
 * to the page's users, marked on the live page, sent to webhooks (`alert.fired`, `alert.resolved`)
 * and audited. Evaluated
 * when display tells of updated components, and by a periodic sweep (timers, noData) on the core's
 * outbox runner (sweep.ts), whose work per sweep is bounded.
 */
import { Type } from '@sinclair/typebox'
import { definePlugin } from '../../src/plugin'
import { DisplayPagesRef, DisplayUpdatesRef, LivePageExtensionsRef } from '../display/api'
import { PageNotifierRef } from '../push/api'
import { AlertEvaluator } from './evaluate'
import { firingMarks } from './marks'
import { alertRoutes } from './routes'
import { alertTransitions, componentAlerts } from './schema'
import { createAlerts } from './service'
import { AlertSweepQueue } from './sweep'

const AlertsConfig = Type.Object({
  sweepIntervalSeconds: Type.Number({
    minimum: 0.05,
    maximum: 3600,
    default: 10,
    description:
      'How often each instance looks for rules whose forSeconds ran out and noData rules whose data got old: a rule fires at most this much late (a few sweeps late when more rules wait than sweepMaxRules and sweepMaxRulesPerOrganization let one sweep evaluate).',
  }),
  sweepMaxRules: Type.Integer({
    minimum: 1,
    maximum: 100_000,
    default: 2000,
    description:
      'Rules one sweep of one instance evaluates at most, over all organizations. Organizations take turns, the one evaluated longest ago first; those the limit leaves out go first in the next sweep.',
  }),
  sweepMaxRulesPerOrganization: Type.Integer({
    minimum: 1,
    maximum: 100_000,
    default: 500,
    description:
      "Rules of one organization one sweep evaluates at most: its timers that ran out first, then its noData rules in turn, its next turn going on where this one stopped, so every rule is reached.",
  }),
  workers: Type.Boolean({ default: true, description: 'Run the sweep (on the core outbox runner, queue `alerts`) in this instance. Updates are evaluated where they arrive either way.' }),
  maxAlertsPerComponent: Type.Integer({ minimum: 1, maximum: 1000, default: 20, description: 'Rules one component may have; one more is 409.' }),
  maxAlertsPerOrganization: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    default: 1000,
    description: 'Rules one organization may have over all its pages; one more is 409. Bounds what its sweeps look at.',
  }),
})

export default definePlugin({
  name: 'alerts',
  description: 'Alert rules on dashboard components: pushed, sent to webhooks and audited when they fire and resolve, exactly once.',
  dependencies: ['auth', 'display', 'push'],
  config: AlertsConfig,
  tables: { componentAlerts, alertTransitions },
  events: [
    { name: 'alert.fired', description: "An alert rule fired; data: the rule (`alert`), its component (`component`: id, pageId, title), `value` (the component's value) and `at`." },
    { name: 'alert.resolved', description: 'A firing alert rule resolved (its condition stopped holding); data as alert.fired.' },
  ],
  tags: [{ name: 'Alerts', description: "Rules on a component's value that push to the page's users when they fire and resolve. Anyone who can see the page reads them; its editors manage them." }],

  async setup({ db, writes, services, config, log, onStop, outboxes }) {
    const live = services.get(LivePageExtensionsRef)
    live.addMarks((organizationId, pageId) => firingMarks(db, organizationId, pageId))
    const evaluator = new AlertEvaluator({ db, writes, notifier: services.get(PageNotifierRef), live, log })
    const running = new Set<Promise<unknown>>()
    const track = (work: Promise<unknown>) => {
      running.add(work)
      void work.finally(() => running.delete(work))
    }
    // One evaluation at a time per instance: changes that come while one runs wait for the next,
    // merged (a component once), so a burst of updates costs a few evaluations, not one per batch
    // piling up on the pool the updates need.
    let waiting = new Map<string, { organizationId: string; componentId: string }>()
    let draining = false
    const evaluateChanged = (changes: readonly { organizationId: string; componentId: string }[]) => {
      for (const change of changes) waiting.set(change.componentId, change)
      if (draining) return
      draining = true
      track(
        (async () => {
          while (waiting.size) {
            const batch = [...waiting.values()]
            waiting = new Map()
            await evaluator.changed(batch)
          }
        })().finally(() => (draining = false)),
      )
    }
    const stopListening = services.get(DisplayUpdatesRef).onComponentsChanged(evaluateChanged)
    const limits = { rules: config.sweepMaxRules, rulesPerOrganization: config.sweepMaxRulesPerOrganization }
    const sweep = await outboxes.run(new AlertSweepQueue(db, evaluator, config.sweepIntervalSeconds * 1000, limits, log), { workers: config.workers, log })
    onStop(async () => {
      stopListening()
      await Promise.allSettled([...running])
    })
    const alerts = createAlerts({
      db,
      writes,
      pages: services.get(DisplayPagesRef),
      live,
      maxAlertsPerComponent: config.maxAlertsPerComponent,
      maxAlertsPerOrganization: config.maxAlertsPerOrganization,
      evaluateLater: (organizationId, componentId) => evaluateChanged([{ organizationId, componentId }]),
    })
    return { alerts, evaluator, sweep }
  },

  routes: ({ http }, { alerts }) => alertRoutes(http.v1, alerts),
})
