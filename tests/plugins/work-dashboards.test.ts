/**
 * Components fed by work (work sources): binding checks (page editor, project viewer, the measure
 * fitting the component's type, the view readable), data equal to what the list counts and kept
 * current after each change, display calls to a bound component 409 componentBound (counted), the
 * aggregate only on the page, suspension when the binder loses access, unbinding, audit records.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sqlOn } from '../helpers/database'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { markNewDay } from '../../plugins/work-dashboards/recompute'
import { queryText } from '../../src/db'

let api: TestService
let fx: ProjectFixture
const sql = sqlOn(() => api)
let pageId: string
const component: Record<string, string> = {}
const items = () => `/api/v1/projects/${fx.projectId}/work-items`
const source = (type: string) => `/api/v1/pages/${pageId}/components/${component[type]}/source`

/** Polls `read` until `accept` holds (or fails with the last value after `ms`). */
async function until<T>(read: () => Promise<T>, accept: (value: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms
  let value = await read()
  while (!accept(value)) {
    if (Date.now() > deadline) throw new Error(`not reached in ${ms} ms; last: ${JSON.stringify(value)}`)
    await Bun.sleep(20)
    value = await read()
  }
  return value
}

const dataOf = async (type: string) => (await fx.as('owner', 'GET', `/api/v1/pages/${pageId}/components/${component[type]}`, undefined, 200)).data

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  const page = await fx.as('owner', 'POST', '/api/v1/pages', { name: `work-${Date.now()}`, title: 'Work' }, 201)
  pageId = page.id
  for (const type of ['horizontalBox', 'verticalBox', 'pieChart', 'barChart', 'lineChart'])
    component[type] = (await fx.as('owner', 'POST', `/api/v1/pages/${pageId}/components`, { type, title: type }, 201)).id
  await fx.as('owner', 'POST', `/api/v1/pages/${pageId}/access`, { userId: fx.users.viewer.id })
})
afterAll(() => api?.stop())

