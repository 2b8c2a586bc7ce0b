/**
 * Work sources (plugins/work-dashboards), through API v1 on the PostgreSQL server: what one
 * recomputation of a bound component costs at a million work items, and what a burst of writes
 * costs a project's bound components. One database seeded by set-based SQL: a project of ROWS work
 * items (BENCH_WORK_SOURCES_ROWS, 1,000,000) and one of SMALL_ROWS (BENCH_WORK_SOURCES_SMALL_ROWS,
 * 10,000), a realistic mix (25 % to do, 10 % in progress, 55 % done, 10 % cancelled; priorities;
 * 20 assignees, skewed, 10 % unassigned; created over 90 days, started and closed consistent with
 * the status; a label on ~20 %, a second on ~5 %; a single select `area` on ~40 %). The service is
 * entries/bun.ts with its default configuration (work-dashboards: 2 workers, coalesceMs 250).
 *
 * 1. **One measure at a time**, on each project: bind one component (`PUT …/source`; its first
 *    build timed), then SAMPLES times, each past the coalescing window: `PATCH` an urgent work
 *    item's status and poll (1 ms) the component's `version` until it moved. The source's
 *    `computed_at` is `now()` of the recompute transaction (its start), so seen − computed_at is
 *    that transaction's time, commit and one poll included: the figure judged. Beside it, the same
 *    measure computed by SQL over the rows (what a recompute that scanned would cost), timed once.
 * 2. **A burst**: 20 components bound to the large project (every measure, most twice, two through
 *    a saved view); WRITES writes (BENCH_WORK_SOURCES_WRITES, 1,000) offered at RATE a second
 *    (BENCH_WORK_SOURCES_RATE, 1,000): status, priority and assignee PATCHes, creates and deletes.
 *    Each component's `computed_at` is sampled every 20 ms until no mark is left and nothing moved
 *    for 1.5 s; every distinct `computed_at` is one recomputation (the window is 250 ms, so none
 *    is missed); the most of one component in any 1-s window is judged. Then each component's data
 *    against the same measure in SQL over the rows.
 */
import postgres from 'postgres'
import type { Figures } from '../figures'
import { queryText, type Database } from '../../src/db'
import { seededDatabase } from '../lib/database'
import { startService } from '../lib/processes'
import { recordResult, sectionHead, serviceCommit, writeSection } from '../lib/results'
import { percentile, round } from '../lib/stats'
import { randomSource } from '../seed/corpus'
import { seedMembers, seedOrganization, seedProject, type Seeded } from '../seed/organization'
import { recount, withoutTextIndexes } from '../seed/work'
import { LIMITS, TARGETS } from '../targets'

export const name = 'work-sources'
export const target = TARGETS[name]

const ROWS = Number(process.env.BENCH_WORK_SOURCES_ROWS ?? 1_000_000)
const SMALL_ROWS = Number(process.env.BENCH_WORK_SOURCES_SMALL_ROWS ?? 10_000)
const SAMPLES = Number(process.env.BENCH_WORK_SOURCES_SAMPLES ?? 10)
const WRITES = Number(process.env.BENCH_WORK_SOURCES_WRITES ?? 1000)
const RATE = Number(process.env.BENCH_WORK_SOURCES_RATE ?? 1000)
const DATABASE = 'worktrack_bench_work_sources'
const PORT = 3895
/** The plugin's default coalescing window (ms): samples wait past it. */
const COALESCE_MS = 250
const IN_FLIGHT = 64
const DEADLINE_MS = 30 * 60_000

type ComponentType = 'horizontalBox' | 'verticalBox' | 'barChart' | 'lineChart' | 'pieChart'
type Spread = Figures['work-sources']['alone'][number]['transaction']

/** A component to bind: its type, its measure, through the view or not, its range. */
interface Spec {
  label: string
  type: ComponentType
  measure: string
  view?: boolean
  days?: number
}

/** One component per measure, and byStatus through the view. */
const ALONE: Spec[] = [
  { label: 'count', type: 'verticalBox', measure: 'count' },
  { label: 'byStatus', type: 'pieChart', measure: 'byStatus' },
  { label: 'byPriority', type: 'pieChart', measure: 'byPriority' },
  { label: 'byAssignee', type: 'barChart', measure: 'byAssignee' },
  { label: 'byLabel', type: 'pieChart', measure: 'byLabel' },
  { label: 'byField:area', type: 'barChart', measure: 'byField:area' },
  { label: 'createdPerDay', type: 'barChart', measure: 'createdPerDay' },
  { label: 'completedPerDay', type: 'barChart', measure: 'completedPerDay' },
  { label: 'openOverTime', type: 'lineChart', measure: 'openOverTime' },
  { label: 'cycleTimeDays', type: 'horizontalBox', measure: 'cycleTimeDays' },
  { label: 'byStatus, view priority=1', type: 'barChart', measure: 'byStatus', view: true },
]

