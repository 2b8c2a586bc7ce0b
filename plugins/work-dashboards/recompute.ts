/**
 * Keeping sources current. A change of a project's work items adds one row to
 * `work_source_marks` (the project and the work item) in its own transaction when the project has
 * an active source (a plain insert: it waits on nothing), and a NOTIFY at commit. The recompute
 * queue (queue.ts) claims marks and calls `recompute` for each source of a marked project, in one
 * transaction with the marks' deletion: the marks it took committed before its reads, so the rows
 * it writes hold every change it takes away. A recomputation replaces the changed items' rows
 * (their buckets, read as the binder sees them now) and moves the counts by the difference; it is
 * state-based, so an item read twice (a change seen early, its mark taken later) counts once.
 *
 * Every recomputation checks its binder first: still active, still able to view the project and
 * read the view. When not, the source is suspended and nothing more of the project is written.
 */
import { sql, type SQL } from 'drizzle-orm'
import type { ChangeEvent, ChangeObserver } from '../../src/changes'
import { queryText, type Database, type Transaction } from '../../src/db'
import { ApiError } from '../../src/http/errors'
import { uuidv7 } from '../../src/ids'
import { toQuery } from '../../src/statements'
import type { Logger } from '../../src/log'
import type { Actor, Role } from '../../src/services/identity'
import type { CustomFieldsFace, SelectField } from '../custom-fields/api'
import type { ComponentFeeds } from '../display/api'
import type { WorkItemsFace } from '../work-items/api'
import { bucketsOf, componentData, cycleSince, dataOf, DEFAULT_RANGE_DAYS, type Measure } from './measures'

/** Runs a Drizzle SQL statement on `executor`. */
const runSql = async <T>(executor: Transaction, statement: SQL) => {
  const { sql: text, params } = toQuery(statement)
  return queryText<T>(executor, text, params)
}

/** Wakes the recompute workers on every instance; carries `{organizationId}`. */
export const SOURCES_CHANNEL = 'work_sources'

/** The feed name display marks bound components with. */
export const FEED = 'work'

/** $1 id, $2 organization, $3 project, $4 work item: a mark, when the project has an active source. */
const MARK = `with m as (
    insert into work_source_marks (id, organization_id, project_id, work_item_id)
    select $1, $2, $3, $4 where exists (select 1 from component_sources s where s.organization_id = $2 and s.project_id = $3 and s.state = 'active')
    returning organization_id
  )
  select pg_notify('${SOURCES_CHANNEL}', json_build_object('organizationId', m.organization_id)::text) from m`

/**
 * $1 organization, $2 measure, $3 project or null (every project): its active sources of that
 * measure (they show the label's or the option's name) and those through a view (its filters may
 * name it) are built again, their projects marked.
 */
const REBUILD = `update component_sources set built = false where organization_id = $1 and state = 'active' and (view_id is not null or measure = $2 or measure like $2 || ':%')
    and ($3::uuid is null or project_id = $3::uuid)
  returning project_id as "projectId"`

/** $1 organization, $2 project: its active sources are built again (work imported, with no event per item). */
const REBUILD_PROJECT = `update component_sources set built = false where organization_id = $1 and project_id = $2 and state = 'active' returning project_id as "projectId"`

/** $1 organization, $2 view: the active sources through the view are built again (a view changed or deleted). */
const REBUILD_VIEW = `update component_sources set built = false where organization_id = $1 and view_id = $2 and state = 'active' returning project_id as "projectId"`

/** Builds the sources through a changed or deleted view again, in that change's transaction (a deleted view suspends them). */
export async function viewChanged(tx: Transaction, organizationId: string, _projectId: string, viewId: string): Promise<void> {
  const rebuilt = await queryText<{ projectId: string }>(tx, REBUILD_VIEW, [organizationId, viewId])
  for (const projectId of new Set(rebuilt.map((row) => row.projectId))) await markProject(tx, organizationId, projectId)
}

