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

/** What a computation needs besides the items: the organization (names), the field, the label shown on boxes. */
export interface MeasureContext {
  organizationId: string
  field?: SelectField
  label: string
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

const UTC_DAY = (column: string) => sql.raw(`((${column} at time zone 'utc')::date)::text`)

/** Counted buckets `{x, n}` in a fixed order with zero counts, or by count (then name) with `none` when non-zero. */
function fixedPoints(rows: { x: string | null; n: number }[], buckets: typeof STATUS_BUCKETS): Point[] {
  const counts = new Map(rows.map((row) => [String(row.x), Number(row.n)]))
  return buckets.map((bucket) => ({ x: bucket.name, y: counts.get(bucket.value) ?? 0, color: bucket.color }))
}

function rankedPoints(rows: { x: string | null; n: number }[], name: (x: string) => string): Point[] {
  const named = rows.filter((row) => row.x !== null && Number(row.n) > 0).map((row) => ({ x: name(row.x!).slice(0, 200), y: Number(row.n) }))
  named.sort((a, b) => b.y - a.y || a.x.localeCompare(b.x))
  const points = named.slice(0, MAX_POINTS - 1).map((point, i) => ({ ...point, color: PALETTE[i % PALETTE.length]! }))
  const none = rows.find((row) => row.x === null)
  if (none && Number(none.n) > 0) points.push({ x: NONE, y: Number(none.n), color: NONE_COLOR })
  return points
}

/** The points (or the number and count) of `measure` over `items` (a subquery of WorkItemsFace.matching). */
export async function compute(executor: Executor, items: SQL, measure: Measure, days: number, context: MeasureContext): Promise<{ points?: Point[]; value?: number; count?: number }> {
  const organization = context.organizationId
  switch (measure.kind) {
    case 'count': {
      const [row] = await run<{ n: number }>(executor, sql`select count(*)::int as n from ${items} i`)
      return { value: Number(row?.n ?? 0) }
    }
    case 'byStatus':
      return { points: fixedPoints(await run(executor, sql`select i.status as x, count(*)::int as n from ${items} i group by 1`), STATUS_BUCKETS) }
    case 'byPriority':
      return { points: fixedPoints(await run(executor, sql`select i.priority::text as x, count(*)::int as n from ${items} i group by 1`), PRIORITY_BUCKETS) }
    case 'byAssignee': {
      const rows = await run<{ x: string | null; name: string | null; n: number }>(
        executor,
        sql`select i."assigneeId" as x, min(u.display_name) as name, count(*)::int as n from ${items} i
          left join user_directory u on u.id = i."assigneeId" and u.organization_id = ${organization} group by 1`,
      )
      const names = new Map(rows.map((row) => [row.x, row.name ?? row.x]))
      return { points: rankedPoints(rows, (x) => names.get(x) ?? x) }
    }
    case 'byLabel':
      return { points: rankedPoints(await run(executor, sql`select l.label->>'name' as x, count(*)::int as n from ${items} i left join lateral json_array_elements(i.labels) l(label) on true group by 1`), (x) => x) }
    case 'byField': {
      const field = context.field!
      const key = sql`${field.key}`
      const rows = field.multiple
        ? await run<{ x: string | null; n: number }>(executor, sql`select o.option as x, count(*)::int as n from ${items} i left join lateral json_array_elements_text(i.fields->${key}) o(option) on true group by 1`)
        : await run<{ x: string | null; n: number }>(executor, sql`select i.fields->>${key} as x, count(*)::int as n from ${items} i group by 1`)
      const names = new Map(field.options.map((option) => [option.id, option.name]))
      return { points: rankedPoints(rows, (x) => names.get(x) ?? x) }
    }
    case 'createdPerDay':
    case 'completedPerDay': {
      const range = rangeDays(context.today, days)
      const start = `${range[0]}T00:00:00Z`
      const rows =
        measure.kind === 'createdPerDay'
          ? await run<{ x: string; n: number }>(executor, sql`select ${UTC_DAY('i."createdAt"')} as x, count(*)::int as n from ${items} i where i."createdAt" >= ${start}::timestamptz group by 1`)
          : await run<{ x: string; n: number }>(
              executor,
              sql`select ${UTC_DAY('i."closedAt"')} as x, count(*)::int as n from ${items} i where i.status = 'done' and i."closedAt" >= ${start}::timestamptz group by 1`,
            )
      const counts = new Map(rows.map((row) => [row.x, Number(row.n)]))
      return { points: range.map((day) => ({ x: day, y: counts.get(day) ?? 0, color: PALETTE[0]! })) }
    }
    case 'openOverTime': {
      const range = rangeDays(context.today, days)
      const start = `${range[0]}T00:00:00Z`
      // Open at the end of a day: created by then and not closed by then. Before the range, one total each.
      const rows = await run<{ k: string; x: string | null; n: number }>(
        executor,
        sql`select 'c' as k, case when i."createdAt" >= ${start}::timestamptz then ${UTC_DAY('i."createdAt"')} end as x, count(*)::int as n from ${items} i group by 2
          union all
          select 'x', case when i."closedAt" >= ${start}::timestamptz then ${UTC_DAY('i."closedAt"')} end, count(*)::int from ${items} i where i."closedAt" is not null group by 2`,
      )
      const before = (k: string) => Number(rows.find((row) => row.k === k && row.x === null)?.n ?? 0)
      const on = (k: string, day: string) => Number(rows.find((row) => row.k === k && row.x === day)?.n ?? 0)
      let open = before('c') - before('x')
      return {
        points: range.map((day) => {
          open += on('c', day) - on('x', day)
          return { x: day, y: open, color: PALETTE[0]! }
        }),
      }
    }
    case 'cycleTimeDays': {
      const start = `${rangeDays(context.today, days)[0]}T00:00:00Z`
      const [row] = await run<{ median: number | null; n: number }>(
        executor,
        sql`select percentile_cont(0.5) within group (order by extract(epoch from i."closedAt" - i."startedAt") / 86400)::float8 as median, count(*)::int as n
          from ${items} i where i.status = 'done' and i."startedAt" is not null and i."closedAt" >= ${start}::timestamptz`,
      )
      return { value: row?.median === null || row?.median === undefined ? 0 : Math.round(Number(row.median) * 10) / 10, count: Number(row?.n ?? 0) }
    }
  }
  throw new Error(`unknown measure ${measure.kind}`)
}

const text = (value: string, size: number, color: string) => ({ value: value.slice(0, 1000), size, color })

/** The component data of a computation, for a component of `type`. */
export function componentData(type: string, measure: Measure, result: { points?: Point[]; value?: number; count?: number }, label: string): { type: string } & Record<string, unknown> {
  const caption = measure.kind === 'cycleTimeDays' ? `${label} · cycle time, days` : label
  const number = String(result.value ?? 0)
  const beside = measure.kind === 'cycleTimeDays' ? `${result.count ?? 0} done` : ''
  switch (type) {
    case 'horizontalBox':
      return { type, backgroundColor: '#1e293b', leftText: text(caption, 18, '#f8fafc'), middleText: text(number, 32, '#38bdf8'), rightText: text(beside, 18, '#cbd5e1'), format: 'exact' }
    case 'verticalBox':
      return { type, backgroundColor: '#1e293b', topText: text(beside ? `${caption} (${beside})` : caption, 16, '#f8fafc'), bottomText: text(number, 32, '#38bdf8'), format: 'exact' }
    case 'barChart':
      return { type, backgroundColor: '#ffffff', xNumber: false, height: 240, points: result.points ?? [], format: 'exact' }
    case 'lineChart':
      return { type, backgroundColor: '#ffffff', cubic: false, xNumber: false, fillColor: '#93c5fd', height: 240, points: result.points ?? [], format: 'exact' }
    case 'pieChart':
      return { type, backgroundColor: '#ffffff', height: 240, points: result.points ?? [], format: 'exact' }
  }
  throw new Error(`unknown component type ${type}`)
}
