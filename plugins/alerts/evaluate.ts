/**
 * Evaluating alert rules, exactly once on any number of instances. A rule's state moves only by
 * an UPDATE made while its row is locked, in a statement that reads the component's value after
 * the lock was taken: evaluators of one rule run one after another, each reading at least what
 * the one before it read, and only the first to see a change makes it. The transition's history
 * row, audit record, webhook event and push are written in that same transaction, so each
 * transition happens once, with all four (and its live page told), or not at all.
 *
 * An evaluation first reads, without locks, which rules need a change (usually none: one read
 * per organization and batch); only then does it open a transaction.
 */
import type { AuditActor } from '../../src/audit'
import { queryText, type Database } from '../../src/db'
import { describeError, type Logger } from '../../src/log'
import { uuidv7 } from '../../src/ids'
import { isoFromText } from '../../src/sql'
import type { Writes } from '../../src/writes'
import type { LivePageExtensions } from '../display/api'
import type { PageNotifier } from '../push/api'

/**
 * The rules `a` to evaluate (`filter`: a condition on `a`, its organization $1) with the
 * component's value `v` and, as `e`: whether the condition holds now, the value, the title, and
 * `ripe_before`, the time before which a condition must have started holding for the rule to fire.
 * A rule on a component without a number (or without data, for `above`/`below`) does not hold.
 */
const evaluated = (filter: string) => `evaluated as materialized (
    select a.id, x.current, coalesce(v.title, v.type) as title, v.page_name, now() as now,
      now() - (case when a.kind = 'noData' then 0 else a.for_seconds end) * interval '1 second' as ripe_before,
      coalesce(case a.kind
        when 'above' then x.current > a.value
        when 'below' then x.current < a.value
        else coalesce(v.updated_at, a.created_at) <= now() - a.for_seconds * interval '1 second'
      end, false) as holds
    from component_alerts a join component_values v on v.component_id = a.component_id and v.organization_id = a.organization_id
      -- OFFSET 0: the value (read from the data) is computed once per rule, not once per use.
      cross join lateral (select v.value as current offset 0) x
    where a.organization_id = $1 and ${filter}
  )`

/** A rule of `a` / `e` whose state or timer changes now: fires, resolves, or its timer starts or stops. */
const CHANGES = `((a.state = 'ok' and (e.holds <> (a.pending_since is not null) or (e.holds and a.pending_since <= e.ripe_before)))
    or (a.state = 'firing' and not e.holds))`

/** The rules of `filter` (on `a`, its organization $1) that change now. */
const needingChange = (filter: string) => `with ${evaluated(filter)}
  select a.id from component_alerts a join evaluated e on e.id = a.id where a.organization_id = $1 and ${CHANGES}`

/** $1 organization, $2 component ids: the rules of those components that change now. */
export const NEEDING_CHANGE = needingChange('a.component_id = any($2::uuid[])')

/** $1 organization, $2 rule ids (the ones a sweep looks at): those that change now. */
const RULES_NEEDING_CHANGE = needingChange('a.id = any($2::uuid[])')

/** $1 organization, $2 rule ids: locks them, in one order (so evaluators never deadlock). */
const LOCK = 'select id from component_alerts where organization_id = $1 and id = any($2::uuid[]) order by id for update'

/**
 * $1 organization, $2 locked rule ids: what each rule whose state or timer changes does now, as the
 * values read after the lock say, with what its push, audit record and event need. A SELECT: the
 * time arithmetic on columns (`now() - for_seconds * interval`) is a stable function, which Citus
 * refuses in a statement that modifies rows; APPLY then writes what this read decided.
 */
const DECIDE = `with ${evaluated('a.id = any($2::uuid[])')}
  select a.id, a.state, e.holds, e.current::float8 as value, e.title, e.page_name as "pageName", clock_timestamp() as at, e.now,
    a.state = 'ok' and e.holds and coalesce(a.pending_since, e.now) <= e.ripe_before as fires,
    a.state = 'firing' and not e.holds as resolves,
    case when e.holds then coalesce(a.pending_since, e.now) end as "pendingSince",
    a.page_id as "pageId", a.component_id as "componentId", a.kind as "when", a.value::float8 as threshold, a.for_seconds as "forSeconds"
  from component_alerts a join evaluated e on e.id = a.id
  where a.organization_id = $1 and ${CHANGES}`

