/**
 * Work sources stay exact: property tests. Each run takes a fresh project of one
 * organization, seeds it with work items whose times are moved into the past (before anything is
 * bound, as a project with a history is when someone binds it), binds one page's components
 * covering every measure (the whole project, and saved views filtering by status, label, a select
 * field with priority, assignee and creation time), then plays a random history of creates, status,
 * priority, assignee, label and field changes, deletes, bulk changes (one transaction) and bursts
 * of concurrent changes. After binding, after some steps and at the end it waits for the sources
 * to be quiescent — no work_source_marks left for the organization and every component's data
 * equal to an oracle computed from the rows (work_items, work_item_labels and labels,
 * work_item_field_values, custom_fields, user_directory) — and fails with a diff, the changes
 * played and what the service logged, after 10 s (or once no marks are left and the data has
 * differed for 3 s). Every view's membership in the oracle is first checked against the list
 * (`GET …/work-items?view=`), which the data must equal.
 *
 * More properties mix in other changes that alter what components show: components bound again
 * (another measure, view or range), a label renamed or deleted, a view's filters changed, a select
 * option removed, a field disabled for the project; each such change is checked at once. Those
 * that fail today are todo tests (KNOWN_GAPS): `bun test --todo` runs them.
 *
 * WORK_DASHBOARDS_RUNS (default 3), WORK_DASHBOARDS_AROUND_RUNS (1), WORK_DASHBOARDS_SEED,
 * WORK_DASHBOARDS_NO_SHRINK=1 and WORK_DASHBOARDS_MIN_STEPS (15: fewer lets a failure shrink
 * further) help reproduce.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { sqlOn, timeLimit, usingServer } from '../helpers/database'
import { capturingLogger, type LoggedLine } from '../helpers/logger'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
/** On PostgreSQL, a second instance on the same database (its own recompute workers): changes go to either. */
let second: TestService | undefined
let fx: ProjectFixture
let adminKey: string
let userIds: string[] = []
const sql = sqlOn(() => api)
/** What the service logged at warn and error (a failed request, a source that could not be recomputed). */
const logged: LoggedLine[] = []
const loggedSince = (from: number) =>
  logged
    .slice(from)
    .map((line) => `  [${line.level}] ${line.message} ${JSON.stringify(line.fields)}`)
    .join('\n')

const STATUSES = ['todo', 'in_progress', 'done', 'cancelled'] as const
type Status = (typeof STATUSES)[number]
const DAY = 86_400_000
/** How long a check waits for the sources to be quiescent and exact. */
const SETTLE_MS = 10_000
/** How long data may differ once no marks are left (the spec's 2 s, and some). */
const STALE_MS = 3_000
const RUNS = Number(process.env.WORK_DASHBOARDS_RUNS ?? 3)
const MIN_STEPS = Number(process.env.WORK_DASHBOARDS_MIN_STEPS ?? 15)

/**
 * The labels and select fields a run's items use (names are lower-case ASCII or share their case,
 * and users are `User <n>`, so ordering by code point and by localeCompare agree).
 */
interface Catalog {
  /** By index 0 bug, 1 feature, 2 chore (renamed, or deleted and made again, by the properties around the items). */
  labels: { id: string; base: string }[]
  severity: { id: string; key: string }
  area: { id: string; key: string }
  /** The fields' option ids by name, as the test last read them (a removed option comes back with a new id). */
  options: { severity: Map<string, string>; area: Map<string, string> }
}

/** The option ids of a field as they are now, by name (a removed option comes back with a new id). */
async function optionIds(fieldId: string): Promise<Map<string, string>> {
  const [row] = await sql<{ options: string }>('select options::text as options from custom_fields where id = $1 and organization_id = $2', [fieldId, fx.organizationId])
  return new Map((JSON.parse(row!.options) as { id: string; name: string }[]).map((option) => [option.name, option.id]))
}

const SEVERITY = ['Low', 'Medium', 'High']
const AREA = ['api', 'ui', 'db']

async function admin(method: string, path: string, body?: unknown) {
  const response = await api.request(method, path, { key: adminKey, body })
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
  return response.body.data
}

/** New labels and fields, their names and keys suffixed (labels and keys are the organization's). */
async function newCatalog(suffix: string): Promise<Catalog> {
  const labels = []
  for (const base of ['bug', 'feature', 'chore'].map((name) => `${name}${suffix}`)) labels.push({ id: (await admin('POST', '/api/v1/labels', { name: base })).id, base })
  const field = async (key: string, type: string, names: string[]) => ({ id: (await admin('POST', '/api/v1/custom-fields', { key, name: key, type, options: names.map((name) => ({ name })) })).id, key })
  const severity = await field(`severity${suffix}`, 'single_select', SEVERITY)
  const area = await field(`area${suffix}`, 'multi_select', AREA)
  return { labels, severity, area, options: { severity: await optionIds(severity.id), area: await optionIds(area.id) } }
}

// ---- the history ------------------------------------------------------------------------------

interface Attributes {
  status: Status
  priority: number
  /** 0..2: one of the three users; 3: nobody. */
  assignee: number
  /** Indexes into the catalog's labels. */
  labels: number[]
  /** 0..2: an option of `severity` (single select); 3: none. */
  severity: number
  /** Indexes into AREA (multi select); empty: none. */
  area: number[]
}

type Change =
  | { kind: 'create'; attributes: Attributes }
  | { kind: 'status'; pick: number; status: Status }
  | { kind: 'priority'; pick: number; priority: number }
  | { kind: 'assignee'; pick: number; assignee: number }
  | { kind: 'labels'; pick: number; labels: number[] }
  | { kind: 'severity'; pick: number; severity: number }
  | { kind: 'area'; pick: number; area: number[] }
  | { kind: 'delete'; pick: number }
  /** PATCH …/work-items/bulk: several items in one transaction. */
  | { kind: 'bulk'; changes: { pick: number; status?: Status; priority?: number }[] }
  /** PUT …/source again: a component bound to another measure, view or range (days 0: the default). */
  | { kind: 'rebind'; component: number; measure: number; view: number; days: number }

