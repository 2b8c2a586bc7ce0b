/**
 * Work pushes under a mixed load: how long after an assignment commits the assignee's push reaches
 * FCM. USERS viewers of a project (BENCH_WORK_PUSH_USERS, 500), one android device each; the
 * service in its own process (tests/helpers/push-worker.ts: the real service, the notifications
 * fan-out and the push outbox with their default configuration, firebase-admin redirected to the
 * fake FCM), the fake FCM in this process. While wrk keeps a background mix of list reads and
 * comments on a work item nobody else watches (so they push nothing) on the service, this process
 * assigns a new work item to a member at a steady rate (`PATCH …/work-items/{id}` with
 * `{"assigneeId"}`, BENCH_WORK_PUSH_RATE a second for BENCH_WORK_PUSH_SECONDS) and matches each
 * to the fake's first send with `data.type` `work` and its `data.workItemId`.
 *
 * The commit itself is not seen from outside, so it is bracketed: the answer leaves after the
 * commit, so the send's arrival − the answer's arrival here is a lower bound of commit → FCM; the
 * work item's new `updatedAt` is its transaction's `now()` (its start, ms, on this machine's clock),
 * before the commit, so the send's arrival − `updatedAt` is an upper bound. The target is judged
 * on the upper bound.
 */
import { sql } from 'drizzle-orm'
import type { Figures } from '../figures'
import { queryRows, queryText } from '../../src/db'
import type { RecordedSend } from '../../tests/helpers/fake-fcm'
import { cpuMeter, type CpuShare } from '../lib/cpu'
import { seededDatabase } from '../lib/database'
import { startPushService } from '../lib/push-service'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { percentile, round } from '../lib/stats'
import { wrk, type WrkRequest } from '../lib/wrk'
import { seedMembers, seedOrganization, seedProject } from '../seed/organization'
import { seedWork } from '../seed/work'
import { LIMITS, TARGETS } from '../targets'

type Spread = Figures['work-push']['fromStart']

const spreadRow = (label: string, l: Spread) => `| ${label} | ${round(l.p50)} | ${round(l.p90)} | ${round(l.p99)} | ${round(l.max)} |`

export const name = 'work-push'
export const target = TARGETS[name]

const USERS = Number(process.env.BENCH_WORK_PUSH_USERS ?? 500)
const RATE = Number(process.env.BENCH_WORK_PUSH_RATE ?? 20)
const SECONDS = Number(process.env.BENCH_WORK_PUSH_SECONDS ?? 30)
const CONNECTIONS = Number(process.env.BENCH_WORK_PUSH_CONNECTIONS ?? 16)
/** Assignments made before the load, one after another, so the first measured push does not open FCM's connection. */
const WARMUP = 5
/** Seconds of background load before the first measured assignment and after the last one. */
const LEAD_SECONDS = 2
const TAIL_SECONDS = 6
/** The longest wait for the pushes after the last assignment was answered. */
const DEADLINE_SECONDS = 60
/** Most assignments this client keeps in flight (the service answering slower than the rate). */
const IN_FLIGHT_CAP = 200
const PORT = 3887

const ASSIGNMENTS = Math.round(RATE * SECONDS)

/** A writer with a key, the project with USERS viewers (a device each) and ASSIGNMENTS + WARMUP work items, and a project nobody watches. */
const seed = () =>
  seededDatabase('worktrack_bench_work_push', async (db) => {
    const writer = await seedOrganization(db, { scopes: ['work_items:read', 'work_items:write', 'entries:read', 'entries:write'] })
    await seedMembers(db, writer.organizationId, USERS, writer.projectId, 'assignee')
    await queryText(
      db,
      `insert into devices (token, user_id, organization_id, platform)
        select 'bench-work-' || substr(u.username, 9) || ':APA91b' || md5(u.id::text), u.id, $1, 'android'
        from users u where u.organization_id = $1 and u.username like 'assignee%'`,
      [writer.organizationId],
    )
    await seedWork(db, writer, { workItems: ASSIGNMENTS + WARMUP, entries: 0 })
    const quiet = await seedProject(db, writer.organizationId, writer.userId, 'Unwatched')
    const assignees = await queryRows<{ id: string }>(db, sql`select id from users where organization_id = ${writer.organizationId} and username like 'assignee%' order by substr(username, 9)::int`)
    const items = await queryRows<{ id: string }>(db, sql`select id from work_items where project_id = ${writer.projectId} and organization_id = ${writer.organizationId} order by number`)
    await db.execute(sql`analyze`)
    return { ...writer, quiet, assignees: assignees.map((row) => row.id), items: items.map((row) => row.id) }
  })

