/**
 * The summary at the top of bench/RESULTS.md: one line per target, generated from the figures
 * every benchmark records in bench/results.json (never from hand-written text), so re-running
 * one benchmark refreshes its lines and keeps the others' last recorded figures. The targets
 * (from the issues) are stated here, once.
 */
import { MINIMUM_JUDGED_MINUTES, QUARTER_RATIO_THRESHOLD, SLOPE_THRESHOLD_MIB_PER_MINUTE } from './mixed'
import { readResults, round, writeSection, type BenchName, type RecordedResults, type Throughput } from './lib'
import { keepsUp } from './webhooks'
import { DISPLAY_TARGETS } from './display'
import { hotPathShare } from './citus'
import { isAfter, judge, type GrowthBeforeRecord, type GrowthRecord } from './growth'

/** Every benchmark: lib.ts's names and `growth` (whose figures lib.ts's types do not list: bench/growth.ts). */
export type SummaryName = BenchName | 'growth'
type AllResults = RecordedResults & { growth?: GrowthRecord | GrowthBeforeRecord; 'growth-before'?: GrowthBeforeRecord }

/** The order of the summary (and of `npm run bench`). */
export const BENCHMARKS: SummaryName[] = ['auth-me', 'members', 'work-items', 'mcp', 'display', 'alerts', 'pages', 'push', 'webhooks', 'sign-in', 'mixed', 'citus', 'growth', 'answers', 'driver']

/** Issue 15's bound on the service's peak RSS (VmHWM) in any benchmark. */
const PEAK_RSS_TARGET_MIB = 200

interface Line {
  benchmark: string
  headline: string
  ceiling: string
  ratio: string
  target: string
  /** null: not judged, for the reason in `notJudged`. */
  met: boolean | null
  notJudged?: string
}

const rps = (value: number) => `${round(value)} req/s`
const latency = (t: Throughput) => `p50 ${round(t.p50, 1)} / p99 ${round(t.p99, 1)} ms`
const rss = (value: number | null) => (value === null ? 'peak RSS not recorded' : `peak RSS ${round(value, 1)} MiB`)

/** A line judged against pgbench running the same SQL (`same`: what it runs), met at `target` × its TPS. */
function pgbenchLine(benchmark: string, measured: Throughput, peakRssMiB: number, ceiling: number, same: 'SQL' | 'per-call statement', target: number): Line {
  const ratio = measured.requestsPerSecond / ceiling
  return {
    benchmark,
    headline: `${rps(measured.requestsPerSecond)} (${latency(measured)}, ${rss(peakRssMiB)})`,
    ceiling: `${round(ceiling)} TPS pgbench, same ${same}`,
    ratio: round(ratio, 2),
    target: `≥ ${target.toFixed(1)} of pgbench`,
    met: ratio >= target,
  }
}

