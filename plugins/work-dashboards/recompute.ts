/**
 * Keeping sources current. A change of a project's work items adds one row to
 * `work_source_marks` in its own transaction when the project has an active source (a plain
 * insert: it waits on nothing), and a NOTIFY at commit. The recompute worker (the core outbox
 * runner) claims an organization's marks, and recomputes each marked project's sources once per
 * claim, in one transaction with the marks' deletion: the marks it took committed before its
 * reads, so the data it writes holds every change it takes away. Coalescing: a project whose
 * sources were written less than `coalesceMs` ago, or are being recomputed by another worker, keeps
 * its marks until the window passes (a timer wakes the worker then), so a burst of changes costs
 * each component at most 1000 / coalesceMs recomputations a second, and the last one sees them all.
 *
 * Every recomputation checks its binder first: still active, still able to view the project and
 * read the view. When not, the source is suspended and nothing more of the project is written.
 */
import type { ChangeObserver } from '../../src/changes'
import { queryText, type Database, type Transaction } from '../../src/db'
import { ApiError } from '../../src/http/errors'
import { uuidv7 } from '../../src/ids'
import type { OrganizationRound } from '../../src/organization-round'
import type { OutboxQueue } from '../../src/outbox-runner'
import type { Actor, Role } from '../../src/services/identity'
import type { CustomFieldsFace } from '../custom-fields/api'
import type { ComponentFeeds } from '../display/api'
import type { WorkItemsFace } from '../work-items/api'
import { compute, componentData, DEFAULT_RANGE_DAYS, type Measure } from './measures'

/** Wakes the recompute workers on every instance; carries `{organizationId}`. */
export const SOURCES_CHANNEL = 'work_sources'

/** The feed name display marks bound components with. */
export const FEED = 'work'

/** $1 id, $2 organization, $3 project: a mark, when the project has an active source. */
const MARK = `with m as (
    insert into work_source_marks (id, organization_id, project_id)
    select $1, $2, $3 where exists (select 1 from component_sources s where s.organization_id = $2 and s.project_id = $3 and s.state = 'active')
    returning organization_id
  )
  select pg_notify('${SOURCES_CHANNEL}', json_build_object('organizationId', m.organization_id)::text) from m`

/** Marks the project's sources for recomputation in the transaction of every change of its work items. */
export const markObserver: ChangeObserver = {
  wants: (_organizationId, type, projectId) => projectId !== null && type.startsWith('work_item.'),
  async observe(tx, event) {
    await queryText(tx, MARK, [uuidv7(), event.organizationId, event.projectId])
  },
}

/** Adds a mark for the project in `tx` whatever its sources (a new binding: its first data). */
export async function markProject(tx: Transaction, organizationId: string, projectId: string): Promise<void> {
  await queryText(tx, 'insert into work_source_marks (id, organization_id, project_id) values ($1, $2, $3)', [uuidv7(), organizationId, projectId])
  await queryText(tx, `select pg_notify('${SOURCES_CHANNEL}', $1)`, [JSON.stringify({ organizationId })])
}

/** A source as the recomputation reads it. */
export interface SourceRow {
  componentId: string
  pageId: string
  projectId: string
  viewId: string | null
  measure: string
  rangeDays: number | null
  boundBy: string
}

export type SuspendReason = 'projectAccessLost' | 'viewUnavailable' | 'binderDeactivated'

export interface SourceDeps {
  db: Database
  work: WorkItemsFace
  feeds: ComponentFeeds
  fields: CustomFieldsFace | undefined
}

/** The binder as an actor (reads only: their access decides what the source may see). */
async function binderOf(tx: Transaction, organizationId: string, userId: string): Promise<Actor | undefined> {
  const [row] = await queryText<{ id: string; username: string; displayName: string; role: Role; status: string }>(
    tx,
    'select id, username, display_name as "displayName", role, status from user_directory where id = $1 and organization_id = $2',
    [userId, organizationId],
  )
  if (!row || row.status !== 'active') return undefined
  const user = { id: row.id, organizationId, email: '', username: row.username, displayName: row.displayName, avatarUrl: null, role: row.role }
  return { user, key: null, scopes: new Set(), organizationId, userId: row.id, role: row.role, apiKeyId: null, via: 'system', requestId: 'work-source' }
}

/** The measure as stored (`byField:<key>` with its key). */
export function storedMeasure(measure: string): Measure {
  const [kind, ...rest] = measure.split(':')
  return rest.length ? { kind: kind as Measure['kind'], fieldKey: rest.join(':') } : { kind: kind as Measure['kind'] }
}

/**
 * Whether the binder may still feed the source: the reason it may not, or the work items it sees
 * (a subquery) with the view's name.
 */
