/**
 * The alert sweep, a queue of the core's outbox runner: the work is the rules whose `forSeconds`
 * timer ran out and the noData rules whose data may have got old, found by a discovery across
 * organizations every `sweepIntervalSeconds` (the runner's poll interval), each organization then
 * evaluated on its own (one shard on Citus). Evaluations are exactly once whoever runs them
 * (evaluate.ts), so every instance may sweep; one worker per instance is enough.
 *
 * A sweep's work is bounded however many rules there are: it evaluates at most `limits.rules`
 * rules, at most `limits.rulesPerOrganization` of one organization. Organizations take turns,
 * the one this instance evaluated longest ago first; within one, the timers that ran out come
 * first (they fire now), then its noData rules in order, each turn going on where the last one
 * stopped, so every rule is reached within a bounded number of sweeps.
 */
import { queryText, type Database } from '../../src/db'
import { describeError, type Logger } from '../../src/log'
import type { OrganizationRound } from '../../src/organization-round'
import type { OutboxQueue } from '../../src/outbox-runner'
import type { AlertEvaluator } from './evaluate'

/** Announces rules due now (nothing does yet: a rule's timer runs out unannounced, and the poll finds it). */
export const SWEEP_CHANNEL = 'alerts_due'

/** Running timers counted for /metrics, at most. */
const BACKLOG_LIMIT = 100_000

/**
 * $1 limit, $2 the organization a discovery cut short by its limit ended with (null: none):
 * organizations with rules the sweep must look at, those with timers that ran out first (the
 * longest overdue first), then those with noData rules not firing (whether their data is old is
 * read per organization, on its shard: the component values' correlated subqueries are refused by
 * Citus in a read across shards), from the one after $2 round to it: past $1 organizations, each
 * is listed in its turn. Across organizations, without locks.
 */
const DUE_ORGANIZATIONS = `select a.organization_id as "organizationId", min(a.pending_since + a.for_seconds * interval '1 second') is not null as overdue
  from component_alerts a
  where a.state = 'ok' and ((a.kind <> 'noData' and a.pending_since <= now() - a.for_seconds * interval '1 second') or a.kind = 'noData')
  group by a.organization_id
  order by min(a.pending_since + a.for_seconds * interval '1 second') nulls last, a.organization_id <= $2::uuid, a.organization_id
  limit $1`

/**
 * $1 organization, $2 the last of its noData rules a sweep evaluated (null: none yet), $3 how
 * many: its rules whose timer ran out (the longest overdue first), and its noData rules not firing
 * after $2, in order, one more than $3 (to tell whether any is left). One shard on Citus.
 */
const SWEEP_RULES = `(select a.id, false as "noData" from component_alerts a
    where a.organization_id = $1 and a.state = 'ok' and a.kind <> 'noData' and a.pending_since <= now() - a.for_seconds * interval '1 second'
    order by a.pending_since + a.for_seconds * interval '1 second', a.id limit $3)
  union all
  (select a.id, true from component_alerts a
    where a.organization_id = $1 and a.state = 'ok' and a.kind = 'noData' and ($2::uuid is null or a.id > $2::uuid)
    order by a.id limit $3::int + 1)`

/** How much one sweep may evaluate (alerts.sweepMaxRules, alerts.sweepMaxRulesPerOrganization). */
export interface SweepLimits {
  rules: number
  rulesPerOrganization: number
}

export class AlertSweepQueue implements OutboxQueue {
  readonly name = 'alerts'
  readonly channel = SWEEP_CHANNEL
  readonly concurrency = 1

  /** Sweeps run by this instance so far. */
  private sweeps = 0
  /** The sweep that last evaluated each organization with rules to look at; one missing has not had a turn yet. */
  private readonly lastSwept = new Map<string, number>()
  /** The last noData rule evaluated in each organization whose rules one turn could not all take. */
  private readonly cursors = new Map<string, string>()
  /** The last organization of a discovery its limit cut short: the next discovery goes on after it. */
  private discoveredUpTo: string | null = null

  constructor(
    private readonly db: Database,
    private readonly evaluator: AlertEvaluator,
    readonly pollIntervalMs: number,
    private readonly limits: SweepLimits,
    private readonly log: Logger,
  ) {}