/** Changes around the items (their own properties, below). */
type Around =
  /** Renames the label (its base name ↔ `<base>-renamed`): names shown, and the views filtering by name. */
  | { kind: 'renameLabel'; label: number }
  /** Deletes the label and makes one of the same name again (a new id): its items lose it. */
  | { kind: 'deleteLabel'; label: number }
  /** Switches a view between its two filter sets. */
  | { kind: 'patchView'; view: 'open' | 'bugOrChore' }
  /** Removes a severity option (Low or Medium) and adds it back (a new id): items lose the value. */
  | { kind: 'removeOption'; option: number }
  /** Disables the area field for the project and enables it again: every value of it goes. */
  | { kind: 'disableArea' }

const AROUND: string[] = ['renameLabel', 'deleteLabel', 'patchView', 'removeOption', 'disableArea']

/** A step: one change, or a burst of changes sent at once; `check`: wait for quiescence after it and compare. */
type Step = { change: Change | Around | { kind: 'burst'; changes: Change[] }; check: boolean }

/** An item there before anything is bound: the statuses it went through, and how far back its times go. */
interface Seed {
  attributes: Attributes
  path: Status[]
  /** Created this long ago (ms, up to 25 days: some before every range). */
  agoMs: number
  /** Where between creation and now it started, and between its start (or creation) and now it closed. */
  startAt: number
  closeAt: number
}

const status = fc.constantFrom(...STATUSES)
const priority = fc.integer({ min: 0, max: 4 })
const attributes: fc.Arbitrary<Attributes> = fc.record({
  status,
  priority,
  assignee: fc.integer({ min: 0, max: 3 }),
  labels: fc.subarray([0, 1, 2]),
  severity: fc.integer({ min: 0, max: 3 }),
  area: fc.subarray([0, 1, 2]),
})
const pick = fc.nat({ max: 1000 })
const simple: fc.Arbitrary<Change> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('create' as const), attributes }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('status' as const), pick, status }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('priority' as const), pick, priority }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('assignee' as const), pick, assignee: fc.integer({ min: 0, max: 3 }) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('labels' as const), pick, labels: fc.subarray([0, 1, 2]) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('severity' as const), pick, severity: fc.integer({ min: 0, max: 3 }) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('area' as const), pick, area: fc.subarray([0, 1, 2]) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('delete' as const), pick }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('bulk' as const),
      changes: fc.array(fc.record({ pick, status: fc.option(status, { nil: undefined }), priority: fc.option(priority, { nil: undefined }) }), { minLength: 2, maxLength: 3 }),
    }),
    weight: 1,
  },
)
/** A component bound again (its own property). */
const rebind: fc.Arbitrary<Change> = fc.record({
  kind: fc.constant('rebind' as const),
  component: fc.nat({ max: 100 }),
  measure: fc.nat({ max: 10 }),
  view: fc.integer({ min: 0, max: 8 }),
  days: fc.integer({ min: 0, max: 30 }),
})
const burst = fc.record({ kind: fc.constant('burst' as const), changes: fc.array(simple, { minLength: 2, maxLength: 4 }) })
/** Each change around the items, alone (one property each). */
const AROUND_CHANGES: Record<Around['kind'], fc.Arbitrary<Around>> = {
  renameLabel: fc.record({ kind: fc.constant('renameLabel' as const), label: fc.integer({ min: 0, max: 2 }) }),
  deleteLabel: fc.record({ kind: fc.constant('deleteLabel' as const), label: fc.integer({ min: 0, max: 2 }) }),
  patchView: fc.record({ kind: fc.constant('patchView' as const), view: fc.constantFrom('open' as const, 'bugOrChore' as const) }),
  removeOption: fc.record({ kind: fc.constant('removeOption' as const), option: fc.integer({ min: 0, max: 1 }) }),
  disableArea: fc.record({ kind: fc.constant('disableArea' as const) }),
}
const check = fc.integer({ min: 0, max: 7 }).map((n) => n === 0)
const step: fc.Arbitrary<Step> = fc.record({ change: fc.oneof({ arbitrary: simple, weight: 9 }, { arbitrary: burst, weight: 1 }), check })
const PATHS: Status[][] = [['todo'], ['in_progress'], ['done'], ['cancelled'], ['in_progress', 'done'], ['in_progress', 'cancelled'], ['in_progress', 'todo'], ['done', 'todo'], ['in_progress', 'done', 'in_progress']]
const seed: fc.Arbitrary<Seed> = fc.record({
  attributes,
  path: fc.constantFrom(...PATHS),
  agoMs: fc.integer({ min: 0, max: 25 * DAY }),
  startAt: fc.integer({ min: 0, max: 1000 }).map((n) => n / 1000),
  closeAt: fc.integer({ min: 0, max: 1000 }).map((n) => n / 1000),
})

// ---- the components ---------------------------------------------------------------------------

type ViewName = 'open' | 'bug' | 'urgentHigh' | 'mine' | 'recent' | 'bugOrChore'
interface Bound {
  type: string
  /** `byField:severity` and `byField:area` name the catalog's fields. */
  measure: string
  days?: number
  view?: ViewName
}

/** Every measure over the whole project, and several through views. */
const BOUND: Bound[] = [
  { type: 'horizontalBox', measure: 'count' },
  { type: 'pieChart', measure: 'byStatus' },
  { type: 'barChart', measure: 'byPriority' },
  { type: 'pieChart', measure: 'byAssignee' },
  { type: 'barChart', measure: 'byLabel' },
  { type: 'pieChart', measure: 'byField:severity' },
  { type: 'barChart', measure: 'byField:area' },
  { type: 'barChart', measure: 'createdPerDay', days: 7 },
  { type: 'lineChart', measure: 'completedPerDay' },
  { type: 'lineChart', measure: 'openOverTime', days: 21 },
  { type: 'verticalBox', measure: 'cycleTimeDays', days: 10 },
  { type: 'verticalBox', measure: 'count', view: 'open' },
  { type: 'pieChart', measure: 'byLabel', view: 'open' },
  { type: 'barChart', measure: 'byPriority', view: 'bug' },
  { type: 'barChart', measure: 'createdPerDay', days: 10, view: 'bug' },
  { type: 'pieChart', measure: 'byAssignee', view: 'urgentHigh' },
  { type: 'lineChart', measure: 'openOverTime', view: 'urgentHigh' },
  { type: 'horizontalBox', measure: 'cycleTimeDays', days: 30, view: 'mine' },
  { type: 'lineChart', measure: 'completedPerDay', days: 5, view: 'mine' },
  { type: 'barChart', measure: 'byStatus', view: 'mine' },
  { type: 'pieChart', measure: 'byField:area', view: 'recent' },
  { type: 'horizontalBox', measure: 'count', view: 'bugOrChore' },
  { type: 'barChart', measure: 'byField:severity', view: 'bugOrChore' },
]
const DEFAULT_DAYS = 14

