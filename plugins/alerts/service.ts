/**
 * Alert rules through API v1: anyone who can see the page reads them and their history; the
 * page's editors (its creator, administrators, `editor` entries) create, change and delete them.
 * An invisible page, component or rule is 404; a viewer's write is 403. Every change is audited in
 * its transaction; after it commits the component is evaluated (a rule that already holds fires).
 */
import { sql } from 'drizzle-orm'
import { queryText, type Database, type Executor } from '../../src/db'
import { created } from '../../src/http/answer'
import { badRequest, conflict, notFound } from '../../src/http/errors'
import type { IdempotentRequest } from '../../src/http/idempotency'
import { listIdentity, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid, uuidv7 } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { isoFromText, selectListPage } from '../../src/sql'
import type { Writes } from '../../src/writes'
import type { DisplayPages, LivePageExtensions } from '../display/api'
import { MAX_HOLD_SECONDS, MAX_NO_DATA_SECONDS, MIN_NO_DATA_SECONDS, type AlertInput, type AlertPatch, type AlertView } from './model'

/**
 * A rule's columns, in a SELECT or a RETURNING. Times come back as text uncast (the drivers leave
 * timestamps as text): Citus allows no function that is not immutable in RETURNING, and a
 * timestamptz-to-text cast is stable.
 */
const COLUMNS = `a.id, a.page_id as "pageId", a.component_id as "componentId", a.kind as "when", a.value::float8 as value, a.for_seconds as "forSeconds", a.state,
  a.pending_since as "pendingSince", a.created_by as "createdBy", a.created_at as "createdAt", a.updated_at as "updatedAt"`

const viewOf = (row: AlertView): AlertView => ({
  ...row,
  pendingSince: row.pendingSince === null ? null : isoFromText(row.pendingSince),
  createdAt: isoFromText(row.createdAt),
  updatedAt: isoFromText(row.updatedAt),
})

/** A component's rules ($1 organization, $2 page, $3 component), oldest first. */
const ALERTS_OF = 'a.organization_id = $1 and a.page_id = $2 and a.component_id = $3'
/** The same condition with the values bound. */
const alertsOf = (organizationId: string, pageId: string, componentId: string) => sql`a.organization_id = ${organizationId} and a.page_id = ${pageId} and a.component_id = ${componentId}`
const ALERT_LIST: ListShape = {
  name: 'component-alerts',
  filters: {},
  sorts: { createdAt: { column: 'a.created_at', cast: 'timestamptz' } },
  defaultOrder: ['createdAt'],
  tiebreaker: { column: 'a.id', cast: 'uuid' },
}

/** A rule's transitions, oldest first. */
const historyOf = (organizationId: string, alertId: string) => sql`h.organization_id = ${organizationId} and h.alert_id = ${alertId}`
const HISTORY_LIST: ListShape = {
  name: 'component-alert-history',
  filters: {},
  sorts: { at: { column: 'h.at', cast: 'timestamptz' } },
  defaultOrder: ['at'],
  tiebreaker: { column: 'h.id', cast: 'uuid' },
}

interface Rule {
  when: 'above' | 'below' | 'noData'
  value: number | null
  forSeconds: number
}

/** The rule a body asks for, whole, or 400 naming the field that is wrong. */
function checkRule(rule: { when: Rule['when']; value?: number | null; forSeconds?: number }): Rule {
  if (rule.when === 'noData') {
    if (rule.value !== undefined && rule.value !== null) throw badRequest('A noData rule has no value: omit it.', 'value')
    if (rule.forSeconds === undefined) throw badRequest(`A noData rule needs forSeconds: how old the data may get, ${MIN_NO_DATA_SECONDS} to ${MAX_NO_DATA_SECONDS} seconds.`, 'forSeconds')
    if (rule.forSeconds < MIN_NO_DATA_SECONDS) throw badRequest(`forSeconds of a noData rule must be at least ${MIN_NO_DATA_SECONDS}.`, 'forSeconds')
    return { when: 'noData', value: null, forSeconds: rule.forSeconds }
  }
  if (typeof rule.value !== 'number' || !Number.isFinite(rule.value)) throw badRequest(`An ${rule.when} rule needs a value: a finite number.`, 'value')
  const forSeconds = rule.forSeconds ?? 0
  if (forSeconds > MAX_HOLD_SECONDS) throw badRequest(`forSeconds of an ${rule.when} rule must be at most ${MAX_HOLD_SECONDS}.`, 'forSeconds')
  return { when: rule.when, value: rule.value, forSeconds }
}

