/**
 * Custom fields over the HTTP API (and MCP): administrators define them (members read, another
 * organization's field is 404 at its path and 400 when a body names it), project owners enable
 * them; every field type takes a valid value on create, GET and list and refuses an invalid one
 * with a 400 naming `fields.<key>`; required fields, merging PATCHes, option renames and removals,
 * deleting and disabling remove exactly the values they should; `field.<key>` filters and sorts
 * agree with an oracle computed from every item, cursor walks return each match once, and MCP
 * answers as REST does.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

type Option = { id: string; name: string; color: string }
type Field = { id: string; key: string; name: string; type: string; options: Option[]; required: boolean }
type Item = { id: string; fields: Record<string, any> }

let api: TestService
let fx: ProjectFixture // organization A: owner, editor and viewer (members) of a project
let other: ProjectFixture // organization B
let adminKey: string
let otherAdminKey: string
let http: Listening
let mcp: Client
const f: Record<string, Field> = {}
const DEFS = '/api/v1/custom-fields'
const itemsOf = (projectId = fx.projectId) => `/api/v1/projects/${projectId}/work-items`
const enabledOf = (projectId = fx.projectId) => `/api/v1/projects/${projectId}/custom-fields`
const admin = (method: string, path: string, body?: unknown) => api.request(method, path, { key: adminKey, body })
const option = (key: string, name: string) => f[key]!.options.find((candidate) => candidate.name === name)!
const keysOf = (fields: Field[]) => fields.map((field) => field.key)

async function define(body: Record<string, unknown>): Promise<Field> {
  const response = await admin('POST', DEFS, body)
  expect(response.status).toBe(201)
  return (f[response.body.data.key] = response.body.data)
}
const enable = (projectId: string, key: string) => fx.as('owner', 'POST', enabledOf(projectId), { fieldId: f[key]!.id }, 201)
const newProject = async (name: string): Promise<string> => (await fx.as('owner', 'POST', '/api/v1/projects', { name })).id
const create = (fields: Record<string, unknown>, projectId = fx.projectId, title = 'Item'): Promise<Item> => fx.as('owner', 'POST', itemsOf(projectId), { title, fields }, 201)
/** The item as GET shows it (the viewer is a member of the fixture's project only). */
const read = (id: string, projectId = fx.projectId): Promise<Item> => fx.as(projectId === fx.projectId ? 'viewer' : 'owner', 'GET', `${itemsOf(projectId)}/${id}`)
/** The item as the project's list shows it (owner: a member of every project here). */
const listed = async (id: string, projectId = fx.projectId): Promise<Item> => (await fx.as('owner', 'GET', `${itemsOf(projectId)}?size=100`)).find((item: Item) => item.id === id)
const fieldErrors = (response: { body: any }) => response.body.errors.map((error: { field: string }) => error.field).sort()

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  other = await createProjectFixture(api)
  const scopes = api.service.core.scopes.map((scope) => scope.name)
  adminKey = (await api.createKey((await api.createUser(fx.organizationId, 'administrator')).id, scopes)).secret
  otherAdminKey = (await api.createKey((await api.createUser(other.organizationId, 'administrator')).id, scopes)).secret
  await define({ key: 'notes', name: 'Notes', type: 'text' })
  await define({ key: 'points', name: 'Points', type: 'number' })
  await define({ key: 'due', name: 'Due', type: 'date' })
  await define({ key: 'stage', name: 'Stage', type: 'single_select', options: [{ name: 'Backlog' }, { name: 'Doing', color: '#FF0000' }, { name: 'Shipped' }] })
  await define({ key: 'tags', name: 'Tags', type: 'multi_select', options: [{ name: 'ui' }, { name: 'api' }, { name: 'db' }] })
  await define({ key: 'reviewer', name: 'Reviewer', type: 'user' })
  await define({ key: 'link', name: 'Link', type: 'url' })
  for (const key of ['notes', 'points', 'due', 'stage', 'tags', 'reviewer', 'link']) await enable(fx.projectId, key)
  http = listen(api)
  mcp = await connectMcp(http.url, fx.keys.owner)
}, timeLimit(60_000))
afterAll(async () => {
  await mcp?.close()
  http?.stop()
  await api?.stop()
})

