/**
 * A component's work source through API v1: the page's editors bind it (they must be able to view
 * the project and read the view), anyone who sees the page reads it, editors unbind it. Binding
 * marks the component fed (display calls to it are then 409 componentBound) and queues its first
 * computation; every change is audited in its transaction. A read re-checks the binder, so a
 * source whose binder lost access answers `suspended` at once, on every instance.
 */
import { queryText, type Database } from '../../src/db'
import { ApiError, badRequest, notFound } from '../../src/http/errors'
import { isUuid } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { isoFromText } from '../../src/sql'
import type { Writes } from '../../src/writes'
import type { CustomFieldsFace } from '../custom-fields/api'
import type { ComponentFeeds } from '../display/api'
import type { WorkItemsFace } from '../work-items/api'
import { parseMeasure, usesRange, DEFAULT_RANGE_DAYS } from './measures'
import type { SourceInput, SourceView } from './model'
import { binderAccess, FEED, markProject, reclaim, retire, sourceLabel, suspend, type SourceRow } from './recompute'

const COLUMNS = `s.component_id as "componentId", s.page_id as "pageId", s.project_id as "projectId", s.view_id as "viewId", s.measure, s.range_days as "rangeDays",
  s.state, s.reason, s.bound_by as "boundBy", s.computed_at as "computedAt", s.created_at as "createdAt", s.updated_at as "updatedAt"`

type Row = SourceRow & { state: 'active' | 'suspended'; reason: string | null; computedAt: string | null; createdAt: string; updatedAt: string }

const viewOf = (row: Row): SourceView => ({
  componentId: row.componentId,
  pageId: row.pageId,
  projectId: row.projectId,
  viewId: row.viewId,
  measure: row.measure,
  range: row.rangeDays === null ? null : { days: row.rangeDays },
  state: row.state,
  reason: row.reason,
  boundBy: row.boundBy,
  computedAt: row.computedAt === null ? null : isoFromText(String(row.computedAt)),
  createdAt: isoFromText(String(row.createdAt)),
  updatedAt: isoFromText(String(row.updatedAt)),
})

export interface WorkSourceDeps {
  db: Database
  writes: Writes
  work: WorkItemsFace
  feeds: ComponentFeeds
  fields: CustomFieldsFace | undefined
  /** Wakes this instance's recompute workers for the organization (after a binding commits). */
  wake(organizationId: string): void
}