interface Assignment {
  workItemId: string
  /** Epoch ms: the PATCH sent, its transaction's start (the new `updatedAt`), its answer received (0: no answer). */
  sentAt: number
  startedAt: number
  answeredAt: number
  status: number
}

export async function run(): Promise<void> {
  const { url, seeded } = await seed()
  const pushService = await startPushService(url, PORT)
  const { fcm, service } = pushService
  const base = `http://127.0.0.1:${PORT}`
  const json = { authorization: `Bearer ${seeded.secret}`, 'content-type': 'application/json' }
  /** The first work push the fake received for each work item, and how many it received. */
  const firstSend = new Map<string, RecordedSend>()
  const sendsOf = new Map<string, number>()
  let scanned = 0
  const scan = () => {
    for (; scanned < fcm.sends.length; scanned++) {
      const send = fcm.sends[scanned]!
      const id = send.message.data?.type === 'work' ? send.message.data.workItemId : undefined
      if (!id) continue
      sendsOf.set(id, (sendsOf.get(id) ?? 0) + 1)
      if (!firstSend.has(id)) firstSend.set(id, send)
    }
  }
  const assign = async (i: number): Promise<Assignment> => {
    const workItemId = seeded.items[i]!
    const sentAt = Date.now()
    try {
      const response = await fetch(`${base}/api/v1/projects/${seeded.projectId}/work-items/${workItemId}`, {
        method: 'PATCH',
        headers: json,
        body: JSON.stringify({ assigneeId: seeded.assignees[i % seeded.assignees.length] }),
        signal: AbortSignal.timeout(30_000),
      })
      // The answer's head is here: the transaction committed before it was sent.
      const answeredAt = Date.now()
      const text = await response.text()
      if (response.status !== 200) {
        console.error(`PATCH ${workItemId} answered ${response.status}: ${text.slice(0, 200)}`)
        return { workItemId, sentAt, startedAt: 0, answeredAt, status: response.status }
      }
      const startedAt = Date.parse((JSON.parse(text) as { data: { updatedAt: string } }).data.updatedAt)
      return { workItemId, sentAt, startedAt, answeredAt, status: response.status }
    } catch (error) {
      console.error(`PATCH ${workItemId} failed: ${String(error)}`)
      return { workItemId, sentAt, startedAt: 0, answeredAt: 0, status: 0 }
    }
  }
  /** Waits until every answered assignment's push arrived, or `seconds` passed; the ones still missing. */
  const awaitPushes = async (assignments: Assignment[], seconds: number) => {
    const deadline = Date.now() + seconds * 1000
    for (;;) {
      scan()
      const missing = assignments.filter((a) => a.status === 200 && !firstSend.has(a.workItemId))
      if (!missing.length || Date.now() > deadline) return missing
      await Bun.sleep(20)
    }
  }

  let assignments: Assignment[] = []
  let missing: Assignment[] = []
  let load: Awaited<ReturnType<typeof wrk>>
  let cpu: CpuShare
  let maxInFlight = 0
  let driveSeconds = 0
  let lastAnswerToLastPushMs = 0
  let peakRssMiB = 0
  const measuredFrom = WARMUP
  try {
    // A work item of a project nobody watches: the background comments go to it (its creator, the
    // writer, watches it, but a change never notifies its actor).
    const create = await fetch(`${base}/api/v1/projects/${seeded.quiet}/work-items`, { method: 'POST', headers: json, body: JSON.stringify({ title: 'Unwatched' }) })
    if (create.status !== 201) throw new Error(`POST work item answered ${create.status}: ${await create.text()}`)
    const quietItem = ((await create.json()) as { data: { id: string } }).data.id
    const list = `/api/v1/projects/${seeded.projectId}/work-items?size=20`
    const requests: WrkRequest[] = [
      { method: 'GET', path: list, headers: { authorization: json.authorization } },
      { method: 'GET', path: `${list}&status=todo`, headers: { authorization: json.authorization } },
      { method: 'POST', path: `/api/v1/work-items/${quietItem}/entries`, headers: json, body: JSON.stringify({ body: 'A comment from the background load.' }) },
      { method: 'GET', path: `${list}&page=3`, headers: { authorization: json.authorization } },
    ]
    for (const request of requests) {
      const response = await fetch(`${base}${request.path}`, { method: request.method, headers: request.headers, body: request.body })
      if (!response.ok) throw new Error(`${request.method} ${request.path} answered ${response.status}: ${await response.text()}`)
    }

    // Warm-up, no load: the fan-out and the push outbox run, firebase-admin connects to the fake.
    const warm: Assignment[] = []
    for (let i = 0; i < WARMUP; i++) warm.push(await assign(i))
    if (warm.some((a) => a.status !== 200)) throw new Error('a warm-up assignment failed')
    const warmMissing = await awaitPushes(warm, 30)
    if (warmMissing.length) throw new Error(`${warmMissing.length} of ${WARMUP} warm-up pushes never reached the fake FCM within 30 s (sends: ${fcm.sends.length})`)

    // The measured window: wrk's background load, and the assignments at RATE a second inside it.
    const loadSeconds = LEAD_SECONDS + SECONDS + TAIL_SECONDS
    const meter = cpuMeter(service.pid)
    const background = wrk(`${base}/`, { requests, duration: loadSeconds, connections: CONNECTIONS, statuses: true })
    await Bun.sleep(LEAD_SECONDS * 1000)
    const started = performance.now()
    const pending: Promise<Assignment>[] = []
    let inFlight = 0
    for (let i = 0; i < ASSIGNMENTS; i++) {
      const due = started + (i * 1000) / RATE
      const wait = due - performance.now()
      if (wait > 0) await Bun.sleep(wait)
      while (inFlight >= IN_FLIGHT_CAP) await Bun.sleep(5)
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      pending.push(
        assign(measuredFrom + i).finally(() => {
          inFlight--
        }),
      )
    }
    driveSeconds = (performance.now() - started) / 1000
    assignments = await Promise.all(pending)
    missing = await awaitPushes(assignments, DEADLINE_SECONDS)
    load = await background
    cpu = meter()
    // A late duplicate would have arrived by now.
    await Bun.sleep(1000)
    scan()
    const lastAnswer = Math.max(...assignments.map((a) => a.answeredAt))
    const lastPush = Math.max(...assignments.map((a) => firstSend.get(a.workItemId)?.receivedAt ?? 0))
    lastAnswerToLastPushMs = lastPush - lastAnswer
    peakRssMiB = service.peakRssMiB()
  } finally {
    await pushService.stop()
  }

  const answered = assignments.filter((a) => a.status === 200)
  const failed = assignments.length - answered.length
  const arrived = answered.filter((a) => firstSend.has(a.workItemId))
  const spread = (from: (a: Assignment) => number): Spread => {
    const values = arrived.map((a) => firstSend.get(a.workItemId)!.receivedAt - from(a))
    return { p50: percentile(values, 0.5), p90: percentile(values, 0.9), p99: percentile(values, 0.99), max: Math.max(...values) }
  }
  const fromStart = spread((a) => a.startedAt)
  const fromAnswer = spread((a) => a.answeredAt)
  const fromSent = spread((a) => a.sentAt)
  const startToAnswer = answered.map((a) => a.answeredAt - a.startedAt)
  const patchMs = answered.map((a) => a.answeredAt - a.sentAt)
  const duplicates = [...sendsOf.values()].reduce((sum, n) => sum + Math.max(0, n - 1), 0)
  const other = fcm.sends.filter((send) => send.message.data?.type !== 'work').length
  const statuses = load!.counts
  const serverErrors = Object.entries(statuses).reduce((sum, [status, n]) => sum + (Number(status) >= 500 ? n : 0), 0)
  const figures: Figures['work-push'] = {
    users: USERS,
    rate: RATE,
    seconds: SECONDS,
    assignments: ASSIGNMENTS,
    offeredPerSecond: ASSIGNMENTS / driveSeconds,
    fromStart,
    fromAnswer,
    missing: missing.length,
    failed,
    duplicates,
    patch: { p50: percentile(patchMs, 0.5), p99: percentile(patchMs, 0.99), max: Math.max(...patchMs), samples: patchMs.length },
    background: { requestsPerSecond: load!.requestsPerSecond, p50: load!.p50, p99: load!.p99, requests: load!.requests, serverErrors, socketErrors: load!.errors, statuses },
    peakRssMiB,
  }
  const met = figures.fromStart.p99 <= LIMITS.workPushP99Ms && figures.missing === 0 && figures.failed === 0
  const cores = (value: number) => round(value, 2)
  writeSection(
    name,
    `## Work pushes: an assignment to the assignee's device under a mixed load

${sectionHead(`\`npm run bench -- work-push\` (service process on the PostgreSQL server through
  tests/helpers/push-worker.ts, default configuration: notifications fan-out 2 workers × batches of 50, push outbox 4 workers × batches of 500,
  firebase-admin over HTTP/2 to the fake FCM in the benchmark process; ${round(USERS)} viewers of the project, one android device each;
  ${round(ASSIGNMENTS)} assignments at ${RATE}/s for ${SECONDS} s, each a different work item, to the members in turn${ASSIGNMENTS > USERS ? ` (the first ${round(ASSIGNMENTS - USERS)} get a second)` : ''};
  background: wrk, ${CONNECTIONS} connections, ${LEAD_SECONDS + SECONDS + TAIL_SECONDS} s from ${LEAD_SECONDS} s before the first assignment)`)}