/** The 20 components of the burst: every measure, most twice (other types, ranges), two through the view. */
const WALL: Spec[] = [
  ...ALONE,
  { label: 'count, view priority=1', type: 'horizontalBox', measure: 'count', view: true },
  { label: 'byPriority (bar)', type: 'barChart', measure: 'byPriority' },
  { label: 'byAssignee (pie)', type: 'pieChart', measure: 'byAssignee' },
  { label: 'byLabel (bar)', type: 'barChart', measure: 'byLabel' },
  { label: 'byField:area (pie)', type: 'pieChart', measure: 'byField:area' },
  { label: 'createdPerDay, 30 days', type: 'lineChart', measure: 'createdPerDay', days: 30 },
  { label: 'completedPerDay, 30 days', type: 'lineChart', measure: 'completedPerDay', days: 30 },
  { label: 'openOverTime, 90 days', type: 'lineChart', measure: 'openOverTime', days: 90 },
  { label: 'cycleTimeDays, 30 days', type: 'verticalBox', measure: 'cycleTimeDays', days: 30 },
]

const STATUSES = ['todo', 'in_progress', 'done', 'cancelled'] as const
const LABELS = ['bug', 'feature', 'chore', 'docs', 'security', 'performance', 'ux', 'infra']
const AREAS = ['api', 'web', 'mobile', 'data', 'ops']

const epoch = () => performance.timeOrigin + performance.now()
const spread = (values: number[]): Spread => ({ p50: percentile(values, 0.5), p95: percentile(values, 0.95), max: Math.max(...values) })

interface World {
  seeded: Seeded
  small: string
  /** The 20 users work is assigned to (the writer first). */
  assignees: string[]
  labels: Array<{ id: string; name: string }>
  field: { id: string; options: Array<{ id: string; name: string }> }
  mix: Record<string, number>
}

/**
 * `n` of the project's work items from `from` to `to`, in one statement: every property drawn from
 * a hash of the number (`salt` apart per project), the same on every run.
 */
const GROW = `insert into work_items (id, organization_id, project_id, number, title, status, priority, assignee_id, position, created_by, created_at, updated_at, started_at, closed_at)
  select gen_random_uuid(), $1, $2, n, 'Work item ' || n, status, priority, assignee, n - 1, $3, created_at, greatest(created_at, started_at, closed_at), started_at, closed_at
  from (
    select t.*, case when status in ('done', 'cancelled') then least(now(), coalesce(started_at, created_at) + make_interval(secs => h_close)) end as closed_at
    from (
      select s.*, case when status = 'todo' or (status = 'cancelled' and h_status % 2 = 0) then null else least(now(), created_at + make_interval(secs => h_start)) end as started_at
      from (
        select n, h.h_status, h.h_start, h.h_close,
          case when h.h_status < 250 then 'todo' when h.h_status < 350 then 'in_progress' when h.h_status < 900 then 'done' else 'cancelled' end as status,
          case when h.h_priority < 300 then 0 when h.h_priority < 350 then 1 when h.h_priority < 500 then 2 when h.h_priority < 800 then 3 else 4 end as priority,
          case when h.h_assignee < 100 then null else ($6::uuid[])[1 + floor(20 * power((h.h_assignee - 100) / 900.0, 2))::int] end as assignee,
          now() - make_interval(secs => h.h_created) as created_at
        from generate_series($4::int, $5::int) as n,
          lateral (select abs(hashint4(n * 7 + 1 + $7)::bigint) % 1000 as h_status, abs(hashint4(n * 7 + 2 + $7)::bigint) % 1000 as h_priority,
            abs(hashint4(n * 7 + 3 + $7)::bigint) % 1000 as h_assignee, abs(hashint4(n * 7 + 4 + $7)::bigint) % 7776000 as h_created,
            abs(hashint4(n * 7 + 5 + $7)::bigint) % 432000 as h_start, abs(hashint4(n * 7 + 6 + $7)::bigint) % 1209600 as h_close) h
      ) s
    ) t
  ) w`

