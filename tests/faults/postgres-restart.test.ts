/**
 * PostgreSQL goes away under load: a fast restart (`pg_ctl restart -m fast`: every session is
 * terminated, the server is back in a moment), an immediate one (as after a crash: backends
 * killed without a word, crash recovery at start), and a stop with the server down for a while.
 * Everything runs on a private server (tests/helpers/private-postgres.ts); the shared one is
 * never touched.
 *
 * The service, as its own process, under a steady load of creates and lists. Guaranteed, and
 * asserted: every answer is a 2xx or the 503 envelope with Retry-After (never a 500, never a
 * hang: every request has a client timeout); the process survives; it recovers on its own
 * within 5 s of the server being back, and stays recovered; every write answered 2xx is in the
 * database exactly once, with its audit record; every work item has exactly one creation record
 * (a change and its audit commit together or not at all).
 *
 * Not guaranteed, so only counted: that a write answered 503 left no row. When the connection
 * dies after PostgreSQL committed but before the service read the acknowledgement, the service
 * cannot know the outcome and answers 503; such a write is present. Clients that must not
 * duplicate on retry send an Idempotency-Key.
 *
 * The database handle alone (src/db.ts), under a heavier pipelined load than the service makes:
 * the states postgres.js handles badly (see "Surviving a PostgreSQL restart" in src/db.ts) come
 * up reliably there (without the workarounds it crashes or hangs), so it proves them: no crash, every failure a 503, and every
 * pooled connection usable afterwards.
 */
