/**
 * Labels: the organization's labels, written by administrators only (a member is
 * refused, a case-insensitive duplicate name is 409 naming the label that has it) and read by
 * every member; another organization's label is nowhere (404 on read and write; on a work item
 * it is a body reference, 400 naming it, and the item writes nothing). Work items show their labels by name on create, GET and lists;
 * PATCH replaces the set; a rename shows on items already listed (no cached page serves the old
 * name); a delete leaves its items, without it; the `label` filter takes any of several names
 * with an exact total; every change is audited (label.*, and work_item.updated with the labels
 * before and after).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { timeLimit } from '../helpers/database'

let api: TestService
let fx: ProjectFixture
let adminKey: string
let otherAdminKey: string
const items = () => `/api/v1/projects/${fx.projectId}/work-items`
const admin = (method: string, path: string, body?: unknown) => api.request(method, path, { key: adminKey, body })

/** Creates a label as the administrator and returns it. */
async function label(name: string, color?: string) {
  const response = await admin('POST', '/api/v1/labels', color ? { name, color } : { name })
  expect(response.status).toBe(201)
  return response.body.data as { id: string; name: string; color: string }
}
const ref = (l: { id: string; name: string; color: string }) => ({ id: l.id, name: l.name, color: l.color })

/** The audit records of a resource, oldest first. */
const auditOf = (resourceId: string) =>
  queryRows<{ action: string; changes: any }>(api.service.core.db, sql`select action, changes from audit_logs where resource_id = ${resourceId} order by occurred_at, id`)
const countRows = async (table: 'work_items' | 'work_item_labels') =>
  (await queryRows<{ n: number }>(api.service.core.db, sql`select count(*)::int as n from ${sql.raw(table)} where organization_id = ${fx.organizationId}`))[0]!.n

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  const scopes = api.service.core.scopes.map((scope) => scope.name)
  adminKey = (await api.createKey((await api.createUser(fx.organizationId, 'administrator')).id, scopes)).secret
  const otherOrganization = await api.createOrganization()
  otherAdminKey = (await api.createKey((await api.createUser(otherOrganization, 'administrator')).id, scopes)).secret
}, timeLimit(60_000))
afterAll(() => api.stop())

