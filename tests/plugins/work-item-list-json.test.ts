/**
 * Work-item list pages written by the database (`server.listPagesBuiltBy: 'database'`, the
 * default: one statement answers the page's JSON as one text) say exactly what the same pages
 * read as rows and encoded by the service say (`'service'`): two instances on one database, the
 * cache off on both, every shape of page compared — by number and by cursor, first, middle, last
 * and past the end, every sort and filter, labels and custom fields of every type, text that
 * needs escaping, timestamps to the millisecond, the list across projects and a saved view.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { sqlOn, timeLimit } from '../helpers/database'

let byDatabase: TestService
let byService: TestService
let fx: ProjectFixture
let adminKey: string
let viewId: string

const items = () => `/api/v1/projects/${fx.projectId}/work-items`

/** The same GET on both instances: both 200, and their status, meta and data, parsed, equal. */
async function same(path: string, key = fx.keys.viewer) {
  const [database, service] = await Promise.all([byDatabase.request('GET', path, { key }), byService.request('GET', path, { key })])
  expect({ path, status: database.status, errors: database.body.errors }).toEqual({ path, status: 200, errors: [] })
  const shown = (body: any) => ({ path, status: 200, data: body.data, meta: { ...body.meta, requestId: undefined } })
  expect(shown(database.body)).toEqual({ ...shown(service.body), status: service.status })
  return database.body as { data: any[]; meta: { nextCursor?: string | null; totalItems: number } }
}

beforeAll(async () => {
  byDatabase = await startTestService({ config: { server: { listCacheBytes: 0, listPagesBuiltBy: 'database' } } })
  byService = await startTestService({ database: byDatabase.database, config: { server: { listCacheBytes: 0, listPagesBuiltBy: 'service' } } })
  expect(byDatabase.service.core.lists.builtByDatabase).toBe(true)
  expect(byService.service.core.lists.builtByDatabase).toBe(false)
  fx = await createProjectFixture(byDatabase)
  const scopes = byDatabase.service.core.scopes.map((scope) => scope.name)
  adminKey = (await byDatabase.createKey((await byDatabase.createUser(fx.organizationId, 'administrator')).id, scopes)).secret
  const admin = async (path: string, body: unknown) => (await byDatabase.request('POST', path, { key: adminKey, body })).body.data
  const red = await admin('/api/v1/labels', { name: 'red "quoted" \\ label', color: '#ff0000' })
  const blue = await admin('/api/v1/labels', { name: 'blue ✓ ünïcödé' })
  const fields = [
    { key: 'notes', name: 'Notes', type: 'text' },
    { key: 'points', name: 'Points', type: 'number' },
    { key: 'due', name: 'Due', type: 'date' },
    { key: 'stage', name: 'Stage', type: 'single_select', options: [{ name: 'Backlog' }, { name: 'Doing' }] },
    { key: 'tags', name: 'Tags', type: 'multi_select', options: [{ name: 'ui' }, { name: 'api' }] },
    { key: 'reviewer', name: 'Reviewer', type: 'user' },
    { key: 'link', name: 'Link', type: 'url' },
  ]
  const defined: Record<string, any> = {}
  for (const field of fields) {
    defined[field.key] = await admin('/api/v1/custom-fields', field)
    await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/custom-fields`, { fieldId: defined[field.key].id }, 201)
  }
  const statuses = ['todo', 'in_progress', 'done', 'cancelled']
  // 23 items: every status, priority, assignee or none, due date or none, labels and fields on some,
  // text with quotes, backslashes, control characters, non-ASCII and astral characters.
  for (let index = 0; index < 23; index++) {
    const body: Record<string, unknown> = {
      title: [`Item ${index}`, 'tab\there "quoted" \\ back', 'line\nbreak \u0001\u001f', 'emoji 🚀 and ñ', '</script>&amp;'][index % 5],
      description: index % 3 ? null : `Description ${index} with “curly” quotes and \u2028 a separator`,
      status: statuses[index % 4],
      priority: index % 5,
      ...(index % 2 ? { assigneeId: fx.users.editor.id } : {}),
      ...(index % 4 === 1 ? { dueDate: `2027-0${1 + (index % 9)}-1${index % 10}` } : {}),
      ...(index % 3 === 0 ? { labels: index % 2 ? [red.id, blue.id] : [blue.id] } : {}),
    }
    if (index % 4 === 0)
      body.fields = {
        notes: `note ${index} "x"`,
        points: index * 1.5,
        due: '2027-02-03',
        stage: defined.stage.options[index % 2].id,
        tags: [defined.tags.options[0].id, defined.tags.options[1].id],
        reviewer: fx.users.viewer.id,
        link: `https://example.com/${index}?a=b&c=d`,
      }
    await fx.as('owner', 'POST', items(), body, 201)
  }
  // Timestamps whose microseconds round differently than they truncate (…999): written as the service writes them.
  await sqlOn(byDatabase)(`update work_items set updated_at = '2026-11-30 10:00:00.999999+00', created_at = '2026-11-30 09:00:00+00' where project_id = $1 and number in (1, 2)`, [fx.projectId])
  viewId = (await fx.as('viewer', 'POST', `/api/v1/projects/${fx.projectId}/views`, { name: 'Open', filters: { status: ['todo', 'in_progress'] }, sort: '-priority' }, 201)).id
}, timeLimit(120_000))

