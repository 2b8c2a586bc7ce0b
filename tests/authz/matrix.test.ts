/**
 * The authorization matrix: every endpoint of tests/authz/table.ts × {no key, key without the
 * scope, key with it} × six roles × {same organization, other organization} → the exact status
 * and error code. A refused request must leave the world as it was; a mutating success gets a
 * fresh world of its own.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestService, type TestService } from '../helpers/service'
import { buildWorld, createCast, ENDPOINTS, expectedOutcome, ROLES, type Cast, type Endpoint, type KeyVariant, type World } from './table'

let api: TestService
let casts: { same: Cast; other: Cast }
let world: World
let allScopes: string[]
const keyCache = new Map<string, string>()

async function keyFor(userId: string, scopes: string[]): Promise<string> {
  const signature = `${userId}:${[...scopes].sort().join(',')}`
  let key = keyCache.get(signature)
  if (!key) {
    key = (await api.createKey(userId, scopes)).secret
    keyCache.set(signature, key)
  }
  return key
}

async function worldBuilder(): Promise<World> {
  return buildWorld(api, casts.same, {
    owner: await keyFor(casts.same.owner.id, allScopes),
    administrator: await keyFor(casts.same.administrator.id, allScopes),
  })
}

beforeAll(async () => {
  api = await startTestService()
  allScopes = api.service.core.scopes.map((scope) => scope.name)
  casts = {
    same: await createCast(api, await api.createOrganization('A')),
    other: await createCast(api, await api.createOrganization('B')),
  }
  world = await worldBuilder()
})
afterAll(() => api.stop())

const VARIANTS: KeyVariant[] = ['none', 'without-scope', 'with-scope']

function cases(endpoint: Endpoint) {
  return VARIANTS.filter((variant) => variant !== 'without-scope' || endpoint.scopes.length > 0).flatMap((variant) =>
    ROLES.flatMap((role) => [true, false].map((sameOrganization) => ({ variant, role, sameOrganization }))),
  )
}

for (const endpoint of ENDPOINTS) {
  describe(`${endpoint.method} ${endpoint.route}`, () => {
    for (const { variant, role, sameOrganization } of cases(endpoint)) {
      const expected = expectedOutcome(endpoint, variant, role, sameOrganization)
      test(`${variant} · ${role} · ${sameOrganization ? 'same' : 'other'} organization → ${expected.status}${expected.code ? ` ${expected.code}` : ''}`, async () => {
        const user = (sameOrganization ? casts.same : casts.other)[role]
        const key =
          variant === 'none'
            ? undefined
            : await keyFor(user.id, variant === 'with-scope' ? endpoint.scopes : allScopes.filter((scope) => !endpoint.scopes.includes(scope)))
        const succeeds = expected.status < 300
        const target = endpoint.mutates && succeeds ? await worldBuilder() : world
        const response = await api.request(endpoint.method, endpoint.path(target), { key, body: endpoint.body?.(target) })
        expect({ status: response.status, code: response.body?.errors?.[0]?.code }).toEqual({ status: expected.status, code: expected.code })
        if (succeeds) expect(response.body.errors).toEqual([])
      })
    }
  })
}

describe('lists show only what the caller may see', () => {
  test('another organization never sees organization A in lists', async () => {
    const key = await keyFor(casts.other.superadministrator.id, allScopes)
    const ids = async (path: string) => (await api.request('GET', `${path}?size=100`, { key })).body.data.map((item: { id: string }) => item.id)
    expect(await ids('/api/v1/projects')).not.toContain(world.projectId)
    expect(await ids('/api/v1/teams')).not.toContain(world.linkedTeamId)
    const audit = (await api.request('GET', '/api/v1/audit-logs?size=100', { key })).body.data
    expect(audit.every((record: { projectId: string | null }) => record.projectId !== world.projectId)).toBe(true)
  })

  test('an administrator who is not a member does not see the project; a superadministrator does', async () => {
    const list = async (userId: string) =>
      (await api.request('GET', '/api/v1/projects?size=100', { key: await keyFor(userId, allScopes) })).body.data.map((project: { id: string }) => project.id)
    expect(await list(casts.same.administrator.id)).not.toContain(world.projectId)
    expect(await list(casts.same.superadministrator.id)).toContain(world.projectId)
    expect(await list(casts.same.viewer.id)).toContain(world.projectId)
    expect(await list(casts.same['non-member'].id)).not.toContain(world.projectId)
  })
})
