/**
 * A service process killed in the middle of a mutation leaves nothing behind: the work item row
 * it had inserted and the audit record it was about to write belong to one transaction, which
 * PostgreSQL rolls back when the dead process's connection goes. A restarted service then makes
 * the same request succeed, with both rows.
 */
import { afterAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createTestDatabase, type TestDatabase } from '../helpers/database'
import { eventually } from '../helpers/service'
import { call, seedProject, serverSkipReason, skipNote, startServiceProcess, type ServiceProcess } from './service-process'

let database: TestDatabase | undefined
const services: ServiceProcess[] = []
let observer: postgres.Sql | undefined

afterAll(async () => {
  for (const service of services) if (service.alive()) await service.kill()
  await observer?.end({ timeout: 1 })
  await database?.close()
})

test.skipIf(!!serverSkipReason)(
  `a process killed (SIGKILL) mid-transaction leaves neither the row nor its audit record; a restarted service then succeeds${skipNote(serverSkipReason, 'killed process fault')}`,
  async () => {
    database = await createTestDatabase()
    const seeded = await seedProject(database.url)
    const path = `/api/v1/projects/${seeded.projectId}/work-items`
    const title = 'written by a process about to die'
    const victim = await startServiceProcess(database.url)
    services.push(victim)

    observer = postgres(database.url, { max: 3, onnotice: () => {} })
    const blocker = await observer.reserve()
    await blocker`begin`
    // Reads still pass; the audit insert (every mutation writes one in its transaction) waits.
    await blocker`lock table audit_logs in exclusive mode`

    const pending = call(victim.base, 'POST', path, seeded.key, { title }, 20_000).catch((error: Error) => error)
    // The request's backend: it holds the work item insert and waits for the audit table.
    const backend = await eventually(async () => {
      const [row] = await observer!`
        select l.pid from pg_locks l join pg_stat_activity a on a.pid = l.pid
         where l.relation = 'audit_logs'::regclass and not l.granted and a.application_name = 'worktrack'`
      expect(row).toBeDefined()
      return row!.pid as number
    }, 10_000)
    const [inserted] = await observer`
      select 1 from pg_locks where pid = ${backend} and relation = 'work_items'::regclass and mode = 'RowExclusiveLock' and granted`
    expect(inserted).toBeDefined()

    await victim.kill()
    const answer = await pending
    expect(answer).toBeInstanceOf(Error) // the client saw the connection drop, not an answer
    await blocker`rollback`
    blocker.release()

    // The orphaned backend gets the lock, finds its client gone and aborts its transaction.
    await eventually(async () => expect((await observer!`select 1 from pg_stat_activity where pid = ${backend}`).length).toBe(0), 10_000)
    expect((await observer`select id from work_items where title = ${title}`).length).toBe(0)
    expect((await observer`select id from audit_logs where action = 'work_item.created' and changes->'after'->>'title' = ${title}`).length).toBe(0)
    expect((await observer`select count(*)::int as n from work_items where project_id = ${seeded.projectId}`)[0]!.n).toBe(0)

    const successor = await startServiceProcess(database.url)
    services.push(successor)
    const created = await call(successor.base, 'POST', path, seeded.key, { title })
    expect(created.status).toBe(201)
    const rows = await observer`select id, number from work_items where title = ${title}`
    expect(rows.map((row) => row.id)).toEqual([created.body.data.id])
    const audits = await observer`select resource_id from audit_logs where action = 'work_item.created' and changes->'after'->>'title' = ${title}`
    expect(audits.map((row) => row.resource_id)).toEqual([created.body.data.id])
    await successor.stop()
  },
  40_000,
)