- Each assignment is \`PATCH /api/v1/projects/{id}/work-items/{id}\` with \`{"assigneeId"}\` by the writer (an API key), sent from this process at
  a steady rate (at most ${IN_FLIGHT_CAP} in flight; the most were ${maxInFlight}); its push is the fake FCM's first send with \`data.type\` \`work\` and its
  \`data.workItemId\`. ${WARMUP} assignments before the load, one after another, are not measured (firebase-admin's first connection).
- **The commit is bracketed, both ends on this machine's clock.** *From the transaction's start*: the send's arrival at the fake − the work
  item's new \`updatedAt\` (the transaction's \`now()\`, before its commit, ms): an **upper bound** of commit → FCM, judged. *From the answer*: the
  send's arrival − the moment the PATCH's answer reached this client, which is after the commit: a **lower bound**. The two differ by the
  transaction and the answer's way back (p50 ${round(percentile(startToAnswer, 0.5), 1)} ms, p99 ${round(percentile(startToAnswer, 0.99), 1)} ms here).
- Background mix, each wrk connection in turn: \`GET /api/v1/projects/{id}/work-items?size=20\`, the same \`&status=todo\`, a comment
  \`POST /api/v1/work-items/{id}/entries\` on a work item of another project that nobody but its writer watches (queued for the fan-out, which
  finds nobody to notify), the list's \`&page=3\`: the reads are on the project the assignments change.

| assignments | answered 200 | pushes arrived | missing (after ${DEADLINE_SECONDS} s) | duplicates | other sends |
|---:|---:|---:|---:|---:|---:|
| ${round(ASSIGNMENTS)} at ${round(figures.offeredPerSecond, 1)}/s | ${round(answered.length)} | ${round(arrived.length)} | ${figures.missing} | ${duplicates} | ${other} |

| push latency, ms | p50 | p90 | p99 | max |
|---|---:|---:|---:|---:|
${spreadRow("from the transaction's start (upper bound of commit → FCM)", fromStart)}
${spreadRow('from the answer at the client (lower bound)', fromAnswer)}
${spreadRow('from the PATCH sent (request included)', fromSent)}

The PATCH itself under the load: p50 ${round(figures.patch.p50, 1)} ms, p99 ${round(figures.patch.p99, 1)} ms, max ${round(figures.patch.max, 1)} ms. The last push arrived
${round(lastAnswerToLastPushMs)} ms after the last answer.

| background load (wrk) | req/s | p50 ms | p99 ms | answers | 5xx | socket errors | answers by status |
|---|---:|---:|---:|---:|---:|---:|---|
| ${CONNECTIONS} connections, ${load!.seconds.toFixed(1)} s | ${round(load!.requestsPerSecond)} | ${round(load!.p50, 1)} | ${round(load!.p99, 1)} | ${round(load!.requests)} | ${serverErrors} | ${load!.errors} | ${Object.entries(statuses).map(([status, n]) => `${status}: ${round(n)}`).join(', ')} |

Cores in use over the measured window (CPU seconds per second, ${cpu!.seconds.toFixed(1)} s): service ${cores(cpu!.service)}, PostgreSQL ${cores(cpu!.postgres)},
benchmark process (assignments, fake FCM) ${cores(cpu!.bench)}, other (wrk, and anything else running on the machine) ${cores(cpu!.other)}; machine busy ${cores(cpu!.busy)}.

**p99 ${round(fromStart.p99)} ms from the transaction's start (${round(fromAnswer.p99)} ms from the answer), ${figures.missing} missing: ${met ? 'met' : 'missed'}.** ${target.latency} Peak RSS of the service: ${round(peakRssMiB, 1)} MiB.
`,
  )
  recordResult(name, figures)
  console.log({ ...figures, background: { ...figures.background, statuses: undefined }, cpu: cpu!, maxInFlight, lastAnswerToLastPushMs })
}