import { afterAll, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { openDatabase } from '../../src/db'
import { mapError } from '../../src/http/error-mapper'
import { privatePostgresUnavailable, startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres'
import { call, expectUnavailable, seedProject, serverSkipReason, skipNote, startServiceProcess, type Answer, type ServiceProcess } from './service-process'

const WORKERS = 12
const CLIENT_TIMEOUT_MS = 8000
const RECOVERY_LIMIT_MS = 5000
const DOWN_MS = 1500
const POOL = 4
const configFile = join(tmpdir(), `worktrack-fault-restart-${process.pid}.json`)

interface Outcome {
  kind: 'write' | 'read'
  title?: string
  answer?: Answer
  /** A transport failure or client timeout: the service did not answer. */
  failure?: string
  startedAt: number
}

const skipReason = serverSkipReason ?? privatePostgresUnavailable()
let started: Promise<PrivatePostgres> | undefined
/** The private server both tests use, started by the first that runs. */
const privateServer = () => (started ??= startPrivatePostgres())
let service: ServiceProcess | undefined
let observer: postgres.Sql | undefined

afterAll(async () => {
  await service?.stop()
  await observer?.end({ timeout: 1 })
  await (await started?.catch(() => undefined))?.destroy()
  rmSync(configFile, { force: true })
}, 30_000)

/** Runs `WORKERS` loops of a create and a list until stopped; records every outcome. */
function startLoad(base: string, key: string, projectId: string) {
  const outcomes: Outcome[] = []
  let running = true
  const loop = async (worker: number) => {
    for (let i = 0; running; i++) {
      const title = `load ${worker}-${i}`
      for (const [kind, method, path, body] of [
        ['write', 'POST', `/api/v1/projects/${projectId}/work-items`, { title }],
        ['read', 'GET', `/api/v1/projects/${projectId}/work-items?size=5`, undefined],
      ] as const) {
        const startedAt = Date.now()
        try {
          outcomes.push({ kind, title: kind === 'write' ? title : undefined, answer: await call(base, method, path, key, body, CLIENT_TIMEOUT_MS), startedAt })
        } catch (error) {
          outcomes.push({ kind, title: kind === 'write' ? title : undefined, failure: String(error), startedAt })
          await Bun.sleep(20) // keep a broken service from turning this loop into a busy spin
        }
      }
    }
  }
  const loops = Array.from({ length: WORKERS }, (_, worker) => loop(worker))
  return {
    outcomes,
    async stop() {
      running = false
      await Promise.all(loops)
    },
  }
}

/** Milliseconds from `since` to the end of the first 2xx answer to a request sent after it. */
function recoveryMs(outcomes: Outcome[], since: number): number | undefined {
  const ends = outcomes.filter((o) => o.startedAt >= since && o.answer && o.answer.status < 300).map((o) => o.answer!.endedAt)
  return ends.length ? Math.min(...ends) - since : undefined
}

/** Answers by status, for the log line. */
function tally(outcomes: Outcome[]): string {
  const counts: Record<string, number> = {}
  for (const outcome of outcomes) {
    const key = outcome.answer ? String(outcome.answer.status) : 'no answer'
    counts[key] = (counts[key] ?? 0) + 1
  }
  return JSON.stringify(counts)
}

test.skipIf(!!skipReason)(
  `PostgreSQL restarted and stopped under load: only 2xx or 503 envelopes, recovery within 5 s, every 2xx write kept once${skipNote(skipReason, 'PostgreSQL restart fault')}`,
  async () => {
    const server = await privateServer()
    const seeded = await seedProject(server.url)
    // A pool smaller than the load (default 10) keeps every connection busy and statements
    // queued when the server goes, as under real load.
    writeFileSync(configFile, JSON.stringify({ database: { maxConnections: POOL } }))
    service = await startServiceProcess(server.url, { SERVICE_CONFIG: configFile })
    const load = startLoad(service.base, seeded.key, seeded.projectId)

    await Bun.sleep(1000)
    const restartAt = Date.now()
    await server.restart('fast')
    const restartedAt = Date.now()
    await Bun.sleep(2000)
    // As after a crash: every backend killed at once, no goodbye to clients, recovery at start.
    const crashAt = Date.now()
    await server.restart('immediate')
    const crashRestartedAt = Date.now()
    await Bun.sleep(2000)

    const stopAt = Date.now()
    await server.stop('fast')
    const stoppedAt = Date.now()
    await Bun.sleep(DOWN_MS)
    const downUntil = Date.now()
    await server.start()
    const startedAt = Date.now()
    await Bun.sleep(2500)
    const endAt = Date.now()
    await load.stop()

    const outcomes = load.outcomes
    const inOutage = outcomes.filter((o) => o.answer && o.answer.endedAt >= stoppedAt && o.answer.endedAt < downUntil)
    const firstAfterRestart = recoveryMs(outcomes, restartedAt)
    const firstAfterCrash = recoveryMs(outcomes, crashRestartedAt)
    const firstAfterStart = recoveryMs(outcomes, startedAt)
    console.info(
      `restart fault: ${outcomes.length} requests ${tally(outcomes)}; restart took ${restartedAt - restartAt} ms, first 2xx ${firstAfterRestart} ms after it; ` +
        `crash restart took ${crashRestartedAt - crashAt} ms, first 2xx ${firstAfterCrash} ms after it; ` +
        `down ${startedAt - stopAt} ms (${tally(inOutage)} while down), first 2xx ${firstAfterStart} ms after start; ` +
        `slowest answer ${Math.max(...outcomes.filter((o) => o.answer).map((o) => o.answer!.endedAt - o.startedAt))} ms`,
    )

    // The process survived (a crash would show as dropped connections below; its stderr says why).
    expect(service.alive() ? '' : service.stderr().trim().split('\n').slice(-20).join('\n')).toBe('')
    // Every request was answered (no client timeout, no dropped connection), and only with a 2xx or the 503 envelope.
    expect(outcomes.filter((o) => o.failure).slice(0, 10).map((o) => `${o.kind} ${o.title ?? ''}: ${o.failure}`)).toEqual([])
    expect(outcomes.filter((o) => o.answer!.status >= 300 && o.answer!.status !== 503).slice(0, 10).map((o) => `${o.answer!.status} ${JSON.stringify(o.answer!.body)}`)).toEqual([])
    for (const outcome of outcomes) if (outcome.answer!.status === 503) expectUnavailable(outcome.answer!)
    // While the server was down the load kept getting answers, 503s, and no request sent once the
    // stop began succeeded (one sent before may have done its work in time and still end after the
    // stop when the machine is busy: seen beside the other suite's workers).
    expect(inOutage.filter((o) => o.answer!.status === 503).length).toBeGreaterThan(0)
    expect(inOutage.filter((o) => o.startedAt >= stopAt).every((o) => o.answer!.status === 503)).toBe(true)
    // Recovery on its own, and it stays recovered.
    expect(firstAfterRestart).toBeLessThan(RECOVERY_LIMIT_MS)
    expect(firstAfterCrash).toBeLessThan(RECOVERY_LIMIT_MS)
    expect(firstAfterStart).toBeLessThan(RECOVERY_LIMIT_MS)
    const settled = outcomes.filter((o) => o.startedAt >= startedAt + 1000 && o.startedAt < endAt)
    expect(settled.length).toBeGreaterThan(0)
    expect(settled.filter((o) => o.answer!.status >= 300).map((o) => `${o.answer!.status} ${JSON.stringify(o.answer!.body)}`)).toEqual([])
    // Every pooled connection works again: bursts wider than the pool all succeed promptly.
    for (let burst = 0; burst < 2; burst++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => call(service!.base, 'GET', `/api/v1/projects/${seeded.projectId}/work-items?size=5`, seeded.key)))
      expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200))
      expect(Math.max(...answers.map((answer) => answer.endedAt - answer.startedAt))).toBeLessThan(2000)
    }

    // The database: every 2xx write exactly once (the row the answer named), with its audit record.
    observer = postgres(server.url, { max: 1, onnotice: () => {} })
    const rows = await observer`
      select w.id, w.title, (select count(*)::int from audit_logs a where a.action = 'work_item.created' and a.resource_id = w.id::text) as audits
        from work_items w where w.project_id = ${seeded.projectId}`
    const byTitle = new Map<string, { id: string; count: number; audits: number }>()
    for (const row of rows) {
      const seen = byTitle.get(row.title)
      byTitle.set(row.title, { id: row.id, count: (seen?.count ?? 0) + 1, audits: row.audits })
    }
    expect([...byTitle].filter(([, row]) => row.count !== 1).map(([title]) => title)).toEqual([])
    expect(rows.filter((row) => row.audits !== 1).map((row) => row.title)).toEqual([])
    const [{ orphans }] = (await observer`
      select count(*)::int as orphans from audit_logs a
       where a.action = 'work_item.created' and not exists (select 1 from work_items w where w.id::text = a.resource_id)`) as unknown as [{ orphans: number }]
    expect(orphans).toBe(0)

    const writes = outcomes.filter((o) => o.kind === 'write')
    const acknowledged = writes.filter((o) => o.answer!.status === 201)
    const refused = writes.filter((o) => o.answer!.status === 503)
    expect(acknowledged.length).toBeGreaterThan(0)
    expect(acknowledged.filter((o) => byTitle.get(o.title!)?.id !== o.answer!.body.data.id).map((o) => o.title)).toEqual([])
    // Nothing the load did not send, and nothing beyond the acknowledged writes but 503 ones.
    const sent = new Set(writes.map((o) => o.title))
    expect([...byTitle.keys()].filter((title) => !sent.has(title))).toEqual([])
    const committedDespite503 = refused.filter((o) => byTitle.has(o.title!)).length
    expect(byTitle.size).toBe(acknowledged.length + committedDespite503)
    console.info(`restart fault: ${acknowledged.length} writes acknowledged and present; ${refused.length} answered 503, of which ${committedDespite503} had committed`)
  },
  45_000,
)

