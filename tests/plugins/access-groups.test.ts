/**
 * Grouped project access checks are exact (plugins/projects/access-groups.ts): whatever checks
 * arrive together, each caller gets what its own statement would have answered — the level, or
 * 404, or 403 for too low a level, and a list's versions. A property over random callers (an
 * owner, a direct viewer, a team editor who is also a direct viewer elsewhere, a member with no
 * access, a superadministrator, another organization's owner), projects (two of the organization,
 * another organization's, an unknown id, a non-UUID), required levels, list or single checks and
 * group sizes; plus a lone check that runs its own statement, a group of two organizations, a
 * failing group statement whose checks run again alone, checks inside a transaction, and the
 * versions a grouped list check reads after a write.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { accessGroups, type AccessGroupOptions } from '../../plugins/projects/access-groups'
import { createAccessGroups, createProjectAccess, loneChecks } from '../../plugins/projects/access'
import type { AccessLevel, ProjectAccessService } from '../../plugins/projects/api'
import { hasCitus } from '../../src/citus'
import { queryText } from '../../src/db'
import { actorOf, type Actor } from '../../src/services/identity'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

const SCOPES = ['teams:write', 'team_members:write', 'projects:read', 'projects:write', 'project_access:write', 'work_items:write']

let api: TestService
let citus: boolean
const users: Record<string, TestUser> = {}
const keys: Record<string, string> = {}
const projects: Record<string, string> = {}

type Who = 'owner' | 'viewer' | 'teamEditor' | 'nobody' | 'superadministrator' | 'elsewhere'
type Which = 'first' | 'second' | 'elsewhere' | 'unknown' | 'notUuid'

async function created(who: string, path: string, body: unknown): Promise<{ id: string }> {
  const response = await api.request('POST', path, { key: keys[who], body })
  if (response.status !== 201) throw new Error(`${path}: ${response.status} ${response.text}`)
  return response.body.data
}

beforeAll(async () => {
  api = await startTestService()
  citus = await hasCitus(api.service.core.db)
  const organization = await api.createOrganization()
  const far = await api.createOrganization()
  users.owner = await api.createUser(organization)
  users.viewer = await api.createUser(organization)
  users.teamEditor = await api.createUser(organization)
  users.nobody = await api.createUser(organization)
  users.superadministrator = await api.createUser(organization, 'superadministrator')
  users.administrator = await api.createUser(organization, 'administrator')
  users.elsewhere = await api.createUser(far)
  for (const [name, user] of Object.entries(users)) keys[name] = (await api.createKey(user.id, SCOPES)).secret
  projects.first = (await created('owner', '/api/v1/projects', { name: 'First' })).id
  projects.second = (await created('owner', '/api/v1/projects', { name: 'Second' })).id
  projects.elsewhere = (await created('elsewhere', '/api/v1/projects', { name: 'Far' })).id
  projects.unknown = '00000000-0000-7000-8000-000000000000'
  projects.notUuid = 'nope'
  await created('owner', `/api/v1/projects/${projects.first}/members`, { userId: users.viewer!.id, accessLevel: 'viewer' })
  const team = await created('administrator', '/api/v1/teams', { name: 'Editors' })
  await created('administrator', `/api/v1/teams/${team.id}/members`, { userId: users.teamEditor!.id })
  await created('owner', `/api/v1/projects/${projects.first}/teams`, { teamId: team.id, accessLevel: 'editor' })
  await created('owner', `/api/v1/projects/${projects.second}/members`, { userId: users.teamEditor!.id, accessLevel: 'viewer' })
})
afterAll(() => api.stop())

function actor(who: Who): Actor {
  const user = users[who]!
  const principal = { user: { id: user.id, organizationId: user.organizationId, role: user.role }, key: null } as never
  return actorOf(principal, 'rest', 'req_test')
}

interface CheckSpec {
  who: Who
  which: Which
  required: AccessLevel
  list: boolean
}

const checkSpec = fc.record<CheckSpec>({
  who: fc.constantFrom<Who>('owner', 'viewer', 'viewer', 'teamEditor', 'teamEditor', 'nobody', 'superadministrator', 'elsewhere'),
  which: fc.constantFrom<Which>('first', 'first', 'first', 'second', 'second', 'elsewhere', 'unknown', 'notUuid'),
  required: fc.constantFrom<AccessLevel>('viewer', 'viewer', 'editor', 'owner'),
  list: fc.boolean(),
})

/** What a caller sees of a check: the access (with the version for a list), or the error's status and message. */
async function outcome(access: ProjectAccessService, spec: CheckSpec): Promise<unknown> {
  const projectId = projects[spec.which]!
  try {
    return spec.list ? await access.listAccess(actor(spec.who), projectId, spec.required) : await access.requireProjectAccess(actor(spec.who), projectId, spec.required)
  } catch (error) {
    const { status, message } = error as { status?: number; message: string }
    if (!status) throw error
    return { status, message }
  }
}

const groupsWith = (options: Partial<AccessGroupOptions>) => createAccessGroups(api.service.core.db, { enabled: true, maxChecks: 256, concurrency: 1, ...options })

