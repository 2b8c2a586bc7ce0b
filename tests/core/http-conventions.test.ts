/**
 * the HTTP conventions on API v1, route by route: every 201 carries `Location`, every GET
 * an `ETag` that If-None-Match turns into 304 and that changes with the body, every list a
 * `Link`, and (with the per-key limit on) every answer the X-RateLimit-* headers. The routes are
 * read from the served OpenAPI document, so a route added later without them fails here.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { queryText } from '../../src/db'
import { startTestService, type TestResponse, type TestService, type TestUser } from '../helpers/service'

let api: TestService
/** An administrator (teams need one) owning the project, with a key of every scope; two more users. */
let fx: { organizationId: string; projectId: string; users: Record<'owner' | 'editor' | 'viewer', TestUser>; keys: { owner: string } }
let paths: Record<string, Record<string, any>>
/** Path parameter → a value naming something that exists (filled in as the world is built). */
const ids: Record<string, string> = {}
/** Every POST answered 201, with its path template. */
const created: { template: string; response: TestResponse }[] = []

const call = (method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}) =>
  api.request(method, path, { key: fx.keys.owner, ...options, unchecked: true })

/** Fills a template's `{name}`s from `ids`. */
let fedComponentId = ''
/** A documented path with the ids made below; a component's source is the fed component's. */
const fill = (template: string) =>
  template.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'componentId' && template.endsWith('/source') ? fedComponentId : ids[name]) ?? `missing-${name}`)

/** POSTs to `template` and records the answer (which must be 201). */
async function create(template: string, body: unknown) {
  const response = await call('POST', fill(template), { body })
  expect(response.status, `${template}: ${response.text}`).toBe(201)
  created.push({ template, response })
  return response.body.data
}