export function createWorkSources(deps: WorkSourceDeps) {
  const { db, writes, work, feeds, fields } = deps
  const read = async (organizationId: string, componentId: string) => {
    const [row] = await queryText<Row>(db, `select ${COLUMNS} from component_sources s where s.component_id = $1 and s.organization_id = $2`, [componentId, organizationId])
    return row
  }

  return {
    /** The component's source (404 when it has none, or the page is not the caller's to see); its binder re-checked. */
    async get(actor: Actor, pageId: string, componentId: string): Promise<SourceView> {
      const component = await feeds.visible(actor, pageId, componentId)
      const row = await read(actor.organizationId, component.id)
      if (!row) throw notFound('This component has no work source.')
      if (row.state === 'active') {
        const suspended = await db.transaction(async (tx) => {
          const access = await binderAccess({ db, work, feeds, fields }, tx, actor.organizationId, row)
          if (!('reason' in access)) return undefined
          await suspend(tx, actor.organizationId, row.componentId, access.reason!)
          return access.reason
        })
        if (suspended) return viewOf((await read(actor.organizationId, component.id))!)
      }
      return viewOf(row)
    },

    /** Binds the component (the page's editors, who can view the project and read the view); 200 with the source. */
    async put(actor: Actor, pageId: string, componentId: string, input: SourceInput): Promise<SourceView> {
      if (!isUuid(input.projectId)) throw badRequest('No project with this id that you can view.', 'projectId')
      const viewId = input.viewId ?? null
      if (viewId !== null && !isUuid(viewId)) throw badRequest('No view with this id that you can read in this project.', 'viewId')
      const answer = await writes.change(actor, null, async ({ tx, audit }) => {
        // The source's row before the component's, as the recompute takes them (the other order deadlocks with it).
        const before = isUuid(componentId) ? await queryText<Row>(tx, `select ${COLUMNS} from component_sources s where s.component_id = $1 and s.organization_id = $2 for update`, [componentId, actor.organizationId]) : []
        const component = await feeds.editable(tx, actor, pageId, componentId)
        const measure = parseMeasure(input.measure, component.type)
        // byLabel and byField group by what the labels and custom-fields plugins add, when they are enabled.
        const filter = measure.kind === 'byLabel' ? 'label' : measure.kind === 'byField' ? 'field.' : undefined
        if (filter && !work.filterable(filter)) throw badRequest(`${measure.kind} groups by a property of work items this service does not have (its plugin is disabled).`, 'measure')
        if (input.range && !usesRange(measure)) throw badRequest(`${measure.kind} covers no days: omit range.`, 'range')
        const rangeDays = usesRange(measure) ? (input.range?.days ?? DEFAULT_RANGE_DAYS) : null
        let viewName: string | null
        try {
          viewName = (await work.matching(actor, input.projectId, viewId, tx)).viewName
        } catch (error) {
          if (error instanceof ApiError && error.status === 404) throw badRequest('No project with this id that you can view.', 'projectId')
          if (error instanceof ApiError && error.status === 400) throw badRequest('No view with this id that you can read in this project.', 'viewId')
          throw error
        }
        if (measure.fieldKey && !(await fields?.selectField(tx, actor.organizationId, measure.fieldKey)))
          throw badRequest(`No single- or multi-select custom field with the key ${measure.fieldKey}.`, 'measure')
        const [project] = await queryText<{ key: string }>(tx, 'select key from project_directory where id = $1 and organization_id = $2', [input.projectId, actor.organizationId])
        const [row] = await queryText<Row>(
          tx,
          `insert into component_sources as s (component_id, organization_id, page_id, project_id, view_id, measure, range_days, bound_by)
            values ($1, $2, $3, $4, $5, $6, $7, $8)
            on conflict (component_id, organization_id) do update set project_id = excluded.project_id, view_id = excluded.view_id, measure = excluded.measure,
              range_days = excluded.range_days, bound_by = excluded.bound_by, state = 'active', reason = null, computed_at = null, built = false, view_version = null, updated_at = excluded.updated_at
            returning ${COLUMNS}`,
          [component.id, actor.organizationId, component.pageId, input.projectId, viewId, input.measure, rangeDays, actor.userId],
        )
        if (!before.length) await reclaim(tx, actor.organizationId, component.id)
        await feeds.setFeed(tx, actor.organizationId, component.id, { name: FEED, label: sourceLabel(project?.key ?? '', viewName) })
        await markProject(tx, actor.organizationId, input.projectId)
        const after = viewOf(row!)
        await audit({
          action: before.length ? 'component_source.updated' : 'component_source.bound',
          resourceType: 'component',
          resourceId: component.id,
          changes: { ...(before.length ? { before: viewOf(before[0]!) } : {}), after },
        })
        return after
      })
      deps.wake(actor.organizationId)
      return answer
    },

    /** Unbinds the component: display calls feed it again; it keeps its last data. */
    async remove(actor: Actor, pageId: string, componentId: string): Promise<{ id: string }> {
      return writes.change(actor, null, async ({ tx, audit }) => {
        // The source's row before the component's, as the recompute takes them.
        if (isUuid(componentId)) await queryText(tx, 'select 1 from component_sources where component_id = $1 and organization_id = $2 for update', [componentId, actor.organizationId])
        const component = await feeds.editable(tx, actor, pageId, componentId)
        const [row] = await queryText<Row>(tx, `delete from component_sources s where s.component_id = $1 and s.organization_id = $2 returning ${COLUMNS}`, [component.id, actor.organizationId])
        if (!row) throw notFound('This component has no work source.')
        await retire(tx, actor.organizationId, [component.id])
        await feeds.setFeed(tx, actor.organizationId, component.id, null)
        await audit({ action: 'component_source.unbound', resourceType: 'component', resourceId: component.id, changes: { before: viewOf(row) } })
        return { id: component.id }
      })
    },
  }
}

export type WorkSources = ReturnType<typeof createWorkSources>
