/**
 * Cached list pages are exact: three service instances on one database, each with its own cache,
 * and a fourth with the cache off (the truth). A seeded random walk of writes (work items,
 * entries, relationships, project members and teams, teams and their members, a deactivated
 * user), each through a random instance, and after every write each cached list read on every
 * instance (twice: the second is served from the cache) must equal the uncached read. Plus the
 * ETag and If-None-Match (304 without reading a row), the cache's byte bound, and a caller who
 * lost access getting 404 while the page stays cached.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ListCache } from '../../src/http/list-cache'
import { Page } from '../../src/http/answer'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestResponse, type TestService, type TestUser } from '../helpers/service'
import { timeLimit } from '../helpers/time'

let instances: TestService[]
let truth: TestService
let fx: ProjectFixture
let admin: { user: TestUser; key: string }
let spare: TestUser[]

beforeAll(async () => {
  const first = await startTestService()
  const others = await Promise.all([
    startTestService({ database: first.database }),
    startTestService({ database: first.database }),
    startTestService({ database: first.database, config: { server: { listCacheBytes: 0 } } }),
  ])
  instances = [first, others[0]!, others[1]!]
  truth = others[2]!
  fx = await createProjectFixture(first)
  const user = await first.createUser(fx.organizationId, 'administrator')
  admin = { user, key: (await first.createKey(user.id, first.service.core.scopes.map((scope) => scope.name))).secret }
  spare = [await first.createUser(fx.organizationId), await first.createUser(fx.organizationId)]
})

afterAll(async () => {
  await Promise.all([...instances.slice(1), truth].map((instance) => instance.stop()))
  await instances[0]?.stop()
})

/** What a list answer shows, without what differs per request. */
const shown = (response: TestResponse) => ({ status: response.status, data: response.body.data, meta: { ...response.body.meta, requestId: undefined } })

