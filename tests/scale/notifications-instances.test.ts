/**
 * Notification threads from two service processes on one database: comments made through both
 * instances on a project 30 users watch, one instance killed (SIGKILL) in the middle of the burst
 * while its fan-out workers run. Every comment reaches every watcher's thread exactly once: a
 * trigger records each committed thread write (a row in a table of the test's own, written in the
 * fan-out's transaction, so a write rolled back by the kill leaves none), and each watcher's thread
 * of a work item must be written exactly as many times as the work item got comments.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { queryText } from '../../src/db'
import { createTestDatabase, usingServer, type TestDatabase } from '../helpers/database'
import { startInstance, type Instance } from '../helpers/instance'
import { eventually, startTestService, type TestService } from '../helpers/service'
import { testTriggers, type TestTriggers } from '../helpers/test-triggers'
import { timeLimit } from '../helpers/time'
import { call } from './cluster'

const WATCHERS = 30
const COMMENTS = 40
const INSTANCE_CONFIG = {
  auth: { passwordHashLogN: 10 },
  database: { maxConnections: 6 },
  // Small batches, often: both instances' workers take part, and the kill finds some in flight.
  notifications: { pollIntervalMs: 50, batchSize: 2 },
}

describe.skipIf(!usingServer())('notification threads from several instances (needs a PostgreSQL server: TEST_DATABASE_URL; PGlite is one process)', () => {
  let database: TestDatabase
  let seed: TestService
  let triggers: TestTriggers
  let instances: Instance[] = []
  let key: string
  let itemIds: string[] = []
  let watcherIds: string[] = []

  beforeAll(async () => {
    database = await createTestDatabase()
    // Makes users, keys, the project and the watches; fans nothing out itself.
    seed = await startTestService({ database, config: { notifications: { workers: false } } })
    const organizationId = await seed.createOrganization()
    const admin = await seed.createUser(organizationId, 'administrator')
    key = (await seed.createKey(admin.id, seed.service.core.scopes.map((scope) => scope.name))).secret
    const project = (await seed.request('POST', '/api/v1/projects', { key, body: { name: 'Watched' } })).body.data
    for (let i = 0; i < WATCHERS; i++) {
      const watcher = await seed.createUser(organizationId, 'member')
      watcherIds.push(watcher.id)
      expect((await seed.request('POST', `/api/v1/projects/${project.id}/members`, { key, body: { userId: watcher.id, accessLevel: 'viewer' } })).status).toBe(201)
      const own = (await seed.createKey(watcher.id, ['work_items:read'])).secret
      expect((await seed.request('PUT', `/api/v1/projects/${project.id}/subscription`, { key: own })).status).toBe(200)
    }
    for (let i = 0; i < 4; i++) itemIds.push((await seed.request('POST', `/api/v1/projects/${project.id}/work-items`, { key, body: { title: `Item ${i}` } })).body.data.id)
    // The creations were queued, not fanned out: drop them, so the burst's comments are all there is.
    await seed.service.core.db.execute(sql`delete from notification_activities`)

    instances = await Promise.all(['a', 'b'].map((name) => startInstance({ name, databaseUrl: database.url, config: INSTANCE_CONFIG })))
    // After the instances started: on Citus a start places every table it finds, this one too.
    triggers = await testTriggers(database)
    await triggers.onEveryNode('create table thread_writes (user_id uuid, work_item_id uuid)')
    await database.db.execute(
      sql.raw(`create function record_thread_write() returns trigger language plpgsql as $$ begin ${triggers.oneCopy}
        insert into thread_writes values (new.user_id, new.work_item_id); return new; end $$`),
    )
    await triggers.createTrigger({ name: 'record_thread_write', timing: 'after insert or update', table: 'notification_threads', function: 'record_thread_write' })
  }, timeLimit(120_000))

  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.stop()))
    await triggers?.close()
    await seed?.stop()
    await database?.close()
  }, 30_000)

  test(
    `${COMMENTS} comments through two instances, one killed halfway: each of ${WATCHERS} watchers gets each comment once`,
    async () => {
      const [a, b] = instances as [Instance, Instance]
      const comment = async (k: number) => {
        const through = k < COMMENTS / 2 && k % 2 === 0 ? a : b
        const answer = await call(through, 'POST', `/api/v1/work-items/${itemIds[k % itemIds.length]}/entries`, { bearer: key, body: { body: `comment ${k}` } })
        if (answer.status !== 201) throw new Error(`${through.name}: ${answer.status} ${answer.text.slice(0, 300)}`)
      }
      await Promise.all(Array.from({ length: COMMENTS / 2 }, (_, k) => comment(k)))
      // Killed with its workers fanning out the first half (batches of two, every 50 ms).
      process.kill(a.pid, 'SIGKILL')
      await Promise.all(Array.from({ length: COMMENTS / 2 }, (_, k) => comment(COMMENTS / 2 + k)))

      const queued = async () => Number((await queryText<{ n: number }>(database.db, 'select count(*)::int as n from notification_activities', []))[0]!.n)
      await eventually(async () => expect(await queued()).toBe(0), timeLimit(30_000))
      // Each comment writes each watcher's thread of its work item once (a write made and rolled back
      // by the kill is not recorded): per watcher and work item, as many writes as comments on it.
      const writes = (await triggers.fromEveryNode<{ userId: string; workItemId: string; n: string }>('select user_id as "userId", work_item_id as "workItemId", count(*) as n from thread_writes group by 1, 2')).flat()
      const perItem = COMMENTS / itemIds.length
      expect(writes.filter((write) => Number(write.n) !== perItem)).toEqual([])
      expect(writes).toHaveLength(WATCHERS * itemIds.length)
      expect(new Set(writes.map((write) => write.userId))).toEqual(new Set(watcherIds))
    },
    timeLimit(90_000),
  )
})