describe('work sources', () => {
  test('a count follows every change within seconds, and the answer is the source', async () => {
    const bound = await fx.as('owner', 'PUT', source('verticalBox'), { projectId: fx.projectId, measure: 'count' }, 200)
    expect(bound).toMatchObject({ componentId: component.verticalBox, projectId: fx.projectId, viewId: null, measure: 'count', range: null, state: 'active', boundBy: fx.users.owner.id })
    await until(() => dataOf('verticalBox'), (data) => data?.bottomText?.value === '0')
    const one = await fx.as('owner', 'POST', items(), { title: 'first' }, 201)
    const started = Date.now()
    await until(() => dataOf('verticalBox'), (data) => data?.bottomText?.value === '1', 2_000)
    expect(Date.now() - started).toBeLessThan(2_000)
    await fx.as('owner', 'DELETE', `${items()}/${one.id}`, undefined, 200)
    await until(() => dataOf('verticalBox'), (data) => data?.bottomText?.value === '0')
    expect((await fx.as('viewer', 'GET', source('verticalBox'), undefined, 200)).state).toBe('active')
  })

  test('an import (one project.imported event, none per item) draws the sources of its project again', async () => {
    const target = (await fx.as('owner', 'POST', '/api/v1/projects', { name: 'Imported into' }, 201)).id
    const bound = await fx.as('owner', 'PUT', source('horizontalBox'), { projectId: target, measure: 'count' }, 200)
    expect(bound.state).toBe('active')
    await until(() => dataOf('horizontalBox'), (data) => data?.middleText?.value === '0')
    const lines = ['One', 'Two', 'Three'].map((title) => JSON.stringify({ type: 'work_item', data: { title } })).join('\n')
    const imported = await api.request('POST', `/api/v1/projects/${target}/import`, { key: fx.keys.owner, rawBody: lines, headers: { 'content-type': 'application/x-ndjson' } })
    expect(imported.status, imported.text).toBe(200)
    await until(() => dataOf('horizontalBox'), (data) => data?.middleText?.value === '3')
    await fx.as('owner', 'DELETE', source('horizontalBox'), undefined, 200)
  })

  test('byStatus and byPriority show every bucket in order, zeros included; a view narrows them', async () => {
    await fx.as('owner', 'POST', items(), { title: 'a', status: 'in_progress', priority: 1 }, 201)
    await fx.as('owner', 'POST', items(), { title: 'b', status: 'done', priority: 3 }, 201)
    await fx.as('owner', 'PUT', source('pieChart'), { projectId: fx.projectId, measure: 'byStatus' }, 200)
    const pie = await until(() => dataOf('pieChart'), (data) => data?.points?.length === 4)
    expect(pie.points.map((p: any) => [p.x, p.y])).toEqual([['To do', 0], ['In progress', 1], ['Done', 1], ['Cancelled', 0]])
    const view = await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/views`, { name: 'urgent', filters: { priority: '1' }, shared: true }, 201)
    await fx.as('owner', 'PUT', source('barChart'), { projectId: fx.projectId, viewId: view.id, measure: 'byPriority' }, 200)
    const bar = await until(() => dataOf('barChart'), (data) => data?.points?.length === 5)
    expect(bar.points.map((p: any) => [p.x, p.y])).toEqual([['Urgent', 1], ['High', 0], ['Medium', 0], ['Low', 0], ['No priority', 0]])
    // Only aggregates reach the page: no title, no id.
    const text = JSON.stringify([pie, bar])
    expect(text).not.toContain('"a"')
    expect(text).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/)
  })

  test('a measure that does not fit, an unknown project or view, and a viewer of the page are refused; nothing bound', async () => {
    expect((await fx.call('owner', 'PUT', source('horizontalBox'), { projectId: fx.projectId, measure: 'byStatus' })).body.errors[0].field).toBe('measure')
    expect((await fx.call('owner', 'PUT', source('horizontalBox'), { projectId: fx.projectId, measure: 'sum' })).body.errors[0].field).toBe('measure')
    expect((await fx.call('owner', 'PUT', source('horizontalBox'), { projectId: crypto.randomUUID(), measure: 'count' })).body.errors[0].field).toBe('projectId')
    expect((await fx.call('owner', 'PUT', source('horizontalBox'), { projectId: fx.projectId, viewId: crypto.randomUUID(), measure: 'count' })).body.errors[0].field).toBe('viewId')
    expect((await fx.call('viewer', 'PUT', source('horizontalBox'), { projectId: fx.projectId, measure: 'count' })).status).toBe(403)
    expect((await fx.call('owner', 'GET', source('horizontalBox'))).status).toBe(404)
  })

  test('display calls to a bound component are 409 componentBound and counted; after DELETE they apply again', async () => {
    const key = fx.users.owner.displayApiKey!
    const data = { type: 'verticalBox', backgroundColor: '#000000', topText: { value: 'x', size: 10, color: '#ffffff' }, bottomText: { value: '42', size: 10, color: '#ffffff' } }
    const refused = await api.request('POST', '/api/component', { body: { apiKey: key, componentId: component.verticalBox, timestamp: Date.now(), data } })
    expect(refused.status).toBe(409)
    expect(refused.body.message).toBe('componentBound')
    expect(Number(refused.headers.get('x-ratelimit-remaining'))).toBeGreaterThanOrEqual(0)
    expect((await dataOf('verticalBox')).bottomText.value).not.toBe('42')
    expect(await fx.as('owner', 'DELETE', source('verticalBox'), undefined, 200)).toEqual({ id: component.verticalBox })
    expect((await fx.call('owner', 'GET', source('verticalBox'))).status).toBe(404)
    // Even a timestamp older than the source's last write: unbound, the stamp is the display calls' own again.
    const applied = await api.request('POST', '/api/component', { body: { apiKey: key, componentId: component.verticalBox, timestamp: 1_000_000_000, data } })
    expect(applied.status, applied.text).toBe(200)
    expect((await dataOf('verticalBox')).bottomText.value).toBe('42')
    const audits = await sql<{ action: string }>(`select action from audit_logs where resource_id = $1 and action like 'component_source.%' order by occurred_at, id`, [component.verticalBox])
    expect(audits.map((row) => row.action)).toEqual(['component_source.bound', 'component_source.unbound'])
  })

  test('an alert on a bound component fires within 2 s of the change that makes it true', async () => {
    const box = (await fx.as('owner', 'POST', `/api/v1/pages/${pageId}/components`, { type: 'horizontalBox', title: 'Urgent open' }, 201)).id
    const path = `/api/v1/pages/${pageId}/components/${box}`
    const view = await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/views`, { name: 'urgent open', filters: { priority: '1', status: 'todo,in_progress' }, shared: true }, 201)
    await fx.as('owner', 'PUT', `${path}/source`, { projectId: fx.projectId, viewId: view.id, measure: 'count' }, 200)
    const read = async () => (await fx.as('owner', 'GET', path, undefined, 200)).data
    const open = Number((await until(read, (data) => data?.middleText?.value !== undefined)).middleText.value)
    const alert = await fx.as('owner', 'POST', `${path}/alerts`, { when: 'above', value: open }, 201)
    expect(alert.state).toBe('ok')
    const item = await fx.as('owner', 'POST', items(), { title: 'on fire', priority: 1 }, 201)
    const started = Date.now()
    await until(async () => (await fx.as('owner', 'GET', `${path}/alerts/${alert.id}`, undefined, 200)).state, (state) => state === 'firing', 2_000)
    expect(Date.now() - started).toBeLessThan(2_000)
    // Done: out of the view, the number falls back and the alert resolves.
    await fx.as('owner', 'PATCH', `${items()}/${item.id}`, { status: 'done' }, 200)
    await until(async () => (await fx.as('owner', 'GET', `${path}/alerts/${alert.id}`, undefined, 200)).state, (state) => state === 'ok')
  })

  test('at a new UTC day every source with a range is drawn again from its kept counts (markNewDay, run by a timer at midnight)', async () => {
    await fx.as('owner', 'PUT', source('lineChart'), { projectId: fx.projectId, measure: 'createdPerDay', range: { days: 3 } }, 200)
    const series = await until(() => dataOf('lineChart'), (data) => data?.points?.length === 3)
    const today = new Date().toISOString().slice(0, 10)
    expect(series.points.map((point: any) => point.x).at(-1)).toBe(today)
    const [{ at }] = await sql<{ at: string }>('select computed_at::text as at from component_sources where component_id = $1', [component.lineChart])
    await markNewDay(api.service.core.db)
    await until(() => sql<{ at: string }>('select computed_at::text as at from component_sources where component_id = $1', [component.lineChart]), (rows) => rows[0]!.at !== at)
    expect((await dataOf('lineChart')).points).toEqual(series.points)
  })

  test('when the binder loses view access the source is suspended at once and the page keeps its last data', async () => {
    await fx.as('editor', 'POST', `/api/v1/pages`, { name: `editor-${Date.now()}` }, 201).then(async (page) => {
      const box = (await fx.as('editor', 'POST', `/api/v1/pages/${page.id}/components`, { type: 'horizontalBox', title: 'open' }, 201)).id
      const path = `/api/v1/pages/${page.id}/components/${box}/source`
      await fx.as('editor', 'PUT', path, { projectId: fx.projectId, measure: 'count' }, 200)
      const read = async () => (await fx.as('editor', 'GET', `/api/v1/pages/${page.id}/components/${box}`, undefined, 200)).data
      const before = await until(read, (data) => data?.middleText?.value !== undefined)
      await fx.as('owner', 'DELETE', `/api/v1/projects/${fx.projectId}/members/${fx.users.editor.id}`, undefined, 200)
      expect(await fx.as('editor', 'GET', path, undefined, 200)).toMatchObject({ state: 'suspended', reason: 'projectAccessLost' })
      await fx.as('owner', 'POST', items(), { title: 'unseen' }, 201)
      // The change's mark is taken away without writing the component.
      await until(() => sql<{ n: number }>('select count(*)::int as n from work_source_marks where organization_id = $1', [fx.organizationId]), (rows) => rows[0]!.n === 0)
      expect(await read()).toEqual(before)
    })
  })

  test('a deactivated binder, or a view deleted or made private, suspends the source with its reason; PUT by someone who can makes it active again', async () => {
    const binder = await api.createUser(fx.organizationId)
    const binderKey = (await api.createKey(binder.id, api.service.core.scopes.map((scope) => scope.name))).secret
    await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/members`, { userId: binder.id, accessLevel: 'editor' }, 201)
    await fx.as('owner', 'POST', `/api/v1/pages/${pageId}/access`, { userId: binder.id, level: 'editor' }, 201)
    const as = async (method: string, path: string, body?: unknown) => (await api.request(method, path, { key: binderKey, body }))
    const box = (await fx.as('owner', 'POST', `/api/v1/pages/${pageId}/components`, { type: 'verticalBox', title: 'binder' }, 201)).id
    const path = `/api/v1/pages/${pageId}/components/${box}/source`
    expect((await as('PUT', path, { projectId: fx.projectId, measure: 'count' })).status).toBe(200)
    await api.deactivateUser(binder.id)
    expect(await fx.as('owner', 'GET', path, undefined, 200)).toMatchObject({ state: 'suspended', reason: 'binderDeactivated' })
    // The owner binds it again, through a view of theirs.
    const view = await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/views`, { name: 'todo', filters: { status: 'todo' }, shared: true }, 201)
    expect(await fx.as('owner', 'PUT', path, { projectId: fx.projectId, viewId: view.id, measure: 'count' }, 200)).toMatchObject({ state: 'active', reason: null, boundBy: fx.users.owner.id })
    await fx.as('owner', 'DELETE', `/api/v1/projects/${fx.projectId}/views/${view.id}`, undefined, 200)
    expect(await fx.as('owner', 'GET', path, undefined, 200)).toMatchObject({ state: 'suspended', reason: 'viewUnavailable' })
  })

  test("unbinding, or deleting the component or its page, leaves the source's rows to a purge in batches; binding the component again at once counts right", async () => {
    const rowsOf = async (id: string) => (await sql<{ n: number }>('select count(*)::int as n from work_source_items where component_id = $1', [id]))[0]!.n
    const purges = async () => (await sql<{ n: number }>('select count(*)::int as n from work_source_purges where organization_id = $1', [fx.organizationId]))[0]!.n
    const [{ total }] = await sql<{ total: number }>('select count(*)::int as total from work_items where project_id = $1', [fx.projectId])
    const newBox = async (page: string) => (await fx.as('owner', 'POST', `/api/v1/pages/${page}/components`, { type: 'verticalBox', title: 'purged' }, 201)).id as string
    const bind = (page: string, box: string) => fx.as('owner', 'PUT', `/api/v1/pages/${page}/components/${box}/source`, { projectId: fx.projectId, measure: 'count' }, 200)
    const shown = async (box: string) => (await fx.as('owner', 'GET', `/api/v1/pages/${pageId}/components/${box}`, undefined, 200)).data?.bottomText?.value
    expect(total).toBeGreaterThan(0)

    const box = await newBox(pageId)
    await bind(pageId, box)
    await until(() => rowsOf(box), (n) => n === total)
    await fx.as('owner', 'DELETE', `/api/v1/pages/${pageId}/components/${box}/source`, undefined, 200)
    await until(() => rowsOf(box), (n) => n === 0)
    await until(purges, (n) => n === 0)

    // Unbound and bound again at once: the purge gives way to the new binding's build.
    await bind(pageId, box)
    await until(() => shown(box), (value) => value === String(total))
    await fx.as('owner', 'DELETE', `/api/v1/pages/${pageId}/components/${box}/source`, undefined, 200)
    await bind(pageId, box)
    await fx.as('owner', 'POST', items(), { title: 'after the re-binding' }, 201)
    await until(() => shown(box), (value) => value === String(total + 1))
    await until(async () => [await rowsOf(box), await purges()], ([n, left]) => n === total + 1 && left === 0)

    // The component deleted takes its source; its rows follow.
    await fx.as('owner', 'DELETE', `/api/v1/pages/${pageId}/components/${box}`, undefined, 200)
    expect(await sql('select 1 from component_sources where component_id = $1', [box])).toEqual([])
    await until(() => rowsOf(box), (n) => n === 0)

    // So does a page.
    const page = (await fx.as('owner', 'POST', '/api/v1/pages', { name: `purge-${Date.now()}`, title: 'Purge' }, 201)).id as string
    const other = await newBox(page)
    await bind(page, other)
    await until(() => rowsOf(other), (n) => n === total + 1)
    await fx.as('owner', 'DELETE', `/api/v1/pages/${page}`, undefined, 200)
    expect(await sql('select 1 from component_sources where component_id = $1', [other])).toEqual([])
    await until(async () => [await rowsOf(other), await purges()], ([n, left]) => n === 0 && left === 0)
  })

  // Last: it adds 12,000 work items by SQL. Without statistics, the planner would read a source's
  // every row to find the changed ones: 200 ms at a million rows instead of 6 (bench/RESULTS.md).
  test('after a build of 12,000 rows the planner knows them: a recomputation finds the changed items by their key', async () => {
    const [{ top }] = await sql<{ top: number }>('select coalesce(max(number), 0)::int as top from work_items where project_id = $1', [fx.projectId])
    await sql(
      `insert into work_items (id, organization_id, project_id, number, title, status, priority, position, created_by)
        select gen_random_uuid(), $1, $2, $3 + n, 'bulk ' || n, 'todo', 0, $3 + n, $4 from generate_series(1, 12000) n`,
      [fx.organizationId, fx.projectId, top, fx.users.owner.id],
    )
    await sql('update work_item_counters set last_number = $2 where project_id = $1 and organization_id = $3', [fx.projectId, top + 12_000, fx.organizationId])
    const [{ total }] = await sql<{ total: number }>('select count(*)::int as total from work_items where project_id = $1', [fx.projectId])
    await fx.as('owner', 'PUT', source('horizontalBox'), { projectId: fx.projectId, measure: 'count' }, 200)
    await until(() => dataOf('horizontalBox'), (data) => data?.middleText?.value === String(total), 60_000)
    // The statement a recomputation runs for the changed items, planned as a prepared statement is:
    // generic (for any parameters, once it runs often) or custom (for these).
    const indexed = (componentId: string, plan: 'force_generic_plan' | 'force_custom_plan') =>
      api.service.core.db.transaction(async (tx) => {
        await queryText(tx, `set local plan_cache_mode = ${plan}`, [])
        await queryText(tx, 'prepare changed_rows (uuid, uuid, uuid[]) as delete from work_source_items where organization_id = $1 and component_id = $2 and work_item_id = any($3)', [])
        try {
          const explained = await queryText(tx, `explain (format json) execute changed_rows ('${fx.organizationId}', '${componentId}', '{${crypto.randomUUID()}}')`, [])
          return /"Index Cond":[^"]*"[^"]*work_item_id/.test(JSON.stringify(explained))
        } finally {
          await queryText(tx, 'deallocate changed_rows', [])
        }
      })
    expect(await until(() => indexed(component.horizontalBox!, 'force_generic_plan'), (yes) => yes)).toBe(true)
    // A source built since (not in the statistics' most common values) is looked up by key too.
    expect(await indexed(crypto.randomUUID(), 'force_custom_plan')).toBe(true)
  }, 120_000)
})
