/**
 * What webhook subscriptions cost the API's writes: the same `PATCH …/work-items/{id}` load from wrk
 * on a fresh database, alternating — no webhook, 5 (`*`, each to its own receiver, the delivery
 * workers running), no webhook (the 5 deleted with their backlog), 5 new ones — then the same 5
 * with the workers off (a service restarted with `webhooks.workers: false`): what recording the
 * events alone costs. Where the time goes: cores per process, the workers' statements, the
 * database sessions' statements.
 */
import postgres from 'postgres'
import type { WebhooksWrites } from '../figures'
import { cpuMeter, mergeCpu, type CpuShare } from '../lib/cpu'
import { activitySampler, activityTable } from '../lib/pg-activity'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS } from '../lib/settings'
import { mean, round } from '../lib/stats'
import { arrivalsBetween, CPU_HEADER, cpuRow, deleteRetries, now, patchLoad, pendingDeliveries, setEnabled, SETUP, startReceiver, startWebhookService, STATEMENTS, subscribe, unsubscribe, WORKER_HEADER, workerCounter, workerRow, type WorkerCounts } from '../lib/webhooks'
import type { LoadResult, Throughput } from '../lib/wrk'
import { ITEMS_PER_PROJECT, PROJECTS, seedWebhooks } from '../seed/webhooks'
import { TARGETS } from '../targets'

export const name = 'webhooks-writes'
export const target = TARGETS[name]

const WRITES_SECONDS = Number(process.env.BENCH_WEBHOOKS_WRITES_SECONDS ?? 10)
/** Rounds of (none, 5 webhooks), with the workers on, then off. */
const ROUNDS = 2
/** Each run with the workers off (recording only). */
const RECORDING_SECONDS = Number(process.env.BENCH_WEBHOOKS_RECORDING_SECONDS ?? 8)
const HOOKS = 5

/** One measured wrk run. */
interface WriteRun {
  hooks: number
  result: LoadResult
  /** Events that reached the receivers during it. */
  delivered: number
  seconds: number
}

/** The mean req/s and p50 of runs, and their worst p99. */
const meanOf = (list: LoadResult[]): Throughput => ({ requestsPerSecond: mean(list.map((r) => r.requestsPerSecond)), p50: mean(list.map((r) => r.p50)), p99: Math.max(...list.map((r) => r.p99)) })