afterAll(async () => {
  await byService?.stop()
  await byDatabase?.stop()
})

describe('pages written by the database equal pages encoded by the service', () => {
  test('pages by number: first, middle, last, past the end, and sizes', async () => {
    for (const query of ['size=100', 'size=5', 'size=5&page=1', 'size=5&page=4', 'size=5&page=9', 'size=1&page=22', 'size=23', 'size=22']) await same(`${items()}?${query}`)
    const past = await same(`${items()}?size=5&page=9`)
    expect(past.data).toEqual([])
    expect(past.meta.totalItems).toBe(23)
  })

  test('every sort, walked by cursor to the end, the same items in the same order', async () => {
    for (const sort of ['', 'priority', '-priority', 'dueDate', '-dueDate', 'number', '-updatedAt', 'createdAt', 'priority,-dueDate', 'field.points', '-field.due', 'field.notes']) {
      const base = `${items()}?size=4${sort ? `&sort=${sort}` : ''}`
      let page = await same(base)
      const seen = [...page.data]
      while (page.meta.nextCursor) {
        page = await same(`${base}&cursor=${encodeURIComponent(page.meta.nextCursor)}`)
        seen.push(...page.data)
      }
      expect(seen.length).toBe(23)
      expect(new Set(seen.map((item) => item.id)).size).toBe(23)
    }
  })

  test('filters: status, assignee, priority, due date, labels, fields, and one that matches nothing', async () => {
    for (const query of [
      'status=todo,done',
      'assigneeId=me',
      `assigneeId=${fx.users.editor.id}`,
      'assigneeId=none',
      'priority=gte:2',
      'dueDate=none',
      'label=blue ✓ ünïcödé',
      'field.points=gt:3',
      'status=done&size=2',
      'status=done&size=2&page=1',
      'status=cancelled&assigneeId=none&priority=lt:0',
    ])
      await same(`${items()}?${query.replace(/ /g, '%20').replace(/✓/g, '%E2%9C%93').replace(/ü/g, '%C3%BC').replace(/ï/g, '%C3%AF').replace(/ö/g, '%C3%B6').replace(/é/g, '%C3%A9')}`)
  })

  test('labels, fields and escaped text arrive as the same values, timestamps to the millisecond', async () => {
    const { data } = await same(`${items()}?size=100&sort=number`)
    expect(data[0].updatedAt).toBe('2026-11-30T10:00:00.999Z')
    expect(data[0].createdAt).toBe('2026-11-30T09:00:00.000Z')
    expect(data.some((item) => item.labels.length === 2)).toBe(true)
    expect(data.find((item) => item.fields.points !== undefined)?.fields).toMatchObject({ points: 0, notes: 'note 0 "x"' })
    expect(data.map((item) => item.title)).toContain('line\nbreak \u0001\u001f')
  })

  test('the list across projects and a saved view', async () => {
    for (const query of ['size=100', 'size=3', 'sort=priority&size=7', `projectId=${fx.projectId}&status=todo`]) await same(`/api/v1/work-items?${query}`)
    await same(`${items()}?view=${viewId}&size=3`)
    await same(`${items()}?view=${viewId}&size=3&page=1`)
  })
})
