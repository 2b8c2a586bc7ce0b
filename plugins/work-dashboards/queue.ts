/**
 * The recompute queue: the core outbox runner's workers claim an organization's marks, and
 * recompute each marked project's sources once per claim, in one transaction with the marks'
 * deletion (recompute.ts says why that is exact). Coalescing: a project whose sources were written
 * less than `coalesceMs` ago, or are being recomputed by another worker, keeps its marks until the
 * window passes (a timer wakes a worker then).
 */
import { queryText, type Transaction } from '../../src/db'
import { describeError } from '../../src/log'
import type { OrganizationRound } from '../../src/organization-round'
import type { OutboxQueue } from '../../src/outbox-runner'
import { purgeBatch, recompute, SOURCES_CHANNEL, type SourceDeps, type SourceRow } from './recompute'

/** Builds that wrote at least this many rows in one transaction are followed by an ANALYZE of work_source_items. */
const ANALYZE_AFTER_ROWS = 10_000

export interface RecomputeOptions {
  concurrency: number
  pollIntervalMs: number
  /** The least time between two recomputations of a project's sources. */
  coalesceMs: number
  /** Marks one claim takes. */
  batchSize: number
}

const SOURCE_COLUMNS = `s.component_id as "componentId", s.page_id as "pageId", s.project_id as "projectId", s.view_id as "viewId", s.measure, s.range_days as "rangeDays", s.bound_by as "boundBy"`

export class SourceRecompute implements OutboxQueue {
  readonly name = 'work-sources'
  readonly channel = SOURCES_CHANNEL
  readonly concurrency: number
  readonly pollIntervalMs: number
  /** Wakes this instance's workers (set once the runner runs the queue). */
  wake: (organizationId: string) => void = () => {}
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>()

  constructor(
    private readonly deps: SourceDeps,
    private readonly options: RecomputeOptions,
  ) {
    this.concurrency = options.concurrency
    this.pollIntervalMs = options.pollIntervalMs
  }

  /** Organizations that had retired sources' rows to purge when last discovered: only their claims look for a purge. */
  private readonly purging = new Set<string>()

  async discover(limit: number): Promise<string[]> {
    const rows = await queryText<{ organizationId: string; purges: boolean }>(
      this.deps.db,
      `select organization_id as "organizationId", bool_or(purges) as purges from (
        select organization_id, min(marked_at) as since, false as purges from work_source_marks group by organization_id
        union all select organization_id, min(requested_at), true from work_source_purges group by organization_id
      ) due group by organization_id order by min(since) limit $1`,
      [limit],
    )
    for (const row of rows) if (row.purges) this.purging.add(row.organizationId)
    return rows.map((row) => row.organizationId)
  }

  async backlog(): Promise<{ depth: number; oldestDueSeconds: number }> {
    const [row] = await queryText<{ depth: number; oldest: number }>(
      this.deps.db,
      `select (select count(*) from (select 1 from work_source_marks limit 100000) q)::int as depth,
        coalesce(extract(epoch from now() - (select min(marked_at) from work_source_marks)), 0)::float8 as oldest`,
      [],
    )
    return { depth: Number(row?.depth ?? 0), oldestDueSeconds: Number(row?.oldest ?? 0) }
  }

  async runOnce(round: OrganizationRound, stopping: () => boolean): Promise<{ handled: number; full: boolean }> {
    let handled = 0
    const wanted = this.options.batchSize
    await round.claim(
      wanted,
      1,
      async (organizationId, share) => {
        if (stopping()) return 0
        // Retired sources' rows first, a batch a claim, while there are any: looked for only in the
        // organizations the last discovery found some in (a claim woken by a change opens no purge).
        const purged = this.purging.has(organizationId) ? await this.deps.db.transaction((tx) => purgeBatch(tx, organizationId)) : 0
        if (purged === 0) this.purging.delete(organizationId)
        handled += purged
        const changed: { pageId: string; componentId: string }[] = []
        const { marks, later, builtRows } = await this.deps.db.transaction((tx) => this.recomputeMarked(tx, organizationId, share, changed))
        for (const { pageId, componentId } of changed) this.deps.feeds.changed(organizationId, pageId, componentId)
        if (builtRows >= ANALYZE_AFTER_ROWS) await this.analyze()
        if (later !== undefined) this.later(organizationId, later)
        handled += marks
        return marks + purged
      },
      () => {},
    )
    return { handled, full: handled >= wanted }
  }

