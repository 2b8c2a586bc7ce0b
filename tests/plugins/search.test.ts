import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { prefixQuery, substringPattern } from '../../plugins/search/service'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: ProjectFixture
const ids: Record<string, string> = {}

beforeAll(async () => {
  api = await startTestService()
  fx = await createProjectFixture(api)
  const item = async (name: string, title: string, description?: string) =>
    (ids[name] = (await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title, description }, 201)).id)
  await item('w1', 'Login page redesign', 'Improve the auth flow')
  await item('w2', 'Payment refactor', 'the login form needs validation')
  await item('w3', 'Authentication service')
  await item('w4', 'Misc', 'nothing to see')
  ids.e1 = (await fx.as('editor', 'POST', `/api/v1/work-items/${ids.w4}/entries`, { body: 'discussed the login bug' }, 201)).id
  ids.e2 = (await fx.as('editor', 'POST', `/api/v1/work-items/${ids.w4}/entries`, { body: 'unrelated remark' }, 201)).id
  ids.r1 = (await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/relationships`, { sourceWorkItemId: ids.w4, targetWorkItemId: ids.w2, type: 'blocks' }, 201)).id
  ids.r2 = (await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/relationships`, { sourceWorkItemId: ids.w3, targetWorkItemId: ids.w4, type: 'relates_to' }, 201)).id
  // The same words elsewhere: another project of the organization, and another organization.
  const sibling = await createProjectFixture(api, fx.organizationId)
  await sibling.as('owner', 'POST', `/api/v1/projects/${sibling.projectId}/work-items`, { title: 'Login elsewhere' }, 201)
  const stranger = await createProjectFixture(api)
  await stranger.as('owner', 'POST', `/api/v1/projects/${stranger.projectId}/work-items`, { title: 'Login abroad' }, 201)
})
afterAll(() => api.stop())

const search = async (query: string) => fx.as('viewer', 'GET', `/api/v1/projects/${fx.projectId}/search?${query}`)
const idsOf = (items: Array<{ id: string }>) => items.map((item) => item.id)

describe('project search', () => {
  test('a title match ranks above a description match; entries and relationships come along', async () => {
    const result = await search('q=login')
    expect(idsOf(result.workItems)).toEqual([ids.w1, ids.w2])
    expect(idsOf(result.entries)).toEqual([ids.e1])
    // r1 touches w2 (a match); r2 touches neither match.
    expect(idsOf(result.relationships)).toEqual([ids.r1])
    expect(result.workItems[0]).toMatchObject({ id: ids.w1, title: 'Login page redesign', projectId: fx.projectId })
  })

  test('words match as prefixes, so partial terms find whole words', async () => {
    const result = await search('q=auth')
    expect(idsOf(result.workItems)).toEqual([ids.w3, ids.w1])
    expect(idsOf(result.relationships)).toEqual([ids.r2])
  })

  test('three characters or more also match inside words', async () => {
    expect(idsOf((await search('q=ntica')).workItems)).toEqual([ids.w3])
    expect(idsOf((await search('q=elated')).entries)).toEqual([ids.e2])
    // Two characters: prefixes only ("pa" starts page and payment, ties by creation).
    expect(idsOf((await search('q=pa')).workItems)).toEqual([ids.w1, ids.w2])
    expect((await search('q=ag')).workItems).toEqual([])
  })

  test('several words must all match', async () => {
    expect(idsOf((await search('q=login%20form')).workItems)).toEqual([ids.w2])
  })

  test('limit applies per kind', async () => {
    // A second match of each kind (made here: the tests above count the first ones exactly).
    const e3 = (await fx.as('editor', 'POST', `/api/v1/work-items/${ids.w3}/entries`, { body: 'another login report' }, 201)).id
    const r3 = (await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/relationships`, { sourceWorkItemId: ids.w1, targetWorkItemId: ids.w3, type: 'relates_to' }, 201)).id
    const all = await search('q=login')
    expect(idsOf(all.workItems)).toEqual([ids.w1, ids.w2])
    expect(idsOf(all.entries).sort()).toEqual([ids.e1, e3].sort())
    expect(idsOf(all.relationships).sort()).toEqual([ids.r1, r3].sort())
    const result = await search('q=login&limit=1')
    expect(idsOf(result.workItems)).toEqual([ids.w1])
    expect(result.entries).toHaveLength(1)
    expect([ids.e1, e3]).toContain(result.entries[0].id)
    expect(result.relationships).toHaveLength(1)
    expect([ids.r1, r3]).toContain(result.relationships[0].id)
  })

  test('no result comes from another project or organization', async () => {
    const titles = (await search('q=login&limit=100')).workItems.map((item: { title: string }) => item.title)
    expect(titles).not.toContain('Login elsewhere')
    expect(titles).not.toContain('Login abroad')
    expect(titles).toEqual(['Login page redesign', 'Payment refactor'])
  })

  test.each([
    ['q=login&limit=0', 'limit'],
    ['q=login&limit=101', 'limit'],
    ['q=login&limit=ten', 'limit'],
    ['q=', 'q'],
    [`q=${'x'.repeat(201)}`, 'q'],
    ['limit=5', 'q'],
    // Found by the fuzz suite: a 500 on PostgreSQL (text cannot hold U+0000).
    ['q=a%00b', 'q'],
  ])('%s is 400 naming %s', async (query, field) => {
    const response = await fx.call('viewer', 'GET', `/api/v1/projects/${fx.projectId}/search?${query}`)
    expect(response.status).toBe(400)
    expect(response.body.errors[0].field).toBe(field)
  })

  test('SQL and pattern characters are only text', async () => {
    for (const q of ["login' or '1'='1", '%%%', '___', '\\', 'login & | ! :*']) {
      const response = await fx.call('viewer', 'GET', `/api/v1/projects/${fx.projectId}/search?q=${encodeURIComponent(q)}`)
      expect(response.status).toBe(200)
    }
    // No title or description of the fixture holds these characters: as text, they match nothing.
    for (const q of ['%%%', '___', '\\']) expect((await search(`q=${encodeURIComponent(q)}`)).workItems).toEqual([])
  })

  test('each missing read scope is named', async () => {
    const { secret } = await api.createKey(fx.users.viewer.id, ['work_items:read'])
    const response = await api.request('GET', `/api/v1/projects/${fx.projectId}/search?q=login`, { key: secret })
    expect(response.status).toBe(403)
    expect(response.body.errors[0]).toEqual({ code: 'INSUFFICIENT_SCOPE', message: 'The API key lacks the scope(s): entries:read, relationships:read.' })
  })

  test('query building', () => {
    expect(prefixQuery('Auth  flow, LOGIN!')).toBe('auth:* & flow:* & login:*')
    expect(prefixQuery('!!!')).toBe('')
    expect(substringPattern('ab')).toBeNull()
    expect(substringPattern('50%_off')).toBe('%50\\%\\_off%')
  })
})