async function growProject(db: Database, organizationId: string, projectId: string, userId: string, rows: number, world: Pick<World, 'assignees' | 'labels' | 'field'>, salt: number) {
  const batch = 100_000
  for (let from = 1; from <= rows; from += batch) await queryText(db, GROW, [organizationId, projectId, userId, from, Math.min(rows, from + batch - 1), world.assignees, salt])
  await queryText(
    db,
    `insert into work_item_counters (project_id, organization_id, last_number) values ($1, $2, $3) on conflict (project_id, organization_id) do update set last_number = excluded.last_number`,
    [projectId, organizationId, rows],
  )
  // A label on ~20 % of the work items, a second (another) on ~5 %.
  const labelIds = world.labels.map((label) => label.id)
  await queryText(
    db,
    `insert into work_item_labels (work_item_id, label_id, organization_id, project_id)
      select w.id, ($3::uuid[])[1 + abs(hashint4(w.number * 11 + 1 + $4)::bigint) % 8], w.organization_id, w.project_id
        from work_items w where w.project_id = $1 and w.organization_id = $2 and abs(hashint4(w.number * 11 + $4)::bigint) % 100 < 20
      union all
      select w.id, ($3::uuid[])[1 + (abs(hashint4(w.number * 11 + 1 + $4)::bigint) % 8 + 1 + abs(hashint4(w.number * 11 + 2 + $4)::bigint) % 7) % 8], w.organization_id, w.project_id
        from work_items w where w.project_id = $1 and w.organization_id = $2 and abs(hashint4(w.number * 11 + $4)::bigint) % 100 < 5`,
    [projectId, organizationId, labelIds, salt],
  )
  // The area on ~40 %.
  await queryText(
    db,
    `insert into work_item_field_values (work_item_id, field_id, organization_id, project_id, field_key, value, option_ids)
      select w.id, $3, w.organization_id, w.project_id, 'area', to_jsonb(o.id::text), array[o.id]
        from work_items w, lateral (select ($4::uuid[])[1 + abs(hashint4(w.number * 13 + 1 + $5)::bigint) % 5] as id) o
        where w.project_id = $1 and w.organization_id = $2 and abs(hashint4(w.number * 13 + $5)::bigint) % 100 < 40`,
    [projectId, organizationId, world.field.id, world.field.options.map((option) => option.id), salt],
  )
  await recount(db, { organizationId, projectId, userId })
}

const seed = () =>
  seededDatabase(DATABASE, async (db): Promise<World> => {
    const seeded = await seedOrganization(db, { scopes: ['work_items:read', 'work_items:write', 'dashboards:read', 'dashboards:write'] })
    const { organizationId, userId, projectId } = seeded
    await seedMembers(db, organizationId, 19, projectId, 'member')
    const small = await seedProject(db, organizationId, userId, 'Small project')
    await queryText(db, `insert into project_members (project_id, user_id, organization_id, access_level) select $1, id, $2, 'viewer' from users where organization_id = $2 and username like 'member%'`, [
      small,
      organizationId,
    ])
    const members = await queryText<{ id: string }>(db, `select id from users where organization_id = $1 and username like 'member%' order by substr(username, 7)::int`, [organizationId])
    const assignees = [userId, ...members.map((member) => member.id)]
    const labels = LABELS.map((label) => ({ id: crypto.randomUUID(), name: label }))
    for (const [i, label] of labels.entries()) await queryText(db, 'insert into labels (id, organization_id, name, color) values ($1, $2, $3, $4)', [label.id, organizationId, label.name, `#${(0x224466 + i * 0x101010).toString(16)}`])
    const options = AREAS.map((area, i) => ({ id: crypto.randomUUID(), name: area, color: `#${(0x336699 + i * 0x0f0f0f).toString(16)}` }))
    const field = { id: crypto.randomUUID(), options }
    await queryText(db, `insert into custom_fields (id, organization_id, key, name, type, options) values ($1, $2, 'area', 'Area', 'single_select', $3::jsonb)`, [field.id, organizationId, JSON.stringify(options)])
    for (const project of [projectId, small]) await queryText(db, 'insert into project_custom_fields (project_id, field_id, organization_id) values ($1, $2, $3)', [project, field.id, organizationId])
    const world = { assignees, labels, field }
    await withoutTextIndexes(db, async () => {
      await growProject(db, organizationId, projectId, userId, ROWS, world, 0)
      await growProject(db, organizationId, small, userId, SMALL_ROWS, world, 10_000_000)
    })
    for (const table of ['work_items', 'work_item_labels', 'work_item_field_values']) await queryText(db, `vacuum (analyze) ${table}`, [])
    const [mix] = await queryText<Record<string, string>>(
      db,
      `select count(*) as rows, avg((status = 'todo')::int) as todo, avg((status = 'in_progress')::int) as "inProgress", avg((status = 'done')::int) as done, avg((status = 'cancelled')::int) as cancelled,
        avg((priority = 1)::int) as urgent, avg((assignee_id is null)::int) as unassigned,
        avg((exists (select 1 from work_item_labels l where l.work_item_id = w.id))::int) as labelled,
        avg((exists (select 1 from work_item_field_values v where v.work_item_id = w.id))::int) as area,
        extract(epoch from now() - min(created_at)) / 86400 as days
       from work_items w where project_id = $1 and organization_id = $2`,
      [projectId, organizationId],
    )
    return { seeded, small, ...world, mix: Object.fromEntries(Object.entries(mix!).map(([key, value]) => [key, Number(value)])) }
  })

// ---- the truth: each measure in SQL over the rows ---------------------------------------------