describe('definitions', () => {
  test('only administrators create; a duplicate key is 409 naming the existing field', async () => {
    expect((await fx.call('owner', 'POST', DEFS, { key: 'size', name: 'Size', type: 'text' })).status).toBe(403)
    expect(f.stage!.options.map((o) => [o.name, o.color])).toEqual([['Backlog', '#6b7280'], ['Doing', '#ff0000'], ['Shipped', '#6b7280']])
    const duplicate = await admin('POST', DEFS, { key: 'points', name: 'Other points', type: 'text' })
    expect(duplicate.status).toBe(409)
    expect(duplicate.body.errors).toEqual([expect.objectContaining({ code: 'CONFLICT', field: 'key', existingId: f.points!.id })])
    expect((await admin('GET', `${DEFS}/${f.points!.id}`)).body.data).toEqual(f.points)
  })

  test('members list and read definitions but may not change them', async () => {
    const list = await fx.call('viewer', 'GET', `${DEFS}?size=50`)
    expect(list.status).toBe(200)
    expect(keysOf(list.body.data)).toEqual(expect.arrayContaining(['due', 'link', 'notes', 'points', 'reviewer', 'stage', 'tags']))
    expect(await fx.as('viewer', 'GET', `${DEFS}/${f.tags!.id}`)).toEqual(f.tags)
    expect((await fx.call('owner', 'PATCH', `${DEFS}/${f.notes!.id}`, { name: 'Mine' })).status).toBe(403)
    expect((await fx.call('owner', 'DELETE', `${DEFS}/${f.notes!.id}`)).status).toBe(403)
  })

  test("another organization's field is 404 on get, patch and delete, 400 naming fieldId when enabled, and stays unchanged", async () => {
    const secret = await api.request('POST', DEFS, { key: otherAdminKey, body: { key: 'secret', name: 'Secret', type: 'text' } })
    expect(secret.status).toBe(201)
    const path = `${DEFS}/${secret.body.data.id}`
    expect((await fx.call('viewer', 'GET', path)).status).toBe(404)
    expect((await admin('GET', path)).status).toBe(404)
    expect((await admin('PATCH', path, { name: 'Stolen' })).status).toBe(404)
    expect((await admin('DELETE', path)).status).toBe(404)
    const enabled = await fx.call('owner', 'POST', enabledOf(), { fieldId: secret.body.data.id })
    expect(enabled.status).toBe(400)
    expect(enabled.body.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field: 'fieldId' })
    expect(keysOf(await fx.as('viewer', 'GET', `${DEFS}?size=50`))).not.toContain('secret')
    expect(keysOf(await fx.as('viewer', 'GET', `${enabledOf()}?size=50`))).not.toContain('secret')
    expect((await api.request('GET', path, { key: otherAdminKey })).body.data).toEqual(secret.body.data)
  })

  test('PATCH renames but refuses a key or a type', async () => {
    for (const body of [{ key: 'story_points' }, { type: 'text' }, { name: 'Story points', key: 'story_points' }]) expect((await admin('PATCH', `${DEFS}/${f.points!.id}`, body)).status).toBe(400)
    const renamed = await admin('PATCH', `${DEFS}/${f.points!.id}`, { name: 'Story points' })
    expect(renamed.status).toBe(200)
    expect(renamed.body.data).toMatchObject({ id: f.points!.id, key: 'points', type: 'number', name: 'Story points' })
  })
})

describe('enabling per project', () => {
  test('only owners enable; the project lists its enabled fields', async () => {
    const extra = await define({ key: 'extra', name: 'Extra', type: 'text' })
    expect((await fx.call('editor', 'POST', enabledOf(), { fieldId: extra.id })).status).toBe(403)
    expect((await fx.call('viewer', 'POST', enabledOf(), { fieldId: extra.id })).status).toBe(403)
    expect(keysOf(await fx.as('viewer', 'GET', `${enabledOf()}?size=50`))).toEqual(['due', 'link', 'notes', 'points', 'reviewer', 'stage', 'tags'])
    expect(await enable(fx.projectId, 'extra')).toMatchObject({ id: extra.id, key: 'extra' })
    expect(keysOf(await fx.as('viewer', 'GET', `${enabledOf()}?size=50`))).toEqual(['due', 'extra', 'link', 'notes', 'points', 'reviewer', 'stage', 'tags'])
    expect((await fx.call('editor', 'DELETE', `${enabledOf()}/${extra.id}`)).status).toBe(403)
    await fx.as('owner', 'DELETE', `${enabledOf()}/${extra.id}`)
    expect(keysOf(await fx.as('viewer', 'GET', `${enabledOf()}?size=50`))).not.toContain('extra')
  })
})