  async discover(limit: number): Promise<string[]> {
    const rows = await queryText<{ organizationId: string; overdue: boolean }>(this.db, DUE_ORGANIZATIONS, [limit, this.discoveredUpTo])
    const last = rows.at(-1)
    if (rows.length < limit) this.discoveredUpTo = null
    else if (last && !last.overdue) this.discoveredUpTo = last.organizationId
    return rows.map((row) => row.organizationId)
  }

  /**
   * One sweep: the organizations of the turn, the one evaluated longest ago first, each evaluated
   * for at most its share of what is left of the sweep's limit (a turn costs at least one rule);
   * the transitions made. Organizations the limit leaves out keep their place in the round. Never
   * full: what is left waits for the next poll, unless this sweep made transitions (the runner then
   * goes on at once, so rules that are due are not held back by ones that change nothing).
   */
  async runOnce(round: OrganizationRound, stopping: () => boolean): Promise<{ handled: number; full: boolean }> {
    const sweep = ++this.sweeps
    let left = this.limits.rules
    let handled = 0
    for (const organizationId of this.oldestSweptFirst(await round.turn())) {
      if (stopping() || left <= 0) break
      let more = false
      try {
        const next = await this.nextRules(organizationId, Math.min(this.limits.rulesPerOrganization, left))
        more = next.more
        left -= Math.max(1, next.rules.length)
        if (next.rules.length || more) this.lastSwept.set(organizationId, sweep)
        else this.forget(organizationId)
        if (next.rules.length) handled += (await this.evaluator.evaluateRules(organizationId, next.rules)).length
      } catch (error) {
        this.log.warn('alerts: could not evaluate due rules', { organizationId, ...describeError(error) })
      }
      round.tried(organizationId, more)
    }
    return { handled, full: false }
  }

  /** Rules whose timer ran out and have not fired yet (noData rules are not counted: whether their data is old is read per organization), and how long the oldest has waited. */
  async backlog(): Promise<{ depth: number; oldestDueSeconds: number }> {
    const [row] = await queryText<{ depth: number; oldest: number }>(
      this.db,
      `select count(*)::int as depth, coalesce(max(extract(epoch from now() - due)), 0)::float8 as oldest from (
        select a.pending_since + a.for_seconds * interval '1 second' as due from component_alerts a
        where a.state = 'ok' and a.kind <> 'noData' and a.pending_since <= now() - a.for_seconds * interval '1 second' limit ${BACKLOG_LIMIT}) d`,
      [],
    )
    return { depth: row?.depth ?? 0, oldestDueSeconds: Math.max(0, row?.oldest ?? 0) }
  }

  /** `organizations` with the ones evaluated longest ago (or never) first, the round's order kept between equals. */
  private oldestSweptFirst(organizations: readonly string[]): string[] {
    return [...organizations].sort((a, b) => (this.lastSwept.get(a) ?? 0) - (this.lastSwept.get(b) ?? 0))
  }

  /**
   * The rules of the organization to evaluate now, at most `share`: its timers that ran out, then
   * its noData rules from where its last turn stopped; `more`: some were left for its next turn.
   */
  private async nextRules(organizationId: string, share: number): Promise<{ rules: string[]; more: boolean }> {
    const rows = await queryText<{ id: string; noData: boolean }>(this.db, SWEEP_RULES, [organizationId, this.cursors.get(organizationId) ?? null, share])
    const timers = rows.filter((row) => !row.noData).map((row) => row.id)
    const noData = rows.filter((row) => row.noData).map((row) => row.id)
    const taken = noData.slice(0, share - timers.length)
    const noDataLeft = noData.length > taken.length
    // A pass through the noData rules ends with its last one: the next turn starts from the first again.
    if (!noDataLeft) this.cursors.delete(organizationId)
    else if (taken.length) this.cursors.set(organizationId, taken.at(-1)!)
    return { rules: [...timers, ...taken], more: timers.length >= share || noDataLeft }
  }

  /** An organization with nothing left to look at leaves this instance's memory. */
  private forget(organizationId: string): void {
    this.lastSwept.delete(organizationId)
    this.cursors.delete(organizationId)
  }
}
