/**
 * The leak check: the service under a fixed mix of everything it serves (bench/seed/mixed.ts) for
 * BENCH_MIXED_MINUTES (default 30), sampled every BENCH_MIXED_SAMPLE_SECONDS (default 60): the
 * service's RSS (read every second, averaged over the window), and the req/s, p50 and p99 of that
 * window. The verdict on memory is computed: the least-squares slope of RSS over the second half
 * of the run and the ratio of the last quarter's mean RSS to the first quarter's. Timing is never
 * judged; any 5xx answer or transport error fails the run (exit code 1), so a short run in CI
 * catches breakage.
 *
 * The thresholds (bench/targets.ts): a slope of 1 MiB/min is 60 MiB an hour, a leak that fills a
 * 1 GiB container in a working day. The garbage collector's sawtooth moves a window's mean RSS by
 * ~±10 MiB, which alone gives a 15-sample slope a standard error of ~0.5 MiB/min; a tighter
 * threshold would cry wolf. The standard error is printed next to the slope.
 */
import { startService, type RunningProcess } from '../lib/processes'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS } from '../lib/settings'
import { fitSlope, mean, round } from '../lib/stats'
import { wrk, type LoadResult } from '../lib/wrk'
import { kindsOf, mixScript, probe, requestMix, seedMixed, type KindCounts, type RequestSpec } from '../seed/mixed'
import { LIMITS, TARGETS } from '../targets'

export const name = 'mixed'
export const target = TARGETS[name]

const MINUTES = Number(process.env.BENCH_MIXED_MINUTES ?? 30)
const SAMPLE_SECONDS = Number(process.env.BENCH_MIXED_SAMPLE_SECONDS ?? 60)
const WARMUP_SECONDS = 10
const PORT = 3891
const { mixedSlopeMiBPerMinute: SLOPE, mixedQuarterRatio: QUARTER_RATIO, mixedMinimumMinutes: MINIMUM_MINUTES } = LIMITS

interface Window {
  window: number
  seconds: number
  /** VmRSS at the end of the window, and the mean, minimum and maximum of its 1 s readings. */
  rssMiB: number
  rssMeanMiB: number
  rssMinMiB: number
  rssMaxMiB: number
  hwmMiB: number
  responses: number
  p50: number
  p99: number
  transportErrors: number
  errorSamples: string[]
  kinds: Record<string, KindCounts>
}

/** A window's failures: transport errors, non-2xx answers and MCP tool errors. */
const failuresOf = (window: Window) => window.transportErrors + Object.values(window.kinds).reduce((sum, kind) => sum + kind.non2xx + kind.toolErrors, 0)

/** One window: one wrk run of `seconds`, the service's VmRSS read every second meanwhile. */
async function runWindow(index: number, seconds: number, service: RunningProcess, script: string, kinds: string[]): Promise<Window> {
  const readings: number[] = []
  const sampler = setInterval(() => readings.push(service.rssMiB()), 1000)
  let load: LoadResult
  try {
    load = await wrk(`http://127.0.0.1:${PORT}/`, { script, tally: true, duration: seconds, timeout: 10 })
  } finally {
    clearInterval(sampler)
  }
  const rss = [...readings, service.rssMiB()]
  const socket = load.socketErrors
  return {
    window: index,
    seconds: load.seconds,
    rssMiB: rss.at(-1)!,
    rssMeanMiB: mean(rss),
    rssMinMiB: Math.min(...rss),
    rssMaxMiB: Math.max(...rss),
    hwmMiB: service.peakRssMiB(),
    responses: load.requests,
    p50: load.p50,
    p99: load.p99,
    transportErrors: load.errors,
    errorSamples: load.errors ? [`socket errors: connect ${socket.connect}, read ${socket.read}, write ${socket.write}, timeout ${socket.timeout}`] : [],
    kinds: kindsOf(load.counts, kinds),
  }
}

/** The warm-up (window 0), then the samples, back to back: one wrk run each. */
async function runLoad(service: RunningProcess, specs: RequestSpec[]): Promise<Window[]> {
  const windows = Math.max(1, Math.round((MINUTES * 60) / SAMPLE_SECONDS))
  const kinds = [...new Set(specs.map((spec) => spec.kind))]
  const script = mixScript(specs, kinds)
  const results: Window[] = []
  for (let index = 0; index <= windows; index++) {
    const window = await runWindow(index, index === 0 ? WARMUP_SECONDS : SAMPLE_SECONDS, service, script, kinds)
    results.push(window)
    console.log(
      `mixed: ${index === 0 ? 'warm-up' : `sample ${index}/${windows}`}: RSS ${round(window.rssMeanMiB, 1)} MiB (mean), ${round(window.responses / window.seconds)} req/s, p50 ${round(window.p50, 1)} ms, p99 ${round(window.p99, 1)} ms, errors ${failuresOf(window)}`,
    )
  }
  return results
}