const STATUS_NAMES: Record<string, string> = { todo: 'To do', in_progress: 'In progress', done: 'Done', cancelled: 'Cancelled' }
const PRIORITY_ORDER = [
  ['1', 'Urgent'],
  ['2', 'High'],
  ['3', 'Medium'],
  ['4', 'Low'],
  ['0', 'No priority'],
] as const

const utcDays = (days: number) => {
  const end = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`)
  return Array.from({ length: days }, (_, i) => new Date(end - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10))
}

/** The measure over the rows, as one line (buckets in order, or ranked ones by name). */
async function truth(client: postgres.Sql, spec: Spec, organizationId: string, projectId: string, world: World): Promise<string> {
  const where = `w.project_id = $1 and w.organization_id = $2${spec.view ? ' and w.priority = 1' : ''}`
  const params = [projectId, organizationId]
  const counted = async (text: string, extra: unknown[] = []) => new Map((await client.unsafe(text, [...params, ...extra] as never[])).map((row) => [String(row.x), Number(row.n)]))
  const ranked = (counts: Map<string, number>) =>
    [...counts.entries()]
      .filter(([, n]) => n > 0)
      .map(([x, n]) => `${x}:${n}`)
      .sort()
      .join(', ')
  const kind = spec.measure.split(':')[0]
  const days = spec.days ?? 14
  const range = utcDays(days)
  const start = `${range[0]}T00:00:00Z`
  switch (kind) {
    case 'count':
      return String((await counted(`select 'all' as x, count(*)::int as n from work_items w where ${where}`)).get('all') ?? 0)
    case 'byStatus': {
      const counts = await counted(`select w.status as x, count(*)::int as n from work_items w where ${where} group by 1`)
      return STATUSES.map((status) => `${STATUS_NAMES[status]}:${counts.get(status) ?? 0}`).join(', ')
    }
    case 'byPriority': {
      const counts = await counted(`select w.priority::text as x, count(*)::int as n from work_items w where ${where} group by 1`)
      return PRIORITY_ORDER.map(([value, label]) => `${label}:${counts.get(value) ?? 0}`).join(', ')
    }
    case 'byAssignee':
      return ranked(await counted(`select coalesce(u.display_name, w.assignee_id::text, 'none') as x, count(*)::int as n from work_items w left join users u on u.id = w.assignee_id where ${where} group by 1`))
    case 'byLabel':
      return ranked(
        await counted(`select l.name as x, count(*)::int as n from work_items w join work_item_labels wl on wl.work_item_id = w.id join labels l on l.id = wl.label_id where ${where} group by 1
          union all select 'none', count(*)::int from work_items w where ${where} and not exists (select 1 from work_item_labels wl where wl.work_item_id = w.id)`),
      )
    case 'byField': {
      const names = new Map(world.field.options.map((option) => [option.id, option.name]))
      const counts = await counted(`select coalesce(v.value #>> '{}', 'none') as x, count(*)::int as n from work_items w left join work_item_field_values v on v.work_item_id = w.id and v.field_key = 'area' where ${where} group by 1`)
      return ranked(new Map([...counts.entries()].map(([x, n]) => [names.get(x) ?? x, n])))
    }
    case 'createdPerDay':
    case 'completedPerDay': {
      const column = kind === 'createdPerDay' ? 'created_at' : 'closed_at'
      const done = kind === 'completedPerDay' ? ` and w.status = 'done'` : ''
      const counts = await counted(`select ((w.${column} at time zone 'utc')::date)::text as x, count(*)::int as n from work_items w where ${where}${done} and w.${column} >= $3::timestamptz group by 1`, [start])
      return range.map((day) => `${day}:${counts.get(day) ?? 0}`).join(', ')
    }
    case 'openOverTime': {
      // Open at the end of a day: created by then, less closed by then; from the totals before the range and each day's.
      const rows = await client.unsafe(
        `select 'c' as k, case when w.created_at >= $3::timestamptz then ((w.created_at at time zone 'utc')::date)::text end as x, count(*)::int as n from work_items w where ${where} group by 2
          union all
          select 'x', case when w.closed_at >= $3::timestamptz then ((w.closed_at at time zone 'utc')::date)::text end, count(*)::int from work_items w where ${where} and w.closed_at is not null group by 2`,
        [...params, start] as never[],
      )
      const n = (k: string, x: string | null) => Number(rows.find((row) => row.k === k && (row.x ?? null) === x)?.n ?? 0)
      let open = n('c', null) - n('x', null)
      return range.map((day) => `${day}:${(open += n('c', day) - n('x', day))}`).join(', ')
    }
    case 'cycleTimeDays': {
      const [row] = await client.unsafe(
        `select percentile_cont(0.5) within group (order by extract(epoch from w.closed_at - w.started_at) / 86400)::float8 as median, count(*)::int as n
          from work_items w where ${where} and w.status = 'done' and w.started_at is not null and w.closed_at >= $3::timestamptz`,
        [...params, start] as never[],
      )
      const median = row!.median === null ? 0 : Math.round(Number(row!.median) * 10) / 10
      return `${median} (${Number(row!.n)} done)`
    }
  }
  throw new Error(`no truth for ${spec.measure}`)
}