/**
 * Retires sources already deleted in `tx`: their rows in work_source_items are purged later, in
 * batches (queue.ts), so removing a source, a component or a page costs the same whatever the
 * sources counted (at a million work items a source has a million rows).
 */
export async function retire(tx: Transaction, organizationId: string, componentIds: readonly string[]): Promise<void> {
  if (!componentIds.length) return
  const values = componentIds.map((id) => sql`(${organizationId}::uuid, ${id}::uuid)`)
  await runSql(tx, sql`insert into work_source_purges (organization_id, component_id) values ${sql.join(values, sql`, `)} on conflict do nothing`)
  await queryText(tx, `select pg_notify('${SOURCES_CHANNEL}', $1)`, [JSON.stringify({ organizationId })])
}

/**
 * A new binding takes its component back from the purge (waiting for a batch in progress to
 * commit): its first build removes whatever rows are left.
 */
export async function reclaim(tx: Transaction, organizationId: string, componentId: string): Promise<void> {
  await queryText(tx, 'delete from work_source_purges where organization_id = $1 and component_id = $2', [organizationId, componentId])
}

/** Rows of a retired source one purge statement deletes. */
export const PURGE_BATCH = 5000

/**
 * One batch of the organization's oldest purge in `tx` (skipping one another worker holds): up to
 * PURGE_BATCH of its rows deleted, the purge itself once none is left. How many rows went, plus
 * one for the purge (0: none to do).
 */
export async function purgeBatch(tx: Transaction, organizationId: string): Promise<number> {
  const [purge] = await queryText<{ componentId: string }>(
    tx,
    'select component_id as "componentId" from work_source_purges where organization_id = $1 order by requested_at limit 1 for update skip locked',
    [organizationId],
  )
  if (!purge) return 0
  const gone = await queryText(
    tx,
    `delete from work_source_items where organization_id = $1 and component_id = $2
      and work_item_id in (select work_item_id from work_source_items where organization_id = $1 and component_id = $2 limit ${PURGE_BATCH}) returning 1`,
    [organizationId, purge.componentId],
  )
  if (gone.length < PURGE_BATCH) await reclaim(tx, organizationId, purge.componentId)
  return gone.length + 1
}

/**
 * Changes that build sources again: a label or a custom field renamed, changed or deleted, and a
 * field disabled for a project (its values leave the project's items without a work item event).
 */
const REBUILDING: ReadonlySet<string> = new Set(['label.updated', 'label.deleted', 'custom_field.updated', 'custom_field.deleted', 'project_custom_field.deleted'])

/**
 * Marks the project's sources for recomputation in the transaction of every change of its work
 * items (the changed item named); a label or a custom field renamed, changed or deleted, or a field
 * disabled for a project, builds the sources showing or filtering by them again (REBUILD).
 */
