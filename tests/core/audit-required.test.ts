/**
 * Every change commits with its audit record (src/writes.ts). In the tests' services a unit of
 * work with a list scope that changes rows and writes no audit record throws, naming its scope,
 * and its transaction rolls back; a unit that records its audit, a unit that changes nothing, and
 * a unit without a list scope commit as they always do.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { AuditActor } from '../../src/audit'
import { createChangeFeed } from '../../src/changes'
import { queryText } from '../../src/db'
import { createWrites } from '../../src/writes'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let organizationId: string
let actor: AuditActor

beforeAll(async () => {
  api = await startTestService({ plugins: ['auth'] })
  organizationId = await api.createOrganization('Audited')
  actor = { organizationId, userId: null, apiKeyId: null, via: 'cli', requestId: null }
})
afterAll(() => api.stop())

const nameOf = async () => (await queryText<{ name: string }>(api.service.core.db, 'select name from organizations where id = $1', [organizationId]))[0]!.name
const rename = (tx: Parameters<typeof queryText>[0], name: string) => queryText(tx, 'update organizations set name = $2 where id = $1', [organizationId, name])
const records = async () => (await queryText<{ n: number }>(api.service.core.db, 'select count(*)::int as n from audit_logs where organization_id = $1', [organizationId]))[0]!.n

/**
 * The check reads rows changed from pg_stat_xact_user_tables, which on a Citus coordinator does not
 * count the rows its workers' shards change: there the check cannot fire, and this part is skipped,
 * saying so (the PGlite and PostgreSQL suites prove it).
 */
const citus = process.env.TEST_CITUS_URL ? ' (skipped on Citus: the coordinator does not count rows its workers change)' : ''
describe.skipIf(Boolean(citus))(`a write that records no audit${citus}`, () => {
  test("fails, naming its scope, and rolls back, for the 'organization' and the 'project' scope", async () => {
    const before = await records()
    for (const scope of ['organization', 'project'] as const) {
      const unaudited = api.service.core.writes.change(actor, scope, async (w) => {
        await rename(w.tx, `renamed without a record (${scope})`)
        return 'done'
      })
      await expect(unaudited).rejects.toThrow(`a unit of work with list scope '${scope}' changed 1 rows and wrote no audit record`)
    }
    expect(await nameOf()).toBe('Audited')
    expect(await records()).toBe(before)
  })

  test('commits when it writes its audit record', async () => {
    const before = await records()
    await api.service.core.writes.change(actor, 'organization', async (w) => {
      await rename(w.tx, 'Audited, renamed')
      await w.audit({ action: 'organization.updated', resourceType: 'organization', resourceId: organizationId })
    })
    expect(await nameOf()).toBe('Audited, renamed')
    expect(await records()).toBe(before + 1)
    await api.service.core.writes.change(actor, 'organization', async (w) => {
      await rename(w.tx, 'Audited')
      await w.audit({ action: 'organization.updated', resourceType: 'organization', resourceId: organizationId })
    })
  })

  test('commits when it changes nothing (a no-op update reads and locks, and writes no record)', async () => {
    const answer = await api.service.core.writes.change(actor, 'organization', async (w) => {
      await queryText(w.tx, 'select id from organizations where id = $1 for update', [organizationId])
      await queryText(w.tx, 'update organizations set name = $2 where id = $1 and false', [organizationId, 'never'])
      return 'unchanged'
    })
    expect(answer).toBe('unchanged')
  })

  test('commits without a record when the write has no list scope (sign-ins, keys, pages)', async () => {
    await api.service.core.writes.change(actor, null, async (w) => {
      await rename(w.tx, 'Audited (no scope)')
    })
    expect(await nameOf()).toBe('Audited (no scope)')
    await api.service.core.writes.change(actor, null, async (w) => {
      await rename(w.tx, 'Audited')
    })
  })

  test('is not checked by a service built without requireAudit (production)', async () => {
    const writes = createWrites(api.service.core.db, createChangeFeed([]))
    await writes.change(actor, 'organization', async (w) => {
      await rename(w.tx, 'Audited (unchecked)')
    })
    expect(await nameOf()).toBe('Audited (unchecked)')
    await writes.change(actor, null, async (w) => {
      await rename(w.tx, 'Audited')
    })
  })
})