describe('labels', () => {
  test('an administrator creates, renames, recolors and deletes; a member reads but is refused 403 on every write', async () => {
    const created = await admin('POST', '/api/v1/labels', { name: 'Docs', color: '#AABBCC' })
    expect(created.status).toBe(201)
    expect(created.body.data).toMatchObject({ name: 'Docs', color: '#aabbcc' })
    const plain = await label('Plain')
    expect(plain.color).toBe('#6b7280')
    const id = created.body.data.id

    for (const who of ['owner', 'editor', 'viewer'] as const) {
      expect(await fx.as(who, 'GET', `/api/v1/labels/${id}`)).toEqual(created.body.data)
      expect((await fx.as(who, 'GET', '/api/v1/labels')).map((l: { id: string }) => l.id)).toEqual(expect.arrayContaining([id, plain.id]))
      for (const [method, path, body] of [['POST', '/api/v1/labels', { name: `By ${who}` }], ['PATCH', `/api/v1/labels/${id}`, { name: 'Hijacked' }], ['DELETE', `/api/v1/labels/${id}`, undefined]] as const) {
        const refused = await fx.call(who, method, path, body)
        expect({ who, method, status: refused.status }).toEqual({ who, method, status: 403 })
      }
    }
    expect(await fx.as('viewer', 'GET', `/api/v1/labels/${id}`)).toMatchObject({ name: 'Docs', color: '#aabbcc' })

    const renamed = await admin('PATCH', `/api/v1/labels/${id}`, { name: 'Documentation' })
    expect(renamed.body.data).toMatchObject({ id, name: 'Documentation', color: '#aabbcc' })
    const recolored = await admin('PATCH', `/api/v1/labels/${id}`, { color: '#112233' })
    expect(recolored.body.data).toMatchObject({ id, name: 'Documentation', color: '#112233' })
    // The list the members read above (a cached page) shows the change.
    expect((await fx.as('viewer', 'GET', '/api/v1/labels')).find((l: { id: string }) => l.id === id)).toEqual(recolored.body.data)
    expect((await admin('PATCH', `/api/v1/labels/${id}`, { color: 'red' })).status).toBe(400)
    expect((await admin('DELETE', `/api/v1/labels/${id}`)).status).toBe(200)
    expect((await admin('GET', `/api/v1/labels/${id}`)).status).toBe(404)

    expect((await auditOf(id)).map((record) => [record.action, record.changes])).toEqual([
      ['label.created', { after: { name: 'Docs', color: '#aabbcc' } }],
      ['label.updated', { before: { name: 'Docs' }, after: { name: 'Documentation' } }],
      ['label.updated', { before: { color: '#aabbcc' }, after: { color: '#112233' } }],
      ['label.deleted', { before: { name: 'Documentation', color: '#112233' } }],
    ])
  })

  test('a duplicate name, in any case, is 409 naming the label that has it, on create and on rename', async () => {
    const bug = await label('Bug')
    const other = await label('Feature')
    for (const name of ['Bug', 'bug', 'BUG']) {
      const duplicate = await admin('POST', '/api/v1/labels', { name })
      expect(duplicate.status).toBe(409)
      expect(duplicate.body.errors[0]).toMatchObject({ code: 'CONFLICT', field: 'name', existingId: bug.id })
    }
    const rename = await admin('PATCH', `/api/v1/labels/${other.id}`, { name: 'bUg' })
    expect(rename.status).toBe(409)
    expect(rename.body.errors[0].existingId).toBe(bug.id)
    // Its own name in another case is no conflict.
    expect((await admin('PATCH', `/api/v1/labels/${bug.id}`, { name: 'BUG' })).body.data.name).toBe('BUG')
    // The same name in another organization is no conflict either.
    expect((await api.request('POST', '/api/v1/labels', { key: otherAdminKey, body: { name: 'Feature' } })).status).toBe(201)
  })

  test("another organization's label is 404 on get, patch and delete, and 400 naming it on a work item (nothing written)", async () => {
    const foreign = (await api.request('POST', '/api/v1/labels', { key: otherAdminKey, body: { name: 'Theirs' } })).body.data
    const ours = await label('Ours')
    expect((await admin('GET', `/api/v1/labels/${foreign.id}`)).status).toBe(404)
    expect((await admin('PATCH', `/api/v1/labels/${foreign.id}`, { name: 'Stolen' })).status).toBe(404)
    expect((await admin('DELETE', `/api/v1/labels/${foreign.id}`)).status).toBe(404)
    // A member of this organization gets 404 too (not 403): the label does not exist for it.
    expect((await fx.call('owner', 'PATCH', `/api/v1/labels/${foreign.id}`, { name: 'Stolen' })).status).toBe(404)
    expect((await admin('GET', '/api/v1/labels?size=100')).body.data.map((l: { id: string }) => l.id)).not.toContain(foreign.id)
    expect((await api.request('GET', `/api/v1/labels/${foreign.id}`, { key: otherAdminKey })).body.data.name).toBe('Theirs')

    const before = { items: await countRows('work_items'), links: await countRows('work_item_labels') }
    const create = await fx.call('editor', 'POST', items(), { title: 'Smuggled', labels: [foreign.id] })
    expect(create.status).toBe(400)
    expect(create.body.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field: 'labels[0]' })
    const second = await fx.call('editor', 'POST', items(), { title: 'Smuggled', labels: [ours.id, foreign.id] })
    expect(second.status).toBe(400)
    expect(second.body.errors[0].field).toBe('labels[1]')
    const item = await fx.as('editor', 'POST', items(), { title: 'Clean', labels: [ours.id] }, 201)
    const patch = await fx.call('editor', 'PATCH', `${items()}/${item.id}`, { title: 'Changed', labels: [foreign.id] })
    expect(patch.status).toBe(400)
    expect(patch.body.errors[0].field).toBe('labels[0]')
    expect(await fx.as('viewer', 'GET', `${items()}/${item.id}`)).toMatchObject({ title: 'Clean', labels: [ref(ours)] })
    expect({ items: await countRows('work_items'), links: await countRows('work_item_labels') }).toEqual({ items: before.items + 1, links: before.links + 1 })
  })
})