export const markObserver: ChangeObserver = {
  // A page or component about to go takes its sources with it; their rows are purged later.
  async beforeDelete(tx, deletion) {
    if (deletion.resourceType !== 'page' && deletion.resourceType !== 'component') return
    const column = deletion.resourceType === 'page' ? 'page_id' : 'component_id'
    const gone = await queryText<{ componentId: string }>(tx, `delete from component_sources where organization_id = $1 and ${column} = $2 returning component_id as "componentId"`, [
      deletion.organizationId,
      deletion.id,
    ])
    await retire(tx, deletion.organizationId, gone.map((row) => row.componentId))
  },
  wants: (_organizationId, type, projectId) => (projectId !== null && (type.startsWith('work_item.') || type === 'project.imported')) || REBUILDING.has(type),
  async observe(tx, event) {
    // An import sends no event per item: the project's sources are built again whole.
    if (event.type === 'project.imported') {
      const rebuilt = await queryText(tx, REBUILD_PROJECT, [event.organizationId, event.projectId])
      if (rebuilt.length) await markProject(tx, event.organizationId, event.projectId!)
      return
    }
    if (REBUILDING.has(event.type)) {
      const onProject = event.type.startsWith('project_custom_field.') ? event.projectId : null
      const rebuilt = await queryText<{ projectId: string }>(tx, REBUILD, [event.organizationId, event.type.startsWith('label.') ? 'byLabel' : 'byField', onProject])
      for (const projectId of new Set(rebuilt.map((row) => row.projectId))) await markProject(tx, event.organizationId, projectId)
      return
    }
    const item = (await event.data()) as { id?: string }
    await queryText(tx, MARK, [uuidv7(), event.organizationId, event.projectId, item?.id ?? null])
  },
  // A batch (bulk create or PATCH, import): one look for the project's active sources, then one
  // mark per changed item in one statement, and one notice.
  async observeMany(tx, events) {
    const byProject = new Map<string, ChangeEvent[]>()
    for (const event of events) {
      if (REBUILDING.has(event.type) || event.projectId === null) await markObserver.observe(tx, event)
      else byProject.set(event.projectId, [...(byProject.get(event.projectId) ?? []), event])
    }
    for (const [projectId, changed] of byProject) {
      const organizationId = changed[0]!.organizationId
      const [active] = await queryText<{ active: boolean }>(tx, "select exists (select 1 from component_sources s where s.organization_id = $1 and s.project_id = $2 and s.state = 'active') as active", [
        organizationId,
        projectId,
      ])
      if (!active?.active) continue
      const items = await Promise.all(changed.map(async (event) => ((await event.data()) as { id?: string })?.id ?? null))
      await queryText(
        tx,
        `with m as (insert into work_source_marks (id, organization_id, project_id, work_item_id) values ${items.map((_, index) => `($${index * 2 + 3}::uuid, $1::uuid, $2::uuid, $${index * 2 + 4}::uuid)`).join(', ')} returning organization_id)
         select pg_notify('${SOURCES_CHANNEL}', json_build_object('organizationId', o.organization_id)::text) from (select distinct organization_id from m) o`,
        [organizationId, projectId, ...items.flatMap((item) => [uuidv7(), item])],
      )
    }
  },
}

/** Adds a mark for the project in `tx` whatever its sources (a new binding: its first data). */
export async function markProject(tx: Transaction, organizationId: string, projectId: string): Promise<void> {
  await queryText(tx, 'insert into work_source_marks (id, organization_id, project_id) values ($1, $2, $3)', [uuidv7(), organizationId, projectId])
  await queryText(tx, `select pg_notify('${SOURCES_CHANNEL}', $1)`, [JSON.stringify({ organizationId })])
}

/**
 * A new UTC day moves every daily series and range by one day: marks the projects of the active
 * sources with a range (no work item named: their data is drawn again, their counts kept).
 */
export async function markNewDay(db: Database): Promise<void> {
  await queryText(
    db,
    `with m as (
      insert into work_source_marks (id, organization_id, project_id)
      select md5(s.organization_id::text || s.project_id::text || clock_timestamp()::text)::uuid, s.organization_id, s.project_id
      from (select distinct organization_id, project_id from component_sources where state = 'active' and range_days is not null) s
      returning organization_id
    )
    select pg_notify('${SOURCES_CHANNEL}', json_build_object('organizationId', organization_id)::text) from (select distinct organization_id from m) o`,
    [],
  )
}

/** Milliseconds from `now` to a little after the next UTC midnight. */
export const untilNextDay = (now = Date.now()) => 86_400_000 - (now % 86_400_000) + 2_000

/** What a source is drawn from, under its component's title: `ENG · Open bugs`, `ENG · all work`. */
export const sourceLabel = (projectKey: string, viewName: string | null) => `${projectKey} · ${viewName ?? 'all work'}`

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
  /** Where a source that fails to recompute is told. */
  log?: Logger
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
  return { user, key: null, scopes: new Set(), organizationId, userId: row.id, role: row.role, apiKeyId: null, grantId: null, via: 'system', requestId: 'work-source' }
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