describe('grouped access checks', () => {
  test('every caller gets the answer its own statement gives, whatever checks arrive with it', async () => {
    const db = api.service.core.db
    const alone = createProjectAccess(db, groupsWith({ enabled: false }))
    await fc.assert(
      fc.asyncProperty(fc.array(checkSpec, { minLength: 1, maxLength: 32 }), fc.integer({ min: 2, max: 12 }), fc.integer({ min: 1, max: 3 }), async (specs, maxChecks, concurrency) => {
        const one: unknown[] = []
        for (const spec of specs) one.push(await outcome(alone, spec))
        const groups = groupsWith({ maxChecks, concurrency })
        const together = await Promise.all(specs.map((spec) => outcome(createProjectAccess(db, groups), spec)))
        expect(together).toEqual(one)
        // Checks of a UUID reach the line; the first `concurrency` run alone at once, the rest wait and
        // group (on Citus a group is one organization's checks, so groups may be of one check).
        const reaching = specs.filter((spec) => spec.which !== 'notUuid')
        const far = reaching.slice(concurrency).filter((spec) => spec.who === 'elsewhere').length
        const mayShare = citus ? Math.max(far, reaching.length - concurrency - far) : reaching.length - concurrency
        if (mayShare >= 2) expect(groups.stats.grouped).toBeGreaterThanOrEqual(2)
        expect(groups.stats.items).toBe(reaching.length)
        expect(groups.stats.retried).toBe(0)
      }),
      { numRuns: 60 },
    )
  })

  test('a lone check runs its own statement, at once', async () => {
    const groups = groupsWith({ concurrency: 4 })
    const access = createProjectAccess(api.service.core.db, groups)
    expect(await access.requireProjectAccess(actor('viewer'), projects.first!, 'viewer')).toEqual({ projectId: projects.first!, organizationId: users.viewer!.organizationId, level: 'viewer' })
    expect(groups.stats).toEqual({ statements: 1, items: 1, grouped: 0, retried: 0 })
  })

  test('checks of two organizations: one statement on one database, one per organization on Citus', async () => {
    const groups = groupsWith({})
    const access = createProjectAccess(api.service.core.db, groups)
    const specs: CheckSpec[] = [
      { who: 'owner', which: 'first', required: 'viewer', list: true },
      { who: 'elsewhere', which: 'elsewhere', required: 'owner', list: true },
      { who: 'viewer', which: 'first', required: 'viewer', list: false },
      { who: 'elsewhere', which: 'first', required: 'viewer', list: true },
      { who: 'owner', which: 'elsewhere', required: 'viewer', list: true },
    ]
    const answers = await Promise.all(specs.map((spec) => outcome(access, spec)))
    expect(answers.map((answer) => (answer as { level?: string; status?: number }).level ?? (answer as { status: number }).status)).toEqual(['owner', 'owner', 'viewer', 404, 404])
    // The first alone; the four others in one statement, or in two (one per organization) on Citus.
    expect(groups.stats.statements).toBe(citus ? 3 : 2)
    expect(groups.stats.grouped).toBe(4)
  })

  test('a group statement that fails answers no one with its error: its checks run again alone', async () => {
    const db = api.service.core.db
    const broken = { text: 'select 1 / 0 as ord', parameters: [] }
    const alone = createProjectAccess(db, groupsWith({ enabled: false }))
    const groups = accessGroups(db, { enabled: true, maxChecks: 256, concurrency: 1 }, loneChecks(db), { organization: broken, checks: broken })
    const access = createProjectAccess(db, groups)
    const specs: CheckSpec[] = ['owner', 'viewer', 'teamEditor', 'nobody'].map((who) => ({ who: who as Who, which: 'first', required: 'viewer', list: true }))
    const answers = await Promise.all(specs.map((spec) => outcome(access, spec)))
    expect(answers).toEqual(await Promise.all(specs.map((spec) => outcome(alone, spec))))
    expect(groups.stats.retried).toBe(3)
  })

  test('a check inside a transaction runs there, alone, and sees the transaction', async () => {
    const groups = groupsWith({})
    const access = createProjectAccess(api.service.core.db, groups)
    await api.service.core.db.transaction(async (tx) => {
      await queryText(tx, 'delete from project_members where project_id = $1 and user_id = $2 and organization_id = $3', [projects.first, users.viewer!.id, users.viewer!.organizationId])
      await expect(access.requireProjectAccess(actor('viewer'), projects.first!, 'viewer', tx)).rejects.toMatchObject({ status: 404 })
      throw new Rollback()
    }).catch((error) => {
      if (!(error instanceof Rollback)) throw error
    })
    expect(groups.stats.items).toBe(0)
    expect(await outcome(access, { who: 'viewer', which: 'first', required: 'viewer', list: false })).toMatchObject({ level: 'viewer' })
  })

  test('grouped list checks read the versions committed before them: a write moves every caller\'s version', async () => {
    const groups = groupsWith({})
    const access = createProjectAccess(api.service.core.db, groups)
    const versions = async () => new Set((await Promise.all(['owner', 'viewer', 'teamEditor', 'superadministrator'].map((who) => access.listAccess(actor(who as Who), projects.first!)))).map((row) => row.version))
    const before = await versions()
    expect(before.size).toBe(1)
    const write = await api.request('POST', `/api/v1/projects/${projects.first}/work-items`, { key: keys.owner, body: { title: 'moves the version' } })
    expect(write.status).toBe(201)
    const after = await versions()
    expect(after.size).toBe(1)
    expect([...after][0]).not.toBe([...before][0])
    expect(groups.stats.grouped).toBeGreaterThanOrEqual(2)
  })
})

class Rollback extends Error {}