const nameOf = (bound: Bound) => `${bound.measure}${bound.days ? `/${bound.days}d` : ''}${bound.view ? ` [${bound.view}]` : ''} (${bound.type})`

// ---- the oracle -------------------------------------------------------------------------------

interface ItemRow {
  id: string
  status: Status
  priority: number
  assigneeId: string | null
  /** Microseconds since the epoch. */
  created: number
  started: number | null
  closed: number | null
  cycleSeconds: number | null
  /** Label names. */
  labels: string[]
  /** Option names. */
  severity: string | null
  area: string[]
}

/** A view's filters, as the test applies them to rows (and as the list must: checked against it). */
interface ViewFilter {
  statuses?: Status[]
  labels?: string[]
  /** An option's name. */
  severity?: string
  priorities?: number[]
  assigneeId?: string
  createdFrom?: number
}

/** What the test compares of a component's data: x and y of points, a box's number (and count beside it). */
type Shown = { points: [string, number][] } | { value: string; count?: number | string } | { missing: unknown }

const toMicros = (value: string | null) => (value === null ? null : Number(value))
const dayOf = (micros: number) => new Date(Math.floor(micros / 1000)).toISOString().slice(0, 10)
const dayStart = (day: string) => Date.parse(`${day}T00:00:00Z`) * 1000

function rangeDays(today: string, days: number): string[] {
  const end = Date.parse(`${today}T00:00:00Z`)
  return Array.from({ length: days }, (_, i) => new Date(end - (days - 1 - i) * DAY).toISOString().slice(0, 10))
}

/** The project's work items as the rows have them, with label names and option names. */
async function readRows(catalog: Catalog, projectId: string): Promise<ItemRow[]> {
  const organizationId = fx.organizationId
  const items = await sql<{ id: string; status: Status; priority: number; assigneeId: string | null; created: string; started: string | null; closed: string | null; cycleSeconds: number | null }>(
    `select w.id, w.status, w.priority, w.assignee_id as "assigneeId",
       (extract(epoch from w.created_at) * 1000000)::bigint::text as created,
       (extract(epoch from w.started_at) * 1000000)::bigint::text as started,
       (extract(epoch from w.closed_at) * 1000000)::bigint::text as closed,
       extract(epoch from w.closed_at - w.started_at)::float8 as "cycleSeconds"
     from work_items w where w.organization_id = $1 and w.project_id = $2 order by w.number`,
    [organizationId, projectId],
  )
  const labels = await sql<{ id: string; name: string }>(
    `select wl.work_item_id as id, l.name from work_item_labels wl join labels l on l.id = wl.label_id and l.organization_id = wl.organization_id
     where wl.organization_id = $1 and wl.project_id = $2`,
    [organizationId, projectId],
  )
  const values = await sql<{ id: string; fieldId: string; options: string }>(
    `select v.work_item_id as id, v.field_id as "fieldId", coalesce(array_to_json(v.option_ids), '[]'::json)::text as options
     from work_item_field_values v where v.organization_id = $1 and v.project_id = $2`,
    [organizationId, projectId],
  )
  const names = new Map<string, string>()
  for (const field of [catalog.severity, catalog.area]) for (const [name, id] of await optionIds(field.id)) names.set(id, name)
  return items.map((row) => {
    const options = (fieldId: string) =>
      values.filter((value) => value.id === row.id && value.fieldId === fieldId).flatMap((value) => (JSON.parse(value.options) as string[]).map((id) => names.get(id) ?? `unknown option ${id}`))
    return {
      id: row.id,
      status: row.status,
      priority: Number(row.priority),
      assigneeId: row.assigneeId,
      created: toMicros(row.created)!,
      started: toMicros(row.started),
      closed: toMicros(row.closed),
      cycleSeconds: row.cycleSeconds === null ? null : Number(row.cycleSeconds),
      labels: labels.filter((label) => label.id === row.id).map((label) => label.name),
      severity: options(catalog.severity.id)[0] ?? null,
      area: options(catalog.area.id),
    }
  })
}

function matches(row: ItemRow, filter: ViewFilter | undefined): boolean {
  if (!filter) return true
  if (filter.statuses && !filter.statuses.includes(row.status)) return false
  if (filter.labels && !row.labels.some((label) => filter.labels!.includes(label))) return false
  if (filter.severity && row.severity !== filter.severity) return false
  if (filter.priorities && !filter.priorities.includes(row.priority)) return false
  if (filter.assigneeId && row.assigneeId !== filter.assigneeId) return false
  if (filter.createdFrom !== undefined && row.created < filter.createdFrom) return false
  return true
}

const FIXED_STATUS: [Status, string][] = [['todo', 'To do'], ['in_progress', 'In progress'], ['done', 'Done'], ['cancelled', 'Cancelled']]
const FIXED_PRIORITY: [number, string][] = [[1, 'Urgent'], [2, 'High'], [3, 'Medium'], [4, 'Low'], [0, 'No priority']]

/** One point per value with a count (by count, then name), then `none` when non-zero; an item with several values counts under each. */
function ranked(items: ItemRow[], valuesOf: (row: ItemRow) => string[]): [string, number][] {
  const counts = new Map<string, number>()
  let none = 0
  for (const row of items) {
    const values = [...new Set(valuesOf(row))]
    if (!values.length) none++
    for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1)
  }
  const points = [...counts].map(([x, y]) => ({ x, y }))
  points.sort((a, b) => b.y - a.y || a.x.localeCompare(b.x))
  const shown: [string, number][] = points.map((point) => [point.x, point.y])
  if (none > 0) shown.push(['none', none])
  return shown
}