/** A seeded generator (mulberry32), so a failure replays. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('cached list reads', () => {
  test('after every committed write, every instance answers every list as an uncached read does', async () => {
    const next = random(20261123)
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!
    const state = { items: [] as string[], relationships: [] as string[], teams: [] as string[], members: new Set<string>(), teamMembers: new Map<string, Set<string>>(), linked: new Set<string>() }
    const project = `/api/v1/projects/${fx.projectId}`
    const write = async (method: string, path: string, body?: unknown, key = fx.keys.owner) => {
      const response = await pick(instances).request(method, path, { key, body })
      if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
      return response.body.data
    }

    const lists = () => {
      const paths = [
        `${project}/work-items?size=3`,
        `${project}/work-items?size=3&page=1`,
        `${project}/work-items?status=done`,
        `${project}/relationships`,
        `${project}/members`,
        `${project}/teams`,
        '/api/v1/teams',
      ]
      if (state.items.length) paths.push(`/api/v1/work-items/${state.items[0]}/entries`, `${project}/relationships?workItemId=${state.items[0]}`)
      if (state.teams.length) paths.push(`/api/v1/teams/${state.teams[0]}/members`)
      return paths
    }

    const writes: Array<() => Promise<unknown>> = [
      async () => state.items.push((await write('POST', `${project}/work-items`, { title: `item ${state.items.length}` })).id),
      async () => state.items.length && write('PATCH', `${project}/work-items/${pick(state.items)}`, { title: `renamed ${next()}`, status: pick(['todo', 'in_progress', 'done']) }),
      async () => {
        if (state.items.length < 4) return
        const id = state.items.pop()!
        await write('DELETE', `${project}/work-items/${id}`)
        state.relationships = []
      },
      async () => state.items.length && write('POST', `/api/v1/work-items/${state.items[0]}/entries`, { body: `note ${next()}` }),
      async () => {
        if (state.items.length < 2) return
        const [a, b] = [pick(state.items), pick(state.items)]
        if (a === b) return
        const response = await pick(instances).request('POST', `${project}/relationships`, { key: fx.keys.editor, body: { sourceWorkItemId: a, targetWorkItemId: b, type: 'relates_to' } })
        if (response.status === 201) state.relationships.push(response.body.data.id)
      },
      async () => state.relationships.length && write('DELETE', `${project}/relationships/${state.relationships.shift()}`),
      async () => {
        const user = pick(spare)
        if (state.members.has(user.id)) {
          state.members.delete(user.id)
          return write('DELETE', `${project}/members/${user.id}`)
        }
        state.members.add(user.id)
        return write('POST', `${project}/members`, { userId: user.id, accessLevel: pick(['viewer', 'editor']) })
      },
      async () => state.members.size && write('PATCH', `${project}/members/${[...state.members][0]}`, { accessLevel: pick(['viewer', 'editor']) }),
      async () => state.teams.push((await write('POST', '/api/v1/teams', { name: `team ${state.teams.length} ${next()}` }, admin.key)).id),
      async () => state.teams.length && write('PATCH', `/api/v1/teams/${pick(state.teams)}`, { name: `team renamed ${next()}` }, admin.key),
      async () => {
        if (!state.teams.length) return
        const team = pick(state.teams)
        const user = pick(spare)
        const members = state.teamMembers.get(team) ?? new Set<string>()
        state.teamMembers.set(team, members)
        if (members.has(user.id)) {
          members.delete(user.id)
          return write('DELETE', `/api/v1/teams/${team}/members/${user.id}`, undefined, admin.key)
        }
        members.add(user.id)
        return write('POST', `/api/v1/teams/${team}/members`, { userId: user.id }, admin.key)
      },
      async () => {
        if (!state.teams.length) return
        const team = pick(state.teams)
        if (state.linked.has(team)) {
          state.linked.delete(team)
          return write('DELETE', `${project}/teams/${team}`)
        }
        state.linked.add(team)
        return write('POST', `${project}/teams`, { teamId: team, accessLevel: 'viewer' })
      },
    ]

    const compareAll = async (step: string) => {
      for (const path of lists()) {
        const expected = shown(await truth.request('GET', path, { key: fx.keys.viewer }))
        for (const [n, instance] of instances.entries())
          for (const round of ['first', 'repeated'])
            expect({ step, path, instance: n, round, ...shown(await instance.request('GET', path, { key: fx.keys.viewer })) }).toEqual({ step, path, instance: n, round, ...expected })
      }
    }

    await compareAll('start')
    for (let step = 0; step < 45; step++) {
      const index = Math.floor(next() * writes.length)
      await writes[index]!()
      await compareAll(`step ${step} (write ${index})`)
    }
    // The last write of the walk: a deactivated user (an organization-wide change) leaves the member lists.
    await instances[0]!.deactivateUser(spare[0]!.id)
    await compareAll('deactivated user')
    // The walk did reach the caches: repeated reads were answered from them.
    for (const instance of instances) expect(instance.service.core.lists.stats.hits).toBeGreaterThan(100)
    expect(truth.service.core.lists.stats.hits).toBe(0)
  }, timeLimit(60_000))

  test('the ETag answers If-None-Match with 304 and no row read, until a write changes the list', async () => {
    const [a, b] = instances as [TestService, TestService]
    const path = `/api/v1/projects/${fx.projectId}/work-items?size=5`
    const first = await a.request('GET', path, { key: fx.keys.viewer })
    expect(first.status).toBe(200)
    const etag = first.headers.get('etag')!
    // One ETag format (src/http/answer.ts): the list's version, a dot, a digest of the page's key.
    expect(etag).toMatch(/^W\/"l[0-9_]+\.[0-9a-z_-]+"$/)
    expect(first.headers.get('x-request-id')).toBe(first.body.meta.requestId)

    // Another page of the same list has another ETag.
    expect((await a.request('GET', `${path}&page=1`, { key: fx.keys.viewer })).headers.get('etag')).not.toBe(etag)

    // Any instance knows the version: 304, empty, nothing loaded or encoded.
    const before = { ...b.service.core.lists.stats }
    const notModified = await b.request('GET', path, { key: fx.keys.viewer, headers: { 'if-none-match': `"other", ${etag}` }, unchecked: true })
    expect(notModified.status).toBe(304)
    expect(notModified.text).toBe('')
    expect(notModified.headers.get('etag')).toBe(etag)
    expect(b.service.core.lists.stats.misses).toBe(before.misses)
    expect(b.service.core.lists.stats.notModified).toBe(before.notModified + 1)

    // Access is still checked first: a key without access gets 404, not 304.
    const outsiderOrg = await a.createOrganization()
    const outsider = await a.createUser(outsiderOrg)
    const outsiderKey = (await a.createKey(outsider.id, ['work_items:read'])).secret
    expect((await b.request('GET', path, { key: outsiderKey, headers: { 'if-none-match': etag } })).status).toBe(404)

    await fx.as('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'changes the list' })
    const changed = await b.request('GET', path, { key: fx.keys.viewer, headers: { 'if-none-match': etag } })
    expect(changed.status).toBe(200)
    expect(changed.headers.get('etag')).not.toBe(etag)
  })

  test('a caller who lost access gets 404 although the page is cached', async () => {
    const [a] = instances as [TestService]
    const path = `/api/v1/projects/${fx.projectId}/work-items`
    const reader = await a.createUser(fx.organizationId)
    const key = (await a.createKey(reader.id, ['work_items:read'])).secret
    await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/members`, { userId: reader.id, accessLevel: 'viewer' })
    expect((await a.request('GET', path, { key })).status).toBe(200)
    expect((await a.request('GET', path, { key: fx.keys.viewer })).status).toBe(200)
    await fx.as('owner', 'DELETE', `/api/v1/projects/${fx.projectId}/members/${reader.id}`)
    expect((await a.request('GET', path, { key })).status).toBe(404)
  })
})

describe('the cache bound', () => {
  const page = (items: unknown[]) => new Page(items, { page: 0, size: 100, totalItems: items.length, totalPages: 1 })

  test('the least recently used pages go first and the bytes stay within the bound', async () => {
    const cache = new ListCache(8 * 1024)
    const big = Array.from({ length: 10 }, (_, i) => ({ id: i, text: 'x'.repeat(100) }))
    for (let i = 0; i < 3; i++) await cache.page(`list ${i}`, '1', async () => page(big)).encoded()
    await cache.page('list 0', '1', async () => page([])).encoded() // used again: now the newest
    for (let i = 3; i < 12; i++) await cache.page(`list ${i}`, '1', async () => page(big)).encoded()
    expect(cache.stats.bytes).toBeLessThanOrEqual(8 * 1024)
    expect(cache.stats.evictions).toBeGreaterThan(0)
    expect(cache.lookup('list 1', '1')).toBeUndefined()
    expect(JSON.parse(cache.lookup('list 11', '1')!.data)).toHaveLength(10)
  })

  test('concurrent misses of one page at one version read its rows once; another version loads its own', async () => {
    const cache = new ListCache(1024 * 1024)
    let loads = 0
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const load = async () => {
      const n = ++loads
      await gate
      return page([{ n }])
    }
    const waiting = Array.from({ length: 20 }, () => cache.page('k', '1.0', load).encoded())
    const newer = cache.page('k', '2.0', load).encoded()
    release()
    const answers = await Promise.all(waiting)
    expect(new Set(answers.map((answer) => answer.data))).toEqual(new Set(['[{"n":1}]']))
    expect((await newer).data).toBe('[{"n":2}]')
    expect(loads).toBe(2)
    expect(cache.stats.shared).toBe(19)
  })

  test('a list keeps one page: a newer version replaces the older; a load whose entry went meanwhile still answers', async () => {
    const cache = new ListCache(1024 * 1024)
    await cache.page('k', '1.0', async () => page([{ v: 1 }])).encoded()
    await cache.page('k', '2.0', async () => page([{ v: 2 }])).encoded()
    expect(cache.stats.entries).toBe(1)
    expect(cache.lookup('k', '1.0')).toBeUndefined()
    expect(JSON.parse(cache.lookup('k', '2.0')!.data)).toEqual([{ v: 2 }])

    // A load of version 3 still running when version 4 is stored: each reader gets its own version's page.
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const slow = cache.page('k', '3.0', async () => {
      await gate
      return page([{ v: 3 }])
    }).encoded()
    expect((await cache.page('k', '4.0', async () => page([{ v: 4 }])).encoded()).data).toBe('[{"v":4}]')
    release()
    expect((await slow).data).toBe('[{"v":3}]')
    expect(cache.stats.entries).toBe(1)

    // A load whose entry is evicted before it ends (the cache filled meanwhile) answers its readers all the same.
    const small = new ListCache(8 * 1024)
    let open!: () => void
    const held = new Promise<void>((resolve) => (open = resolve))
    const waiting = small.page('held', '1', async () => {
      await held
      return page([{ held: true }])
    }).encoded()
    const big = Array.from({ length: 10 }, (_, i) => ({ id: i, text: 'x'.repeat(100) }))
    for (let i = 0; i < 12; i++) await small.page(`filler ${i}`, '1', async () => page(big)).encoded()
    open()
    expect((await waiting).data).toBe('[{"held":true}]')
    expect(small.stats.bytes).toBeLessThanOrEqual(8 * 1024)
  })

  test('a page is served only at the version it was stored at; 0 bytes caches nothing', async () => {
    const cache = new ListCache(1024 * 1024)
    let loads = 0
    const load = async () => page([{ n: ++loads }])
    expect(JSON.parse((await cache.page('k', '1.0', load).encoded()).data)).toEqual([{ n: 1 }])
    expect(JSON.parse((await cache.page('k', '1.0', load).encoded()).data)).toEqual([{ n: 1 }])
    expect(JSON.parse((await cache.page('k', '2.0', load).encoded()).data)).toEqual([{ n: 2 }])
    const off = new ListCache(0)
    await off.page('k', '1', load).encoded()
    await off.page('k', '1', load).encoded()
    expect(loads).toBe(4)
    expect(off.stats.entries).toBe(0)
  })
})