export async function run(): Promise<void> {
  const fixture = await seedWebhooks('worktrack_bench_webhooks_writes')
  let service = await startWebhookService(fixture.url)
  const receivers = Array.from({ length: HOOKS }, () => startReceiver())
  const monitor = postgres(fixture.url, { max: 1, onnotice: () => {} })
  const samplers = { none: activitySampler(fixture.url, STATEMENTS), five: activitySampler(fixture.url, STATEMENTS) }
  samplers.five.pause()
  samplers.none.pause()
  const cpu: Record<'none' | 'five' | 'recording', CpuShare[]> = { none: [], five: [], recording: [] }
  const workerWindows: WorkerCounts[] = []
  const runs: WriteRun[] = []
  const recordingRuns: Array<{ enabled: boolean; result: LoadResult }> = []
  let hookIds: string[] = []
  let backlogAtEnd = 0
  let peakRssMiB = 0
  let activity
  try {
    await patchLoad(fixture, `Warm none ${Date.now()}`, 3)
    for (let pass = 0; pass < ROUNDS; pass++) {
      for (const hooks of [0, HOOKS]) {
        const side = hooks ? 'five' : 'none'
        if (hooks) hookIds = await subscribe(fixture, receivers)
        const counter = hooks ? await workerCounter(monitor, receivers) : undefined
        const meter = cpuMeter(service.pid)
        samplers[side].resume()
        const started = now()
        const result = await patchLoad(fixture, `${side} ${pass} ${Date.now()}`, WRITES_SECONDS)
        const ended = now()
        samplers[side].pause()
        cpu[side].push(meter())
        runs.push({ hooks, result, delivered: arrivalsBetween(receivers, started, ended), seconds: (ended - started) / 1000 })
        if (hooks) backlogAtEnd = await pendingDeliveries(monitor)
        if (counter) workerWindows.push(await counter())
        // Deleted with their backlog: the next round starts as the first did, from no webhook at all.
        if (hooks && pass < ROUNDS - 1) await unsubscribe(fixture, hookIds, receivers)
      }
    }
    peakRssMiB = service.peakRssMiB()
    // The same webhooks with the delivery workers off, disabled and enabled in turn: what recording
    // the events costs the writes alone.
    await service.stop()
    service = await startWebhookService(fixture.url, false)
    await patchLoad(fixture, `Warm recording ${Date.now()}`, 3)
    for (let pass = 0; pass < ROUNDS; pass++)
      for (const enabled of [false, true]) {
        await setEnabled(fixture, monitor, hookIds, enabled)
        const meter = cpuMeter(service.pid)
        recordingRuns.push({ enabled, result: await patchLoad(fixture, `Recording ${enabled} ${pass} ${Date.now()}`, RECORDING_SECONDS) })
        if (enabled) cpu.recording.push(meter())
      }
    peakRssMiB = Math.max(peakRssMiB, service.peakRssMiB())
  } finally {
    activity = { none: await samplers.none(), five: await samplers.five() }
    await monitor.end()
    for (const receiver of receivers) receiver.stop()
    await service.stop()
  }
  const side = (hooks: number) => runs.filter((run) => run.hooks === hooks)
  const [none, five] = [meanOf(side(0).map((run) => run.result)), meanOf(side(HOOKS).map((run) => run.result))]
  const delivered = side(HOOKS).reduce((sum, run) => sum + run.delivered, 0)
  const writes: WebhooksWrites = {
    none,
    five,
    ratio: five.requestsPerSecond / none.requestsPerSecond,
    delivered,
    deliveredPerSecond: delivered / side(HOOKS).reduce((sum, run) => sum + run.seconds, 0),
    queued: side(HOOKS).reduce((sum, run) => sum + run.result.requests, 0) * HOOKS,
    backlogAtEnd,
    duplicates: receivers.reduce((sum, r) => sum + r.duplicates, 0),
    recordingOnly: meanOf(recordingRuns.filter((run) => run.enabled).map((run) => run.result)),
    recordingNone: meanOf(recordingRuns.filter((run) => !run.enabled).map((run) => run.result)),
    peakRssMiB,
  }
  const workers: WorkerCounts = {
    claimsPerSecond: mean(workerWindows.map((w) => w.claimsPerSecond)),
    recordsPerSecond: mean(workerWindows.map((w) => w.recordsPerSecond)),
    eventsPerClaim: mean(workerWindows.map((w) => w.eventsPerClaim)),
    eventsPerRecord: mean(workerWindows.map((w) => w.eventsPerRecord)),
  }
  console.log('webhooks writes:', writes, runs.map((run) => `${run.hooks}: ${round(run.result.requestsPerSecond)} req/s`).join(', '))
  writeSection(
    name,
    `## Webhooks: API writes with ${HOOKS} webhooks vs none

${sectionHead(`\`npm run bench -- webhooks-writes\` (${SETUP})`)}
- The change: \`PATCH /api/v1/projects/{p}/work-items/{id}\` with a new title each time (one \`work_item.updated\` event each),
  over ${PROJECTS} projects × ${ITEMS_PER_PROJECT} work items of one organization, the projects interleaved; one API key (the per-key limit off).
- wrk, ${CONNECTIONS} connections, ${WRITES_SECONDS} s a run, after a 3 s warm-up, on a fresh database: ${ROUNDS} rounds of (no webhook,
  then ${HOOKS} webhooks — \`*\`, each to its own receiver — the delivery workers running meanwhile); between rounds the webhooks are
  deleted, their backlog with them, so each round starts from no webhook and an empty queue. Ratio = mean req/s with ${HOOKS} ÷ mean without.

| run | webhooks | req/s | p50 / p99 ms | events delivered during the run (/s) |
|---|---|---:|---:|---:|
${runs.map((run, i) => `| ${i + 1} | ${run.hooks ? `${run.hooks}` : 'none'} | ${round(run.result.requestsPerSecond)} | ${round(run.result.p50, 1)} / ${round(run.result.p99, 1)} | ${run.hooks ? `${round(run.delivered)} (${round(run.delivered / run.seconds)}/s)` : '—'} |`).join('\n')}
| mean | none | ${round(none.requestsPerSecond)} | | |
| mean | ${HOOKS} | ${round(five.requestsPerSecond)} | | ${round(writes.deliveredPerSecond)}/s; ${round(writes.queued)} deliveries queued by these runs, ${round(backlogAtEnd)} pending at the end of the last |

**Ratio ${round(writes.ratio, 2)}**. ${target.fiveHooks} Duplicates at the receivers: ${writes.duplicates}.${deleteRetries ? ` Deleting the webhooks between rounds answered 500 (deadlock) ${deleteRetries} time(s) before it succeeded.` : ''}

Recording only — the same ${HOOKS} webhooks on a service restarted with \`webhooks.workers: false\` (events and deliveries recorded,
none sent), disabled and enabled in turn, ${RECORDING_SECONDS} s a run:

| run | webhooks | req/s | p50 / p99 ms |
|---|---|---:|---:|
${recordingRuns.map((run, i) => `| ${i + 1} | ${run.enabled ? `${HOOKS} (recorded, not sent)` : `${HOOKS} disabled (none)`} | ${round(run.result.requestsPerSecond)} | ${round(run.result.p50, 1)} / ${round(run.result.p99, 1)} |`).join('\n')}
| mean | none | ${round(writes.recordingNone.requestsPerSecond)} | |
| mean | ${HOOKS}, recorded only | ${round(writes.recordingOnly.requestsPerSecond)} | |

With the delivery workers off the writes ran at **${round(writes.recordingOnly.requestsPerSecond / writes.recordingNone.requestsPerSecond, 2)}** of none: that is what recording the event and its ${HOOKS} deliveries
in each change's transaction costs; the rest of the drop is the delivery (claims, sends, records) on the same cores. Peak RSS of the service: ${round(peakRssMiB, 1)} MiB.

**Where the time goes.** Cores in use (CPU seconds per second, shared by everything below):

${CPU_HEADER}
${cpuRow('none', mergeCpu(cpu.none))}
${cpuRow(`${HOOKS} webhooks`, mergeCpu(cpu.five))}
${cpuRow(`${HOOKS} webhooks, workers off (recorded only)`, mergeCpu(cpu.recording))}

The workers' statements with ${HOOKS} webhooks (claims = scans of the due index; recorded batches = updates of the webhook's health row):

${WORKER_HEADER}
${workerRow(`${HOOKS} webhooks`, workers)}

What the database's sessions were doing (pg_stat_activity every 50 ms):

${activityTable([
  ['none', activity.none],
  [`${HOOKS} webhooks`, activity.five],
])}
`,
  )
  recordResult(name, writes)
}