describe('labels on work items', () => {
  test('shown by name on create, GET and list; PATCH replaces the set; audited before/after', async () => {
    const [zeta, alpha, mid] = [await label('zeta', '#000001'), await label('alpha', '#000002'), await label('mid', '#000003')]
    const item = await fx.as('editor', 'POST', items(), { title: 'Labelled', labels: [zeta.id, alpha.id, alpha.id.toUpperCase()] }, 201)
    expect(item.labels).toEqual([ref(alpha), ref(zeta)])
    expect((await fx.as('viewer', 'GET', `${items()}/${item.id}`)).labels).toEqual([ref(alpha), ref(zeta)])
    const listed = (await fx.as('viewer', 'GET', `${items()}?size=100`)).find((each: { id: string }) => each.id === item.id)
    expect(listed.labels).toEqual([ref(alpha), ref(zeta)])
    expect((await fx.as('editor', 'POST', items(), { title: 'Bare' }, 201)).labels).toEqual([])

    const replaced = await fx.as('editor', 'PATCH', `${items()}/${item.id}`, { labels: [mid.id, zeta.id] })
    expect(replaced.labels).toEqual([ref(mid), ref(zeta)])
    // The same set again changes nothing: no record, same updatedAt.
    const same = await fx.as('editor', 'PATCH', `${items()}/${item.id}`, { labels: [zeta.id, mid.id] })
    expect(same.updatedAt).toBe(replaced.updatedAt)
    // Other fields alone leave the labels.
    expect((await fx.as('editor', 'PATCH', `${items()}/${item.id}`, { title: 'Still labelled' })).labels).toEqual([ref(mid), ref(zeta)])
    const cleared = await fx.as('editor', 'PATCH', `${items()}/${item.id}`, { labels: [] })
    expect(cleared.labels).toEqual([])
    expect((await fx.call('editor', 'PATCH', `${items()}/${item.id}`, { labels: ['not-an-id'] })).status).toBe(400)
    const tooMany = await fx.call('editor', 'PATCH', `${items()}/${item.id}`, { labels: Array.from({ length: 51 }, () => mid.id) })
    expect(tooMany.status).toBe(400)
    expect(tooMany.body.errors[0].field).toBe('labels')

    const records = await auditOf(item.id)
    expect(records.map((record) => record.action)).toEqual(['work_item.created', 'work_item.updated', 'work_item.updated', 'work_item.updated'])
    expect(records[0]!.changes.after.labels).toEqual([ref(alpha), ref(zeta)])
    expect(records[1]!.changes).toEqual({ before: { labels: [ref(alpha), ref(zeta)] }, after: { labels: [ref(mid), ref(zeta)] } })
    expect(records[2]!.changes).toEqual({ before: { title: 'Labelled' }, after: { title: 'Still labelled' } })
    expect(records[3]!.changes).toEqual({ before: { labels: [ref(mid), ref(zeta)] }, after: { labels: [] } })
  })

  test('bulk create and bulk PATCH take labels as single writes do; a foreign one is 400 naming its item', async () => {
    const [one, two] = [await label('bulk-one'), await label('bulk-two')]
    const foreign = (await api.request('POST', '/api/v1/labels', { key: otherAdminKey, body: { name: 'bulk-foreign' } })).body.data
    const made = await fx.as('editor', 'POST', `${items()}/bulk`, { items: [{ title: 'B1', labels: [two.id, one.id] }, { title: 'B2' }] }, 200)
    expect(made.map((item: { labels: unknown }) => item.labels)).toEqual([[ref(one), ref(two)], []])
    const changed = await fx.as('editor', 'PATCH', `${items()}/bulk`, { items: [{ id: made[0].id, labels: [] }, { id: made[1].id, labels: [one.id] }] }, 200)
    expect(changed.map((item: { labels: unknown }) => item.labels)).toEqual([[], [ref(one)]])
    const refused = await fx.call('editor', 'PATCH', `${items()}/bulk`, { items: [{ id: made[0].id, labels: [two.id] }, { id: made[1].id, labels: [one.id, foreign.id] }] })
    expect(refused.status).toBe(400)
    expect(refused.body.errors.map((error: { field: string }) => error.field)).toEqual(['items[1].labels[1]'])
    expect((await fx.as('viewer', 'GET', `${items()}/${made[0].id}`)).labels).toEqual([])
  })

  test('a rename shows on items already listed and read; the old name no longer filters', async () => {
    const old = await label('needs-triage', '#ff0000')
    const item = await fx.as('editor', 'POST', items(), { title: 'Untriaged', labels: [old.id] }, 201)
    const path = `${items()}?label=needs-triage&size=5`
    const first = await fx.as('viewer', 'GET', path)
    expect(first.map((each: { id: string }) => each.id)).toEqual([item.id])
    const all = `${items()}?size=100`
    expect((await fx.as('viewer', 'GET', all)).find((each: { id: string }) => each.id === item.id).labels[0].name).toBe('needs-triage')

    expect((await admin('PATCH', `/api/v1/labels/${old.id}`, { name: 'triage', color: '#00ff00' })).status).toBe(200)
    const renamed = { id: old.id, name: 'triage', color: '#00ff00' }
    expect((await fx.as('viewer', 'GET', all)).find((each: { id: string }) => each.id === item.id).labels).toEqual([renamed])
    expect((await fx.as('viewer', 'GET', `${items()}/${item.id}`)).labels).toEqual([renamed])
    const stale = await fx.call('viewer', 'GET', path)
    expect(stale.body.data).toEqual([])
    expect(stale.body.meta.totalItems).toBe(0)
    expect((await fx.as('viewer', 'GET', `${items()}?label=triage`)).map((each: { id: string; labels: unknown }) => [each.id, each.labels])).toEqual([[item.id, [renamed]]])
  })

  test('a deleted label leaves its items, without it', async () => {
    const doomed = await label('doomed')
    const kept = await label('kept')
    const a = await fx.as('editor', 'POST', items(), { title: 'Carrier A', labels: [doomed.id, kept.id] }, 201)
    const b = await fx.as('editor', 'POST', items(), { title: 'Carrier B', labels: [doomed.id] }, 201)
    expect((await fx.as('viewer', 'GET', `${items()}?label=doomed`)).length).toBe(2)
    expect((await admin('DELETE', `/api/v1/labels/${doomed.id}`)).body.data).toEqual({ id: doomed.id })
    expect((await fx.as('viewer', 'GET', `${items()}/${a.id}`)).labels).toEqual([ref(kept)])
    expect((await fx.as('viewer', 'GET', `${items()}/${b.id}`))).toMatchObject({ title: 'Carrier B', labels: [] })
    const filtered = await fx.call('viewer', 'GET', `${items()}?label=doomed`)
    expect(filtered.body.data).toEqual([])
    expect(filtered.body.meta.totalItems).toBe(0)
    const links = await queryRows(api.service.core.db, sql`select 1 from work_item_labels where label_id = ${doomed.id}`)
    expect(links).toEqual([])
  })
})