describe('values', () => {
  const allowed = (key: string) => f[key]!.options.map((o) => `${o.id} (${o.name})`)
  // [key, a valid value, an invalid one, what its message says] (thunks: the fields exist once beforeAll ran).
  const cases: [string, () => unknown, () => unknown, () => string[]][] = [
    ['notes', () => 'Some text', () => '', () => ['A text of 1 to 1000']],
    ['points', () => 2.5, () => '3', () => ['A number']],
    ['due', () => '2027-02-28', () => '2027-02-30', () => ['YYYY-MM-DD']],
    ['stage', () => option('stage', 'Doing').id, () => 'Doing', () => allowed('stage')],
    ['tags', () => [option('tags', 'api').id, option('tags', 'ui').id], () => option('tags', 'ui').id, () => allowed('tags')],
    ['reviewer', () => fx.users.editor.id, () => 'someone', () => ['A user id']],
    ['link', () => 'https://example.com/a?b=1', () => 'ftp://example.com/a', () => ['http or https URL']],
  ]

  test.each(cases)('%s: a valid value is shown on create, GET and list; an invalid one is 400 naming it and stores nothing', async (key, valid, invalid, message) => {
    const item = await create({ [key]: valid() })
    expect(item.fields).toEqual({ [key]: valid() })
    expect((await read(item.id)).fields).toEqual({ [key]: valid() })
    expect((await listed(item.id)).fields).toEqual({ [key]: valid() })
    const before = (await fx.call('viewer', 'GET', itemsOf())).body.meta.totalItems
    const bad = await fx.call('editor', 'POST', itemsOf(), { title: 'Bad', fields: { [key]: invalid() } })
    expect(bad.status).toBe(400)
    expect(bad.body.errors).toHaveLength(1)
    expect(bad.body.errors[0].field).toBe(`fields.${key}`)
    for (const part of message()) expect(bad.body.errors[0].message).toContain(part)
    expect((await fx.call('viewer', 'GET', itemsOf())).body.meta.totalItems).toBe(before)
  })

  test('a bad entry of a multi select names its index; option ids are taken in any case, duplicates once', async () => {
    const bad = await fx.call('editor', 'POST', itemsOf(), { title: 'Bad', fields: { tags: [option('tags', 'ui').id, 'db'] } })
    expect(bad.status).toBe(400)
    expect(bad.body.errors[0]).toMatchObject({ field: 'fields.tags[1]', message: expect.stringContaining(`${option('tags', 'db').id} (db)`) })
    const item = await create({ tags: [option('tags', 'db').id.toUpperCase(), option('tags', 'db').id], stage: option('stage', 'Backlog').id.toUpperCase() })
    expect(item.fields).toEqual({ stage: option('stage', 'Backlog').id, tags: [option('tags', 'db').id] })
  })

  test('several bad values are one 400 naming each; unknown and not enabled keys are named', async () => {
    const several = await fx.call('editor', 'POST', itemsOf(), { title: 'Bad', fields: { points: 'x', due: 'soon', link: 'mailto:a@b.c', notes: 'fine' } })
    expect(several.status).toBe(400)
    expect(fieldErrors(several)).toEqual(['fields.due', 'fields.link', 'fields.points'])
    const unknown = await fx.call('editor', 'POST', itemsOf(), { title: 'Bad', fields: { nope: 1, also: 'x', notes: 'fine' } })
    expect(unknown.status).toBe(400)
    expect(fieldErrors(unknown)).toEqual(['fields.also', 'fields.nope'])
    expect(unknown.body.errors[0].message).toContain('enabled: due, link, notes, points, reviewer, stage, tags')
    const disabled = await fx.call('editor', 'POST', itemsOf(), { title: 'Bad', fields: { extra: 'defined, not enabled' } })
    expect(disabled.status).toBe(400)
    expect(fieldErrors(disabled)).toEqual(['fields.extra'])
  })

  test('a required field: missing or null on create is 400, null on PATCH is 400, a change is fine', async () => {
    const projectId = await newProject('Required')
    await define({ key: 'severity', name: 'Severity', type: 'single_select', required: true, options: [{ name: 'Low' }, { name: 'High' }] })
    await enable(projectId, 'severity')
    await enable(projectId, 'notes')
    for (const fields of [undefined, {}, { notes: 'x' }, { severity: null }]) {
      const response = await fx.call('owner', 'POST', itemsOf(projectId), { title: 'No severity', ...(fields ? { fields } : {}) })
      expect(response.status).toBe(400)
      expect(fieldErrors(response)).toEqual(['fields.severity'])
    }
    const item = await create({ severity: option('severity', 'Low').id }, projectId)
    const cleared = await fx.call('owner', 'PATCH', `${itemsOf(projectId)}/${item.id}`, { fields: { severity: null, notes: 'x' } })
    expect(cleared.status).toBe(400)
    expect(fieldErrors(cleared)).toEqual(['fields.severity'])
    expect((await read(item.id, projectId)).fields).toEqual({ severity: option('severity', 'Low').id })
    const changed = await fx.as('owner', 'PATCH', `${itemsOf(projectId)}/${item.id}`, { fields: { severity: option('severity', 'High').id } })
    expect(changed.fields).toEqual({ severity: option('severity', 'High').id })
    // Not enabled in the first project: refused there.
    expect(fieldErrors(await fx.call('owner', 'POST', itemsOf(), { title: 'x', fields: { severity: option('severity', 'Low').id } }))).toEqual(['fields.severity'])
  })

  test('PATCH merges: named keys change, null clears one, others stay', async () => {
    const item = await create({ notes: 'a', points: 1, due: '2027-01-01', reviewer: fx.users.editor.id })
    const patched = await fx.as('editor', 'PATCH', `${itemsOf()}/${item.id}`, { fields: { points: 8, notes: null } })
    expect(patched.fields).toEqual({ due: '2027-01-01', points: 8, reviewer: fx.users.editor.id })
    const retitled = await fx.as('editor', 'PATCH', `${itemsOf()}/${item.id}`, { title: 'Renamed' })
    expect(retitled.fields).toEqual(patched.fields)
    expect((await listed(item.id)).fields).toEqual(patched.fields)
  })

  test("a user of another organization is 400 (not an active user of yours) and never stored", async () => {
    const item = await create({ reviewer: fx.users.viewer.id })
    const fields = { reviewer: other.users.owner.id }
    for (const [method, path, body] of [['PATCH', `${itemsOf()}/${item.id}`, { fields }], ['POST', itemsOf(), { title: 'x', fields }]] as const) {
      const response = await fx.call('editor', method, path, body)
      expect(response.status).toBe(400)
      expect(response.body.errors).toEqual([expect.objectContaining({ field: 'fields.reviewer', message: 'No active user with this id in your organization.' })])
    }
    expect((await read(item.id)).fields).toEqual({ reviewer: fx.users.viewer.id })
  })
})

