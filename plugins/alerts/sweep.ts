/**
 * The alert sweep, a queue of the core's outbox runner: the work is the rules whose `forSeconds`
 * timer ran out and the noData rules whose data may have got old, found by a discovery across
 * organizations every `sweepIntervalSeconds` (the runner's poll interval), each organization then
 * evaluated on its own (one shard on Citus). Evaluations are exactly once whoever runs them
 * (evaluate.ts), so every instance may sweep; one worker per instance is enough.
 */
import { queryText, type Database } from '../../src/db'
import { describeError, type Logger } from '../../src/log'
import type { OrganizationRound } from '../../src/organization-round'
import type { OutboxQueue } from '../../src/outbox-runner'
import { DUE_ORGANIZATIONS, type AlertEvaluator } from './evaluate'

/** Announces rules due now (nothing does yet: a rule's timer runs out unannounced, and the poll finds it). */
export const SWEEP_CHANNEL = 'alerts_due'

/** Running timers counted for /metrics, at most. */
const BACKLOG_LIMIT = 100_000

export class AlertSweepQueue implements OutboxQueue {
  readonly name = 'alerts'
  readonly channel = SWEEP_CHANNEL
  readonly concurrency = 1

  constructor(
    private readonly db: Database,
    private readonly evaluator: AlertEvaluator,
    readonly pollIntervalMs: number,
    private readonly log: Logger,
  ) {}

  async discover(limit: number): Promise<string[]> {
    return (await queryText<{ organizationId: string }>(this.db, DUE_ORGANIZATIONS, [limit])).map((row) => row.organizationId)
  }

  /** Evaluates the due rules of each organization of the turn, one after another; the transitions made. Never full: what is due is found again at the next poll. */
  async runOnce(round: OrganizationRound, stopping: () => boolean): Promise<{ handled: number; full: boolean }> {
    let handled = 0
    for (const organizationId of await round.turn()) {
      if (stopping()) break
      try {
        handled += (await this.evaluator.evaluate(organizationId, null)).length
      } catch (error) {
        this.log.warn('alerts: could not evaluate due rules', { organizationId, ...describeError(error) })
      }
      round.tried(organizationId, false)
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
}