/** The component's data as the same line. */
function shown(spec: Spec, data: any): string {
  const kind = spec.measure.split(':')[0]
  if (!data) return 'no data'
  if (kind === 'count') return String(spec.type === 'verticalBox' ? data.bottomText?.value : data.middleText?.value)
  if (kind === 'cycleTimeDays') {
    if (spec.type === 'horizontalBox') return `${data.middleText?.value} (${data.rightText?.value})`
    // The count of done items is beside the caption (its wording is the plugin's).
    return `${data.bottomText?.value} (${/(\d+ done)/.exec(String(data.topText?.value))?.[1]})`
  }
  const points = (data.points ?? []) as Array<{ x: string; y: number }>
  const line = points.map((point) => `${point.x}:${point.y}`)
  return ['byAssignee', 'byLabel', 'byField'].includes(kind!) ? line.sort().join(', ') : line.join(', ')
}

// ---- the API and what the database shows -----------------------------------------------------

function apiOf(secret: string) {
  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`http://127.0.0.1:${PORT}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await response.text()
    return { status: response.status, body: text ? JSON.parse(text) : null, answeredAt: epoch() }
  }
  const must = async (method: string, path: string, body?: unknown) => {
    const answer = await call(method, path, body)
    if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 400)}`)
    return answer
  }
  return { call, must }
}
type Api = ReturnType<typeof apiOf>