/**
 * $1 organization, $2 rule ids, $3 their new states, $4 their timers (pending_since, as epoch
 * seconds: postgres.js cannot send a timestamptz[], and to_timestamp is immutable, which Citus
 * needs in an UPDATE): what DECIDE decided, on the organization's shard.
 */
const APPLY = `update component_alerts a set state = r.state, pending_since = to_timestamp(r.pending_since)
  from unnest($2::uuid[], $3::text[], $4::float8[]) as r(id, state, pending_since)
  where a.organization_id = $1 and a.id = r.id`

/** $1 organization, $2 history row ids, $3 their rules, $4 transitions, $5 values, $6 times (epoch seconds). */
const RECORD = `insert into alert_transitions (id, organization_id, alert_id, transition, value, at)
  select t.id, $1, t.alert_id, t.transition, t.value, to_timestamp(t.at) from unnest($2::uuid[], $3::uuid[], $4::text[], $5::float8[], $6::float8[]) as t(id, alert_id, transition, value, at)`

/** A time as the database wrote it, as epoch seconds (to the millisecond). */
const epochOf = (text: string) => Date.parse(isoFromText(text)) / 1000

interface Decided {
  id: string
  state: 'ok' | 'firing'
  holds: boolean
  value: number | null
  title: string
  pageName: string
  at: string
  now: string
  fires: boolean
  resolves: boolean
  pendingSince: string | null
  pageId: string
  componentId: string
  when: Transition['when']
  threshold: number | null
  forSeconds: number
}

/** The transitions of what DECIDE read, and APPLY's and RECORD's parameters after $1. */
function applied(rows: readonly Decided[]): { made: Transition[]; changes: unknown[]; history: unknown[] } {
  const made: Transition[] = []
  for (const row of rows)
    if (row.fires || row.resolves)
      made.push({ id: row.id, pageId: row.pageId, componentId: row.componentId, when: row.when, threshold: row.threshold, forSeconds: row.forSeconds, title: row.title, pageName: row.pageName, transition: row.fires ? 'fired' : 'resolved', value: row.value, at: row.at })
  const changes = [rows.map((row) => row.id), rows.map((row) => (row.fires ? 'firing' : row.resolves ? 'ok' : row.state)), rows.map((row) => (row.pendingSince === null ? null : epochOf(row.pendingSince)))]
  const history = [made.map(() => uuidv7()), made.map((each) => each.id), made.map((each) => each.transition), made.map((each) => each.value), made.map((each) => epochOf(each.at))]
  return { made, changes, history }
}

export interface Transition {
  id: string
  pageId: string
  componentId: string
  when: 'above' | 'below' | 'noData'
  threshold: number | null
  forSeconds: number
  title: string
  pageName: string
  transition: 'fired' | 'resolved'
  value: number | null
  at: string
}

