/**
 * Webhook delivery: throughput and end-to-end latency with one webhook (`*`) and 10 projects.
 * `PATCH …/work-items/{id}` (a new title each time, so each is a change and an event) paced at
 * 1,000/s from this process for BENCH_WEBHOOKS_SECONDS (25) after a warm-up. End-to-end latency of
 * an event = its arrival at the receiver − the moment the PATCH's 2xx answer reached the client
 * (matched by work item id + updatedAt); also − the event's `occurredAt`. Then a saturation run
 * (wrk as fast as the service takes the PATCHes, the delivery rate meanwhile and while the
 * backlog drains), then a steady run paced at half the saturated commit rate. Where the time goes:
 * cores per process (bench/lib/cpu.ts), the workers' claims and batches, the sessions' statements.
 */
import postgres from 'postgres'
import type { WebhooksPaced, WebhooksSaturation } from '../figures'
import { cpuMeter, type CpuShare } from '../lib/cpu'
import { activitySampler, activityTable, type Activity } from '../lib/pg-activity'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS } from '../lib/settings'
import { percentile, round } from '../lib/stats'
import { arrivalsBetween, bestSecond, CPU_HEADER, cpuRow, drain, DRAIN_CAP_SECONDS, IN_FLIGHT_CAP, keepsUp, now, pace, patchLoad, pendingDeliveries, sendDurations, SETUP, startReceiver, startWebhookService, STATEMENTS, subscribe, WORKER_HEADER, workerCounter, workerRow, type WorkerCounts } from '../lib/webhooks'
import { ITEMS_PER_PROJECT, PROJECTS, seedWebhooks } from '../seed/webhooks'
import { TARGETS } from '../targets'

export const name = 'webhooks-delivery'
export const target = TARGETS[name]

const RATE = Number(process.env.BENCH_WEBHOOKS_RATE ?? 1000)
const PACED_SECONDS = Number(process.env.BENCH_WEBHOOKS_SECONDS ?? 25)
const WARMUP_SECONDS = 3
const SATURATION_SECONDS = Number(process.env.BENCH_WEBHOOKS_SATURATION_SECONDS ?? 15)
/** A second paced run at this share of the rate the service committed when saturated (a load it carries). */
const STEADY_SHARE = 0.5
const STEADY_SECONDS = Number(process.env.BENCH_WEBHOOKS_STEADY_SECONDS ?? 15)

type PacedRun = { figures: WebhooksPaced; cpu: CpuShare; activity: Activity; workers: WorkerCounts; maxInFlight: number }

const pacedRow = (label: string, p: WebhooksPaced) =>
  `| ${label} | ${round(p.offeredPerSecond)} | ${round(p.changesPerSecond)} | ${round(p.deliveredPerSecond)} | ${round(p.p50, 1)} / ${round(p.p99, 1)} / ${round(p.max, 1)} | ${round(p.occurredP50, 1)} / ${round(p.occurredP99, 1)} | ${round(p.backlogAtEnd)} | ${round(p.drainSeconds, 1)} s | ${p.missing} | ${p.duplicates} |`