describe('option changes, deleting and disabling', () => {
  test('a renamed option keeps its id and values; a removed one leaves every value', async () => {
    await define({ key: 'phase', name: 'Phase', type: 'single_select', options: [{ name: 'A' }, { name: 'B' }, { name: 'C' }] })
    await define({ key: 'areas', name: 'Areas', type: 'multi_select', options: [{ name: 'x' }, { name: 'y' }, { name: 'z' }] })
    await enable(fx.projectId, 'phase')
    await enable(fx.projectId, 'areas')
    const [a, b, c] = f.phase!.options as [Option, Option, Option]
    const [x, y, z] = f.areas!.options as [Option, Option, Option]
    const one = await create({ phase: a.id, areas: [x.id, y.id] })
    const two = await create({ phase: b.id, areas: [y.id] })
    const three = await create({ phase: c.id, areas: [z.id, x.id] })
    await listed(one.id) // a cached list page must not outlive the change
    const renamed = await admin('PATCH', `${DEFS}/${f.phase!.id}`, { options: [{ id: a.id, name: 'Alpha', color: '#00ff00' }, { id: b.id, name: 'B' }, { id: c.id, name: 'C' }] })
    expect(renamed.status).toBe(200)
    expect(renamed.body.data.options).toEqual([{ id: a.id, name: 'Alpha', color: '#00ff00' }, b, c])
    expect((await read(one.id)).fields.phase).toBe(a.id)
    const byName = await fx.as('viewer', 'GET', `${itemsOf()}?field.phase=Alpha`)
    expect(byName.map((item: Item) => item.id)).toEqual([one.id])
    expect((await fx.call('viewer', 'GET', `${itemsOf()}?field.phase=A`)).status).toBe(400)

    expect((await admin('PATCH', `${DEFS}/${f.phase!.id}`, { options: [{ id: a.id, name: 'Alpha' }, { id: c.id, name: 'C' }] })).status).toBe(200)
    expect((await admin('PATCH', `${DEFS}/${f.areas!.id}`, { options: [{ id: x.id, name: 'x' }, { id: z.id, name: 'z' }, { name: 'w' }] })).status).toBe(200)
    for (const get of [read, listed]) {
      expect((await get(one.id)).fields).toEqual({ phase: a.id, areas: [x.id] })
      expect((await get(two.id)).fields).toEqual({})
      expect((await get(three.id)).fields).toEqual({ phase: c.id, areas: [z.id, x.id] })
    }
    expect(fieldErrors(await fx.call('editor', 'PATCH', `${itemsOf()}/${one.id}`, { fields: { phase: b.id } }))).toEqual(['fields.phase'])
    expect(fieldErrors(await fx.call('editor', 'PATCH', `${itemsOf()}/${one.id}`, { fields: { areas: [x.id, y.id] } }))).toEqual(['fields.areas[1]'])
    expect((await fx.as('viewer', 'GET', `${itemsOf()}?field.areas=${x.id}`)).map((item: Item) => item.id)).toEqual([one.id, three.id])
  })

  test("disabling removes the values of that project's items only; deleting the definition removes every value", async () => {
    const temp = await define({ key: 'temp', name: 'Temp', type: 'text' })
    const second = await newProject('Second')
    await enable(fx.projectId, 'temp')
    await enable(second, 'temp')
    const here = await create({ temp: 'one', notes: 'kept' })
    const there = await create({ temp: 'two' }, second)
    expect((await listed(here.id)).fields).toEqual({ notes: 'kept', temp: 'one' })
    expect((await listed(there.id, second)).fields).toEqual({ temp: 'two' })
    expect((await fx.call('editor', 'DELETE', `${enabledOf()}/${temp.id}`)).status).toBe(403)
    await fx.as('owner', 'DELETE', `${enabledOf()}/${temp.id}`)
    expect((await read(here.id)).fields).toEqual({ notes: 'kept' })
    expect((await listed(here.id)).fields).toEqual({ notes: 'kept' })
    expect((await read(there.id, second)).fields).toEqual({ temp: 'two' })
    expect((await fx.as('owner', 'GET', `${itemsOf(second)}?field.temp=two`)).map((item: Item) => item.id)).toEqual([there.id])
    expect(keysOf(await fx.as('owner', 'GET', enabledOf(second)))).toEqual(['temp'])
    expect(fieldErrors(await fx.call('editor', 'PATCH', `${itemsOf()}/${here.id}`, { fields: { temp: 'again' } }))).toEqual(['fields.temp'])

    expect((await admin('DELETE', `${DEFS}/${temp.id}`)).status).toBe(200)
    expect((await read(there.id, second)).fields).toEqual({})
    expect((await listed(there.id, second)).fields).toEqual({})
    expect((await read(here.id)).fields).toEqual({ notes: 'kept' })
    expect((await admin('GET', `${DEFS}/${temp.id}`)).status).toBe(404)
    expect(await fx.as('owner', 'GET', enabledOf(second))).toEqual([])
    expect((await fx.call('owner', 'GET', `${itemsOf(second)}?field.temp=two`)).status).toBe(400)
  })
})