/** A source's row of one work item: its buckets. */
interface ItemRow {
  id: string
  buckets: string[]
}

/** Rows one statement writes (4 values each, within PostgreSQL's 65,535 parameters). */
const ROWS_PER_STATEMENT = 2000

/**
 * The items' rows of the source, read through the items subquery (the binder's view of them):
 * those among `ids`, or a page of all of them after `after` in id order. A plain read, so it runs
 * on the organization's shard on Citus, which refuses INSERT … SELECT over the items' correlated
 * columns (labels, fields): the rows go through the service and back in a multi-row INSERT.
 */
function itemRows(tx: Transaction, items: SQL, measure: Measure, field: SelectField | undefined, among: { ids: readonly string[] } | { after: string | null }) {
  const where = 'ids' in among ? sql`i.id = any(${sql.param(among.ids)}::uuid[])` : among.after === null ? sql`true` : sql`i.id > ${among.after}::uuid`
  const limit = 'ids' in among ? sql`` : sql` order by i.id limit ${ROWS_PER_STATEMENT}`
  return runSql<ItemRow>(
    tx,
    sql`select i.id, ${bucketsOf(measure, field)} as buckets from ${items} i where ${where}${limit}`,
  )
}

/** Writes the rows (at most ROWS_PER_STATEMENT) in one multi-row INSERT: one shard on Citus. */
async function insertRows(tx: Transaction, organizationId: string, componentId: string, rows: readonly ItemRow[]): Promise<void> {
  if (!rows.length) return
  const values = rows.map((row) => sql`(${organizationId}::uuid, ${componentId}::uuid, ${row.id}::uuid, ${sql.param(row.buckets)}::text[])`)
  await runSql(tx, sql`insert into work_source_items (organization_id, component_id, work_item_id, buckets) values ${sql.join(values, sql`, `)}`)
}

/**
 * The source's rows and counts, built from all the items the binder sees (a new binding, a changed
 * view): a scan, once, by pages. How many rows it wrote.
 */
async function build(tx: Transaction, organizationId: string, componentId: string, items: SQL, measure: Measure, field: SelectField | undefined, viewVersion: string | null): Promise<number> {
  await runSql(tx, sql`delete from work_source_counts where organization_id = ${organizationId} and component_id = ${componentId}`)
  await runSql(tx, sql`delete from work_source_items where organization_id = ${organizationId} and component_id = ${componentId}`)
  let written = 0
  for (let after: string | null = null; ; ) {
    const rows = await itemRows(tx, items, measure, field, { after })
    await insertRows(tx, organizationId, componentId, rows)
    written += rows.length
    if (rows.length < ROWS_PER_STATEMENT) break
    after = rows.at(-1)!.id
  }
  await runSql(
    tx,
    sql`insert into work_source_counts (organization_id, component_id, bucket, items)
      select s.organization_id, s.component_id, b.bucket, count(*)::int from work_source_items s cross join lateral unnest(s.buckets) as b(bucket)
      where s.organization_id = ${organizationId} and s.component_id = ${componentId} group by s.organization_id, s.component_id, b.bucket`,
  )
  await runSql(tx, sql`update component_sources set built = true, view_version = ${viewVersion} where organization_id = ${organizationId} and component_id = ${componentId}`)
  return written
}

/**
 * The changed items' rows replaced (each item as the binder sees it now: gone, left out by the
 * view, or in new buckets) and the counts moved by the difference: statements over those items alone.
 */