/** The lines of one benchmark from its recorded figures. */
function linesOf(results: AllResults, name: SummaryName): Line[] {
  switch (name) {
    case 'auth-me': {
      const r = results['auth-me']
      if (!r) return []
      const f = r.figures
      const ratio = f.endpoint.requestsPerSecond / f.hello.requestsPerSecond
      return [
        {
          benchmark: 'auth-me: `GET /api/v1/users/me` (Bearer check)',
          headline: `${rps(f.endpoint.requestsPerSecond)} (${latency(f.endpoint)}, ${rss(f.peakRssMiB)})`,
          ceiling: `${rps(f.hello.requestsPerSecond)} Elysia hello-world`,
          ratio: `${round(ratio * 100, 1)} %`,
          target: '≥ 50 % of hello-world',
          met: ratio >= 0.5,
        },
      ]
    }
    case 'members': {
      const r = results.members
      if (!r) return []
      const f = r.figures
      return [pgbenchLine('members: `GET …/members?size=100`', f.endpoint, f.peakRssMiB, Math.max(f.pgbench10, f.pgbench64), 'SQL', 0.7)]
    }
    case 'work-items': {
      const r = results['work-items']
      if (!r) return []
      const f = r.figures
      // A record from before the list shapes and the two corpora: shown as such until re-run.
      if (!f.listRepeated || Array.isArray(f.search))
        return [{ benchmark: 'work-items', headline: 'recorded in an older shape', ceiling: '—', ratio: '—', target: '—', met: null, notJudged: 'not judged (re-run work-items)' }]
      const ceiling = Math.max(f.pgbench10, f.pgbench64)
      const uncached = f.listCache ? '' : ' (no list cache in this service)'
      const lines: Line[] = [
        pgbenchLine(`work-items: \`GET …/work-items?size=100\`, repeated reads, 1 in 10 after a write${uncached}`, f.listRepeated, f.peakRssMiB, ceiling, 'SQL', 1),
        pgbenchLine(`work-items: \`GET …/work-items?size=100\`, cold reads (list cache off)`, f.listCold, f.peakRssMiB, ceiling, 'SQL', 0.4),
      ]
      const [small, large] = [f.search.realistic[0], f.search.realistic.at(-1)]
      const [adversarialSmall, adversarialLarge] = [f.search.synthetic[0], f.search.synthetic.at(-1)]
      if (small && large && large !== small) {
        const growth = large.one.p99 / small.one.p99
        const beside = (text: (s: NonNullable<typeof small>, l: NonNullable<typeof large>) => string) =>
          adversarialSmall && adversarialLarge ? `; synthetic (adversarial) ${text(adversarialSmall, adversarialLarge)}` : ''
        // The targets are set at a million rows; a smoke run with fewer is shown, not judged.
        const notJudged = large.rows >= 1_000_000 ? {} : { met: null, notJudged: 'not judged (fewer than 1M rows)' }
        lines.push(
          {
            benchmark: `work-items: project search at ${large.label} (${round(large.rows)} rows), realistic corpus`,
            headline: `p99 ${round(large.one.p99, 1)} ms (p50 ${round(large.one.p50, 1)} ms, 1 client)${beside((_, l) => `p99 ${round(l.one.p99, 1)} ms`)}`,
            ceiling: '—',
            ratio: '—',
            target: 'p99 ≤ 50 ms at 1M rows',
            met: large.one.p99 <= 50,
            ...notJudged,
          },
          {
            benchmark: `work-items: search growth ${small.label} → ${large.label}, realistic corpus`,
            headline: `p99 ${round(small.one.p99, 1)} → ${round(large.one.p99, 1)} ms${beside((s, l) => `${round(s.one.p99, 1)} → ${round(l.one.p99, 1)} ms (${round(l.one.p99 / s.one.p99, 2)}×)`)}`,
            ceiling: '—',
            ratio: `${round(growth, 2)}×`,
            target: '≤ 3× from 10k to 1M rows',
            met: growth <= 3,
            ...notJudged,
          },
        )
      }
      return lines
    }
    case 'mcp': {
      const r = results.mcp
      if (!r) return []
      const f = r.figures
      const ratio = f.mcp.requestsPerSecond / f.rest.requestsPerSecond
      return [
        {
          benchmark: 'mcp: `tools/call list_work_items`',
          headline: `${round(f.mcp.requestsPerSecond)} calls/s (${latency(f.mcp)}, ${rss(f.peakRssMiB)})`,
          ceiling: `${rps(f.rest.requestsPerSecond)} REST twin`,
          ratio: round(ratio, 2),
          target: '≥ 0.5 of REST',
          met: ratio >= 0.5,
        },
      ]
    }
    case 'display': {
      const r = results.display
      if (!r) return []
      const f = r.figures
      return (
        [
          ['spread over accounts', f.spread, DISPLAY_TARGETS.spread],
          ['one account', f.single, DISPLAY_TARGETS.single],
        ] as const
      ).map(([label, shape, target]) => {
        const line = pgbenchLine(`display: \`POST /api/component\`, ${label}`, shape, f.peakRssMiB, shape.pgbench, 'per-call statement', target)
        return { ...line, target: `${line.target}, p99 ≤ 50 ms`, met: line.met === true && shape.p99 <= 50 }
      })
    }
    case 'alerts': {
      const r = results.alerts
      if (!r) return []
      const f = r.figures
      const mean = (values: number[]) => values.reduce((sum, each) => sum + each, 0) / values.length
      return [
        {
          benchmark: `alerts: \`POST /api/component\` with a rule on each of ${f.rules} components`,
          headline: `${rps(mean(f.withRules))} (${rss(f.peakRssMiB)})`,
          ceiling: `${rps(mean(f.without))} without rules`,
          ratio: `${round(f.ratio * 100, 1)} %`,
          target: '≥ 90 % of without rules',
          met: f.ratio >= 0.9 && f.errors === 0,
        },
      ]
    }
    case 'pages': {
      const r = results.pages
      if (!r) return []
      const f = r.figures
      const renders = f.rendersAfter - f.rendersBefore
      return [
        {
          benchmark: `pages: \`GET /pages/{name}\` with ${f.twenty.components} components vs ${f.one.components}`,
          headline: `${rps(f.twenty.requestsPerSecond)} (${latency(f.twenty)}, mean ${round(f.twenty.meanMs, 1)} ms, ${round(f.twenty.bytes / 1024, 1)} KiB; p50 ratio ${round(f.p50Ratio, 2)}×; fragment renders during the runs: ${renders}; ${rss(f.peakRssMiB)})`,
          ceiling: `${rps(f.one.requestsPerSecond)} with ${f.one.components} component (${latency(f.one)})`,
          ratio: `${round(f.ratio, 2)}×`,
          target: '≤ 2.0× the time of 1 component',
          met: f.ratio <= 2 && renders === 0 && f.errors === 0,
        },
      ]
    }
    case 'push': {
      const r = results.push
      if (!r) return []
      const f = r.figures
      return [
        {
          benchmark: `push: fan-out of one message to ${round(f.devices)} devices`,
          headline: `${round(f.median)} messages/s median of ${f.perRun.length} (best ${round(f.best)}; exactly once: ${f.exactlyOnce ? 'yes' : 'NO'}; ${rss(f.peakRssMiB)})`,
          ceiling: '—',
          ratio: '—',
          target: '≥ 2,000 messages/s, each device once',
          met: f.median >= 2000 && f.exactlyOnce,
        },
      ]
    }
    case 'webhooks': {
      const r = results.webhooks
      if (!r) return []
      const { paced: p, saturation: s, writes: w } = r.figures
      return [
        {
          benchmark: `webhooks: delivery of ${round(r.figures.rate)} changes/s offered, one webhook`,
          headline: `${round(p.deliveredPerSecond)} events/s delivered of ${round(p.changesPerSecond)} changes/s committed; latency p50 ${round(p.p50, 1)} / p99 ${round(p.p99, 1)} / max ${round(p.max)} ms; backlog ${round(p.backlogAtEnd)}, missing ${p.missing}, duplicates ${p.duplicates}; saturated: ${round(s.deliveredPerSecond)} events/s under load, ${round(s.drainPerSecond)} draining (${round(s.changesPerSecond)} changes/s)`,
          ceiling: '—',
          ratio: `${round(p.deliveredPerSecond / p.changesPerSecond, 2)}`,
          target: `keeps up with ${round(r.figures.rate)} events/s (≥ 95 % committed and delivered in the window, none lost or twice)`,
          met: keepsUp(p, r.figures.rate),
        },
        {
          benchmark: 'webhooks: `PATCH …/work-items/{id}` with 5 webhooks vs none',
          headline: `${rps(w.five.requestsPerSecond)} (${latency(w.five)}; ${round(w.deliveredPerSecond)} events/s delivered meanwhile on the same 2 cores, backlog ${round(w.backlogAtEnd)}; ${rss(r.figures.peakRssMiB)})${
            w.recordingOnly && w.recordingNone ? `; with the workers off (recording only): ${rps(w.recordingOnly.requestsPerSecond)} vs ${rps(w.recordingNone.requestsPerSecond)} = ${round(w.recordingOnly.requestsPerSecond / w.recordingNone.requestsPerSecond, 2)}` : ''
          }`,
          ceiling: `${rps(w.none.requestsPerSecond)} with none`,
          ratio: round(w.ratio, 2),
          target: '≥ 0.8 of none',
          met: w.ratio >= 0.8,
        },
      ]
    }
    case 'sign-in': {
      const r = results['sign-in']
      if (!r) return []
      const f = r.figures
      return f.storms.map((run) => {
        const growth = run.peakRssMiB - f.idleRssMiB
        const unexpected = Object.entries(run.answers).filter(([status]) => !['401', '429', '503'].includes(status)).reduce((sum, [, count]) => sum + count, 0)
        return {
          benchmark: `sign-in: ${run.concurrency} concurrent wrong-password sign-ins`,
          headline: `RSS +${round(growth, 1)} MiB over idle; \`/users/me\` p99 ${round(run.usersMe.p99, 1)} ms meanwhile (${round(f.quiet.p99, 1)} ms alone); ${round(run.hashedPerSecond, 1)} hashes/s`,
          ceiling: '—',
          ratio: '—',
          target: 'RSS growth < 300 MiB; only 401/429/503 with Retry-After; /users/me p99 < 50 ms',
          met: growth < 300 && unexpected === 0 && run.missingRetryAfter === 0 && run.usersMe.p99 < 50,
        }
      })
    }
    case 'citus': {
      const r = results.citus
      if (!r) return []
      const f = r.figures
      const h = f.hotPaths
      // Unexplained multi-shard statements while requests ran (warm-ups and measured runs).
      const unexplained = f.shapes.reduce((n, s) => n + s.measured.unexplained + s.warmup.unexplained, 0)
      return [
        ...f.shapes.map((s) => ({
          benchmark: `citus: ${s.label}, on a coordinator and ${f.workers} workers (one machine)`,
          headline: `${rps(s.cluster.requestsPerSecond)} (${latency(s.cluster)}; errors ${s.cluster.errors})`,
          ceiling: `${rps(s.single.requestsPerSecond)} (${latency(s.single)}) on one PostgreSQL, same run`,
          ratio: round(s.ratio, 2),
          target: '— (measured and explained: issue 26)',
          met: null,
          notJudged: 'reported, no target',
        })),
        {
          benchmark: 'citus: hot-path statements single-shard (Citus executions during the measured runs)',
          headline: `${round(h.single)} single-shard; multi-shard: ${h.lookups} credential lookups by hash (${f.shapes.reduce((n, s) => n + s.warmup.lookups, 0)} in the warm-ups: cache misses), ${h.unexplained} unexplained (and ${h.background} of the services' background work meanwhile): ${Number.isNaN(hotPathShare(h)) ? '—' : round(100 * hotPathShare(h), 2)} %`,
          ceiling: '—',
          ratio: '—',
          target: 'all hot-path statements single-shard (lookups by a credential hash on a cache miss allowed)',
          met: f.multiShard === null ? null : unexplained === 0,
          notJudged: 'not judged (the coordinator log was not readable)',
        },
      ]
    }
    case 'growth': {
      const r = results.growth
      if (!r) return []
      if (isAfter(r)) return growthAfterLines(r, results['growth-before'])
      const sizes = r.figures.sizes
      const [small, large] = [sizes[0], sizes.at(-1)]
      if (!small || !large) return []
      const cold = large.cold
      const pair = (l: { p50: number; p99: number } | undefined) => (l ? `p50 ${round(l.p50, 1)} / p99 ${round(l.p99, 1)} ms` : '—')
      // The targets are set at a million rows; a smaller run is shown, not judged.
      const notJudged = large.rows >= 1_000_000 ? {} : { met: null, notJudged: 'not judged (fewer than 1M rows)' }
      const at = `at ${large.label} rows`
      const lines: Line[] = [
        {
          benchmark: `growth: cold \`GET …/work-items?size=100\` page 0 (first read after a PATCH) ${at}`,
          headline: `${pair(cold.page0)} (${small.label}: ${pair(small.cold.page0)}; cached: p50 ${round(large.cached.p50, 1)} ms)`,
          ceiling: '—',
          ratio: '—',
          target: 'p50 ≤ 15 ms, p99 ≤ 40 ms at 1M',
          met: !!cold.page0 && cold.page0.p50 <= 15 && cold.page0.p99 <= 40,
          ...notJudged,
        },
        {
          benchmark: `growth: cold deeper pages ${at} (\`page\`/OFFSET: no cursor pages yet)`,
          headline: `middle (page ${cold.middle?.page}) ${pair(cold.middle)}; last (page ${cold.last?.page}) ${pair(cold.last)}`,
          ceiling: '—',
          ratio: '—',
          target: 'any cursor page p50 ≤ 15 ms, p99 ≤ 40 ms at 1M',
          met: [cold.middle, cold.last].every((l) => !!l && l.p50 <= 15 && l.p99 <= 40),
          ...notJudged,
        },
      ]
      if (small !== large && small.cold.page0 && cold.page0) {
        const [p50, p99] = [cold.page0.p50 / small.cold.page0.p50, cold.page0.p99 / small.cold.page0.p99]
        lines.push({
          benchmark: `growth: cold page 0, ${small.label} → ${large.label} rows`,
          headline: `p50 ${round(small.cold.page0.p50, 1)} → ${round(cold.page0.p50, 1)} ms, p99 ${round(small.cold.page0.p99, 1)} → ${round(cold.page0.p99, 1)} ms (${round(p99, 2)}×)`,
          ceiling: '—',
          ratio: `${round(p50, 2)}×`,
          target: '≤ 1.5× from 10k to 1M',
          met: p50 <= 1.5 && p99 <= 1.5,
          ...notJudged,
        })
      }
      lines.push(
        {
          benchmark: `growth: cold filtered page 0 ${at}`,
          headline: `\`status=in_progress\` (25 %) ${pair(cold.status)}; \`assigneeId\` (1 %) ${pair(cold.assignee)}`,
          ceiling: '—',
          ratio: '—',
          target: 'p50 ≤ 20 ms at 1M',
          met: [cold.status, cold.assignee].every((l) => !!l && l.p50 <= 20),
          ...notJudged,
        },
        {
          benchmark: `growth: cold \`page=5000\` ${at}`,
          headline: cold.deep ? pair(cold.deep) : 'the project has fewer than 5,001 pages',
          ceiling: '—',
          ratio: '—',
          target: 'reported (expected to grow)',
          met: null,
          notJudged: 'reported',
        },
        {
          benchmark: 'growth: `PATCH …/work-items/{id}` on the grown project',
          headline: sizes.map((s) => `${s.label}: ${rps(s.patch.requestsPerSecond)} (${latency(s.patch)})`).join('; '),
          ceiling: '—',
          ratio: '—',
          target: '≥ 0.9× today with maintained counts',
          met: null,
          notJudged: 'reported: the figure today (issue 27, before)',
        },
      )
      return lines
    }
    case 'mixed': {
      const r = results.mixed
      if (!r) return []
      const f = r.figures
      return [
        {
          benchmark: `mixed: everything at once for ${round(f.minutes, 2)} min`,
          headline: `RSS slope ${f.slopeMiBPerMinute >= 0 ? '+' : ''}${round(f.slopeMiBPerMinute, 2)}${f.slopeStandardError === null ? '' : ` ± ${round(f.slopeStandardError, 2)}`} MiB/min over the second half, last/first quarter ${round(f.quarterRatio, 3)} (${round(f.firstRssMiB, 1)} → ${round(f.lastRssMiB, 1)} MiB; ${rps(f.requestsPerSecond)} mean; 5xx + transport errors ${f.serverErrors})`,
          ceiling: '—',
          ratio: '—',
          target: `no RSS growth trend (slope < ${SLOPE_THRESHOLD_MIB_PER_MINUTE} MiB/min, ratio ≤ ${QUARTER_RATIO_THRESHOLD}, run ≥ ${MINIMUM_JUDGED_MINUTES} min), no 5xx`,
          met: f.growthTrend === null ? null : !f.growthTrend && f.serverErrors === 0,
          notJudged: `not judged (run < ${MINIMUM_JUDGED_MINUTES} min)${f.serverErrors ? `; **${f.serverErrors} 5xx/transport errors**` : ''}`,
        },
      ]
    }
    case 'answers': {
      const r = results.answers
      if (!r) return []
      const largest = Math.max(...r.figures.shapes.map((shape) => shape.bytes))
      const [text, stream] = (['string', 'stream'] as const).map((body) => r.figures.shapes.find((shape) => shape.bytes === largest && shape.body === body)!)
      return [
        {
          benchmark: `answers: a ${round(largest)}-byte answer after an \`await\` on Bun.serve, one-chunk stream (what the service sends) vs string`,
          headline: `${rps(stream!.requestsPerSecond)} (${round(stream!.userMicros + stream!.kernelMicros, 1)} µs CPU per answer, ${round(stream!.kernelMicros, 1)} in the kernel)`,
          ceiling: `${rps(text!.requestsPerSecond)} as a string (${round(text!.userMicros + text!.kernelMicros, 1)} µs, ${round(text!.kernelMicros, 1)} in the kernel)`,
          ratio: `${round(stream!.requestsPerSecond / text!.requestsPerSecond, 2)}×`,
          target: '— (why long answers stream: issue 31)',
          met: null,
          notJudged: 'reported, no target',
        },
      ]
    }
    case 'driver': {
      const r = results.driver
      if (!r) return []
      const f = r.figures
      const [service] = f.shapes
      const ceiling = Math.max(f.pgbench32, f.pgbench10)
      return [
        {
          benchmark: 'driver: the list access check through postgres.js as the service runs it (prepared, pool of 10)',
          headline: `${round(service!.queriesPerSecond)} queries/s (${round(service!.clientMicros, 1)} µs of client CPU per query)`,
          ceiling: `${round(ceiling)} TPS pgbench, same statement`,
          ratio: round(service!.queriesPerSecond / ceiling, 2),
          target: '— (where the list reads lose: issue 31)',
          met: null,
          notJudged: 'reported, no target',
        },
      ]
    }
  }
}