/** The median as PostgreSQL's percentile_cont(0.5) takes it (the lower middle plus half the gap). */
function median(values: number[]): number | null {
  if (!values.length) return null
  const sorted = [...values].sort((a, b) => a - b)
  const position = 0.5 * (sorted.length - 1)
  const lower = Math.floor(position)
  const upper = Math.ceil(position)
  return sorted[lower]! + (sorted[upper]! - sorted[lower]!) * (position - lower)
}

function expected(bound: Bound, all: ItemRow[], filter: ViewFilter | undefined, names: Map<string, string>, today: string): Shown {
  const items = all.filter((row) => matches(row, filter))
  const range = rangeDays(today, bound.days ?? DEFAULT_DAYS)
  const start = dayStart(range[0]!)
  const [kind, key] = bound.measure.split(':')
  switch (kind) {
    case 'count':
      return { value: String(items.length) }
    case 'byStatus':
      return { points: FIXED_STATUS.map(([value, x]) => [x, items.filter((row) => row.status === value).length]) }
    case 'byPriority':
      return { points: FIXED_PRIORITY.map(([value, x]) => [x, items.filter((row) => row.priority === value).length]) }
    case 'byAssignee':
      return { points: ranked(items, (row) => (row.assigneeId ? [names.get(row.assigneeId) ?? row.assigneeId] : [])) }
    case 'byLabel':
      return { points: ranked(items, (row) => row.labels) }
    case 'byField':
      return { points: ranked(items, (row) => (key === 'severity' ? (row.severity ? [row.severity] : []) : row.area)) }
    case 'createdPerDay':
      return { points: range.map((day) => [day, items.filter((row) => dayOf(row.created) === day).length]) }
    case 'completedPerDay':
      return { points: range.map((day) => [day, items.filter((row) => row.status === 'done' && row.closed !== null && dayOf(row.closed) === day).length]) }
    case 'openOverTime':
      return {
        points: range.map((day) => {
          const end = dayStart(day) + DAY * 1000
          return [day, items.filter((row) => row.created < end && (row.closed === null || row.closed >= end)).length]
        }),
      }
    case 'cycleTimeDays': {
      const done = items.filter((row) => row.status === 'done' && row.started !== null && row.closed !== null && row.closed >= start)
      // Each item's cycle in tenths of a day, rounded half up, then their median (docs/api.md).
      const middle = median(done.map((row) => Math.floor(((row.closed! - row.started!) * 10 + 43_200_000_000) / 86_400_000_000)))
      return { value: String(middle === null ? 0 : Math.round(middle) / 10), count: done.length }
    }
  }
  throw new Error(`no oracle for ${bound.measure}`)
}

/** What the component's data shows, in the oracle's terms. */
function shown(bound: Bound, data: any): Shown {
  if (!data || data.type !== bound.type) return { missing: data ?? null }
  if (Array.isArray(data.points)) return { points: data.points.map((point: any) => [point.x, point.y]) }
  const value = bound.type === 'horizontalBox' ? data.middleText?.value : data.bottomText?.value
  if (bound.measure !== 'cycleTimeDays') return { value }
  // The count beside the number: `N done` in the box's other text (its wording around it is the renderer's).
  const beside = /\b(\d+) done\b/.exec(bound.type === 'horizontalBox' ? (data.rightText?.value ?? '') : (data.topText?.value ?? ''))
  return { value, count: beside ? Number(beside[1]) : `no "N done" in ${JSON.stringify(data)}` }
}

// ---- one run ------------------------------------------------------------------------------------

interface Run {
  catalog: Catalog
  /** What each component is bound to now (BOUND at first; a rebinding changes it). */
  bound: Bound[]
  projectId: string
  pageId: string
  componentIds: string[]
  viewIds: Record<ViewName, string>
  /** Which of its two filter sets a switchable view has now. */
  switched: Partial<Record<ViewName, boolean>>
  /** The users' display names (what byAssignee shows). */
  names: Map<string, string>
  /** Changes sent, for the failure message. */
  log: string[]
}

const itemsPath = (run: Run) => `/api/v1/projects/${run.projectId}/work-items`
const measureOf = (run: Run, bound: Bound) => bound.measure.replace(/^byField:(severity|area)$/, (_, key: 'severity' | 'area') => `byField:${run.catalog[key].key}`)

/** A view's filters as the list takes them (query parameters), labels named as they are now. */
function viewOf(run: Run, view: ViewName): Record<string, string | string[]> {
  const [bug, feature, chore] = run.catalog.labels.map((label) => label.base)
  const switched = run.switched[view] ?? false
  switch (view) {
    case 'open':
      return { status: switched ? 'todo' : 'todo,in_progress' }
    case 'bug':
      return { label: [bug!] }
    case 'urgentHigh':
      return { [`field.${run.catalog.severity.key}`]: run.catalog.options.severity.get('High')!, priority: '1,2' }
    case 'mine':
      return { assigneeId: userIds[1]! }
    case 'recent':
      return { createdAt: `gte:${new Date(Date.now() - 6 * DAY).toISOString()}` }
    case 'bugOrChore':
      return { label: switched ? [feature!] : [bug!, chore!] }
  }
}

/** The views' filters as the oracle applies them to rows, read back from the views themselves (option ids as names). */
async function filtersOf(run: Run): Promise<Record<ViewName, ViewFilter>> {
  const filters = {} as Record<ViewName, ViewFilter>
  for (const view of Object.keys(run.viewIds) as ViewName[]) {
    const saved = await fx.as('owner', 'GET', `/api/v1/projects/${run.projectId}/views/${run.viewIds[view]}`, undefined, 200)
    const filter: ViewFilter = {}
    const text = (value: string | string[]) => (Array.isArray(value) ? value : value.split(','))
    for (const [key, value] of Object.entries(saved.filters as Record<string, string | string[]>)) {
      if (key === 'status') filter.statuses = text(value) as Status[]
      else if (key === 'label') filter.labels = text(value)
      else if (key === 'priority') filter.priorities = text(value).map(Number)
      else if (key === 'assigneeId') filter.assigneeId = String(value)
      else if (key === 'createdAt') filter.createdFrom = Date.parse(String(value).replace(/^gte:/, '')) * 1000
      else if (key === `field.${run.catalog.severity.key}`) {
        const byId = new Map([...(await optionIds(run.catalog.severity.id))].map(([name, id]) => [id, name]))
        filter.severity = byId.get(String(value)) ?? `unknown option ${value}`
      } else throw new Error(`the oracle has no filter ${key}`)
    }
    filters[view] = filter
  }
  return filters
}