/** A page with one component per spec, each bound to `projectId`: the page and the components' ids. */
async function boundPage(api: Api, title: string, specs: Spec[], projectId: string, viewId: string) {
  const page = (await api.must('POST', '/pages', { name: `ws-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, title })).body.data.id as string
  const components: string[] = []
  for (const spec of specs) {
    const id = (await api.must('POST', `/pages/${page}/components`, { type: spec.type, title: spec.label })).body.data.id as string
    await api.must('PUT', `/pages/${page}/components/${id}/source`, { projectId, measure: spec.measure, ...(spec.view ? { viewId } : {}), ...(spec.days ? { range: { days: spec.days } } : {}) })
    components.push(id)
  }
  return { page, components }
}

interface State {
  version: number
  /** Epoch ms of the source's computed_at (its recompute transaction's start), null before the first. */
  computed: number | null
}

async function states(client: postgres.Sql, organizationId: string, ids: string[]): Promise<Map<string, State>> {
  const rows = await client.unsafe(
    `select c.id::text as id, c.version, (extract(epoch from s.computed_at) * 1000)::float8 as computed
      from components c left join component_sources s on s.component_id = c.id and s.organization_id = c.organization_id
      where c.organization_id = $1 and c.id = any($2::uuid[])`,
    [organizationId, ids],
  )
  return new Map(rows.map((row) => [String(row.id), { version: Number(row.version), computed: row.computed === null ? null : Number(row.computed) }]))
}

/** Polls (`everyMs`) until `accept` holds; when it was seen (epoch ms) and the states. `each` sees every poll. */
async function until(client: postgres.Sql, organizationId: string, ids: string[], accept: (now: Map<string, State>) => boolean, what: string, everyMs = 1, each?: (now: Map<string, State>) => void) {
  const deadline = Date.now() + DEADLINE_MS
  for (;;) {
    const now = await states(client, organizationId, ids)
    const at = epoch()
    each?.(now)
    if (accept(now)) return { at, now }
    if (Date.now() > deadline) throw new Error(`work-sources: ${what} not seen within ${DEADLINE_MS / 60_000} min`)
    await Bun.sleep(everyMs)
  }
}

const marksLeft = async (client: postgres.Sql, organizationId: string) => Number((await client.unsafe('select count(*)::int as n from work_source_marks where organization_id = $1', [organizationId]))[0]!.n)

// ---- the parts --------------------------------------------------------------------------------

interface Context {
  world: World
  client: postgres.Sql
  api: Api
  /** The shared view `priority=1` of each project. */
  views: Map<string, string>
}

type AloneFigure = Figures['work-sources']['alone'][number]
type BurstFigure = Figures['work-sources']['burst']

/** Each measure bound alone to the project: its first build, SAMPLES recomputations after one change each, the same measure by SQL over the rows, and its unbinding. */
async function oneAtATime(ctx: Context, projectId: string, rows: number): Promise<AloneFigure[]> {
  const { client, api } = ctx
  const org = ctx.world.seeded.organizationId
  const pool = await client.unsafe(`select id::text as id, status from work_items where project_id = $1 and organization_id = $2 and priority = 1 and status <> 'cancelled' order by number limit 100`, [projectId, org])
  const next: Record<string, string> = { todo: 'in_progress', in_progress: 'done', done: 'todo' }
  let changes = 0
  const figures: AloneFigure[] = []
  for (const spec of ALONE) {
    const started = epoch()
    const { page, components } = await boundPage(api, spec.label, [spec], projectId, ctx.views.get(projectId)!)
    const id = components[0]!
    const built = await until(client, org, [id], (now) => now.get(id)!.computed !== null, `the first build of ${spec.label}`, 5)
    let last = built.now.get(id)!
    const transaction: number[] = []
    const fromAnswer: number[] = []
    for (let i = -1; i < SAMPLES; i++) {
      await Bun.sleep(Math.max(0, last.computed! + COALESCE_MS + 50 - epoch()))
      const item = pool[changes++ % pool.length]!
      item.status = next[String(item.status)] ?? 'todo'
      const answer = await api.must('PATCH', `/projects/${projectId}/work-items/${item.id}`, { status: item.status })
      const seen = await until(client, org, [id], (now) => now.get(id)!.version > last.version, `the recomputation of ${spec.label}`)
      last = seen.now.get(id)!
      if (i < 0) continue // the first warms the statements up
      transaction.push(seen.at - last.computed!)
      fromAnswer.push(seen.at - answer.answeredAt)
    }
    const scanStarted = epoch()
    await truth(client, spec, org, projectId, ctx.world)
    const scanMs = epoch() - scanStarted
    const unbindStarted = epoch()
    await api.must('DELETE', `/pages/${page}/components/${id}/source`)
    const unbindMs = epoch() - unbindStarted
    await api.must('DELETE', `/pages/${page}`)
    const figure: AloneFigure = { rows, label: spec.label, buildMs: built.at - started, transaction: spread(transaction), fromAnswer: spread(fromAnswer), scanMs, unbindMs }
    console.log(`work-sources: ${round(rows)} rows, ${spec.label}: build ${round(figure.buildMs)} ms; recompute p50 ${round(figure.transaction.p50, 1)} / p95 ${round(figure.transaction.p95, 1)} ms; SQL over the rows ${round(scanMs, 1)} ms; unbind ${round(unbindMs)} ms`)
    figures.push(figure)
  }
  return figures
}

/** Waits until no mark is left and no component was recomputed for 1.5 s; every recomputation seen on the way goes to `seen`. */
async function settle(ctx: Context, ids: string[], seen: Map<string, Set<number>>) {
  const org = ctx.world.seeded.organizationId
  let movedAt = epoch()
  let marks = 1
  await until(
    ctx.client,
    org,
    ids,
    () => marks === 0 && epoch() - movedAt >= 1500,
    'the burst settling',
    20,
    (now) => {
      for (const [id, state] of now) {
        const times = seen.get(id) ?? seen.set(id, new Set()).get(id)!
        if (state.computed !== null && !times.has(state.computed)) {
          times.add(state.computed)
          movedAt = epoch()
        }
      }
      void marksLeft(ctx.client, org).then((n) => (marks = n))
    },
  )
}

/** WRITES writes at RATE a second (at most IN_FLIGHT in flight): status, priority and assignee PATCHes, creates, deletes. */
async function drive(ctx: Context, projectId: string, seed: number) {
  const { world, client, api } = ctx
  const rand = randomSource(seed)
  const pick = <T>(values: readonly T[]) => values[Math.floor(rand() * values.length)]!
  const items = await client.unsafe(`select id::text as id, status from work_items where project_id = $1 and organization_id = $2 order by hashint4(number + $3) limit 460`, [projectId, world.seeded.organizationId, seed])
  const patched = items.slice(0, 400)
  const deletable = items.slice(400).map((row) => String(row.id))
  const path = `/projects/${projectId}/work-items`
  const write = (i: number) => {
    const slot = i % 20
    const item = patched[i % patched.length]!
    if (slot < 12) {
      item.status = pick(STATUSES.filter((status) => status !== item.status))
      return api.call('PATCH', `${path}/${item.id}`, { status: item.status })
    }
    if (slot < 14) return api.call('PATCH', `${path}/${item.id}`, { priority: Math.floor(rand() * 5) })
    if (slot < 16) return api.call('PATCH', `${path}/${item.id}`, { assigneeId: rand() < 0.1 ? null : pick(world.assignees) })
    if (slot < 19 || !deletable.length)
      return api.call('POST', path, {
        title: `Burst ${i}`,
        status: pick(STATUSES),
        priority: Math.floor(rand() * 5),
        assigneeId: rand() < 0.1 ? null : pick(world.assignees),
        ...(rand() < 0.3 ? { labels: [pick(world.labels).id] } : {}),
        ...(rand() < 0.4 ? { fields: { area: pick(world.field.options).id } } : {}),
      })
    return api.call('DELETE', `${path}/${deletable.pop()}`)
  }
  const started = epoch()
  const pending: Promise<{ status: number }>[] = []
  let inFlight = 0
  for (let i = 0; i < WRITES; i++) {
    await Bun.sleep(Math.max(0, started + (i * 1000) / RATE - epoch()))
    while (inFlight >= IN_FLIGHT) await Bun.sleep(1)
    inFlight++
    pending.push(write(i).finally(() => inFlight--))
  }
  const answers = await Promise.all(pending)
  const statuses: Record<string, number> = {}
  for (const answer of answers) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1
  return { started, seconds: (epoch() - started) / 1000, statuses }
}

/** The most of `times` (epoch ms) in any window of 1 s. */
function mostInASecond(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b)
  let most = 0
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= 1000) j++
    most = Math.max(most, i - j + 1)
  }
  return most
}

/** The 20 components bound to the project, their first builds, then the burst and each component's final data against SQL. */
async function burst(ctx: Context, projectId: string): Promise<BurstFigure> {
  const org = ctx.world.seeded.organizationId
  // The same kind of writes with no source bound: what the writers get without marks.
  const unbound = await drive(ctx, projectId, 7)
  const started = epoch()
  const wall = await boundPage(ctx.api, 'wall', WALL, projectId, ctx.views.get(projectId)!)
  const built = await until(ctx.client, org, wall.components, (now) => [...now.values()].every((state) => state.computed !== null), 'the first builds of 20 components', 50)
  const buildMs = built.at - started
  await settle(ctx, wall.components, new Map())
  const seen = new Map<string, Set<number>>()
  const writes = await drive(ctx, projectId, 42)
  await settle(ctx, wall.components, seen)
  const settleMs = Math.max(...[...seen.values()].flatMap((times) => [...times])) - writes.started - writes.seconds * 1000
  const perComponent = WALL.map((spec, i) => {
    const times = [...(seen.get(wall.components[i]!) ?? [])].filter((time) => time >= writes.started - 5)
    return { label: spec.label, total: times.length, mostInASecond: mostInASecond(times) }
  })
  const mismatches: BurstFigure['mismatches'] = []
  for (const [i, spec] of WALL.entries()) {
    const data = (await ctx.api.must('GET', `/pages/${wall.page}/components/${wall.components[i]}`)).body.data.data
    const [expected, shownNow] = [await truth(ctx.client, spec, org, projectId, ctx.world), shown(spec, data)]
    if (expected !== shownNow) mismatches.push({ label: spec.label, expected: expected.slice(0, 300), shown: shownNow.slice(0, 300) })
  }
  // Each source unbound on its own (its rows are purged afterwards), then the page.
  const unbindStarted = epoch()
  for (const id of wall.components) await ctx.api.must('DELETE', `/pages/${wall.page}/components/${id}/source`)
  const unbindAllMs = epoch() - unbindStarted
  await ctx.api.must('DELETE', `/pages/${wall.page}`)
  return {
    unbindAllMs, writes: WRITES, rate: RATE, writeSeconds: writes.seconds, unboundSeconds: unbound.seconds, statuses: writes.statuses, buildMs, settleMs, perComponent, mostInASecond: Math.max(...perComponent.map((c) => c.mostInASecond)), mismatches }
}

export async function run(): Promise<void> {
  console.log(`work-sources: seeding ${round(ROWS)} + ${round(SMALL_ROWS)} work items …`)
  const seedStarted = epoch()
  const { url, seeded: world } = await seed()
  console.log(`work-sources: seeded in ${round((epoch() - seedStarted) / 1000)} s`)
  const service = await startService(url, PORT)
  const client = postgres(url, { max: 2, onnotice: () => {} })
  try {
    const api = apiOf(world.seeded.secret)
    const views = new Map<string, string>()
    for (const projectId of [world.seeded.projectId, world.small])
      views.set(projectId, (await api.must('POST', `/projects/${projectId}/views`, { name: 'Urgent', filters: { priority: '1' }, shared: true })).body.data.id)
    const ctx: Context = { world, client, api, views }
    const alone = [...(await oneAtATime(ctx, world.small, SMALL_ROWS)), ...(await oneAtATime(ctx, world.seeded.projectId, ROWS))]
    const wall = await burst(ctx, world.seeded.projectId)
    const figures: Figures['work-sources'] = { rows: ROWS, smallRows: SMALL_ROWS, samples: SAMPLES, alone, burst: wall, peakRssMiB: service.peakRssMiB() }
    writeSection(name, section(figures, world.mix))
    recordResult(name, figures)
  } finally {
    await client.end()
    await service.stop()
  }
}

function section(f: Figures['work-sources'], mix: Record<string, number>): string {
  const large = f.alone.filter((a) => a.rows === f.rows)
  const worst = Math.max(...large.map((a) => a.transaction.p95))
  const met = worst <= LIMITS.workSourceRecomputeMs
  const small = new Map(f.alone.filter((a) => a.rows === f.smallRows).map((a) => [a.label, a]))
  const rows = large.map((a) => {
    const s = small.get(a.label)
    return `| ${a.label} | ${round(a.transaction.p50, 1)} / ${round(a.transaction.p95, 1)} | ${s ? `${round(s.transaction.p50, 1)} / ${round(s.transaction.p95, 1)}` : '—'} | ${round(a.fromAnswer.p50, 1)} | ${round(a.scanMs, 1)} | ${round(a.scanMs / a.transaction.p50, 1)}× | ${round(a.buildMs / 1000, 1)} | ${round(a.unbindMs)} |`
  })
  const b = f.burst
  const burstMet = b.mostInASecond <= LIMITS.workSourceRecomputationsPerSecond && b.mismatches.length === 0
  const pct = (key: string) => `${round((mix[key] ?? 0) * 100)} %`
  return `## Dashboards fed by work (work sources)

${sectionHead(`\`npm run bench -- work-sources\` (BENCH_WORK_SOURCES_ROWS=${f.rows}, BENCH_WORK_SOURCES_SMALL_ROWS=${f.smallRows}, BENCH_WORK_SOURCES_SAMPLES=${f.samples}, BENCH_WORK_SOURCES_WRITES=${b.writes}, BENCH_WORK_SOURCES_RATE=${b.rate}; PostgreSQL server; service at ${serviceCommit()})`)}

A project of ${round(f.rows)} work items (${pct('todo')} to do, ${pct('inProgress')} in progress, ${pct('done')} done, ${pct('cancelled')} cancelled; ${pct('urgent')} urgent; ${pct('unassigned')} unassigned; ${pct('labelled')} labelled; ${pct('area')} with an \`area\`; created over ${round(mix.days ?? 0)} days) and one of ${round(f.smallRows)}. The service with its default configuration (2 recompute workers, a 250 ms coalescing window).

**One measure at a time**: one component bound, then ${f.samples} times (past the window each time) a \`PATCH\` of an urgent item's status and a 1 ms poll of the component until its data moved. *Recompute* is seen − the recompute transaction's start (\`computed_at\`): the whole transaction (claiming the mark, locking the source, the binder's check, the changed item's rows and counts, the data, the write, the commit) and one poll. *SQL over the rows* is the same measure computed from \`work_items\` (what a recompute that scanned would cost), once; its ratio to the recompute's p50 shows what the maintained counts save.

| measure | recompute ms at ${round(f.rows)}, p50 / p95 | at ${round(f.smallRows)}, p50 / p95 | answer → seen, p50 ms | SQL over the rows, ms | ratio | first build, s | unbind, ms |
|---|---|---|---|---|---|---|---|
${rows.join('\n')}

**Recompute at ${round(f.rows)} work items: worst p95 ${round(worst, 1)} ms: ${met ? 'met' : 'missed'}.** ${target.recompute}

**Burst**: 20 components bound to the large project (every measure, most twice, two through the view \`priority=1\`; their first builds together took ${round(b.buildMs / 1000, 1)} s), then ${round(b.writes)} writes offered at ${round(b.rate)}/s (at most ${IN_FLIGHT} in flight; 60 % status PATCHes, 10 % priority, 10 % assignee, 15 % creates, 5 % deletes), answered in ${round(b.writeSeconds, 2)} s (${Object.entries(b.statuses).map(([status, n]) => `${n} × ${status}`).join(', ')}): ${round(b.writes / b.writeSeconds)} writes/s, against ${round(b.writes / b.unboundSeconds)} writes/s for the same kind of writes just before with no source bound (${round(b.unboundSeconds / b.writeSeconds, 2)}× that rate: what the marks cost the writers; neither reaches the offered rate on this machine, where the service, PostgreSQL and this client share its cores). Each distinct \`computed_at\` is one recomputation; the last came ${round(b.settleMs)} ms after the last answer. Most recomputations of one component in any 1-s window: **${b.mostInASecond}**; total per component ${Math.min(...b.perComponent.map((c) => c.total))}–${Math.max(...b.perComponent.map((c) => c.total))}. Unbinding the 20 one after another (each \`DELETE …/source\` retires its source; its ${round(f.rows)} rows are purged afterwards, in batches) took ${round(b.unbindAllMs / 1000, 1)} s. Final data against SQL over the rows: ${b.mismatches.length ? `**${b.mismatches.length} mismatches**: ${b.mismatches.map((m) => `${m.label}: expected ${m.expected}, shown ${m.shown}`).join('; ')}` : 'all 20 equal'}. **${burstMet ? 'Met' : 'Missed'}.** ${target.burst} Peak RSS of the service: ${round(f.peakRssMiB, 1)} MiB.`
}
