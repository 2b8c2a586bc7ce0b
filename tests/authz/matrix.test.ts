/**
 * The authorization matrix: every endpoint of tests/authz/table.ts × {no key, key without the
 * scope, key with it} × six roles × {same organization, other organization} → the exact status
 * and error code. A refused request must leave the world as it was (checked: a refused mutating
 * request writes no audit record, and every change is audited in its own transaction); a mutating
 * success gets a fresh world of its own.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { nextCaseInPart, partNote } from '../helpers/part'
import { startTestService, type TestService } from '../helpers/service'
import { ENDPOINTS, expectedOutcome, ROLES, setUpMatrix, variantsFor, type Endpoint, type Matrix } from './table'

let api: TestService
let matrix: Matrix

beforeAll(async () => {
  api = await startTestService()
  matrix = await setUpMatrix(api)
})
afterAll(() => api.stop())

/** The audit records written under one request id. */
const auditedUnder = async (requestId: string) =>
  Number((await queryRows<{ n: number }>(api.service.core.db, sql`select count(*)::int as n from audit_logs where request_id = ${requestId}`))[0]!.n)

function cases(endpoint: Endpoint) {
  return variantsFor(endpoint).flatMap((variant) => ROLES.flatMap((role) => [true, false].map((sameOrganization) => ({ variant, role, sameOrganization }))))
}

for (const endpoint of ENDPOINTS) {
  describe(`${endpoint.method} ${endpoint.route}${partNote}`, () => {
    for (const { variant, role, sameOrganization } of cases(endpoint)) {
      if (!nextCaseInPart()) continue
      const expected = expectedOutcome(endpoint, variant, role, sameOrganization)
      test(`${variant} · ${role} · ${sameOrganization ? 'same' : 'other'} organization → ${expected.status}${expected.code ? ` ${expected.code}` : ''}`, async () => {
        const { casts, allScopes, keyFor } = matrix
        const user = (sameOrganization ? casts.same : casts.other)[role]
        const key =
          variant === 'none'
            ? undefined
            : await keyFor(user.id, variant === 'with-scope' ? endpoint.scopes : allScopes.filter((scope) => !endpoint.scopes.includes(scope)))
        const succeeds = expected.status < 300
        const target = endpoint.mutates && succeeds ? await matrix.worldBuilder() : matrix.world
        const body = endpoint.upload ? { rawBody: endpoint.upload.body(target), headers: { 'content-type': endpoint.upload.type } } : { body: endpoint.body?.(target) }
        const response = await api.request(endpoint.method, endpoint.path(target), { key, ...body })
        expect({ status: response.status, code: response.body?.errors?.[0]?.code }).toEqual({ status: expected.status, code: expected.code })
        // The project export streams NDJSON (its first line the project); every other answer is the envelope.
        if (succeeds && (response.headers.get('content-type') ?? '').startsWith('application/x-ndjson')) expect(JSON.parse(response.text.split('\n')[0]!).type).toBe('project')
        else if (succeeds) expect(response.body.errors).toEqual([])
        // A change and its audit record commit together: a refused change left none (and a
        // success left one, so the lookup by request id is known to find what was written).
        if (endpoint.mutates) {
          const requestId = response.headers.get('x-request-id')!
          expect(requestId).toBeTruthy()
          const audited = await auditedUnder(requestId)
          if (succeeds) expect(audited).toBeGreaterThan(0)
          else expect(audited).toBe(0)
        }
      })
    }
  })
}

describe('lists show only what the caller may see', () => {
  test('another organization never sees organization A in lists', async () => {
    const { casts, world, keyFor, allScopes } = matrix
    const key = await keyFor(casts.other.superadministrator.id, allScopes)
    const ids = async (path: string) => (await api.request('GET', `${path}?size=100`, { key })).body.data.map((item: { id: string }) => item.id)
    expect(await ids('/api/v1/projects')).not.toContain(world.projectId)
    expect(await ids('/api/v1/teams')).not.toContain(world.linkedTeamId)
    const audit = (await api.request('GET', '/api/v1/audit-logs?size=100', { key })).body.data
    expect(audit.every((record: { projectId: string | null }) => record.projectId !== world.projectId)).toBe(true)
  })

  test('an administrator who is not a member does not see the project; a superadministrator does', async () => {
    const { casts, world, keyFor, allScopes } = matrix
    const list = async (userId: string) =>
      (await api.request('GET', '/api/v1/projects?size=100', { key: await keyFor(userId, allScopes) })).body.data.map((project: { id: string }) => project.id)
    expect(await list(casts.same.administrator.id)).not.toContain(world.projectId)
    expect(await list(casts.same.superadministrator.id)).toContain(world.projectId)
    expect(await list(casts.same.viewer.id)).toContain(world.projectId)
    expect(await list(casts.same['non-member'].id)).not.toContain(world.projectId)
  })
})
