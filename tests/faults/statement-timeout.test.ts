/**
 * A statement that runs past `database.statementTimeoutMs` ends the request promptly with the
 * 503 envelope (not a hung request, not a 500), and changes nothing; once the obstacle is gone
 * the same request succeeds. The slow statement is made deterministic with a row lock held from
 * another connection, which the PATCH's `select … for update` waits on.
 */
import { afterAll, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { openDatabase } from '../../src/db'
import { applyMigrations, MIGRATION_LOCK_KEY } from '../../src/migrate'
import { createTestDatabase, timeLimit, type TestDatabase } from '../helpers/database'
import { call, expectUnavailable, seedProject, serverSkipReason, skipNote, startServiceProcess, type ServiceProcess } from './service-process'

const TIMEOUT_MS = 200
const configFile = join(tmpdir(), `worktrack-fault-timeout-${process.pid}.json`)
let database: TestDatabase | undefined
let service: ServiceProcess | undefined
let locker: postgres.Sql | undefined

afterAll(async () => {
  await service?.stop()
  await locker?.end({ timeout: 1 })
  await database?.close()
  rmSync(configFile, { force: true })
})

test.skipIf(!!serverSkipReason)(
  `a statement past database.statementTimeoutMs answers 503 promptly, changes nothing, and succeeds once unblocked${skipNote(serverSkipReason, 'statement timeout fault')}`,
  async () => {
    database = await createTestDatabase()
    const seeded = await seedProject(database.url)
    const path = `/api/v1/projects/${seeded.projectId}/work-items`
    // The timeout comes from the config file, as an operator sets it (docs/configuration.md).
    writeFileSync(configFile, JSON.stringify({ database: { statementTimeoutMs: TIMEOUT_MS } }))
    // Setting up, not the subject: the timeout bounds start-up's statements too, and on a busy
    // Citus cluster one of a fresh process's first can take longer than 200 ms (seen in CI:
    // "startup refused: canceling statement due to statement timeout"); such a start is tried again.
    for (let attempt = 1; ; attempt++) {
      try {
        service = await startServiceProcess(database.url, { SERVICE_CONFIG: configFile })
        break
      } catch (error) {
        if (attempt >= 5 || !String(error).includes('statement timeout')) throw error
      }
    }
    // Likewise a create that met the short timeout (a fresh service's first
    // statements on a busy Citus cluster can: each new connection of its pool loads the cluster's
    // metadata of the tables a create touches) changed nothing, so it is simply tried again, until
    // the pool's connections are warm (10 tries were not enough once the create touched labels and
    // custom fields too).
    let created = await call(service.base, 'POST', path, seeded.key, { title: 'locked item' })
    for (let attempt = 1; attempt < 60 && created.status === 503; attempt++) created = await call(service.base, 'POST', path, seeded.key, { title: 'locked item' })
    expect(created.status).toBe(201)
    const itemId: string = created.body.data.id

    locker = postgres(database.url, { max: 2, onnotice: () => {} })
    const session = await locker.reserve()
    await session`begin`
    // Naming the organization keeps the lock on one shard on Citus (which refuses a row lock
    // that spans shards).
    await session`select id from work_items where id = ${itemId} and organization_id = ${seeded.organizationId} for update`

    const blocked = await call(service.base, 'PATCH', `${path}/${itemId}`, seeded.key, { title: 'renamed' }, 5000)
    const elapsed = blocked.endedAt - blocked.startedAt
    expectUnavailable(blocked)
    // It waited on the lock for about the timeout, then stopped: far from a hang.
    expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS * 0.9)
    expect(elapsed).toBeLessThan(2000)
    console.info(`statement timeout: 503 after ${elapsed} ms (timeout ${TIMEOUT_MS} ms)`)

    // The timed-out transaction was rolled back: no change, no audit record.
    const [unchanged] = await locker`select title from work_items where id = ${itemId}`
    expect(unchanged!.title).toBe('locked item')
    expect((await locker`select 1 from audit_logs where action = 'work_item.updated' and resource_id = ${itemId}`).length).toBe(0)

    await session`rollback`
    session.release()

    const retried = await call(service.base, 'PATCH', `${path}/${itemId}`, seeded.key, { title: 'renamed' })
    expect(retried.status).toBe(200)
    expect(retried.body.data.title).toBe('renamed')
    expect((await locker`select title from work_items where id = ${itemId}`)[0]!.title).toBe('renamed')
    expect((await locker`select 1 from audit_logs where action = 'work_item.updated' and resource_id = ${itemId}`).length).toBe(1)
    expect(service.alive()).toBe(true)
  },
  timeLimit(30_000),
)

test.skipIf(!!serverSkipReason)(
  `start-up's migrations are not bound by it: one waiting past the timeout for another instance's migration completes${skipNote(serverSkipReason, 'migration under a statement timeout')}`,
  async () => {
    const fresh = await createTestDatabase()
    const migrator = await openDatabase(fresh.url, { maxConnections: 1, statementTimeoutMs: 50 })
    const holder = postgres(fresh.url, { max: 2, onnotice: () => {} })
    try {
      // Another instance migrating: it holds the migrations' lock, in its own transaction.
      const other = await holder.reserve()
      await other`begin`
      await other`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`
      let failure: unknown
      const migrating = applyMigrations(migrator.db).catch((error) => {
        failure = error
      })
      // The server tells when the wait has lasted three times the timeout (or the wait ended).
      const waitedLong = async () =>
        (
          await holder`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'
            and query like '%pg_advisory_xact_lock%' and now() - query_start > interval '150 milliseconds'`
        ).length > 0
      for (const deadline = Date.now() + 20_000; !failure && !(await waitedLong()) && Date.now() < deadline; ) await Bun.sleep(10)
      await other`commit`
      other.release()
      await migrating
      expect(failure).toBeUndefined()
    } finally {
      await holder.end({ timeout: 1 })
      await migrator.close()
      await fresh.close()
    }
  },
  60_000,
)