/** A body's values for these attributes (`status` apart). */
function bodyOf(run: Run, attributes: Omit<Attributes, 'status'>) {
  const { severity, area } = run.catalog.options
  return {
    priority: attributes.priority,
    assigneeId: attributes.assignee < 3 ? userIds[attributes.assignee]! : null,
    labels: attributes.labels.map((i) => run.catalog.labels[i]!.id),
    fields: {
      [run.catalog.severity.key]: attributes.severity < 3 ? severity.get(SEVERITY[attributes.severity]!)! : null,
      [run.catalog.area.key]: attributes.area.length ? attributes.area.map((i) => area.get(AREA[i]!)!) : null,
    },
  }
}

async function aliveIds(run: Run): Promise<string[]> {
  return (await sql<{ id: string }>('select id from work_items where organization_id = $1 and project_id = $2 order by number', [fx.organizationId, run.projectId])).map((row) => row.id)
}

let calls = 0
/** A change's request as the owner, to either instance in turn. */
const call = (method: string, path: string, body?: unknown) => (second && ++calls % 2 ? second : api).request(method, path, { key: fx.keys.owner, body })

/** Sends one change (ids picked among `ids`); the HTTP status. A concurrent burst may find its item gone (404). */
async function send(run: Run, change: Change, ids: string[]): Promise<number> {
  const path = itemsPath(run)
  const target = (index: number) => ids[index % ids.length]!
  const patch = async (index: number, body: unknown) => (ids.length ? (await call('PATCH', `${path}/${target(index)}`, body)).status : 0)
  switch (change.kind) {
    case 'create': {
      const { status, ...rest } = change.attributes
      return (await call('POST', path, { title: 'Item', status, ...bodyOf(run, rest) })).status
    }
    case 'status':
      return patch(change.pick, { status: change.status })
    case 'priority':
      return patch(change.pick, { priority: change.priority })
    case 'assignee':
      return patch(change.pick, { assigneeId: change.assignee < 3 ? userIds[change.assignee]! : null })
    case 'labels':
      return patch(change.pick, { labels: change.labels.map((i) => run.catalog.labels[i]!.id) })
    case 'severity': {
      const options = run.catalog.options.severity
      return patch(change.pick, { fields: { [run.catalog.severity.key]: change.severity < 3 ? options.get(SEVERITY[change.severity]!)! : null } })
    }
    case 'area': {
      const options = run.catalog.options.area
      return patch(change.pick, { fields: { [run.catalog.area.key]: change.area.length ? change.area.map((i) => options.get(AREA[i]!)!) : null } })
    }
    case 'delete':
      return ids.length ? (await call('DELETE', `${path}/${target(change.pick)}`)).status : 0
    case 'bulk': {
      if (!ids.length) return 0
      // Each item once per request (the first change naming it), and only changes that change something.
      const items = new Map<string, { id: string; status?: Status; priority?: number }>()
      for (const one of change.changes) {
        const id = target(one.pick)
        if (items.has(id) || (one.status === undefined && one.priority === undefined)) continue
        items.set(id, { id, ...(one.status !== undefined ? { status: one.status } : {}), ...(one.priority !== undefined ? { priority: one.priority } : {}) })
      }
      if (!items.size) return 0
      return (await call('PATCH', `${path}/bulk`, { items: [...items.values()] })).status
    }
    case 'rebind': {
      const { index, bound } = rebound(run, change)
      run.log.push(`  (component ${index} bound to ${nameOf(bound)})`)
      await bind(run, index, bound)
      return 200
    }
  }
}

/** Sends a change around the items. */
async function sendAround(run: Run, change: Around): Promise<void> {
  switch (change.kind) {
    case 'renameLabel': {
      const label = run.catalog.labels[change.label]!
      const [row] = await sql<{ name: string }>('select name from labels where id = $1 and organization_id = $2', [label.id, fx.organizationId])
      await admin('PATCH', `/api/v1/labels/${label.id}`, { name: row!.name === label.base ? `${label.base}-renamed` : label.base })
      return
    }
    case 'deleteLabel': {
      const label = run.catalog.labels[change.label]!
      const [row] = await sql<{ name: string }>('select name from labels where id = $1 and organization_id = $2', [label.id, fx.organizationId])
      await admin('DELETE', `/api/v1/labels/${label.id}`)
      label.id = (await admin('POST', '/api/v1/labels', { name: row!.name })).id
      return
    }
    case 'patchView': {
      run.switched[change.view] = !run.switched[change.view]
      await fx.as('owner', 'PATCH', `/api/v1/projects/${run.projectId}/views/${run.viewIds[change.view]}`, { filters: viewOf(run, change.view) }, 200)
      return
    }
    case 'removeOption': {
      const field = await admin('GET', `/api/v1/custom-fields/${run.catalog.severity.id}`)
      const name = SEVERITY[change.option]!
      const kept = field.options.filter((option: { name: string }) => option.name !== name).map((option: { id: string; name: string }) => ({ id: option.id, name: option.name }))
      await admin('PATCH', `/api/v1/custom-fields/${run.catalog.severity.id}`, { options: kept })
      await admin('PATCH', `/api/v1/custom-fields/${run.catalog.severity.id}`, { options: [...kept, { name }] })
      run.catalog.options.severity = await optionIds(run.catalog.severity.id)
      return
    }
    case 'disableArea':
      await fx.as('owner', 'DELETE', `/api/v1/projects/${run.projectId}/custom-fields/${run.catalog.area.id}`, undefined, 200)
      await fx.as('owner', 'POST', `/api/v1/projects/${run.projectId}/custom-fields`, { fieldId: run.catalog.area.id }, 201)
      return
  }
}