beforeAll(async () => {
  // Webhooks point at a closed loopback port and no worker sends: their deliveries stay as created.
  api = await startTestService({ config: { webhooks: { allowPrivateTargets: true, workers: false } } })
  const organization = await api.createOrganization()
  const users = { owner: await api.createUser(organization, 'administrator'), editor: await api.createUser(organization), viewer: await api.createUser(organization) }
  const keys = { owner: (await api.createKey(users.owner.id, api.service.core.scopes.map((scope) => scope.name))).secret }
  fx = { organizationId: organization, projectId: '', users, keys }
  fx.projectId = (await create('/api/v1/projects', { name: 'Fixture' })).id
  paths = (await api.request('GET', '/docs/json', { unchecked: true })).body.paths
  const owner = fx.users.owner
  ids.projectId = fx.projectId
  ids.userId = fx.users.editor.id
  ids.teamId = (await create('/api/v1/teams', { name: 'Platform' })).id
  await create('/api/v1/teams/{teamId}/members', { userId: fx.users.viewer.id })
  const another = await api.createUser(organization)
  await create('/api/v1/projects/{projectId}/members', { userId: another.id, accessLevel: 'viewer' })
  await create('/api/v1/projects/{projectId}/teams', { teamId: ids.teamId, accessLevel: 'viewer' })
  const items = []
  for (const title of ['First', 'Second', 'Third']) items.push(await create('/api/v1/projects/{projectId}/work-items', { title }))
  ids.workItemId = items[0].id
  ids.entryId = (await create('/api/v1/work-items/{workItemId}/entries', { body: 'A note' })).id
  ids.relationshipId = (await create('/api/v1/projects/{projectId}/relationships', { sourceWorkItemId: items[0].id, targetWorkItemId: items[1].id, type: 'blocks' })).id
  ids.viewId = (await create('/api/v1/projects/{projectId}/views', { name: 'Open', filters: { status: 'todo' } })).id
  ids.secondProjectId = (await call('POST', '/api/v1/projects', { body: { name: 'Second' } })).body.data.id
  ids.pageId = (await create('/api/v1/pages', { name: `board-${Date.now().toString(36)}`, title: 'Board' })).id
  ids.pageName = (await call('GET', fill('/api/v1/pages/{pageId}'))).body.data.name
  ids.principalId = fx.users.viewer.id
  await create('/api/v1/pages/{pageId}/access', { userId: fx.users.viewer.id })
  ids.componentId = (await create('/api/v1/pages/{pageId}/components', { type: 'horizontalBox', title: 'Open items' })).id
  ids.linkId = (await create('/api/v1/pages/{pageId}/share-links', {})).id
  ids.alertId = (await create('/api/v1/pages/{pageId}/components/{componentId}/alerts', { when: 'above', value: 100 })).id
  // A second component, fed by the project's work (its source): made apart from the records above, since its data changes by itself.
  const fed = await call('POST', fill('/api/v1/pages/{pageId}/components'), { body: { type: 'verticalBox', title: 'Open work' } })
  const bound = await call('PUT', `${fill('/api/v1/pages/{pageId}/components')}/${fed.body.data.id}/source`, { body: { projectId: fx.projectId, measure: 'count' } })
  expect(bound.status, bound.text).toBe(200)
  fedComponentId = fed.body.data.id
  const message = await api.request('POST', '/api/message', { body: { apiKey: owner.displayApiKey, pageName: ids.pageName, message: 'hello' } })
  expect(message.status, message.text).toBe(200)
  ids.messageId = message.headers.get('x-message-id')!
  ids.keyId = 'unused'
  ids.webhookId = (await create('/api/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['*'] })).id
  ids.deliveryId = (await create('/api/v1/webhooks/{webhookId}/test', undefined)).id
  await create('/api/v1/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver', undefined)
  ids.labelId = (await create('/api/v1/labels', { name: 'bug' })).id
  ids.fieldId = (await create('/api/v1/custom-fields', { key: 'points', name: 'Points', type: 'number' })).id
  await create('/api/v1/projects/{projectId}/custom-fields', { fieldId: ids.fieldId })
  // An invitation and a new link for it (userId names the invitee only for that POST: other routes name an active user).
  const invited = await create('/api/v1/users', { email: 'invited@example.com' })
  const active = ids.userId
  ids.userId = invited.id
  await create('/api/v1/users/{userId}/invite', undefined)
  ids.userId = active!
})

/**
 * Where a POST's Location points: under its own path, except for actions on a resource that
 * create something in a neighbouring collection (a webhook's test and redelivery create deliveries)
 * or for it (a user's new invitation link: the user).
 */
const createdUnder = (template: string) =>
  /\/(test|deliveries\/\{deliveryId\}\/redeliver)$/.test(template)
    ? `${fill('/api/v1/webhooks/{webhookId}/deliveries')}/`
    : // A new invitation link: the user it is for.
      template === '/api/v1/users/{userId}/invite'
      ? '/api/v1/users/'
      : `${fill(template)}/`
afterAll(() => api.stop())

/** The documented v1 operations of `method`. */
const operations = (method: string) => Object.entries(paths).filter(([path, item]) => path.startsWith('/api/v1/') && item[method]).map(([path]) => path)

describe('Location on every 201', () => {
  test('every v1 POST documented with 201 was exercised, and its Location names the created resource', async () => {
    const creating = Object.entries(paths)
      .filter(([path, item]) => path.startsWith('/api/v1/') && item.post?.responses?.['201'])
      .map(([path]) => path)
    expect(creating.length).toBeGreaterThan(8)
    expect(new Set(created.map((entry) => entry.template))).toEqual(new Set(creating))
    for (const { template, response } of created) {
      const location = response.headers.get('location')
      expect(location, template).not.toBeNull()
      // The created resource's path: the collection's, one segment deeper, matching a documented path.
      expect(location!.startsWith(createdUnder(template)), `${template}: ${location}`).toBe(true)
      const documented = Object.keys(paths).some((path) => new RegExp(`^${path.replace(/\{\w+\}/g, '[^/]+')}$`).test(location!))
      expect(documented, `${location} is no documented path`).toBe(true)
      // Where the resource can be read, the Location reads it.
      const readable = Object.entries(paths).find(([path, item]) => item.get && new RegExp(`^${path.replace(/\{\w+\}/g, '[^/]+')}$`).test(location!))
      if (readable) {
        const read = await call('GET', location!)
        expect(read.status, location!).toBe(200)
        // A share link's `url` carries its token, a webhook's `secret` is its key: shown in the creating answer only.
        const { url: _token, ...shownLink } = response.body.data
        const { secret: _secret, ...shownWebhook } = response.body.data
        // An invited user's link likewise.
        const { inviteUrl: _link, inviteExpiresAt: _until, ...shownUser } = response.body.data
        const shown = template.endsWith('/share-links') ? shownLink : template === '/api/v1/webhooks' ? shownWebhook : template.startsWith('/api/v1/users') ? shownUser : response.body.data
        // A delivery's detail adds its payload and last answer to what was listed.
        if (location!.includes('/deliveries/')) expect(read.body.data).toMatchObject(shown)
        else expect(read.body.data).toEqual(shown)
      }
    }
  })

  test('a 201 answered from an idempotent replay carries the same Location', async () => {
    const headers = { 'idempotency-key': `loc-${Date.now()}` }
    const first = await call('POST', '/api/v1/teams', { body: { name: 'Replayed' }, headers })
    const again = await call('POST', '/api/v1/teams', { body: { name: 'Replayed' }, headers })
    expect(again.status).toBe(201)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.headers.get('location')).toBe(first.headers.get('location'))
  })
})

describe('ETag and 304 on every GET', () => {
  test('every documented v1 GET answers an ETag, 304 with no body to a matching If-None-Match, and 200 to another', async () => {
    // The project export streams as it reads its snapshot: no body to tag before it is sent (docs/api.md).
    const gets = operations('get').filter((template) => template !== '/api/v1/projects/{projectId}/export')
    expect(gets.length).toBeGreaterThan(20)
    for (const template of gets) {
      const path = fill(template) + (template.endsWith('/search') ? '?q=first' : '')
      const first = await call('GET', path)
      expect(first.status, `${template}: ${first.text}`).toBe(200)
      const etag = first.headers.get('etag')
      expect(etag, template).toMatch(/^W\/"[\w.-]+"$/)
      const again = await call('GET', path)
      expect(again.headers.get('etag'), `${template}: the same answer keeps its ETag`).toBe(etag)
      const notModified = await call('GET', path, { headers: { 'if-none-match': etag! } })
      expect(notModified.status, template).toBe(304)
      expect(notModified.text).toBe('')
      expect(notModified.headers.get('etag')).toBe(etag)
      expect(notModified.headers.get('x-request-id')).toBeTruthy()
      const listed = await call('GET', path, { headers: { 'if-none-match': `W/"other", ${etag}` } })
      expect(listed.status, `${template}: a list of tags naming it`).toBe(304)
      const changed = await call('GET', path, { headers: { 'if-none-match': 'W/"not-it"' } })
      expect(changed.status, template).toBe(200)
      expect(changed.body.data).toEqual(first.body.data)
    }
  })

  test("a resource's ETag changes with its body, even for a change made by another resource (content order)", async () => {
    const list = (await call('GET', fill('/api/v1/projects/{projectId}/work-items'))).body.data as { id: string; position: number }[]
    const path = fill('/api/v1/projects/{projectId}/work-items/{workItemId}')
    const before = await call('GET', path)
    const reordered = await call('PUT', fill('/api/v1/projects/{projectId}/content-order'), { body: { workItems: list.map((item) => item.id).reverse() } })
    expect(reordered.status, reordered.text).toBe(200)
    const after = await call('GET', path)
    expect(after.body.data.position).not.toBe(before.body.data.position)
    expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'))
    expect((await call('GET', path, { headers: { 'if-none-match': before.headers.get('etag')! } })).status).toBe(200)
    // If-Match guards the item's own fields: a tag read before a reorder still matches.
    const patched = await call('PATCH', path, { body: { title: 'First, renamed' }, headers: { 'if-match': before.headers.get('etag')! } })
    expect(patched.status, patched.text).toBe(200)
  })

  test("a change always moves the resource's version forward by at least a millisecond, so its ETag and If-Match never repeat", async () => {
    const path = fill('/api/v1/teams/{teamId}')
    // The row's last change as if made in the future (a clock step back, or two changes in one millisecond).
    await queryText(api.service.core.db, `update teams set updated_at = '2099-01-01 00:00:00.0004+00' where id = $1`, [ids.teamId])
    const read = await call('GET', path)
    expect(read.body.data.updatedAt).toBe('2099-01-01T00:00:00.000Z')
    const patched = await call('PATCH', path, { body: { description: 'after the clock step' } })
    expect(patched.body.data.updatedAt).toBe('2099-01-01T00:00:00.001Z')
    expect(patched.headers.get('etag')).not.toBe(read.headers.get('etag'))
    const stale = await call('PATCH', path, { body: { description: 'stale' }, headers: { 'if-match': read.headers.get('etag')! } })
    expect(stale.status).toBe(412)
    // And concurrent changes each get their own version.
    const etags = new Set<string>()
    for (let i = 0; i < 5; i++) {
      const pair = await Promise.all([call('PATCH', path, { body: { description: `a${i}` } }), call('PATCH', path, { body: { description: `b${i}` } })])
      for (const response of pair) etags.add(response.headers.get('etag')!)
    }
    expect(etags.size).toBe(10)
  })

  test('the ETag of a PATCH answer is the one a GET then gives, and If-Match takes it', async () => {
    const path = fill('/api/v1/projects/{secondProjectId}')
    const patched = await call('PATCH', path, { body: { description: 'Described' } })
    const read = await call('GET', path)
    expect(read.headers.get('etag')).toBe(patched.headers.get('etag'))
    expect((await call('GET', path, { headers: { 'if-none-match': patched.headers.get('etag')! } })).status).toBe(304)
    expect((await call('PATCH', path, { body: { description: 'Again' }, headers: { 'if-match': patched.headers.get('etag')! } })).status).toBe(200)
  })

  test('every operation that takes If-Match documents 412; a stale tag is 412 PRECONDITION_FAILED and changes nothing', async () => {
    const takesIfMatch = (operation: any) =>
      (operation.parameters ?? []).some((parameter: any) => (parameter.in === 'header' && String(parameter.name).toLowerCase() === 'if-match') || /IfMatch$/.test(parameter.$ref ?? ''))
    const taking = Object.entries(paths).flatMap(([template, item]) =>
      Object.entries(item)
        .filter(([, operation]) => takesIfMatch(operation))
        .map(([method]) => [method, template] as const),
    )
    expect(taking.length).toBeGreaterThanOrEqual(12)
    for (const [method, template] of [...taking, ['patch', '/api/v1/projects/{projectId}/work-items/bulk'] as const])
      expect(paths[template]![method].responses['412'], `${method} ${template}`).toBeDefined()
    for (const [, template] of taking.filter(([method]) => method === 'delete')) {
      const path = fill(template)
      const stale = await call('DELETE', path, { headers: { 'if-match': 'W/"1.stale"' } })
      expect({ template, status: stale.status, code: stale.body.errors?.[0]?.code }).toEqual({ template, status: 412, code: 'PRECONDITION_FAILED' })
      if (paths[template]!.get) expect((await call('GET', path)).status, template).toBe(200)
    }
  })

  test('a caller who cannot see the resource gets 404 for any If-None-Match, never 304', async () => {
    const outsiderOrg = await api.createOrganization()
    const outsider = await api.createUser(outsiderOrg)
    const key = (await api.createKey(outsider.id, api.service.core.scopes.map((scope) => scope.name))).secret
    for (const template of ['/api/v1/projects/{projectId}', '/api/v1/projects/{projectId}/work-items', '/api/v1/teams/{teamId}']) {
      const path = fill(template)
      const etag = (await call('GET', path)).headers.get('etag')!
      const response = await api.request('GET', path, { key, headers: { 'if-none-match': etag }, unchecked: true })
      expect(response.status, template).toBe(404)
    }
  })
})

describe('Link on every list', () => {
  const linksOf = (response: TestResponse) =>
    Object.fromEntries(
      (response.headers.get('link') ?? '')
        .split(', ')
        .filter(Boolean)
        .map((part) => {
          const [, target, rel] = /^<([^>]*)>; rel="(\w+)"$/.exec(part)!
          return [rel!, target!]
        }),
    )

  test('every documented v1 list carries first and last, and prev/next where they exist', async () => {
    const lists = operations('get').filter((path) => paths[path]!.get.responses['200'].content['application/json']?.schema.properties.meta.properties.totalPages)
    expect(lists.length).toBeGreaterThan(10)
    for (const template of lists) {
      const response = await call('GET', `${fill(template)}${template.endsWith('/search') ? '?q=first&' : '?'}size=1`)
      expect(response.status, template).toBe(200)
      const links = linksOf(response)
      const { page, totalPages } = response.body.meta
      expect(links.first, template).toContain('page=0')
      expect(links.last, template).toContain(`page=${Math.max(totalPages - 1, 0)}`)
      expect('prev' in links, template).toBe(page > 0)
      expect('next' in links, template).toBe(page < totalPages - 1)
    }
  })

  test("the links keep the request's other query parameters and lead to the pages they name", async () => {
    const base = fill('/api/v1/projects/{projectId}/work-items')
    const middle = await call('GET', `${base}?status=todo&size=1&page=1`)
    expect(middle.body.meta.totalPages).toBe(3)
    const links = linksOf(middle)
    // The list takes cursors: `next` goes on by cursor, the others by page number.
    expect(links).toEqual({
      first: `${base}?status=todo&size=1&page=0`,
      prev: `${base}?status=todo&size=1&page=0`,
      next: `${base}?status=todo&size=1&cursor=${middle.body.meta.nextCursor}`,
      last: `${base}?status=todo&size=1&page=2`,
    })
    const next = await call('GET', links.next!)
    expect(next.body.data).toEqual((await call('GET', links.last!)).body.data)
    expect(next.body.meta.page).toBeUndefined()
    expect(linksOf(next)).toEqual({ first: links.first, last: links.last })
    // Past the end: prev leads back to the last page; an empty list still has a first and a last page (0).
    const past = linksOf(await call('GET', `${base}?size=1&page=7`))
    expect(past.prev).toBe(`${base}?size=1&page=2`)
    expect('next' in past).toBe(false)
    const empty = await call('GET', `${fill('/api/v1/work-items/{workItemId}')}/entries?size=5`.replace('/entries', '/entries'))
    expect(linksOf(empty).first).toContain('page=0')
    const nothing = linksOf(await call('GET', `${fill('/api/v1/projects/{secondProjectId}')}/work-items`))
    expect(nothing).toEqual({
      first: `${fill('/api/v1/projects/{secondProjectId}')}/work-items?page=0`,
      last: `${fill('/api/v1/projects/{secondProjectId}')}/work-items?page=0`,
    })
  })

  test('a cached page carries the same links as the page it was loaded as', async () => {
    const path = `${fill('/api/v1/projects/{projectId}/work-items')}?size=2`
    const loaded = await call('GET', path)
    const cached = await call('GET', path)
    expect(cached.headers.get('link')).toBe(loaded.headers.get('link'))
    expect(cached.headers.get('etag')).toBe(loaded.headers.get('etag'))
  })
})

describe('the request body must be JSON', () => {
  test('a form, text or XML body on a v1 POST, PATCH or PUT is 400 "Content-Type must be application/json", and nothing is written', async () => {
    const before = (await call('GET', '/api/v1/teams?size=100')).body.meta.totalItems
    for (const [method, template] of [
      ['POST', '/api/v1/teams'],
      ['PATCH', '/api/v1/teams/{teamId}'],
      ['PUT', '/api/v1/projects/{projectId}/content-order'],
    ] as const)
      for (const [type, rawBody] of [
        ['application/x-www-form-urlencoded', 'name=Formed'],
        ['text/plain', '{"name":"Texted"}'],
        ['application/xml', '<team><name>X</name></team>'],
      ]) {
        const response = await api.request(method, fill(template), { key: fx.keys.owner, rawBody, headers: { 'content-type': type } })
        expect(response.status, `${method} ${template} ${type}`).toBe(400)
        expect(response.body.errors).toEqual([{ code: 'BAD_REQUEST', message: 'Content-Type must be application/json' }])
      }
    expect((await call('GET', '/api/v1/teams?size=100')).body.meta.totalItems).toBe(before)
  })

  test('JSON with a charset or a +json type, and a body without any Content-Type, are read as JSON', async () => {
    for (const type of ['application/json; charset=utf-8', 'application/merge-patch+json', undefined]) {
      const response = await api.request('POST', '/api/v1/teams', {
        key: fx.keys.owner,
        rawBody: JSON.stringify({ name: `Typed ${type}` }),
        headers: type ? { 'content-type': type } : {},
      })
      expect(response.status, String(type)).toBe(201)
    }
  })

  test('the key is still checked first: a form body without a key is 401', async () => {
    const response = await api.request('POST', '/api/v1/teams', { rawBody: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(response.status).toBe(401)
  })
})

describe('validation messages name what is allowed', () => {
  const items = () => fill('/api/v1/projects/{projectId}/work-items')
  const errorsOf = async (body: unknown) => (await call('POST', items(), { body })).body.errors

  test('an enum lists its values, a date and a UUID name their format, a bounded integer its range', async () => {
    expect(await errorsOf({ title: 'x', status: 'open' })).toEqual([
      { code: 'BAD_REQUEST', field: 'status', message: 'Invalid field "status": must be one of "todo", "in_progress", "done", "cancelled".' },
    ])
    expect((await errorsOf({ title: 'x', dueDate: 'tomorrow' }))[0].message).toBe(
      'Invalid field "dueDate": must be a calendar date in the form YYYY-MM-DD (e.g. 2026-11-23) or null.',
    )
    expect((await errorsOf({ title: 'x', assigneeId: 'someone' }))[0].message).toMatch(/^Invalid field "assigneeId": must be a UUID \(e\.g\. [0-9a-f-]{36}\), "me" or null\.$/)
    expect((await errorsOf({ title: 'x', priority: 9 }))[0].message).toBe('Invalid field "priority": must be one of 0, 1, 2, 3, 4.')
    const query = await call('GET', `${items()}?size=abc`)
    expect(query.body.errors[0].message).toBe('Invalid query parameter "size": must be an integer from 1 to 100.')
    const since = await call('GET', '/api/v1/audit-logs?since=yesterday')
    expect(since.body.errors[0].message).toBe('Invalid query parameter "since": must be a date-time in ISO 8601 / RFC 3339 form (e.g. 2026-11-23T14:30:00Z).')
  })
})

describe('X-RateLimit headers', () => {
  test('off by default: no X-RateLimit headers', async () => {
    const response = await call('GET', '/api/v1/users/me')
    expect(response.headers.get('x-ratelimit-limit')).toBeNull()
  })

  test('with the per-key limit on, every answer to a key carries Limit, Remaining and Reset; the 429 says 0 remaining', async () => {
    const limited = await startTestService({ config: { auth: { requestsPerMinute: 4 } } })
    try {
      const organization = await limited.createOrganization()
      const user = await limited.createUser(organization)
      const key = (await limited.createKey(user.id, ['teams:read', 'teams:write'])).secret
      const started = Math.floor(Date.now() / 1000)
      const answers = [
        await limited.request('GET', '/api/v1/users/me', { key }),
        await limited.request('GET', '/api/v1/teams', { key }),
        await limited.request('GET', '/api/v1/teams/01a20930-6f07-75c8-a13b-a839280d4119', { key }),
        await limited.request('POST', '/api/v1/teams', { key, body: { name: 7 } }),
        await limited.request('GET', '/api/v1/teams', { key }),
      ]
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 404, 400, 429])
      expect(answers.map((answer) => answer.headers.get('x-ratelimit-remaining'))).toEqual(['3', '2', '1', '0', '0'])
      for (const answer of answers) {
        expect(answer.headers.get('x-ratelimit-limit')).toBe('4')
        const reset = Number(answer.headers.get('x-ratelimit-reset'))
        expect(reset).toBeGreaterThanOrEqual(started + 59)
        expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 60)
      }
      expect(Number(answers[4]!.headers.get('retry-after'))).toBeGreaterThan(0)
      // A request without a valid key is not counted against any key, and says nothing about one.
      const anonymous = await limited.request('GET', '/api/v1/users/me')
      expect(anonymous.status).toBe(401)
      expect(anonymous.headers.get('x-ratelimit-limit')).toBeNull()
    } finally {
      await limited.stop()
    }
  })
})