export interface AlertDeps {
  db: Database
  writes: Writes
  pages: DisplayPages
  /** The live pages: changing or deleting a firing rule changes its page's marks. */
  live: Pick<LivePageExtensions, 'marksChanged'>
  maxAlertsPerComponent: number
  /** Rules one organization may have: what its sweeps look at grows with it. */
  maxAlertsPerOrganization: number
  /** Evaluates the component's rules after a change committed (not awaited by the request). */
  evaluateLater(organizationId: string, componentId: string): void
}

export function createAlerts({ db, writes, pages, live, maxAlertsPerComponent, maxAlertsPerOrganization, evaluateLater }: AlertDeps) {
  /** The component of the page (404 otherwise), in the actor's organization. */
  const requireComponent = async (executor: Executor, actor: Actor, pageId: string, componentId: string) => {
    const [row] = isUuid(componentId)
      ? await queryText<{ id: string }>(executor, 'select component_id as id from component_values where organization_id = $1 and page_id = $2 and component_id = $3', [actor.organizationId, pageId, componentId])
      : []
    if (!row) throw notFound('No such component.')
  }
  /** The rule of the component (404 otherwise), locked when `lock`. */
  const requireAlert = async (executor: Executor, actor: Actor, pageId: string, componentId: string, alertId: string, lock = false) => {
    const [row] = isUuid(alertId) && isUuid(componentId)
      ? await queryText<AlertView>(executor, `select ${COLUMNS} from component_alerts a where ${ALERTS_OF} and a.id = $4${lock ? ' for update' : ''}`, [actor.organizationId, pageId, componentId, alertId])
      : []
    if (!row) throw notFound('No such alert.')
    return viewOf(row)
  }
  /** 409 when the component or its organization holds as many rules as it may. */
  const requireRoom = async (tx: Executor, organizationId: string, componentId: string) => {
    // One organization's creations queue up, so both limits hold under concurrent requests.
    await queryText(tx, `select pg_advisory_xact_lock(hashtextextended('alerts ' || $1, 0))`, [organizationId])
    const [held] = await queryText<{ component: number; organization: number }>(
      tx,
      'select count(*) filter (where component_id = $2)::int as component, count(*)::int as organization from component_alerts where organization_id = $1',
      [organizationId, componentId],
    )
    if (held!.component >= maxAlertsPerComponent) throw conflict(`A component has at most ${maxAlertsPerComponent} alerts (alerts.maxAlertsPerComponent); delete one first.`)
    if (held!.organization >= maxAlertsPerOrganization) throw conflict(`An organization has at most ${maxAlertsPerOrganization} alerts (alerts.maxAlertsPerOrganization); delete one first.`)
  }
  /** The page if the actor may see it (404), and may edit it when `edit` (403 for its viewers). */
  const page = (actor: Actor, pageId: string, edit: boolean) => (edit ? pages.requireEditable(actor, pageId) : pages.requireVisible(actor, pageId))

  return {
    async list(actor: Actor, pageId: string, componentId: string, request: PageRequest) {
      const query = parseListQuery(ALERT_LIST, {})
      const identity = listIdentity(ALERT_LIST, `${actor.organizationId} ${componentId}`, query)
      const after = readCursor(request, identity, query.order)
      const { id } = await page(actor, pageId, false)
      await requireComponent(db, actor, id, componentId)
      const where = alertsOf(actor.organizationId, id, componentId)
      return selectListPage<AlertView, AlertView>(
        db,
        { columns: COLUMNS, from: 'component_alerts a', conditions: [where], order: query.order, total: sql`select count(*) from component_alerts a where ${where}`, identity, after },
        request,
        viewOf,
      )
    },

    async get(actor: Actor, pageId: string, componentId: string, alertId: string) {
      const { id } = await page(actor, pageId, false)
      return requireAlert(db, actor, id, componentId, alertId)
    },

    async create(actor: Actor, pageId: string, componentId: string, input: AlertInput, request?: IdempotentRequest) {
      const rule = checkRule(input)
      const { id: page_ } = await page(actor, pageId, true)
      const answer = await writes.change(actor, null, async ({ tx, audit }) => {
        await requireComponent(tx, actor, page_, componentId)
        await requireRoom(tx, actor.organizationId, componentId)
        const [row] = await queryText<AlertView>(
          tx,
          `insert into component_alerts as a (id, organization_id, page_id, component_id, kind, value, for_seconds, created_by) values ($4, $1, $2, $3, $5, $6, $7, $8) returning ${COLUMNS}`,
          [actor.organizationId, page_, componentId, uuidv7(), rule.when, rule.value, rule.forSeconds, actor.userId],
        )
        const alert = viewOf(row!)
        await audit({ action: 'alert.created', resourceType: 'component_alert', resourceId: alert.id, changes: { after: { pageId: page_, componentId, ...rule } } })
        return created(alert)
      }, request)
      evaluateLater(actor.organizationId, componentId)
      return answer
    },

    /** Changes the rule; its timer starts again (a firing rule stays firing until the changed rule stops holding). */
    async update(actor: Actor, pageId: string, componentId: string, alertId: string, patch: AlertPatch) {
      const { id: page_ } = await page(actor, pageId, true)
      const alert = await writes.change(actor, null, async ({ tx, audit }) => {
        const current = await requireAlert(tx, actor, page_, componentId, alertId, true)
        const when = patch.when ?? current.when
        // Switching to noData drops the threshold; switching from it needs one.
        const value = patch.value !== undefined ? patch.value : when === 'noData' ? null : current.when === 'noData' ? undefined : current.value
        const forSeconds = patch.forSeconds ?? (when === current.when ? current.forSeconds : undefined)
        const rule = checkRule({ when, value, forSeconds })
        const before = { when: current.when, value: current.value, forSeconds: current.forSeconds }
        if (rule.when === before.when && rule.value === before.value && rule.forSeconds === before.forSeconds) return current
        const [row] = await queryText<AlertView>(
          tx,
          `update component_alerts a set kind = $5, value = $6, for_seconds = $7, pending_since = null, updated_at = greatest(now(), $8::timestamptz)
            where ${ALERTS_OF} and a.id = $4 returning ${COLUMNS}`,
          [actor.organizationId, page_, componentId, current.id, rule.when, rule.value, rule.forSeconds, new Date(Date.parse(current.updatedAt) + 1).toISOString()],
        )
        await audit({ action: 'alert.updated', resourceType: 'component_alert', resourceId: current.id, changes: { before, after: { ...rule } } })
        if (current.state === 'firing') await live.marksChanged(tx, page_)
        return viewOf(row!)
      })
      evaluateLater(actor.organizationId, componentId)
      return alert
    },

    async delete(actor: Actor, pageId: string, componentId: string, alertId: string) {
      const { id: page_ } = await page(actor, pageId, true)
      return writes.change(actor, null, async ({ tx, audit }) => {
        const current = await requireAlert(tx, actor, page_, componentId, alertId, true)
        await queryText(tx, 'delete from component_alerts where organization_id = $1 and id = $2', [actor.organizationId, current.id])
        if (current.state === 'firing') await live.marksChanged(tx, page_)
        await audit({ action: 'alert.deleted', resourceType: 'component_alert', resourceId: current.id, changes: { before: { pageId: page_, componentId, when: current.when, value: current.value, forSeconds: current.forSeconds } } })
        return { id: current.id }
      })
    },

    /** The rule's transitions, oldest first. */
    async history(actor: Actor, pageId: string, componentId: string, alertId: string, request: PageRequest) {
      const query = parseListQuery(HISTORY_LIST, {})
      const identity = listIdentity(HISTORY_LIST, `${actor.organizationId} ${alertId}`, query)
      const after = readCursor(request, identity, query.order)
      const { id } = await page(actor, pageId, false)
      const alert = await requireAlert(db, actor, id, componentId, alertId)
      const where = historyOf(actor.organizationId, alert.id)
      return selectListPage<{ transition: 'fired' | 'resolved'; value: number | null; at: string }, { transition: 'fired' | 'resolved'; value: number | null; at: string }>(
        db,
        { columns: 'h.transition, h.value::float8 as value, h.at::text as at', from: 'alert_transitions h', conditions: [where], order: query.order, total: sql`select count(*) from alert_transitions h where ${where}`, identity, after },
        request,
        (row) => ({ ...row, at: isoFromText(row.at) }),
      )
    },
  }
}

export type AlertService = ReturnType<typeof createAlerts>
