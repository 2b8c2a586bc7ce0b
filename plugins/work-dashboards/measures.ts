/**
 * The measures a work source computes, the component types each fits, and the data each gives
 * (the display API's data of that type), from the work items a saved view shows its binder
 * (WorkItemsFace.matching): one statement per computation, naming the organization.
 */
import { sql, type SQL } from 'drizzle-orm'
import type { Executor } from '../../src/db'
import { badRequest } from '../../src/http/errors'
import { toQuery } from '../../src/statements'
import { queryText } from '../../src/db'
import type { SelectField } from '../custom-fields/api'

export const GROUPINGS = ['byStatus', 'byPriority', 'byAssignee', 'byLabel'] as const
export const SERIES = ['createdPerDay', 'completedPerDay', 'openOverTime'] as const
export const MEASURES = ['count', ...GROUPINGS, 'byField:<key>', ...SERIES, 'cycleTimeDays'] as const

/** The component types each kind of measure fits. */
const FITS: Record<string, readonly string[]> = {
  count: ['horizontalBox', 'verticalBox'],
  cycleTimeDays: ['horizontalBox', 'verticalBox'],
  byStatus: ['pieChart', 'barChart'],
  byPriority: ['pieChart', 'barChart'],
  byAssignee: ['pieChart', 'barChart'],
  byLabel: ['pieChart', 'barChart'],
  byField: ['pieChart', 'barChart'],
  createdPerDay: ['barChart', 'lineChart'],
  completedPerDay: ['barChart', 'lineChart'],
  openOverTime: ['lineChart'],
}

export const DEFAULT_RANGE_DAYS = 14

/** A measure as stored: its kind, and the field's key of `byField:<key>`. */
export interface Measure {
  kind: keyof typeof FITS
  fieldKey?: string
}

const FIELD_KEY = /^[a-z][a-z0-9_]{0,62}$/

/** The measure a body names, fitting the component's type; else 400 naming `measure`. */
export function parseMeasure(measure: string, componentType: string): Measure {
  const [kind, ...rest] = measure.split(':')
  const key = rest.join(':')
  if (!kind || !(kind in FITS) || (kind === 'byField') !== Boolean(rest.length) || (kind === 'byField' && !FIELD_KEY.test(key)))
    throw badRequest(`measure must be one of ${MEASURES.join(', ')} (a select field's key after byField:).`, 'measure')
  const fits = FITS[kind]!
  if (!fits.includes(componentType)) throw badRequest(`${kind} feeds a ${fits.join(' or ')}; this component is a ${componentType}.`, 'measure')
  return kind === 'byField' ? { kind, fieldKey: key } : { kind }
}

/** Whether the measure draws a daily series or counts over a range (so `range.days` means something). */
export const usesRange = (measure: Measure) => (SERIES as readonly string[]).includes(measure.kind) || measure.kind === 'cycleTimeDays'

// ---- the data ---------------------------------------------------------------------------------

const STATUS_BUCKETS = [
  { value: 'todo', name: 'To do', color: '#94a3b8' },
  { value: 'in_progress', name: 'In progress', color: '#3b82f6' },
  { value: 'done', name: 'Done', color: '#22c55e' },
  { value: 'cancelled', name: 'Cancelled', color: '#a1a1aa' },
]
const PRIORITY_BUCKETS = [
  { value: '1', name: 'Urgent', color: '#ef4444' },
  { value: '2', name: 'High', color: '#f97316' },
  { value: '3', name: 'Medium', color: '#eab308' },
  { value: '4', name: 'Low', color: '#22c55e' },
  { value: '0', name: 'No priority', color: '#94a3b8' },
]
const PALETTE = ['#3b82f6', '#f97316', '#22c55e', '#a855f7', '#ef4444', '#14b8a6', '#eab308', '#ec4899', '#64748b', '#84cc16']
/** Items with no assignee, label or option. */
export const NONE = 'none'
const NONE_COLOR = '#cbd5e1'
/** A chart holds at most this many points (the display API's bound). */
const MAX_POINTS = 1000

export interface Point {
  x: string
  y: number
  color: string
}

/** What drawing a source's data needs besides its counts: the organization (names), the field, today. */
export interface MeasureContext {
  organizationId: string
  field?: SelectField
  /** Today, UTC (YYYY-MM-DD): the last day of a series. */
  today: string
}

const run = async <T>(executor: Executor, statement: SQL) => {
  const { sql: text, params } = toQuery(statement)
  return queryText<T>(executor, text, params)
}

/** The UTC days of a range ending `today`, oldest first. */
export function rangeDays(today: string, days: number): string[] {
  const end = Date.parse(`${today}T00:00:00Z`)
  return Array.from({ length: days }, (_, i) => new Date(end - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10))
}

/** The least `y:` bucket of cycle time's range: a source reads its counts from there on. */
export const cycleSince = (today: string, days: number) => `y:${rangeDays(today, days)[0]}`