export async function run(): Promise<void> {
  if (!(MINUTES > 0) || !(SAMPLE_SECONDS > 0)) throw new Error('BENCH_MIXED_MINUTES and BENCH_MIXED_SAMPLE_SECONDS must be positive numbers')
  const seedStarted = performance.now()
  const { url, fixture } = await seedMixed()
  const seedSeconds = (performance.now() - seedStarted) / 1000
  const specs = requestMix(fixture)

  const service = await startService(url, PORT)
  const startRss = service.rssMiB()
  let windows: Window[]
  let peakRss: number
  try {
    await probe(`http://127.0.0.1:${PORT}`, specs)
    windows = await runLoad(service, specs)
    peakRss = service.peakRssMiB()
  } finally {
    await service.stop()
  }

  const warmup = windows[0]!
  const samples = windows.slice(1)
  const minuteOf = (index: number) => ((index + 1) * SAMPLE_SECONDS) / 60

  // The memory trend: slope over the second half, last quarter against the first.
  const rss = samples.map((sample, i) => [minuteOf(i), sample.rssMeanMiB] as [number, number])
  const secondHalf = rss.slice(Math.floor(rss.length / 2))
  const { slope: slopePerMinute, standardError } = fitSlope(secondHalf)
  const quarter = Math.max(1, Math.floor(rss.length / 4))
  const firstQuarter = mean(rss.slice(0, quarter).map(([, y]) => y))
  const lastQuarter = mean(rss.slice(-quarter).map(([, y]) => y))
  const quarterRatio = lastQuarter / firstQuarter
  const judged = MINUTES >= MINIMUM_MINUTES && samples.length >= 8
  const growth = slopePerMinute >= SLOPE || quarterRatio > QUARTER_RATIO
  const verdict = !judged
    ? `**Memory trend: not judged** — ${round(MINUTES, 2)} min with ${samples.length} samples is too short for a trend (the verdict needs ≥ ${MINIMUM_MINUTES} min and ≥ 8 samples); the figures are shown for the record.`
    : growth
      ? '**Memory trend: growth trend** — RSS keeps rising under a steady load: look for a leak.'
      : '**Memory trend: no growth trend.**'

  // Totals per kind, warm-up included (a failure during the warm-up is a failure).
  const totals = new Map<string, KindCounts>()
  for (const spec of specs) if (!totals.has(spec.kind)) totals.set(spec.kind, { count: 0, non2xx: 0, server: 0, toolErrors: 0 })
  for (const window of windows)
    for (const [kind, counts] of Object.entries(window.kinds)) {
      const total = totals.get(kind) ?? { count: 0, non2xx: 0, server: 0, toolErrors: 0 }
      total.count += counts.count
      total.non2xx += counts.non2xx
      total.server += counts.server
      total.toolErrors += counts.toolErrors
      totals.set(kind, total)
    }
  const transportErrors = windows.reduce((sum, window) => sum + window.transportErrors, 0)
  const serverErrors = [...totals.values()].reduce((sum, total) => sum + total.server, 0)
  const allFailures = windows.reduce((sum, window) => sum + failuresOf(window), 0)
  const errorSamples = [...new Set(windows.flatMap((window) => window.errorSamples))].slice(0, 5)
  const rank = (kind: string) => (kind.startsWith('v1 list') ? 0 : kind === 'search' ? 1 : kind.startsWith('v1') ? 2 : kind.startsWith('MCP') ? 4 : 3)
  const shareOf = (kind: string) => specs.filter((spec) => spec.kind === kind).length / specs.length
  const measuredSeconds = samples.reduce((sum, sample) => sum + sample.seconds, 0)
  const meanRate = samples.reduce((sum, sample) => sum + sample.responses, 0) / measuredSeconds
  const worstP99 = Math.max(...samples.map((sample) => sample.p99))
  const command = `BENCH_MIXED_MINUTES=${MINUTES} BENCH_MIXED_SAMPLE_SECONDS=${SAMPLE_SECONDS} npm run bench -- mixed`
  writeSection(
    name,
    `## Mixed load: RSS and latency over ${round(MINUTES, 2)} min of everything at once (the leak check)

${sectionHead(`\`${command}\` (wrk, 1 thread, ${CONNECTIONS} connections taking turns through one cycle of the same ${specs.length} requests, each answer tallied under its kind by wrk's Lua; ${WARMUP_SECONDS} s warm-up, then one wrk run of ${SAMPLE_SECONDS} s per sample, back to back — the connections reopen at each window; service on the PostgreSQL server, seeded in ${round(seedSeconds)} s)`)}
- Data: a read project with 2,000 work items, 2,000 entries and 50 members, 20 teams, 8 display accounts; every create goes to a separate write project, so the reads cost the same at the end as at the start.
- RSS: the service's VmRSS read every second, mean (and min–max) over each window — a single reading lands anywhere on the garbage collector's sawtooth; the trend is computed on the means. req/s, p50 and p99 are wrk's figures for that window's answers (all statuses); errors = transport errors + non-2xx + MCP tool errors.