describe('the label filter', () => {
  let project: ProjectFixture
  let made: { id: string; names: string[] }[] = []
  const path = () => `/api/v1/projects/${project.projectId}/work-items`
  beforeAll(async () => {
    project = await createProjectFixture(api, fx.organizationId)
    const byName: Record<string, string> = {}
    for (const name of ['f-red', 'f-blue', 'f-green']) byName[name] = (await label(name)).id
    const plan: string[][] = [['f-red'], ['f-blue'], ['f-red', 'f-blue'], ['f-green'], [], ['f-red'], ['f-blue', 'f-green'], [], ['f-red', 'f-green']]
    made = []
    for (const [i, names] of plan.entries()) made.push({ id: (await project.as('editor', 'POST', path(), { title: `F${i}`, labels: names.map((name) => byName[name]) }, 201)).id, names })
  }, timeLimit(30_000))

  /** The list of `query` matches the items carrying any of `names`, in content order, with the exact total. */
  async function expectMatches(query: string, names: string[]) {
    const expected = made.filter((item) => item.names.some((name) => names.includes(name))).map((item) => item.id)
    const page = await project.call('viewer', 'GET', `${path()}?${query}&size=2`)
    expect({ query, status: page.status, total: page.body.meta.totalItems }).toEqual({ query, status: 200, total: expected.length })
    const whole = await project.as('viewer', 'GET', `${path()}?${query}&size=100`)
    expect({ query, ids: whole.map((item: { id: string }) => item.id) }).toEqual({ query, ids: expected })
  }

  test.each([
    ['label=f-red', ['f-red']],
    ['label=f-blue', ['f-blue']],
    ['label=f-red,f-blue', ['f-red', 'f-blue']],
    ['label=f-green,f-red,f-blue', ['f-green', 'f-red', 'f-blue']],
    ['label=F-RED', []], // exact names
    ['label=nothing-like-it', []],
    ['label=f-red&status=done', []],
  ])('%s: any of the names, exactly, with an exact total', (query, names) => expectMatches(query, names))

  test('the parameter repeated is any of its values too (label=a&label=b)', async () => {
    await expectMatches('label=f-red&label=f-blue', ['f-red', 'f-blue'])
    await expectMatches('label=f-green&label=f-red', ['f-green', 'f-red'])
  })

  test('an empty name is 400 naming label', async () => {
    const empty = await project.call('viewer', 'GET', `${path()}?label=`)
    expect(empty.status).toBe(400)
    expect(empty.body.errors[0].field).toBe('label')
  })

  test('a name longer than a parameter may be is 400, alone or repeated (found by the fuzzer: it was a 500)', async () => {
    for (const query of [`label=${'a'.repeat(6000)}`, `label=a&label=${'a'.repeat(6000)}`]) {
      const long = await project.call('viewer', 'GET', `${path()}?${query}`)
      expect(long.status).toBe(400)
      expect(long.body.errors[0]).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('at most 2,000 characters') })
    }
  })
})