/** "45 s", "5 min", "2 h", "1 day". */
export function duration(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} day${seconds === 86_400 ? '' : 's'}`
  if (seconds % 3600 === 0) return `${seconds / 3600} h`
  if (seconds % 60 === 0) return `${seconds / 60} min`
  return `${seconds} s`
}

/** The push of a transition: `⚠ CPU` / "CPU is 93.5, above 90 (for 5 min)", `✓ CPU` / "CPU is 80, no longer above 90". */
export function noticeOf(transition: Transition): { title: string; body: string } {
  const { title, when, threshold, forSeconds, value } = transition
  const fired = transition.transition === 'fired'
  const shown = value === null ? 'no number' : String(value)
  let body: string
  if (when === 'noData') body = fired ? `${title} has had no data for ${duration(forSeconds)}` : `${title} has data again${value === null ? '' : `: ${shown}`}`
  else if (fired) body = `${title} is ${shown}, ${when} ${threshold}${forSeconds ? ` (for ${duration(forSeconds)})` : ''}`
  else body = `${title} is ${shown}, no longer ${when} ${threshold}`
  return { title: `${fired ? '⚠' : '✓'} ${title}`, body }
}

/** The service itself, in an organization: who a transition is audited as. */
const systemActor = (organizationId: string): AuditActor => ({ organizationId, userId: null, apiKeyId: null, via: 'system', requestId: null })

export interface EvaluatorDeps {
  db: Database
  writes: Writes
  notifier: PageNotifier
  /** The live pages: a transition changes its page's marks. */
  live: Pick<LivePageExtensions, 'marksChanged'>
  log: Logger
}

export class AlertEvaluator {
  /** Transitions made by this instance, for the tests. */
  transitions = 0

  constructor(private readonly deps: EvaluatorDeps) {}

  /** Evaluates the rules of `componentIds` in the organization; the transitions made. */
  evaluate(organizationId: string, componentIds: readonly string[]): Promise<Transition[]> {
    return this.evaluateWhere(organizationId, NEEDING_CHANGE, componentIds)
  }

  /** Evaluates the rules `ruleIds` of the organization (a sweep's); the transitions made. */
  evaluateRules(organizationId: string, ruleIds: readonly string[]): Promise<Transition[]> {
    return this.evaluateWhere(organizationId, RULES_NEEDING_CHANGE, ruleIds)
  }

  /** Evaluates the rules `needing` ($1 organization, $2 `ids`) finds changing, each exactly once; the transitions made. */
  private async evaluateWhere(organizationId: string, needing: string, ids: readonly string[]): Promise<Transition[]> {
    const { db, writes, notifier, live } = this.deps
    const candidates = await queryText<{ id: string }>(db, needing, [organizationId, ids])
    if (!candidates.length) return []
    const changing = candidates.map((row) => row.id)
    const transitions = await writes.change(systemActor(organizationId), null, async ({ tx, audit, emit }) => {
      await queryText(tx, LOCK, [organizationId, changing])
      const decided = await queryText<Decided>(tx, DECIDE, [organizationId, changing])
      if (!decided.length) return []
      const { made, changes, history } = applied(decided)
      await queryText(tx, APPLY, [organizationId, ...changes])
      if (made.length) await queryText(tx, RECORD, [organizationId, ...history])
      for (const transition of made) {
        const { id, pageId, componentId, when, threshold, forSeconds, value, at } = transition
        const type = `alert.${transition.transition}`
        const rule = { id, pageId, componentId, when, value: threshold, forSeconds }
        await audit({ action: type, resourceType: 'component_alert', resourceId: id, changes: { after: { transition: transition.transition, value, componentId, pageId } } })
        await emit({ type, projectId: null, data: { alert: rule, component: { id: componentId, pageId, title: transition.title }, transition: transition.transition, value, at: new Date(at).toISOString() } })
        await notifier.notify(tx, { organizationId, pageId, pageName: transition.pageName, ...noticeOf(transition), collapseKey: `alert-${id}` })
      }
      for (const pageId of new Set(made.map((transition) => transition.pageId))) await live.marksChanged(tx, pageId)
      return made
    })
    if (transitions.length) {
      this.transitions += transitions.length
      notifier.dispatched()
    }
    return transitions
  }

  /** Evaluates the changed components of each organization (one statement each when nothing changes); failures are logged. */
  async changed(changes: readonly { organizationId: string; componentId: string }[]): Promise<void> {
    const byOrganization = new Map<string, string[]>()
    for (const { organizationId, componentId } of changes) byOrganization.set(organizationId, [...(byOrganization.get(organizationId) ?? []), componentId])
    await Promise.all(
      [...byOrganization].map(([organizationId, componentIds]) =>
        this.evaluate(organizationId, componentIds).catch((error) => this.deps.log.warn('alerts: could not evaluate updated components', { organizationId, ...describeError(error) })),
      ),
    )
  }
}