async function update(tx: Transaction, organizationId: string, componentId: string, items: SQL, measure: Measure, field: SelectField | undefined, changed: readonly string[]) {
  const removed = await runSql<{ buckets: string[] }>(
    tx,
    sql`delete from work_source_items where organization_id = ${organizationId} and component_id = ${componentId} and work_item_id = any(${sql.param(changed)}::uuid[]) returning buckets`,
  )
  const added = await itemRows(tx, items, measure, field, { ids: changed })
  for (let i = 0; i < added.length; i += ROWS_PER_STATEMENT) await insertRows(tx, organizationId, componentId, added.slice(i, i + ROWS_PER_STATEMENT))
  const moves = new Map<string, number>()
  for (const [rows, sign] of [[removed, -1], [added, 1]] as const) for (const row of rows) for (const bucket of row.buckets) moves.set(bucket, (moves.get(bucket) ?? 0) + sign)
  const moved = [...moves].filter(([, delta]) => delta !== 0)
  if (!moved.length) return
  const values = moved.map(([bucket, delta]) => sql`(${organizationId}::uuid, ${componentId}::uuid, ${bucket}::text, ${delta}::int)`)
  await runSql(
    tx,
    sql`insert into work_source_counts (organization_id, component_id, bucket, items) values ${sql.join(values, sql`, `)}
      on conflict (component_id, bucket, organization_id) do update set items = work_source_counts.items + excluded.items`,
  )
}

/** What one recomputation did: the page it changed (to tell once its transaction commits), and the rows a build wrote (0 without one). */
export interface Recomputed {
  pageId?: string
  builtRows: number
}

/**
 * Recomputes one source in `tx`: its binder checked (else suspended); its rows and counts built
 * (first time, or its view changed) or moved by the `changed` work items; its data drawn from the
 * counts and written to the component.
 */
export async function recompute(deps: SourceDeps, tx: Transaction, organizationId: string, source: SourceRow & { built?: boolean; viewVersion?: string | null }, changed: readonly string[]): Promise<Recomputed> {
  const access = await binderAccess(deps, tx, organizationId, source)
  if ('reason' in access) {
    await suspend(tx, organizationId, source.componentId, access.reason!)
    return { builtRows: 0 }
  }
  const measure = storedMeasure(source.measure)
  const field = measure.fieldKey ? await deps.fields?.selectField(tx, organizationId, measure.fieldKey) : undefined
  if (measure.fieldKey && !field) {
    await suspend(tx, organizationId, source.componentId, 'viewUnavailable')
    return { builtRows: 0 }
  }
  let builtRows = 0
  if (!source.built || (source.viewVersion ?? null) !== access.viewVersion) {
    builtRows = await build(tx, organizationId, source.componentId, access.items, measure, field, access.viewVersion)
    // The label under the title names the view as it is called now.
    const [project] = await queryText<{ key: string }>(tx, 'select key from project_directory where id = $1 and organization_id = $2', [source.projectId, organizationId])
    await deps.feeds.setFeed(tx, organizationId, source.componentId, { name: FEED, label: sourceLabel(project?.key ?? '', access.viewName) })
  } else if (changed.length) await update(tx, organizationId, source.componentId, access.items, measure, field, changed)
  const today = new Date().toISOString().slice(0, 10)
  const days = source.rangeDays ?? DEFAULT_RANGE_DAYS
  // Cycle time's buckets start with their day: only those of its range are read (compared bytewise, as in measures.ts).
  const since = measure.kind === 'cycleTimeDays' ? cycleSince(today, days) : ''
  const counts = new Map(
    (
      await runSql<{ bucket: string; items: number }>(
        tx,
        sql`select bucket, items from work_source_counts where organization_id = ${organizationId} and component_id = ${source.componentId} and bucket >= ${since} collate "C" and items <> 0`,
      )
    ).map((row) => [row.bucket, Number(row.items)]),
  )
  const result = await dataOf(tx, measure, counts, days, { organizationId, field, today })
  const [{ type } = { type: '' }] = await queryText<{ type: string }>(tx, 'select type from component_values where component_id = $1 and organization_id = $2', [source.componentId, organizationId])
  const pageId = type ? await deps.feeds.write(tx, organizationId, source.componentId, FEED, componentData(type, measure, result)) : undefined
  await queryText(tx, 'update component_sources set computed_at = now() where component_id = $1 and organization_id = $2', [source.componentId, organizationId])
  return { pageId, builtRows }
}