/** The median (the mean of the middle two for an even count) of values counted `{value: n}`, and the count; [0, 0] for none. */
export function medianOf(counted: ReadonlyMap<number, number>): [number, number] {
  const values = [...counted].filter(([, n]) => n > 0).sort(([a], [b]) => a - b)
  const count = values.reduce((sum, [, n]) => sum + n, 0)
  if (!count) return [0, 0]
  /** The value at 0-based position `k` in order. */
  const at = (k: number) => {
    for (const [value, n] of values) if ((k -= n) < 0) return value
    return values.at(-1)![0]
  }
  return [(at(Math.floor((count - 1) / 2)) + at(Math.floor(count / 2))) / 2, count]
}

const UTC_DAY = (column: string) => sql.raw(`((${column} at time zone 'utc')::date)::text`)
const NO_BUCKETS = sql`'{}'::text[]`

/**
 * The buckets one work item `i` (a row of WorkItemsFace.matching) counts in for `measure`, as a
 * text[]: `*` (count), its status, its priority, its assignee's id, its labels' ids, its options'
 * ids ('' for none), `c:<day>` created, `d:<day>` completed (done), `x:<day>` closed (open over
 * time). The work item's own row only: recomputing after a change reads the changed items alone.
 */
export function bucketsOf(measure: Measure, field?: SelectField): SQL {
  switch (measure.kind) {
    case 'count':
      return sql`array['*']`
    case 'byStatus':
      return sql`array[i.status::text]`
    case 'byPriority':
      return sql`array[i.priority::text]`
    case 'byAssignee':
      return sql`array[coalesce(i."assigneeId"::text, '')]`
    case 'byLabel':
      return sql`coalesce((select array_agg(l.label->>'id') from json_array_elements(i.labels) l(label)), array[''])`
    case 'byField': {
      const key = sql`${field!.key}::text`
      return field!.multiple
        ? sql`coalesce((select array_agg(o.option) from json_array_elements_text(case when json_typeof(i.fields->${key}) = 'array' then i.fields->${key} end) o(option)), array[''])`
        : sql`array[coalesce(i.fields->>${key}, '')]`
    }
    case 'createdPerDay':
      return sql`array['c:' || ${UTC_DAY('i."createdAt"')}]`
    case 'completedPerDay':
      return sql`case when i.status = 'done' and i."closedAt" is not null then array['d:' || ${UTC_DAY('i."closedAt"')}] else ${NO_BUCKETS} end`
    case 'openOverTime':
      return sql`array['c:' || ${UTC_DAY('i."createdAt"')}] || case when i."closedAt" is not null then array['x:' || ${UTC_DAY('i."closedAt"')}] else ${NO_BUCKETS} end`
    case 'cycleTimeDays':
      // `y:` the UTC day it was done `:` its cycle in tenths of a day (rounded half up, in numeric).
      return sql`case when i.status = 'done' and i."startedAt" is not null and i."closedAt" is not null
        then array['y:' || ${UTC_DAY('i."closedAt"')} || ':' || floor((extract(epoch from i."closedAt" - i."startedAt") * 10 + 43200) / 86400)::bigint::text] else ${NO_BUCKETS} end`
  }
  throw new Error(`unknown measure ${measure.kind}`)
}

/** Counted buckets `{x, n}` in a fixed order, zero counts included, named. */
function fixedPoints(rows: { x: string | null; n: number }[], buckets: typeof STATUS_BUCKETS): Point[] {
  const counts = new Map(rows.map((row) => [String(row.x), Number(row.n)]))
  return buckets.map((bucket) => ({ x: bucket.name, y: counts.get(bucket.value) ?? 0, color: bucket.color }))
}

/** Counted buckets by count (then name), at most a chart's points; `none` (no value) last when non-zero. */
function rankedPoints(rows: { x: string | null; n: number }[], name: (x: string) => string): Point[] {
  const named = rows.filter((row) => row.x !== null && Number(row.n) > 0).map((row) => ({ x: name(row.x!).slice(0, 200), y: Number(row.n) }))
  named.sort((a, b) => b.y - a.y || (a.x < b.x ? -1 : a.x > b.x ? 1 : 0))
  const points = named.slice(0, MAX_POINTS - 1).map((point, i) => ({ ...point, color: PALETTE[i % PALETTE.length]! }))
  const none = rows.find((row) => row.x === null)
  if (none && Number(none.n) > 0) points.push({ x: NONE, y: Number(none.n), color: NONE_COLOR })
  return points
}

/** A source's counts by bucket (buckets with none left out). */
export type Counts = ReadonlyMap<string, number>

/**
 * The points (or the number and count) of `measure` from the source's counts: names read for the
 * buckets shown (assignees, labels: one statement), the cycle time's median from how many items
 * were done on each day of the range with each cycle time (its `y:` buckets, tenths of a day).
 */