export async function binderAccess(deps: SourceDeps, tx: Transaction, organizationId: string, source: SourceRow) {
  const binder = await binderOf(tx, organizationId, source.boundBy)
  if (!binder) return { reason: 'binderDeactivated' as SuspendReason }
  try {
    return { binder, ...(await deps.work.matching(binder, source.projectId, source.viewId, tx)) }
  } catch (error) {
    if (error instanceof ApiError && error.status === 400) return { reason: 'viewUnavailable' as SuspendReason }
    if (error instanceof ApiError && (error.status === 404 || error.status === 403)) return { reason: 'projectAccessLost' as SuspendReason }
    throw error
  }
}

/** Suspends the source (if active) with `reason`, in `tx`. */
export async function suspend(tx: Transaction, organizationId: string, componentId: string, reason: SuspendReason): Promise<void> {
  await queryText(tx, `update component_sources set state = 'suspended', reason = $3, updated_at = now() where component_id = $1 and organization_id = $2 and state = 'active'`, [
    componentId,
    organizationId,
    reason,
  ])
}

/**
 * Recomputes one source in `tx`: its binder checked (else suspended), its measure computed and
 * written to the component. The page changed (to tell once `tx` commits), or undefined.
 */
export async function recompute(deps: SourceDeps, tx: Transaction, organizationId: string, source: SourceRow): Promise<string | undefined> {
  const access = await binderAccess(deps, tx, organizationId, source)
  if ('reason' in access) {
    await suspend(tx, organizationId, source.componentId, access.reason!)
    return undefined
  }
  const measure = storedMeasure(source.measure)
  const field = measure.fieldKey ? await deps.fields?.selectField(tx, organizationId, measure.fieldKey) : undefined
  if (measure.fieldKey && !field) {
    await suspend(tx, organizationId, source.componentId, 'viewUnavailable')
    return undefined
  }
  const [project] = await queryText<{ key: string }>(tx, 'select key from project_directory where id = $1 and organization_id = $2', [source.projectId, organizationId])
  const label = `${project?.key ?? ''} · ${access.viewName ?? 'all work'}`
  const today = new Date().toISOString().slice(0, 10)
  const result = await compute(tx, access.items, measure, source.rangeDays ?? DEFAULT_RANGE_DAYS, { organizationId, field, label, today })
  const [{ type } = { type: '' }] = await queryText<{ type: string }>(tx, 'select type from component_values where component_id = $1 and organization_id = $2', [source.componentId, organizationId])
  const pageId = type ? await deps.feeds.write(tx, organizationId, source.componentId, FEED, componentData(type, measure, result, label)) : undefined
  await queryText(tx, 'update component_sources set computed_at = now() where component_id = $1 and organization_id = $2', [source.componentId, organizationId])
  return pageId
}

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

  async discover(limit: number): Promise<string[]> {
    const rows = await queryText<{ organizationId: string }>(this.deps.db, 'select organization_id as "organizationId" from work_source_marks group by organization_id order by min(marked_at) limit $1', [limit])
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
        const changed: { pageId: string; componentId: string }[] = []
        const { marks, later } = await this.deps.db.transaction((tx) => this.recomputeMarked(tx, organizationId, share, changed))
        for (const { pageId, componentId } of changed) this.deps.feeds.changed(organizationId, pageId, componentId)
        if (later !== undefined) this.later(organizationId, later)
        handled += marks
        return marks
      },
      () => {},
    )
    return { handled, full: handled >= wanted }
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
  async recomputeMarked(tx: Transaction, organizationId: string, wanted: number, changed: { pageId: string; componentId: string }[]): Promise<{ marks: number; later?: number }> {
    const marks = await queryText<{ id: string; projectId: string }>(
      tx,
      'select id, project_id as "projectId" from work_source_marks where organization_id = $1 order by marked_at, id limit $2 for update skip locked',
      [organizationId, wanted],
    )
    if (!marks.length) return { marks: 0 }
    const projects = [...new Set(marks.map((mark) => mark.projectId))]
    // Every active source of those projects, locked unless another worker holds it; with how long ago it was written.
    const sources = await queryText<SourceRow & { sinceMs: number | null; locked: boolean }>(
      tx,
      `select ${SOURCE_COLUMNS}, (extract(epoch from now() - s.computed_at) * 1000)::float8 as "sinceMs" from component_sources s
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
      for (const source of own) {
        const pageId = await recompute(this.deps, tx, organizationId, source)
        if (pageId) changed.push({ pageId, componentId: source.componentId })
      }
      done.push(projectId)
    }
    const taken = marks.filter((mark) => done.includes(mark.projectId)).map((mark) => mark.id)
    if (taken.length) await queryText(tx, 'delete from work_source_marks where organization_id = $1 and id = any($2::uuid[])', [organizationId, taken])
    return { marks: taken.length, later }
  }
}