export async function run(): Promise<void> {
  const fixture = await seedWebhooks('worktrack_bench_webhooks')
  const service = await startWebhookService(fixture.url)
  const receiver = startReceiver()
  const monitor = postgres(fixture.url, { max: 1, onnotice: () => {} })

  /** PATCHes paced at `rate` for `seconds`, then the backlog drains; latency matched per change. */
  const pacedRun = async (rate: number, seconds: number, label: string): Promise<PacedRun> => {
    receiver.parse = true
    receiver.events.clear()
    const duplicatesBefore = receiver.duplicates
    const counter = await workerCounter(monitor, [receiver])
    const cpu = cpuMeter(service.pid)
    const activity = activitySampler(fixture.url, STATEMENTS)
    const run = await pace(fixture, rate, seconds, `${label} ${Date.now()}`)
    const sampled = await activity()
    const share = cpu()
    const backlogAtEnd = await pendingDeliveries(monitor)
    const delivered = arrivalsBetween([receiver], run.started, run.ended)
    const drained = await drain(monitor)
    const workers = await counter()
    const latencies: number[] = []
    const fromOccurred: number[] = []
    for (const [key, answeredAt] of run.answered) {
      const event = receiver.events.get(key)
      if (!event) continue
      latencies.push(event.at - answeredAt)
      fromOccurred.push(event.at - event.occurredAt)
    }
    const runSeconds = (run.ended - run.started) / 1000
    const figures: WebhooksPaced = {
      offeredPerSecond: run.sent / ((run.sendEnded - run.started) / 1000),
      changesPerSecond: run.ok / runSeconds,
      deliveredPerSecond: delivered / runSeconds,
      changes: run.ok,
      failed: run.failed,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      max: latencies.length ? Math.max(...latencies) : NaN,
      occurredP50: percentile(fromOccurred, 0.5),
      occurredP99: percentile(fromOccurred, 0.99),
      backlogAtEnd,
      drainSeconds: drained.seconds,
      missing: run.answered.size - latencies.length,
      duplicates: receiver.duplicates - duplicatesBefore,
    }
    if (run.failed) console.warn(`webhooks: ${run.failed} paced PATCHes failed (first: ${run.firstFailure})`)
    console.log(`webhooks paced at ${rate}/s:`, figures, `(at most ${run.maxInFlight} in flight)`)
    return { figures, cpu: share, activity: sampled, workers, maxInFlight: run.maxInFlight }
  }

  let paced: PacedRun, steady: PacedRun & { rate: number }, saturation: WebhooksSaturation
  let cpu: Record<'saturation' | 'drain', CpuShare>, activity: Activity, workers: WorkerCounts, send: { mean: number; p99: number }
  let rss: { paced: number; saturation: number; peak: number }
  try {
    await subscribe(fixture, [receiver])
    // Warm-up (not measured): the same pace, then its backlog drains.
    await pace(fixture, RATE, WARMUP_SECONDS, `Warm ${Date.now()}`)
    await drain(monitor)
    paced = await pacedRun(RATE, PACED_SECONDS, 'Paced')
    // VmHWM only grows: read after each run, it tells which run set the peak.
    const rssAfterPaced = service.peakRssMiB()

    // Saturation: as fast as the service takes the PATCHes; the receiver only counts.
    receiver.parse = false
    const duplicatesBefore = receiver.duplicates
    const counter = await workerCounter(monitor, [receiver])
    const loadCpu = cpuMeter(service.pid)
    const sampler = activitySampler(fixture.url, STATEMENTS)
    const started = now()
    const load = await patchLoad(fixture, `Saturate ${Date.now()}`, SATURATION_SECONDS)
    const ended = now()
    activity = await sampler()
    const loadShare = loadCpu()
    const backlog = await pendingDeliveries(monitor)
    const drainCpu = cpuMeter(service.pid)
    const drained = await drain(monitor)
    const drainEnded = now()
    cpu = { saturation: loadShare, drain: drainCpu() }
    workers = await counter()
    saturation = {
      changesPerSecond: load.requestsPerSecond,
      deliveredPerSecond: arrivalsBetween([receiver], started, ended) / ((ended - started) / 1000),
      bestSecond: bestSecond([receiver], started, drainEnded),
      drainPerSecond: arrivalsBetween([receiver], ended, drainEnded) / Math.max(0.001, (drainEnded - ended) / 1000),
      backlogAtEnd: backlog,
      drainSeconds: drained.seconds,
      leftAfterDrain: drained.left,
      duplicates: receiver.duplicates - duplicatesBefore,
    }
    console.log('webhooks saturation:', saturation)
    const rssAfterSaturation = service.peakRssMiB()

    // Steady: half the rate the service committed when saturated, so neither side is overloaded.
    const steadyRate = Math.max(10, Math.floor((saturation.changesPerSecond * STEADY_SHARE) / 10) * 10)
    steady = { rate: steadyRate, ...(await pacedRun(steadyRate, STEADY_SECONDS, 'Steady')) }
    send = await sendDurations(monitor)
    rss = { paced: rssAfterPaced, saturation: rssAfterSaturation, peak: service.peakRssMiB() }
  } finally {
    await monitor.end()
    receiver.stop()
    await service.stop()
  }

  const p = paced.figures
  const s = saturation
  const keeps = keepsUp(p, RATE)
  // Why it missed, in the run's own figures.
  const reasons: string[] = []
  if (!(p.changesPerSecond >= 0.95 * RATE)) reasons.push(`the service committed only ${round(p.changesPerSecond)} of the ${round(RATE)} changes/s offered (${round(s.changesPerSecond)}/s when saturated)`)
  if (p.deliveredPerSecond < 0.95 * p.changesPerSecond)
    reasons.push(`the workers delivered ${round(p.deliveredPerSecond)} events/s while ${round(p.changesPerSecond)} changes/s were committed (${round(p.backlogAtEnd)} pending at the end), though they drain ${round(s.drainPerSecond)}/s once the API is idle`)
  if (p.missing) reasons.push(`${p.missing} committed changes never arrived`)
  if (p.duplicates) reasons.push(`${p.duplicates} events arrived twice`)
  if (p.failed) reasons.push(`${p.failed} PATCHes failed`)
  writeSection(
    name,
    `## Webhooks: delivery throughput and latency at ${round(RATE)} events/s, one webhook

${sectionHead(`\`npm run bench -- webhooks-delivery\` (${SETUP})`)}
- The change: \`PATCH /api/v1/projects/{p}/work-items/{id}\` with a new title each time (one \`work_item.updated\` event each),
  over ${PROJECTS} projects × ${ITEMS_PER_PROJECT} work items of one organization, the projects interleaved (${PROJECTS} streams per webhook); one API key (the per-key limit off).
- One webhook (\`events: ['*']\`). Paced: ${round(RATE)} PATCHes/s from the benchmark process for ${PACED_SECONDS} s after a
  ${WARMUP_SECONDS} s warm-up (at most ${IN_FLIGHT_CAP} in flight: past that it offers less, and the offered rate says so). Latency of an
  event = its arrival at the receiver − the moment the PATCH's 2xx answer reached the client, matched by work item id +
  \`updatedAt\` (it can be slightly negative: the worker may send before the answer is read); also from the payload's
  \`occurredAt\` (the transaction's start). Every run's backlog drains before the next (at most ${DRAIN_CAP_SECONDS} s waited).
  Saturation: wrk, ${CONNECTIONS} connections, ${SATURATION_SECONDS} s, as fast as the service takes them. Steady: paced again, ${STEADY_SECONDS} s at
  ${round(STEADY_SHARE * 100)} % of the rate the service committed when saturated (a load this machine carries).

| run | offered changes/s | committed changes/s | delivered events/s (same window) | latency from the 2xx answer p50 / p99 / max ms | from occurredAt p50 / p99 ms | backlog at the end | drained in | missing | duplicates |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${pacedRow(`paced ${round(RATE)}/s, ${PACED_SECONDS} s`, p)}
${pacedRow(`steady ${round(steady.rate)}/s, ${STEADY_SECONDS} s`, steady.figures)}

**At ${round(RATE)} events/s: ${keeps ? 'kept up' : 'did not keep up — target missed'}**${keeps ? '' : `: ${reasons.join('; ')}`}. ${target.keepsUp}
At the steady ${round(steady.rate)}/s: ${keepsUp(steady.figures, steady.rate) ? 'kept up' : '**did not keep up**'}, p99 ${round(steady.figures.p99, 1)} ms from the answer to the arrival.

| saturation | committed changes/s (wrk) | delivered events/s during the run | delivered events/s while draining (no API load) | best second | backlog at the end | drained in | duplicates |
|---|---:|---:|---:|---:|---:|---:|---:|
| one webhook | ${round(s.changesPerSecond)} | ${round(s.deliveredPerSecond)} | ${round(s.drainPerSecond)} | ${round(s.bestSecond)} | ${round(s.backlogAtEnd)} | ${round(s.drainSeconds, 1)} s${s.leftAfterDrain ? ` (${round(s.leftAfterDrain)} left)` : ''} | ${s.duplicates} |

Send time of a delivery as the service recorded it (connection to answer, loopback): mean ${round(send.mean, 2)} ms, p99 ${round(send.p99, 1)} ms.
Peak RSS of the service: ${round(rss.peak, 1)} MiB — ${round(rss.paced, 1)} MiB after the paced ${round(RATE)}/s run (up to ${round(paced.maxInFlight)} PATCHes in flight), ${round(rss.saturation, 1)} after saturation.

**Where the time goes.** Cores in use (CPU seconds per second, shared by everything below):

${CPU_HEADER}
${cpuRow(`paced ${round(RATE)}/s`, paced.cpu)}
${cpuRow('saturation', cpu.saturation)}
${cpuRow('draining (workers only)', cpu.drain)}
${cpuRow(`steady ${round(steady.rate)}/s`, steady.cpu)}

The workers' statements (from PostgreSQL's statistics: claims = scans of the due index, which only the claim uses;
recorded batches = updates of the webhook's health row, one per batch; over the run and its drain):

${WORKER_HEADER}
${workerRow(`paced ${round(RATE)}/s`, paced.workers)}
${workerRow('saturation + drain', workers)}
${workerRow(`steady ${round(steady.rate)}/s`, steady.workers)}

What the database's sessions were doing (pg_stat_activity every 50 ms: share of the busy-session samples, and the
statement's top wait; "idle in transaction" = a transaction open while the service works or waits):

${activityTable([
  [`paced ${round(RATE)}/s`, paced.activity],
  ['saturation', activity],
  [`steady ${round(steady.rate)}/s`, steady.activity],
])}
`,
  )
  recordResult(name, { rate: RATE, paced: p, saturation: s, steady: { rate: steady.rate, ...steady.figures }, peakRssMiB: rss.peak })
}