async function play(run: Run, current: Step['change']): Promise<void> {
  const ids = await aliveIds(run)
  run.log.push(JSON.stringify(current))
  if (current.kind === 'burst') {
    const statuses = await Promise.all(current.changes.map((change) => send(run, change, ids)))
    // An item deleted by another change of the burst is gone: 404, or 400 naming it in a bulk change.
    for (const [i, status] of statuses.entries()) {
      const allowed = [0, 200, 201, 404, ...(current.changes[i]!.kind === 'bulk' ? [400] : [])]
      if (!allowed.includes(status)) throw new Error(`${JSON.stringify(current.changes[i])} in a burst answered ${status}`)
    }
  } else if (AROUND.includes(current.kind)) await sendAround(run, current as Around)
  else expect([0, 200, 201]).toContain(await send(run, current as Change, ids))
}

/** The ids the list shows for a view (every page). */
async function listed(run: Run, view: ViewName): Promise<string[]> {
  const ids: string[] = []
  let cursor: string | null = null
  do {
    const response = await fx.call('owner', 'GET', `${itemsPath(run)}?view=${run.viewIds[view]}&size=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    expect(response.status).toBe(200)
    ids.push(...response.body.data.map((item: { id: string }) => item.id))
    cursor = response.body.meta.nextCursor ?? null
  } while (cursor)
  return ids.sort()
}

/** Every component's data in the oracle's terms (one list request). */
async function readShown(run: Run): Promise<Shown[]> {
  const response = await fx.call('owner', 'GET', `/api/v1/pages/${run.pageId}/components?size=100`)
  expect(response.status).toBe(200)
  const byId = new Map(response.body.data.map((component: any) => [component.id, component.data]))
  return run.bound.map((bound, i) => shown(bound, byId.get(run.componentIds[i]!)))
}

/**
 * Waits until the organization has no marks left and every component shows the oracle's data
 * (the rows do not change meanwhile); fails after SETTLE_MS, or once no marks are left and the
 * data has differed for STALE_MS, with what differs. The view filters of the oracle are checked
 * against the list first. Returns how long it took.
 */
async function settle(run: Run, when: string): Promise<number> {
  const started = Date.now()
  const rows = await readRows(run.catalog, run.projectId)
  const filters = await filtersOf(run)
  for (const view of Object.keys(filters) as ViewName[]) {
    const mine = rows.filter((row) => matches(row, filters[view])).map((row) => row.id).sort()
    expect({ when, view, ids: await listed(run, view) }).toEqual({ when, view, ids: mine })
  }
  let problem = ''
  let differing: number | undefined
  for (;;) {
    const [marks] = await sql<{ n: number }>('select count(*)::int as n from work_source_marks where organization_id = $1', [fx.organizationId])
    if (Number(marks!.n) === 0) {
      // Today as the service sees it now (a run crossing midnight UTC would see the series move).
      const today = new Date().toISOString().slice(0, 10)
      const want = run.bound.map((bound) => expected(bound, rows, bound.view ? filters[bound.view] : undefined, run.names, today))
      const got = await readShown(run)
      const differ = run.bound.flatMap((bound, i) => (Bun.deepEquals(got[i], want[i]) ? [] : [`  ${nameOf(bound)}\n    expected ${JSON.stringify(want[i])}\n    actual   ${JSON.stringify(got[i])}`]))
      if (!differ.length) {
        // The component's own read (GET …/components/{id}) shows the same (checked at the end of a run).
        if (when.startsWith('after all')) for (const [i, bound] of run.bound.entries()) {
          const one = await fx.as('owner', 'GET', `/api/v1/pages/${run.pageId}/components/${run.componentIds[i]}`, undefined, 200)
          expect({ when, component: nameOf(bound), shown: shown(bound, one.data) }).toEqual({ when, component: nameOf(bound), shown: want[i]! })
        }
        return Date.now() - started
      }
      differing ??= Date.now()
      problem = `no marks left, and ${differ.length} component(s) differ from the rows:\n${differ.join('\n')}`
    } else {
      differing = undefined
      problem = `${marks!.n} mark(s) left`
    }
    if (Date.now() - started > SETTLE_MS || (differing !== undefined && Date.now() - differing > STALE_MS)) {
      const items = rows.map((row) => ({ ...row, id: row.id.slice(-6), created: new Date(row.created / 1000).toISOString(), started: row.started && new Date(row.started / 1000).toISOString(), closed: row.closed && new Date(row.closed / 1000).toISOString() }))
      throw new Error(`${when}: not quiescent and exact after ${Date.now() - started} ms: ${problem}\nrows:\n  ${items.map((item) => JSON.stringify(item)).join('\n  ')}`)
    }
    await Bun.sleep(25)
  }
}

/** Creates the seed items through the API, then moves their times back (nothing is bound yet). */
async function plant(run: Run, seeds: Seed[]): Promise<void> {
  const path = itemsPath(run)
  const now = Date.now()
  for (const one of seeds) {
    const { status: _ignored, ...rest } = one.attributes
    const item = await fx.as('owner', 'POST', path, { title: 'Seed', status: one.path[0], ...bodyOf(run, rest) }, 201)
    for (const next of one.path.slice(1)) await fx.as('owner', 'PATCH', `${path}/${item.id}`, { status: next }, 200)
    const created = now - one.agoMs
    const started = created + Math.floor(one.startAt * (now - created))
    const [row] = await sql<{ started: boolean }>('select started_at is not null as started from work_items where id = $1 and organization_id = $2', [item.id, fx.organizationId])
    const from = row!.started ? started : created
    const closed = from + Math.floor(one.closeAt * (now - from))
    await sql('update work_items set created_at = $3::timestamptz, started_at = case when started_at is null then null else $4::timestamptz end, closed_at = case when closed_at is null then null else $5::timestamptz end where id = $1 and organization_id = $2', [
      item.id,
      fx.organizationId,
      new Date(created).toISOString(),
      new Date(started).toISOString(),
      new Date(closed).toISOString(),
    ])
    run.log.push(`seed ${JSON.stringify({ ...one, item: item.id.slice(-6) })}`)
  }
}

/** Binds the run's component `index` (PUT …/source) as `bound` says. */
async function bind(run: Run, index: number, bound: Bound): Promise<void> {
  const body = { projectId: run.projectId, measure: measureOf(run, bound), ...(bound.view ? { viewId: run.viewIds[bound.view] } : {}), ...(bound.days ? { range: { days: bound.days } } : {}) }
  const source = await fx.as('owner', 'PUT', `/api/v1/pages/${run.pageId}/components/${run.componentIds[index]}/source`, body, 200)
  expect(source).toMatchObject({ measure: body.measure, viewId: body.viewId ?? null, state: 'active' })
  run.bound[index] = bound
}

/** The measures each component type takes (docs/api.md, "Dashboards fed by work"). */
const FITTING: Record<string, string[]> = {
  horizontalBox: ['count', 'cycleTimeDays'],
  verticalBox: ['count', 'cycleTimeDays'],
  pieChart: ['byStatus', 'byPriority', 'byAssignee', 'byLabel', 'byField:severity', 'byField:area'],
  barChart: ['byStatus', 'byPriority', 'byAssignee', 'byLabel', 'byField:severity', 'byField:area', 'createdPerDay', 'completedPerDay'],
  lineChart: ['createdPerDay', 'completedPerDay', 'openOverTime'],
}
const RANGED = ['createdPerDay', 'completedPerDay', 'openOverTime', 'cycleTimeDays']
const VIEWS: ViewName[] = ['open', 'bug', 'urgentHigh', 'mine', 'recent', 'bugOrChore']

/** What a rebinding step binds component `component` to instead (a measure its type takes, maybe through a view, maybe over other days). */
function rebound(run: Run, change: Extract<Change, { kind: 'rebind' }>): { index: number; bound: Bound } {
  const index = change.component % run.bound.length
  const type = run.bound[index]!.type
  const measures = FITTING[type]!
  const measure = measures[change.measure % measures.length]!
  const view = change.view < VIEWS.length ? VIEWS[change.view] : undefined
  return { index, bound: { type, measure, ...(RANGED.includes(measure) && change.days ? { days: change.days } : {}), ...(view ? { view } : {}) } }
}

async function newRun(catalog: Catalog, seeds: Seed[]): Promise<Run> {
  const project = await fx.as('owner', 'POST', '/api/v1/projects', { name: `Property ${Date.now()}` }, 201)
  for (const field of [catalog.severity, catalog.area]) await fx.as('owner', 'POST', `/api/v1/projects/${project.id}/custom-fields`, { fieldId: field.id }, 201)
  const names = new Map((await sql<{ id: string; name: string }>('select id, display_name as name from user_directory where organization_id = $1', [fx.organizationId])).map((row) => [row.id, row.name]))
  const run: Run = { catalog, bound: BOUND.map((bound) => ({ ...bound })), projectId: project.id, pageId: '', componentIds: [], viewIds: {} as Run['viewIds'], switched: {}, names, log: [] }
  await plant(run, seeds)
  for (const name of ['open', 'bug', 'urgentHigh', 'mine', 'recent', 'bugOrChore'] as ViewName[])
    run.viewIds[name] = (await fx.as('owner', 'POST', `/api/v1/projects/${project.id}/views`, { name, filters: viewOf(run, name), shared: name === 'bug' }, 201)).id
  run.pageId = (await fx.as('owner', 'POST', '/api/v1/pages', { name: `property-${project.id}`, title: 'Property' }, 201)).id
  for (const bound of run.bound) {
    const componentId = (await fx.as('owner', 'POST', `/api/v1/pages/${run.pageId}/components`, { type: bound.type, title: nameOf(bound) }, 201)).id
    run.componentIds.push(componentId)
    await bind(run, run.componentIds.length - 1, bound)
  }
  return run
}

/** Plays a history on a fresh project, checking after binding, after the steps marked and at the end. */
async function history(catalog: Catalog, seeds: Seed[], steps: Step[], settled: number[]): Promise<void> {
  const from = logged.length
  const run = await newRun(catalog, seeds)
  try {
    settled.push(await settle(run, 'after binding'))
    for (const [i, one] of steps.entries()) {
      await play(run, one.change)
      // A change around the items is checked at once: it must reach the components by itself, within seconds.
      if ((one.check || AROUND.includes(one.change.kind)) && i < steps.length - 1) settled.push(await settle(run, `after step ${i + 1} of ${steps.length}`))
    }
    settled.push(await settle(run, `after all ${steps.length} steps`))
    // The page goes with its components and their sources: the next runs' changes of labels and
    // fields build only their own sources again.
    await fx.as('owner', 'DELETE', `/api/v1/pages/${run.pageId}`, undefined, 200)
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    throw new Error(`${message}\nchanges (seeds first):\n  ${run.log.join('\n  ')}\nservice log (warn, error) during the run:\n${loggedSince(from) || '  (nothing)'}`)
  }
}

const options = (runs: number) => ({
  numRuns: runs,
  ...(process.env.WORK_DASHBOARDS_SEED ? { seed: Number(process.env.WORK_DASHBOARDS_SEED) } : {}),
  // WORK_DASHBOARDS_NO_SHRINK=1: report the first failure as found.
  endOnFailure: Boolean(process.env.WORK_DASHBOARDS_NO_SHRINK),
  // Shrinking re-plays histories (a failing one waits STALE_MS at least): bounded, the smallest found so far is reported.
  interruptAfterTimeLimit: timeLimit(150_000),
  markInterruptAsFailure: true,
})

/** What a test service says at start (no FCM credentials, no webhooks key). */
const STARTUP_WARNINGS = ['push: no FCM credentials', 'webhooks: no webhooks.encryptionKey']

const report = (what: string, settled: number[]) => {
  console.log(`${what}: settled ${settled.length} times, median ${median(settled)} ms, max ${Math.max(...settled)} ms`)
  // Not a failure by itself (a source that fails is built again at its next turn), but worth seeing.
  const unexpected = logged.filter((line) => !STARTUP_WARNINGS.some((known) => line.message.startsWith(known)))
  if (unexpected.length) console.log(`service log (warn, error) so far:\n${unexpected.map((line) => `  [${line.level}] ${line.message} ${JSON.stringify(line.fields)}`).join('\n')}`)
}

// ---- set-up and the properties ----------------------------------------------------------------

let shared: Catalog
let runs = 0

beforeAll(async () => {
  const log = capturingLogger(logged, { levels: ['warn', 'error'], fields: true })
  api = await startTestService({ log })
  if (usingServer()) second = await startTestService({ database: api.database, log })
  fx = await createProjectFixture(api)
  userIds = [fx.users.owner.id, fx.users.editor.id, fx.users.viewer.id]
  const scopes = api.service.core.scopes.map((scope) => scope.name)
  adminKey = (await api.createKey((await api.createUser(fx.organizationId, 'administrator')).id, scopes)).secret
  shared = await newCatalog('')
}, timeLimit(60_000))
afterAll(async () => {
  await second?.stop()
  await api?.stop()
})

test('every bound component equals the oracle computed from the rows, after random histories of work item changes', async () => {
  const settled: number[] = []
  await fc.assert(
    fc.asyncProperty(fc.array(seed, { maxLength: 8 }), fc.array(step, { minLength: MIN_STEPS, maxLength: 40 }), (seeds, steps) => history(shared, seeds, steps, settled)),
    options(RUNS),
  )
  report('work item changes', settled)
}, timeLimit(200_000))

/**
 * Binding again while the worker recomputes: on PostgreSQL a PUT …/source once deadlocked with
 * the recompute (it locked the component, then the source; the worker the other way round), found
 * here; the PUT now takes the source's row first. The test after it provokes the race.
 */

;test('every bound component equals the oracle after components are bound again to other measures, views and ranges', async () => {
  const settled: number[] = []
  const steps = fc.record({ change: fc.oneof({ arbitrary: simple, weight: 3 }, { arbitrary: rebind, weight: 1 }), check })
  await fc.assert(
    fc.asyncProperty(fc.array(seed, { maxLength: 6 }), fc.array(steps, { minLength: Math.min(MIN_STEPS, 8), maxLength: 16 }), (seeds, history_) => history(shared, seeds, history_, settled)),
    options(Number(process.env.WORK_DASHBOARDS_AROUND_RUNS ?? 1)),
  )
  report('rebinding', settled)
}, timeLimit(200_000))

/**
 * The deadlock, provoked: a project with 20 sources, an item changed, and a PUT of one of its
 * components a few ms later, while the worker recomputes them (before the fix, 39 of 60 such PUTs
 * were 500). PostgreSQL only: PGlite has one connection, so nothing runs beside the worker.
 */
;(usingServer() ? test : test.skip)('a PUT …/source of a bound component while its project is recomputed answers 200 (PostgreSQL only: PGlite has one connection)', async () => {
  const project = await fx.as('owner', 'POST', '/api/v1/projects', { name: `Rebind ${Date.now()}` }, 201)
  const page = await fx.as('owner', 'POST', '/api/v1/pages', { name: `rebind-${project.id}`, title: 'Rebind' }, 201)
  const measures = ['byStatus', 'byPriority', 'byAssignee', 'byLabel']
  const components: string[] = []
  for (let i = 0; i < 20; i++) {
    components.push((await fx.as('owner', 'POST', `/api/v1/pages/${page.id}/components`, { type: 'pieChart', title: `c${i}` }, 201)).id)
    await fx.as('owner', 'PUT', `/api/v1/pages/${page.id}/components/${components[i]}/source`, { projectId: project.id, measure: measures[i % 4] }, 200)
  }
  const item = await fx.as('owner', 'POST', `/api/v1/projects/${project.id}/work-items`, { title: 'Changed' }, 201)
  const from = logged.length
  try {
    for (let n = 0; n < 30; n++) {
      await fx.as('owner', 'PATCH', `/api/v1/projects/${project.id}/work-items/${item.id}`, { priority: n % 5 }, 200)
      await Bun.sleep(n % 15)
      const response = await fx.call('owner', 'PUT', `/api/v1/pages/${page.id}/components/${components[(n * 7) % 20]}/source`, { projectId: project.id, measure: measures[n % 4] })
      expect({ attempt: n, status: response.status, log: response.status === 200 ? '' : loggedSince(from) }).toEqual({ attempt: n, status: 200, log: '' })
      // Past the coalescing window: the next change is recomputed at once.
      await Bun.sleep(300)
    }
  } finally {
    await fx.as('owner', 'DELETE', `/api/v1/pages/${page.id}`, undefined, 200)
  }
}, timeLimit(60_000))

/**
 * Changes around the items, each in its own property (item changes between them). Each is checked
 * at once: the spec wants every committed change that alters a measure on the page within 2 s.
 * Those marked `known` fail today (see KNOWN_GAPS): they are todo tests, run with `bun test --todo`.
 */
const AROUND_TESTS: { kind: Around['kind']; what: string }[] = [
  { kind: 'renameLabel', what: 'a label renamed (the names byLabel shows; views filtering by its name)' },
  { kind: 'deleteLabel', what: 'a label deleted (byLabel; views filtering by its name)' },
  { kind: 'patchView', what: "a view's filters changed" },
  { kind: 'removeOption', what: 'a select option removed (its values taken from every item)' },
  { kind: 'disableArea', what: 'a select field disabled for the project (its values taken from its items)' },
]

/**
 * Kinds that fail today, with why: todo tests, run with `bun test --todo` (which fails on a todo
 * test that passes: then move it out of this list). None at present.
 */
const KNOWN_GAPS: Partial<Record<Around['kind'], string>> = {}

for (const { kind, what } of AROUND_TESTS) {
  const define = KNOWN_GAPS[kind] ? test.todo : test
  define(`every bound component equals the oracle after ${what}`, async () => {
    const settled: number[] = []
    const mixed = fc.record({ change: fc.oneof({ arbitrary: simple, weight: 3 }, { arbitrary: AROUND_CHANGES[kind], weight: 1 }), check })
    await fc.assert(
      // Items first, then at least one such change (checked at once), then more.
      fc.asyncProperty(fc.array(seed, { minLength: 2, maxLength: 5 }), fc.array(mixed, { maxLength: 4 }), AROUND_CHANGES[kind], fc.array(mixed, { minLength: 1, maxLength: 4 }), async (seeds, before, change, after) =>
        // Its own labels and fields each run: these steps change them.
        history(await newCatalog(`_${++runs}`), seeds, [...before, { change, check: true }, ...after], settled),
      ),
      options(Number(process.env.WORK_DASHBOARDS_AROUND_RUNS ?? 1)),
    )
    report(kind, settled)
  }, timeLimit(200_000))
}