describe('list filters and sorts', () => {
  let listId: string
  let all: Item[] = []
  const ids = (items: Item[]) => items.map((item) => item.id)
  const compare = (a: unknown, b: unknown) => (a === b ? 0 : a === undefined ? 1 : b === undefined ? -1 : (a as never) < (b as never) ? -1 : 1)

  beforeAll(async () => {
    listId = await newProject('Lists')
    for (const key of ['notes', 'points', 'due', 'stage', 'tags', 'reviewer']) await enable(listId, key)
    const stages = ['Backlog', 'Doing', 'Shipped'].map((name) => option('stage', name).id)
    const tags = [['ui'], ['api'], ['ui', 'db'], undefined].map((names) => names?.map((name) => option('tags', name).id))
    for (let i = 0; i < 15; i++) {
      const fields: Record<string, unknown> = {
        points: i % 4 === 3 ? undefined : [0, 1, 2.5, 3, 4, 5][i % 6],
        due: i % 3 === 0 ? undefined : `2027-0${1 + (i % 6)}-15`,
        stage: i % 5 === 4 ? undefined : stages[i % 3],
        tags: tags[i % 4],
        notes: i % 2 ? 'alpha' : 'beta',
        reviewer: i % 3 === 0 ? fx.users.owner.id : i % 3 === 1 ? fx.users.editor.id : undefined,
      }
      await create(JSON.parse(JSON.stringify(fields)), listId, `Item ${i}`)
    }
    all = await fx.as('owner', 'GET', `${itemsOf(listId)}?size=100`)
    expect(all).toHaveLength(15)
  }, timeLimit(60_000))

  /** Walks a list by cursor, `size` at a time; returns the ids in order. */
  async function walk(query: string, size: number, projectId = listId) {
    const seen: string[] = []
    let cursor: string | null = null
    for (let page = 0; page < 50; page++) {
      const response = await fx.call('owner', 'GET', `${itemsOf(projectId)}?size=${size}&${query}${cursor ? `&cursor=${cursor}` : ''}`)
      expect({ query, status: response.status }).toEqual({ query, status: 200 })
      seen.push(...ids(response.body.data))
      cursor = response.body.meta.nextCursor
      if (!cursor) break
    }
    return seen
  }

  const stage = (name: string) => option('stage', name).id
  const tag = (name: string) => option('tags', name).id
  const cases: [string, () => string, (fields: Record<string, any>) => boolean][] = [
    ['number gte', () => 'field.points=gte:3', (v) => v.points >= 3],
    ['number range', () => 'field.points=gt:0,lte:2.5', (v) => v.points > 0 && v.points <= 2.5],
    ['number equal', () => 'field.points=2.5', (v) => v.points === 2.5],
    ['date range', () => 'field.due=gte:2027-02-01,lt:2027-05-01', (v) => v.due >= '2027-02-01' && v.due < '2027-05-01'],
    ['select by name', () => 'field.stage=Doing', (v) => v.stage === stage('Doing')],
    ['select by id', () => `field.stage=${stage('Shipped')}`, (v) => v.stage === stage('Shipped')],
    ['select any of name and id', () => `field.stage=Backlog,${stage('Shipped')}`, (v) => [stage('Backlog'), stage('Shipped')].includes(v.stage)],
    ['multi select any of', () => 'field.tags=api,db', (v) => (v.tags ?? []).some((id: string) => [tag('api'), tag('db')].includes(id))],
    ['text equality', () => 'field.notes=alpha', (v) => v.notes === 'alpha'],
    ['user', () => `field.reviewer=${fx.users.editor.id}`, (v) => v.reviewer === fx.users.editor.id],
    ['several fields and a built-in filter', () => 'field.points=gte:1&field.stage=Backlog,Doing&field.notes=beta&status=todo', (v) => v.points >= 1 && [stage('Backlog'), stage('Doing')].includes(v.stage) && v.notes === 'beta'],
  ]

  test.each(cases)('%s: exactly the matching items with their total, and a cursor walk returns each once', async (_name, query, matches) => {
    const expected = ids(all.filter((item) => matches(item.fields)))
    expect(expected.length).toBeGreaterThan(0)
    expect(expected.length).toBeLessThan(all.length)
    const response = await fx.call('owner', 'GET', `${itemsOf(listId)}?${query()}&size=100`)
    expect(response.status).toBe(200)
    expect(ids(response.body.data)).toEqual(expected)
    expect(response.body.meta.totalItems).toBe(expected.length)
    expect(await walk(query(), 2)).toEqual(expected)
  })

  test.each([
    ['field.points', (a: Item, b: Item) => compare(a.fields.points, b.fields.points) || compare(a.id, b.id)],
    // Without a value sorts as the largest value, as `dueDate` does: last ascending, first descending.
    ['-field.points', (a: Item, b: Item) => compare(b.fields.points, a.fields.points) || compare(b.id, a.id)],
    ['field.due,-field.points', (a: Item, b: Item) => compare(a.fields.due, b.fields.due) || compare(b.fields.points, a.fields.points) || compare(b.id, a.id)],
    ['-field.notes,number', (a: Item, b: Item) => compare(b.fields.notes, a.fields.notes) || all.indexOf(a) - all.indexOf(b)],
  ])('sort=%s orders the list and a cursor walk of 2 returns it exactly', async (sort, order) => {
    const expected = ids([...all].sort(order))
    expect(ids(await fx.as('owner', 'GET', `${itemsOf(listId)}?sort=${sort}&size=100`))).toEqual(expected)
    expect(await walk(`sort=${sort}`, 2)).toEqual(expected)
    const filtered = ids([...all].sort(order).filter((item) => item.fields.points >= 1))
    expect(await walk(`sort=${sort}&field.points=gte:1`, 2)).toEqual(filtered)
  })

  test('a cursor walk sorted by text or url fields of long values continues to the end', async () => {
    const projectId = await newProject('Long texts')
    await enable(projectId, 'notes')
    await enable(projectId, 'link')
    const made: Record<string, string> = {}
    for (const letter of ['c', 'a', 'b']) made[letter] = (await create({ notes: letter.repeat(1000), link: `https://example.com/${letter.repeat(1900)}` }, projectId)).id
    for (const sort of ['field.notes', '-field.link', 'field.link,field.notes'])
      expect(await walk(`sort=${sort}`, 1, projectId)).toEqual(sort.startsWith('-') ? [made.c, made.b, made.a] : [made.a, made.b, made.c])
  })

  test('sort=field.points puts items without a value last', async () => {
    const sorted = await fx.as('owner', 'GET', `${itemsOf(listId)}?sort=field.points&size=100`)
    const without = all.filter((item) => item.fields.points === undefined).length
    expect(without).toBeGreaterThan(0)
    expect(sorted.slice(-without).every((item: Item) => item.fields.points === undefined)).toBe(true)
    expect(sorted.slice(0, -without).every((item: Item) => typeof item.fields.points === 'number')).toBe(true)
  })

  test.each([
    ['field.nope=1', 'field.nope', ['field.points', 'field.stage', 'field.tags', 'status']],
    ['field.points=abc', 'field.points', ['numbers']],
    ['field.stage=Nope', 'field.stage', ['Backlog', 'Doing', 'Shipped']],
    ['field.reviewer=someone', 'field.reviewer', ['UUID']],
    ['field.due=gte:2027-13-01', 'field.due', ['YYYY-MM-DD']],
    ['sort=field.stage', 'sort', ['field.points']],
  ])('%s is 400 naming %s', async (query, field, parts) => {
    const response = await fx.call('owner', 'GET', `${itemsOf(listId)}?${query}`)
    expect(response.status).toBe(400)
    const error = response.body.errors.find((item: { field?: string }) => item.field === field)
    expect(error).toBeDefined()
    for (const part of parts) expect(error.message).toContain(part)
  })

  test.each([
    [{ 'field.points': 'gte:3' }, 'field.points=gte:3'],
    [{ 'field.stage': 'Doing,Shipped', sort: '-field.points' }, 'field.stage=Doing,Shipped&sort=-field.points'],
    [{ 'field.tags': 'api,db', 'field.notes': 'beta' }, 'field.tags=api,db&field.notes=beta'],
  ])('MCP list_work_items %j answers as REST', async (args, query) => {
    const rest = await fx.call('owner', 'GET', `${itemsOf(listId)}?${query}&size=3`)
    expect(rest.body.data.length).toBeGreaterThan(0)
    const tool = await callTool(mcp, 'list_work_items', { projectId: listId, size: 3, ...args })
    expect(tool.isError).toBe(false)
    expect(tool.data.items).toEqual(rest.body.data)
    const { requestId: _requestId, ...meta } = rest.body.meta
    expect(tool.data.meta).toEqual(meta)
    if (meta.nextCursor) {
      const next = await callTool(mcp, 'list_work_items', { projectId: listId, size: 3, ...args, cursor: meta.nextCursor })
      expect(next.data.items).toEqual((await fx.call('owner', 'GET', `${itemsOf(listId)}?${query}&size=3&cursor=${meta.nextCursor}`)).body.data)
    }
    const bad = await callTool(mcp, 'list_work_items', { projectId: listId, 'field.nope': '1' })
    expect(bad.isError).toBe(true)
    expect(bad.code).toBe('BAD_REQUEST')
    expect(JSON.stringify(bad.data)).toContain('field.nope')
  })
})