test.skipIf(!!skipReason)(
  `the database handle survives repeated restarts under a pipelined load: every failure a 503, every connection usable after${skipNote(skipReason, 'PostgreSQL restart fault (database handle)')}`,
  async () => {
    const server = await privateServer()
    const probe = Bun.spawn([process.execPath, 'tests/faults/restart-probe.ts', server.url], {
      env: { ...process.env, LOG_LEVEL: 'silent' },
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
    })
    // A normal run takes about 6 s; a statement stuck on a dead connection keeps the probe busy.
    let hung = false
    const kill = setTimeout(() => {
      hung = true
      probe.kill('SIGKILL')
    }, 20_000)
    const errors = new Response(probe.stderr).text()
    const reader = probe.stdout.getReader()
    const decoder = new TextDecoder()
    let output = ''
    /** Reads the probe's stdout until `pattern` shows up or the stream ends. */
    const readUntil = async (pattern: RegExp) => {
      while (!pattern.test(output)) {
        const chunk = await reader.read()
        if (chunk.done) return
        output += decoder.decode(chunk.value)
      }
    }
    try {
      await readUntil(/^ready$/m)
      for (const mode of ['immediate', 'fast', 'immediate', 'fast'] as const) {
        await Bun.sleep(300)
        await server.restart(mode)
      }
      await server.stop('fast')
      await Bun.sleep(500)
      await server.start()
      await Bun.sleep(500)
      probe.stdin.end()
      await readUntil(/^\{.*\}$/m)
      const code = await probe.exited
      const trouble = hung ? 'the probe hung (killed after 20 s)' : `exit ${code}: ${(await errors).trim().split('\n').slice(-15).join('\n')}`
      expect(code === 0 ? '' : trouble).toBe('')
      const result = JSON.parse(output.trim().split('\n').at(-1)!) as { failures: Record<string, number>; bursts: number[] }
      console.info(`restart fault (database handle): failures ${JSON.stringify(result.failures)}, slowest statement per burst ${result.bursts.join(', ')} ms`)
      expect(Object.keys(result.failures).filter((key) => !key.startsWith('503 '))).toEqual([])
      expect(result.bursts.filter((slowest) => slowest < 0 || slowest >= 2000)).toEqual([])
    } finally {
      clearTimeout(kill)
      probe.kill('SIGKILL')
    }
  },
  30_000,
)