/** The growth lines of an after run of issue 27 (bench/growth.ts), judged at 1M rows against the targets and the before run. */
function growthAfterLines(r: GrowthRecord, before: GrowthBeforeRecord | undefined): Line[] {
  const sizes = r.figures.sizes
  const [small, large] = [sizes[0], sizes.at(-1)]
  if (!small || !large) return []
  const cold = large.cold
  const pair = (l: { p50: number; p99: number } | undefined) => (l ? `p50 ${round(l.p50, 1)} / p99 ${round(l.p99, 1)} ms` : '—')
  const verdict = judge(sizes, before?.figures.sizes)
  // The targets are set at a million rows, growth from 10k; a smaller run is shown, not judged.
  const judged = (met: boolean) => (verdict.judged ? { met } : { met: null, notJudged: 'not judged (not a 10k → 1M run)' })
  const beforeLarge = before?.figures.sizes.find((s) => s.rows === large.rows)
  const was = (l: { p50: number } | undefined) => (l ? `; before ${round(l.p50, 1)} ms p50` : '')
  const at = `at ${large.label} rows`
  const g = verdict.growth
  const grew = (name: string, x: { p50: number; p99: number } | undefined) => (x ? `${name} p50 ${round(x.p50, 2)}×, p99 ${round(x.p99, 2)}×` : `${name} —`)
  return [
    {
      benchmark: `growth: cold \`GET …/work-items?size=100\` page 0 (first read after a PATCH) ${at}`,
      headline: `${pair(cold.page0)} (${small.label}: ${pair(small.cold.page0)}; cached: p50 ${round(large.cached.p50, 1)} ms${was(beforeLarge?.cold.page0)})`,
      ceiling: '—',
      ratio: '—',
      target: 'p50 ≤ 15 ms, p99 ≤ 40 ms at 1M',
      ...judged(verdict.page0),
    },
    {
      benchmark: `growth: cold cursor pages ${at}`,
      headline: `middle (page ${cold.middleCursor?.page}) ${pair(cold.middleCursor)}; last (page ${cold.lastCursor?.page}) ${pair(cold.lastCursor)}${was(beforeLarge?.cold.middle)} (middle by OFFSET)`,
      ceiling: '—',
      ratio: '—',
      target: 'any cursor page p50 ≤ 15 ms, p99 ≤ 40 ms at 1M',
      ...judged(verdict.cursor),
    },
    {
      benchmark: `growth: cold page 0 and cursor pages, ${small.label} → ${large.label} rows`,
      headline: `${grew('page 0', g.page0)}; ${grew('middle', g.middleCursor)}; ${grew('last', g.lastCursor)}`,
      ceiling: '—',
      ratio: g.page0 ? `${round(g.page0.p50, 2)}×` : '—',
      target: '≤ 1.5× from 10k to 1M (p50 and p99)',
      ...judged(verdict.growthMet),
    },
    {
      benchmark: `growth: cold filtered page 0 ${at}`,
      headline: `\`status=in_progress\` (25 %) ${pair(cold.status)}; \`assigneeId\` (1 %) ${pair(cold.assignee)}`,
      ceiling: '—',
      ratio: '—',
      target: 'p50 ≤ 20 ms at 1M',
      ...judged(verdict.filtered),
    },
    // Since offsets are bounded, `page=5000` is a 400 (`refused`); a record of a run before the bound has its OFFSET read (`deep`).
    large.refused
      ? {
          benchmark: `growth: \`page=5000\` refused (400 naming \`page\`: offset past the bound) ${at}`,
          headline: `${pair(large.refused)} (${small.label}: ${pair(small.refused)}${beforeLarge?.cold.deep ? `; before, read by OFFSET: ${round(beforeLarge.cold.deep.p50, 1)} ms p50` : ''})`,
          ceiling: '—',
          ratio: '—',
          target: 'refused at every size, p50 ≤ 15 ms, p99 ≤ 40 ms',
          ...judged(verdict.refused),
        }
      : {
          benchmark: `growth: cold \`page=5000\` (OFFSET) ${at}`,
          headline: cold.deep ? pair(cold.deep) : 'the project has fewer than 5,001 pages',
          ceiling: '—',
          ratio: '—',
          target: 'reported (expected to grow)',
          met: null,
          notJudged: 'reported',
        },
    {
      benchmark: 'growth: `PATCH …/work-items/{id}` (rename) on the grown project, after vs before',
      headline: sizes
        .map((s) => {
          const b = before?.figures.sizes.find((x) => x.rows === s.rows)
          return `${s.label}: ${rps(s.patch.title.requestsPerSecond)}${b ? ` (before ${rps(b.patch.requestsPerSecond)})` : ''}`
        })
        .join('; '),
      ceiling: 'the before run (another day: the machine is shared)',
      ratio: verdict.patchVsBefore.map((p) => (p.ratio === undefined ? '—' : `${round(p.ratio, 2)}×`)).join(' / '),
      target: '≥ 0.9× before',
      ...judged(verdict.patchVsBeforeMet),
    },
    {
      benchmark: 'growth: `PATCH` changing a status (moves the maintained counts) vs a rename, same run',
      headline: sizes.map((s) => `${s.label}: ${rps(s.patch.status.requestsPerSecond)} vs ${rps(s.patch.title.requestsPerSecond)}`).join('; '),
      ceiling: 'rename, same run',
      ratio: sizes.map((s) => `${round(s.patch.statusOverTitle, 2)}×`).join(' / '),
      target: '≥ 0.9×',
      ...judged(verdict.statusOverTitleMet),
    },
  ]
}