  /**
   * Gives the planner the rows a large build wrote: until it knows how many rows a source has, it
   * may read all of them to find a few (a recomputation after a build of a million rows took 200 ms
   * instead of 6 where autovacuum had not analyzed the table yet). Best effort, after the commit.
   */
  private async analyze(): Promise<void> {
    try {
      await queryText(this.deps.db, 'analyze work_source_items', [])
    } catch (error) {
      this.deps.log?.warn('could not analyze work_source_items after a build', describeError(error))
    }
  }

  /** Wakes a worker for the organization in `ms` (one timer per organization). */
  private later(organizationId: string, ms: number): void {
    if (this.timers.has(organizationId)) return
    const timer = setTimeout(() => {
      this.timers.delete(organizationId)
      this.wake(organizationId)
    }, ms)
    timer.unref?.()
    this.timers.set(organizationId, timer)
  }

  stop(): void {
    for (const timer of this.timers.values()) clearTimeout(timer)
    this.timers.clear()
  }

  /**
   * Claims up to `wanted` marks of the organization and recomputes their projects' sources in `tx`;
   * the marks taken away, and when to look again at the marks left for their window.
   */
  async recomputeMarked(tx: Transaction, organizationId: string, wanted: number, changed: { pageId: string; componentId: string }[]): Promise<{ marks: number; later?: number; builtRows: number }> {
    const marks = await queryText<{ id: string; projectId: string; workItemId: string | null }>(
      tx,
      'select id, project_id as "projectId", work_item_id as "workItemId" from work_source_marks where organization_id = $1 order by marked_at, id limit $2 for update skip locked',
      [organizationId, wanted],
    )
    if (!marks.length) return { marks: 0, builtRows: 0 }
    const projects = [...new Set(marks.map((mark) => mark.projectId))]
    // Every active source of those projects, locked unless another worker holds it; with how long ago it was written.
    const sources = await queryText<SourceRow & { sinceMs: number | null; built: boolean; viewVersion: string | null }>(
      tx,
      `select ${SOURCE_COLUMNS}, s.built, s.view_version as "viewVersion", (extract(epoch from now() - s.computed_at) * 1000)::float8 as "sinceMs" from component_sources s
        where s.organization_id = $1 and s.project_id = any($2::uuid[]) and s.state = 'active' order by s.component_id for update skip locked`,
      [organizationId, projects],
    )
    const byProject = new Map<string, typeof sources>()
    for (const source of sources) byProject.set(source.projectId, [...(byProject.get(source.projectId) ?? []), source])
    const counted = await queryText<{ projectId: string; n: number }>(
      tx,
      `select s.project_id as "projectId", count(*)::int as n from component_sources s where s.organization_id = $1 and s.project_id = any($2::uuid[]) and s.state = 'active' group by 1`,
      [organizationId, projects],
    )
    const activeOf = new Map(counted.map((row) => [row.projectId, Number(row.n)]))
    let later: number | undefined
    let builtRows = 0
    const done: string[] = []
    for (const projectId of projects) {
      const own = byProject.get(projectId) ?? []
      if (own.length < (activeOf.get(projectId) ?? 0)) {
        // Another worker is recomputing some of them: look again once it is likely done.
        later = Math.min(later ?? Infinity, this.options.coalesceMs)
        continue
      }
      const wait = Math.max(0, ...own.map((source) => (source.sinceMs === null ? 0 : this.options.coalesceMs - source.sinceMs)))
      if (wait > 0) {
        later = Math.min(later ?? Infinity, Math.ceil(wait))
        continue
      }
      const items = [...new Set(marks.flatMap((mark) => (mark.projectId === projectId && mark.workItemId ? [mark.workItemId] : [])))]
      for (const source of own) {
        // Each source in a savepoint: one that fails (logged; built again at its next turn) stalls no other of the project.
        try {
          const recomputed = await tx.transaction((savepoint) => recompute(this.deps, savepoint, organizationId, source, items))
          if (recomputed.pageId) changed.push({ pageId: recomputed.pageId, componentId: source.componentId })
          builtRows += recomputed.builtRows
        } catch (error) {
          this.deps.log?.warn('could not recompute a work source', { componentId: source.componentId, ...describeError(error) })
          await queryText(tx, 'update component_sources set built = false where component_id = $1 and organization_id = $2', [source.componentId, organizationId])
        }
      }
      done.push(projectId)
    }
    const taken = marks.filter((mark) => done.includes(mark.projectId)).map((mark) => mark.id)
    if (taken.length) await queryText(tx, 'delete from work_source_marks where organization_id = $1 and id = any($2::uuid[])', [organizationId, taken])
    return { marks: taken.length, later, builtRows }
  }
}