| t (min) | RSS MiB (mean) | RSS min–max MiB | req/s | p50 ms | p99 ms | errors |
|---:|---:|---:|---:|---:|---:|---:|
${samples.map((sample, i) => `| ${round(minuteOf(i), 2)} | ${round(sample.rssMeanMiB, 1)} | ${round(sample.rssMinMiB, 1)}–${round(sample.rssMaxMiB, 1)} | ${round(sample.responses / sample.seconds)} | ${round(sample.p50, 1)} | ${round(sample.p99, 1)} | ${failuresOf(sample)} |`).join('\n')}

RSS at start (idle, before the warm-up): ${round(startRss, 1)} MiB; mean over the warm-up: ${round(warmup.rssMeanMiB, 1)} MiB; peak (VmHWM): ${round(peakRss, 1)} MiB.
Mean ${round(meanRate)} req/s; worst window p99 ${round(worstP99, 1)} ms (timing is recorded, never judged).

${verdict} Slope of RSS over the second half (${secondHalf.length} samples, least squares): **${slopePerMinute >= 0 ? '+' : ''}${round(slopePerMinute, 2)} MiB/min**${Number.isNaN(standardError) ? '' : ` (± ${round(standardError, 2)} standard error)`} (threshold < ${SLOPE} MiB/min); last-quarter / first-quarter mean RSS (${quarter} sample${quarter === 1 ? '' : 's'} each): **${round(quarterRatio, 3)}** (threshold ≤ ${QUARTER_RATIO}). "No growth trend" is stated only when both hold on a run of ≥ ${MINIMUM_MINUTES} min. ${target.memory}

| kind | share of the mix | answers | non-2xx | 5xx (MCP: 5xx refusals) | MCP tool errors |
|---|---:|---:|---:|---:|---:|
${[...totals.entries()].sort(([a], [b]) => rank(a) - rank(b)).map(([kind, total]) => `| ${kind} | ${round(shareOf(kind) * 100)} % | ${round(total.count)} | ${total.non2xx} | ${total.server} | ${total.toolErrors} |`).join('\n')}

Transport errors (wrk's socket errors: connect, read — e.g. a connection the server closed —, write, and 10 s timeouts): ${transportErrors}${errorSamples.length ? ` (${errorSamples.join('; ')})` : ''}. The run fails on any 5xx or transport error.`,
  )
  recordResult(
    name,
    {
      minutes: MINUTES,
      samples: samples.length,
      requestsPerSecond: meanRate,
      worstP99,
      firstRssMiB: samples[0]!.rssMeanMiB,
      lastRssMiB: samples.at(-1)!.rssMeanMiB,
      peakRssMiB: peakRss,
      slopeMiBPerMinute: slopePerMinute,
      slopeStandardError: Number.isNaN(standardError) ? null : standardError,
      quarterRatio,
      growthTrend: judged ? growth : null,
      errors: allFailures,
      serverErrors: serverErrors + transportErrors,
    },
    command,
  )
  console.log(
    `mixed: ${round(meanRate)} req/s mean, RSS ${round(samples[0]!.rssMeanMiB, 1)} → ${round(samples.at(-1)!.rssMeanMiB, 1)} MiB, slope ${round(slopePerMinute, 2)} MiB/min, ratio ${round(quarterRatio, 3)}: ${judged ? (growth ? 'growth trend' : 'no growth trend') : 'not judged (short run)'}; 5xx ${serverErrors}, transport errors ${transportErrors}, all failures ${allFailures}`,
  )
  if (serverErrors > 0 || transportErrors > 0) throw new Error(`mixed: ${serverErrors} 5xx answers and ${transportErrors} transport errors under the mixed load`)
}