/** Rewrites the summary section (first in RESULTS.md) from bench/results.json. */
export function writeSummary(): void {
  const results: AllResults = readResults()
  const rows: string[] = []
  const machines = new Map<string, string[]>()
  for (const name of BENCHMARKS) {
    const recorded = results[name]
    if (!recorded) {
      rows.push(`| ${name} | not run yet | | | | | |`)
      continue
    }
    machines.set(recorded.machine, [...(machines.get(recorded.machine) ?? []), name])
    for (const line of linesOf(results, name)) {
      const status = line.met === null ? (line.notJudged ?? 'not judged') : line.met ? 'met' : '**missed**'
      rows.push(`| ${line.benchmark} | ${line.headline} | ${line.ceiling} | ${line.ratio} | ${line.target} | ${status} | ${recorded.date.slice(0, 16).replace('T', ' ')} |`)
    }
  }
  // Issue 15: the service's peak RSS stays within 200 MiB through every benchmark.
  const peaks = BENCHMARKS.flatMap((name) => {
    const figures = results[name]?.figures as { peakRssMiB?: number | null; storms?: Array<{ peakRssMiB: number }> } | undefined
    const values = [figures?.peakRssMiB, ...(figures?.storms ?? []).map((storm) => storm.peakRssMiB)].filter((value): value is number => typeof value === 'number')
    return values.length ? [{ name, peak: Math.max(...values) }] : []
  })
  if (peaks.length) {
    const worst = peaks.reduce((a, b) => (b.peak > a.peak ? b : a))
    rows.push(
      `| peak RSS of the service, every benchmark above | ${round(worst.peak, 1)} MiB (${worst.name}); ${peaks.map((p) => `${p.name} ${round(p.peak, 1)}`).join(', ')} | — | — | ≤ ${PEAK_RSS_TARGET_MIB} MiB | ${worst.peak <= PEAK_RSS_TARGET_MIB ? 'met' : '**missed**'} | — |`,
    )
  }
  const machineLines = [...machines.entries()].map(([machine, names]) => `- ${machines.size === 1 ? 'Machine' : `Machine of ${names.join(', ')}`}: ${machine}`)
  writeSection(
    'summary',
    `## Summary

Generated by \`npm run bench\` (bench/summary.ts) from the figures each benchmark recorded in
[\`bench/results.json\`](results.json) on its last run: re-running one benchmark refreshes its lines and
keeps the others'. Ratios compare figures from the same run; details, commands and per-run figures are in
each benchmark's section below.

| benchmark | headline | ceiling | ratio | target | status | run (UTC) |
|---|---|---|---:|---|---|---|
${rows.join('\n')}

${machineLines.join('\n')}`,
    { first: true },
  )
}

if (import.meta.main) writeSummary()