export async function dataOf(executor: Executor, measure: Measure, counts: Counts, days: number, context: MeasureContext): Promise<{ points?: Point[]; value?: number; count?: number }> {
  const organization = context.organizationId
  const rows = () => [...counts].map(([x, n]) => ({ x: x === '' ? null : x, n }))
  switch (measure.kind) {
    case 'count':
      return { value: counts.get('*') ?? 0 }
    case 'byStatus':
      return { points: fixedPoints(rows(), STATUS_BUCKETS) }
    case 'byPriority':
      return { points: fixedPoints(rows(), PRIORITY_BUCKETS) }
    case 'byAssignee':
    case 'byLabel': {
      const ids = [...counts.keys()].filter((id) => id !== '')
      const names = new Map(
        ids.length
          ? (
              await run<{ id: string; name: string }>(
                executor,
                measure.kind === 'byAssignee'
                  ? sql`select id::text, display_name as name from user_directory where organization_id = ${organization} and id = any(${sql.param(ids)}::uuid[])`
                  : sql`select id::text, name from label_directory where organization_id = ${organization} and id = any(${sql.param(ids)}::uuid[])`,
              )
            ).map((row) => [row.id, row.name])
          : [],
      )
      // A label deleted since (its items are counted again without it at the next build) is not shown.
      return { points: rankedPoints(rows().filter((row) => row.x === null || names.has(row.x)), (x) => names.get(x) ?? x) }
    }
    case 'byField': {
      const names = new Map(context.field!.options.map((option) => [option.id, option.name]))
      return { points: rankedPoints(rows(), (x) => names.get(x) ?? x) }
    }
    case 'createdPerDay':
    case 'completedPerDay': {
      const prefix = measure.kind === 'createdPerDay' ? 'c:' : 'd:'
      return { points: rangeDays(context.today, days).map((day) => ({ x: day, y: counts.get(prefix + day) ?? 0, color: PALETTE[0]! })) }
    }
    case 'openOverTime': {
      const range = rangeDays(context.today, days)
      // Open at the end of a day: created by then, less closed by then (an item closes after it is created).
      let open = 0
      for (const [bucket, n] of counts) {
        const day = bucket.slice(2)
        if (day >= range[0]!) continue
        if (bucket.startsWith('c:')) open += n
        else if (bucket.startsWith('x:')) open -= n
      }
      return {
        points: range.map((day) => {
          open += (counts.get(`c:${day}`) ?? 0) - (counts.get(`x:${day}`) ?? 0)
          return { x: day, y: open, color: PALETTE[0]! }
        }),
      }
    }
    case 'cycleTimeDays': {
      // How many items were done in the range with each cycle (in tenths), from the `y:` buckets of its days.
      const since = cycleSince(context.today, days)
      const tenths = new Map<number, number>()
      for (const [bucket, n] of counts) {
        if (bucket < since || !bucket.startsWith('y:')) continue
        const cycle = Number(bucket.slice(bucket.lastIndexOf(':') + 1))
        tenths.set(cycle, (tenths.get(cycle) ?? 0) + n)
      }
      const [value, count] = medianOf(tenths)
      return { value: Math.round(value) / 10, count }
    }
  }
  throw new Error(`unknown measure ${measure.kind}`)
}

const text = (value: string, size: number, color: string) => ({ value: value.slice(0, 1000), size, color })

/**
 * The component data of a computation, for a component of `type`. The source's label is drawn
 * under the title already (display's feed label), so a box names only what its number is.
 */
export function componentData(type: string, measure: Measure, result: { points?: Point[]; value?: number; count?: number }): { type: string } & Record<string, unknown> {
  const cycle = measure.kind === 'cycleTimeDays'
  const caption = cycle ? 'median days' : 'work items'
  const number = String(result.value ?? 0)
  const beside = cycle ? `${result.count ?? 0} done` : ''
  switch (type) {
    case 'horizontalBox':
      return { type, backgroundColor: '#1e293b', leftText: text(caption, 18, '#f8fafc'), middleText: text(number, 32, '#38bdf8'), rightText: text(beside, 18, '#cbd5e1'), format: 'exact' }
    case 'verticalBox':
      return { type, backgroundColor: '#1e293b', topText: text(beside ? `${caption} · ${beside}` : caption, 16, '#f8fafc'), bottomText: text(number, 32, '#38bdf8'), format: 'exact' }
    case 'barChart':
      return { type, backgroundColor: '#ffffff', xNumber: false, height: 240, points: result.points ?? [], format: 'exact' }
    case 'lineChart':
      return { type, backgroundColor: '#ffffff', cubic: false, xNumber: false, fillColor: '#93c5fd', height: 240, points: result.points ?? [], format: 'exact' }
    case 'pieChart':
      return { type, backgroundColor: '#ffffff', height: 240, points: result.points ?? [], format: 'exact' }
  }
  throw new Error(`unknown component type ${type}`)
}
