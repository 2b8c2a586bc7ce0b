/**
 * The summary at the top of bench/RESULTS.md: one row per figure, generated from the figures every
 * benchmark records in bench/results.json (never from hand-written text), so re-running one
 * benchmark refreshes its rows and keeps the others' last recorded figures. Each row shows the
 * sentence of bench/targets.ts it is judged by. `bun bench/summary.ts` regenerates it alone.
 */
import type { BulkLoad, OAuthShape, SearchSize } from './figures'
import { hotPathShare } from './lib/citus'
import { readResults, writeSection, type RecordedResults } from './lib/results'
import { round, type Latency } from './lib/stats'
import { keepsUp } from './lib/webhooks'
import type { Throughput } from './lib/wrk'
import { LIMITS, PEAK_RSS_TARGET, SCENARIOS, TARGETS, type ScenarioName } from './targets'

interface Row {
  benchmark: string
  headline: string
  ceiling: string
  ratio: string
  target: string
  /** null: not judged, for the reason in `notJudged`. */
  met: boolean | null
  notJudged?: string
}

const L = LIMITS
const rps = (value: number) => `${round(value)} req/s`
const latency = (t: Throughput) => `p50 ${round(t.p50, 1)} / p99 ${round(t.p99, 1)} ms`
const rss = (value: number | null) => (value === null ? 'peak RSS not recorded' : `peak RSS ${round(value, 1)} MiB`)
const pair = (l: Pick<Latency, 'p50' | 'p99'> | undefined) => (l ? `p50 ${round(l.p50, 1)} / p99 ${round(l.p99, 1)} ms` : '—')
const within = (l: Pick<Latency, 'p50' | 'p99'> | undefined, p50: number, p99 = Infinity) => !!l && l.p50 <= p50 && l.p99 <= p99
const reported = { ceiling: '—', ratio: '—', met: null, notJudged: 'reported, no target' } as const

/** A row judged against pgbench running the same SQL (`same`: what it runs), met at `least` × its TPS. */
function pgbenchRow(benchmark: string, measured: Throughput, peakRssMiB: number, ceiling: number, same: string, least: number, target: string): Row {
  const ratio = measured.requestsPerSecond / ceiling
  return { benchmark, headline: `${rps(measured.requestsPerSecond)} (${latency(measured)}, ${rss(peakRssMiB)})`, ceiling: `${round(ceiling)} TPS pgbench, same ${same}`, ratio: round(ratio, 2), target, met: ratio >= least }
}

/** The rows of one benchmark from its recorded figures. */
function rowsOf(results: RecordedResults, name: ScenarioName): Row[] {
  switch (name) {
    case 'auth-me': {
      const f = results[name]!.figures
      const ratio = f.endpoint.requestsPerSecond / f.hello.requestsPerSecond
      return [{ benchmark: 'auth-me: `GET /api/v1/users/me` (Bearer check)', headline: `${rps(f.endpoint.requestsPerSecond)} (${latency(f.endpoint)}, ${rss(f.peakRssMiB)})`, ceiling: `${rps(f.hello.requestsPerSecond)} Elysia hello-world`, ratio: `${round(ratio * 100, 1)} %`, target: TARGETS[name].bearer, met: ratio >= L.bearerShareOfHello }]
    }
    case 'oauth': {
      const f = results[name]!.figures
      const t = TARGETS[name]
      const cpu = (s: OAuthShape) => `${round(s.serviceMicros, 1)} µs service CPU per answer`
      const versus = (label: string, pair: { key: OAuthShape; token: OAuthShape }): Row => {
        const ratio = pair.token.requestsPerSecond / pair.key.requestsPerSecond
        return { benchmark: `oauth: ${label} with an OAuth access token vs an API key (cache on)`, headline: `${rps(pair.token.requestsPerSecond)} (${latency(pair.token)}, ${cpu(pair.token)}, ${rss(f.peakRssMiB)})`, ceiling: `${rps(pair.key.requestsPerSecond)} with the key (${latency(pair.key)}, ${cpu(pair.key)})`, ratio: `${round(ratio * 100, 1)} %`, target: t.cached, met: ratio >= L.oauthTokenShareOfKey }
      }
      const cold = f.cold.token.requestsPerSecond / f.cold.key.requestsPerSecond
      return [
        versus('`GET /api/v1/users/me`', f.me),
        versus(`\`GET …/work-items?size=${f.listSize}\``, f.list),
        {
          benchmark: 'oauth: `GET /api/v1/users/me`, token vs key with the cache off (`auth.keyCacheTtlSeconds: 0`)',
          headline: `${rps(f.cold.token.requestsPerSecond)} (${latency(f.cold.token)}, ${cpu(f.cold.token)}; ${round(f.cold.tokenReadsPerRequest, 3)} token reads per request)`,
          ...reported,
          ceiling: `${rps(f.cold.key.requestsPerSecond)} with the key (${latency(f.cold.key)}, ${cpu(f.cold.key)}; ${round(f.cold.keyReadsPerRequest, 3)} key reads per request)`,
          ratio: `${round(cold * 100, 1)} %`,
          target: t.cold,
        },
      ]
    }
    case 'members': {
      const f = results[name]!.figures
      return [pgbenchRow('members: `GET …/members?size=100`', f.endpoint, f.peakRssMiB, Math.max(f.pgbench10, f.pgbench64), 'SQL', L.membersOfPgbench, TARGETS[name].page)]
    }
    case 'work-items': {
      const f = results[name]!.figures
      const t = TARGETS[name]
      const ceiling = Math.max(f.pgbench10, f.pgbench64)
      const rows: Row[] = [
        pgbenchRow('work-items: `GET …/work-items?size=100`, repeated reads, 1 in 10 after a write', f.listRepeated, f.peakRssMiB, ceiling, 'SQL', L.listRepeatedOfPgbench, t.repeated),
        pgbenchRow('work-items: `GET …/work-items?size=100`, cold reads (list cache off)', f.listCold, f.peakRssMiB, ceiling, 'SQL', L.listColdOfPgbench, t.cold),
      ]
      if (f.listByService)
        rows.push({
          benchmark: 'work-items: pages written by the database (the default) vs by the service, same run',
          headline: `cold ${rps(f.listCold.requestsPerSecond)} vs ${rps(f.listByService.cold.requestsPerSecond)}; repeated ${rps(f.listRepeated.requestsPerSecond)} vs ${rps(f.listByService.repeated.requestsPerSecond)}${f.pgbenchJson ? `; pgbench of the JSON statement ${round(Math.max(f.pgbenchJson.pgbench10, f.pgbenchJson.pgbench64))} TPS` : ''}`,
          ...reported,
          ratio: `${round(f.listCold.requestsPerSecond / f.listByService.cold.requestsPerSecond, 2)}× cold, ${round(f.listRepeated.requestsPerSecond / f.listByService.repeated.requestsPerSecond, 2)}× repeated`,
          target: 'No promise: `server.listPagesBuiltBy` defaults to whichever writes the pages faster; the figures show which.',
        })
      const [small, large] = [f.search.realistic[0], f.search.realistic.at(-1)]
      const [adversarialSmall, adversarialLarge] = [f.search.synthetic[0], f.search.synthetic.at(-1)]
      if (small && large && large !== small) {
        const growth = large.one.p99 / small.one.p99
        const beside = (text: (s: SearchSize, l: SearchSize) => string) => (adversarialSmall && adversarialLarge ? `; synthetic (adversarial) ${text(adversarialSmall, adversarialLarge)}` : '')
        // The targets are set at a million rows; a smoke run with fewer is shown, not judged.
        const notJudged = large.rows >= 1_000_000 ? {} : { met: null, notJudged: 'not judged (fewer than 1M rows)' }
        rows.push(
          { benchmark: `work-items: project search at ${large.label} (${round(large.rows)} rows), realistic corpus`, headline: `p99 ${round(large.one.p99, 1)} ms (p50 ${round(large.one.p50, 1)} ms, 1 client)${beside((_, l) => `p99 ${round(l.one.p99, 1)} ms`)}`, ceiling: '—', ratio: '—', target: t.search, met: large.one.p99 <= L.searchP99Ms, ...notJudged },
          {
            benchmark: `work-items: search growth ${small.label} → ${large.label}, realistic corpus`,
            headline: `p99 ${round(small.one.p99, 1)} → ${round(large.one.p99, 1)} ms${beside((s, l) => `${round(s.one.p99, 1)} → ${round(l.one.p99, 1)} ms (${round(l.one.p99 / s.one.p99, 2)}×)`)}`,
            ceiling: '—',
            ratio: `${round(growth, 2)}×`,
            target: t.searchGrowth,
            met: growth <= L.searchGrowth,
            ...notJudged,
          },
        )
      }
      return rows
    }
    case 'mcp': {
      const f = results[name]!.figures
      const ratio = f.mcp.requestsPerSecond / f.rest.requestsPerSecond
      return [{ benchmark: 'mcp: `tools/call list_work_items`', headline: `${round(f.mcp.requestsPerSecond)} calls/s (${latency(f.mcp)}, ${rss(f.peakRssMiB)})`, ceiling: `${rps(f.rest.requestsPerSecond)} REST twin`, ratio: round(ratio, 2), target: TARGETS[name].call, met: ratio >= L.mcpShareOfRest }]
    }
    case 'display': {
      const f = results[name]!.figures
      return (
        [
          ['spread over accounts', f.spread, L.displaySpreadOfPgbench, TARGETS[name].spread],
          ['one account', f.single, L.displaySingleOfPgbench, TARGETS[name].single],
        ] as const
      ).map(([label, shape, least, target]) => {
        const row = pgbenchRow(`display: \`POST /api/component\`, ${label}`, shape, f.peakRssMiB, shape.pgbench, 'per-call statement', least, target)
        return { ...row, met: row.met === true && shape.p99 <= L.displayP99Ms }
      })
    }
    case 'alerts': {
      const f = results[name]!.figures
      const mean = (values: number[]) => values.reduce((sum, each) => sum + each, 0) / values.length
      return [{ benchmark: `alerts: \`POST /api/component\` with a rule on each of ${f.rules} components`, headline: `${rps(mean(f.withRules))} (${rss(f.peakRssMiB)})`, ceiling: `${rps(mean(f.without))} without rules`, ratio: `${round(f.ratio * 100, 1)} %`, target: TARGETS[name].rules, met: f.ratio >= L.alertsShareOfWithout && f.errors === 0 }]
    }
    case 'pages': {
      const f = results[name]!.figures
      const renders = f.rendersAfter - f.rendersBefore
      return [
        {
          benchmark: `pages: \`GET /pages/{name}\` with ${f.twenty.components} components vs ${f.one.components}`,
          headline: `${rps(f.twenty.requestsPerSecond)} (${latency(f.twenty)}, mean ${round(f.twenty.meanMs, 1)} ms, ${round(f.twenty.bytes / 1024, 1)} KiB; p50 ratio ${round(f.p50Ratio, 2)}×; fragment renders during the runs: ${renders}; ${rss(f.peakRssMiB)})`,
          ceiling: `${rps(f.one.requestsPerSecond)} with ${f.one.components} component (${latency(f.one)})`,
          ratio: `${round(f.ratio, 2)}×`,
          target: TARGETS[name].twenty,
          met: f.ratio <= L.pagesTimeRatio && renders === 0 && f.errors === 0,
        },
      ]
    }
    case 'push': {
      const f = results[name]!.figures
      return [{ benchmark: `push: fan-out of one message to ${round(f.devices)} devices`, headline: `${round(f.median)} messages/s median of ${f.perRun.length} (best ${round(f.best)}; exactly once: ${f.exactlyOnce ? 'yes' : 'NO'}; ${rss(f.peakRssMiB)})`, ceiling: '—', ratio: '—', target: TARGETS[name].fanOut, met: f.median >= L.pushMessagesPerSecond && f.exactlyOnce }]
    }
    case 'notifications': {
      const f = results[name]!.figures
      return [
        { benchmark: `notifications: fan-out of one change to ${round(f.watchers)} watchers`, headline: `${round(f.median)} thread updates/s median of ${f.perRun.length} (exactly once: ${f.exactlyOnce ? 'yes' : 'NO'}; ${rss(f.peakRssMiB)})`, ceiling: '—', ratio: '—', target: TARGETS[name].fanOut, met: f.median >= L.notificationThreadsPerSecond && f.exactlyOnce },
        { benchmark: 'notifications: `POST …/entries` on a watched project vs an unwatched one (workers off)', headline: `${rps(f.watched.requestsPerSecond)} (${latency(f.watched)})`, ceiling: `${rps(f.unwatched.requestsPerSecond)} unwatched (${latency(f.unwatched)})`, ratio: round(f.ratio, 2), target: TARGETS[name].writer, met: f.ratio >= L.notificationsWriterShare },
      ]
    }
    case 'work-push': {
      const f = results[name]!.figures
      return [
        {
          benchmark: `work-push: assignment → push to the assignee's device at ${round(f.rate)}/s under a mixed load`,
          headline: `p99 ${round(f.fromStart.p99)} ms from the transaction's start (p50 ${round(f.fromStart.p50)} / p90 ${round(f.fromStart.p90)} / max ${round(f.fromStart.max)} ms; from the answer p99 ${round(f.fromAnswer.p99)} ms); missing ${f.missing}, failed ${f.failed}; background ${rps(f.background.requestsPerSecond)}, 5xx ${f.background.serverErrors}; ${rss(f.peakRssMiB)}`,
          ceiling: '—',
          ratio: '—',
          target: TARGETS[name].latency,
          met: f.fromStart.p99 <= L.workPushP99Ms && f.missing === 0 && f.failed === 0,
        },
      ]
    }
    case 'webhooks-delivery': {
      const { paced: p, saturation: s, rate } = results[name]!.figures
      return [
        {
          benchmark: `webhooks: delivery of ${round(rate)} changes/s offered, one webhook`,
          headline: `${round(p.deliveredPerSecond)} events/s delivered of ${round(p.changesPerSecond)} changes/s committed; latency p50 ${round(p.p50, 1)} / p99 ${round(p.p99, 1)} / max ${round(p.max)} ms; backlog ${round(p.backlogAtEnd)}, missing ${p.missing}, duplicates ${p.duplicates}; saturated: ${round(s.deliveredPerSecond)} events/s under load, ${round(s.drainPerSecond)} draining (${round(s.changesPerSecond)} changes/s)`,
          ceiling: '—',
          ratio: `${round(p.deliveredPerSecond / p.changesPerSecond, 2)}`,
          target: TARGETS[name].keepsUp,
          met: keepsUp(p, rate),
        },
      ]
    }
    case 'webhooks-writes': {
      const w = results[name]!.figures
      const recording = `; with the workers off (recording only): ${rps(w.recordingOnly.requestsPerSecond)} vs ${rps(w.recordingNone.requestsPerSecond)} = ${round(w.recordingOnly.requestsPerSecond / w.recordingNone.requestsPerSecond, 2)}`
      return [
        {
          benchmark: 'webhooks: `PATCH …/work-items/{id}` with 5 webhooks vs none',
          headline: `${rps(w.five.requestsPerSecond)} (${latency(w.five)}; ${round(w.deliveredPerSecond)} events/s delivered meanwhile on the same 2 cores, backlog ${round(w.backlogAtEnd)}; ${rss(w.peakRssMiB)})${recording}`,
          ceiling: `${rps(w.none.requestsPerSecond)} with none`,
          ratio: round(w.ratio, 2),
          target: TARGETS[name].fiveHooks,
          met: w.ratio >= L.webhooksWritesShareOfNone,
        },
      ]
    }
    case 'sign-in': {
      const f = results[name]!.figures
      return f.storms.map((run) => {
        const growth = run.peakRssMiB - f.idleRssMiB
        const unexpected = Object.entries(run.answers).filter(([status]) => !['401', '429', '503'].includes(status)).reduce((sum, [, count]) => sum + count, 0)
        return {
          benchmark: `sign-in: ${run.concurrency} concurrent wrong-password sign-ins`,
          headline: `RSS +${round(growth, 1)} MiB over idle; \`/users/me\` p99 ${round(run.usersMe.p99, 1)} ms meanwhile (${round(f.quiet.p99, 1)} ms alone); ${round(run.hashedPerSecond, 1)} hashes/s`,
          ceiling: '—',
          ratio: '—',
          target: TARGETS[name].storm,
          met: growth < L.signInGrowthMiB && unexpected === 0 && run.missingRetryAfter === 0 && run.usersMe.p99 < L.signInUsersMeP99Ms,
        }
      })
    }
    case 'mixed': {
      const f = results[name]!.figures
      return [
        {
          benchmark: `mixed: everything at once for ${round(f.minutes, 2)} min`,
          headline: `RSS slope ${f.slopeMiBPerMinute >= 0 ? '+' : ''}${round(f.slopeMiBPerMinute, 2)}${f.slopeStandardError === null ? '' : ` ± ${round(f.slopeStandardError, 2)}`} MiB/min over the second half, last/first quarter ${round(f.quarterRatio, 3)} (${round(f.firstRssMiB, 1)} → ${round(f.lastRssMiB, 1)} MiB; ${rps(f.requestsPerSecond)} mean; 5xx + transport errors ${f.serverErrors})`,
          ceiling: '—',
          ratio: '—',
          target: TARGETS[name].memory,
          met: f.growthTrend === null ? null : !f.growthTrend && f.serverErrors === 0,
          notJudged: `not judged (run < ${L.mixedMinimumMinutes} min)${f.serverErrors ? `; **${f.serverErrors} 5xx/transport errors**` : ''}`,
        },
      ]
    }
    case 'citus': {
      const f = results[name]!.figures
      const h = f.hotPaths
      // Unexplained multi-shard statements while requests ran (warm-ups and measured runs).
      const unexplained = f.shapes.reduce((n, s) => n + s.measured.unexplained + s.warmup.unexplained, 0)
      return [
        ...f.shapes.map((s) => ({
          benchmark: `citus: ${s.label}, on a coordinator and ${f.workers} workers (one machine)`,
          headline: `${rps(s.cluster.requestsPerSecond)} (${latency(s.cluster)}; errors ${s.cluster.errors})`,
          ...reported,
          ceiling: `${rps(s.single.requestsPerSecond)} (${latency(s.single)}) on one PostgreSQL, same run`,
          ratio: round(s.ratio, 2),
          target: TARGETS[name].throughput,
        })),
        {
          benchmark: 'citus: hot-path statements single-shard (Citus executions during the measured runs)',
          headline: `${round(h.single)} single-shard; multi-shard: ${h.lookups} credential lookups by hash (${f.shapes.reduce((n, s) => n + s.warmup.lookups, 0)} in the warm-ups: cache misses), ${h.unexplained} unexplained (and ${h.background} of the services' background work meanwhile): ${Number.isNaN(hotPathShare(h)) ? '—' : round(100 * hotPathShare(h), 2)} %`,
          ceiling: '—',
          ratio: '—',
          target: TARGETS[name].singleShard,
          met: f.multiShard === null ? null : unexplained === 0,
          notJudged: 'not judged (the coordinator log was not readable)',
        },
      ]
    }
    case 'growth-reads': {
      const sizes = results[name]!.figures.sizes
      const [small, large] = [sizes[0], sizes.at(-1)]
      if (!small || !large) return []
      const t = TARGETS[name]
      const cold = large.cold
      // The targets are set at a million rows, growth from 10k; a smaller run is shown, not judged.
      const judged = (met: boolean) => (large.rows >= 1_000_000 && small !== large ? { met } : { met: null, notJudged: 'not judged (not a 10k → 1M run)' })
      const at = `at ${large.label} rows`
      const grew = (shape: 'page0' | 'middleCursor' | 'lastCursor') => {
        const [a, b] = [small.cold[shape], large.cold[shape]]
        return a && b ? { p50: b.p50 / a.p50, p99: b.p99 / a.p99 } : undefined
      }
      const growth = { 'page 0': grew('page0'), middle: grew('middleCursor'), last: grew('lastCursor') }
      const row = (benchmark: string, headline: string, target: string, met: boolean, ratio = '—'): Row => ({ benchmark, headline, ceiling: '—', ratio, target, ...judged(met) })
      return [
        row(`growth: cold \`GET …/work-items?size=100\` page 0 (first read after a PATCH) ${at}`, `${pair(cold.page0)} (${small.label}: ${pair(small.cold.page0)}; cached: p50 ${round(large.cached.p50, 1)} ms)`, t.page0, within(cold.page0, L.coldPageP50Ms, L.coldPageP99Ms)),
        row(`growth: cold cursor pages ${at}`, `middle (page ${cold.middleCursor?.page}) ${pair(cold.middleCursor)}; last (page ${cold.lastCursor?.page}) ${pair(cold.lastCursor)}`, t.cursor, within(cold.middleCursor, L.coldPageP50Ms, L.coldPageP99Ms) && within(cold.lastCursor, L.coldPageP50Ms, L.coldPageP99Ms)),
        row(
          `growth: cold page 0 and cursor pages, ${small.label} → ${large.label} rows`,
          Object.entries(growth).map(([shape, g]) => (g ? `${shape} p50 ${round(g.p50, 2)}×, p99 ${round(g.p99, 2)}×` : `${shape} —`)).join('; '),
          t.growth,
          Object.values(growth).every((g) => !!g && g.p50 <= L.coldPageGrowth && g.p99 <= L.coldPageGrowth),
          growth['page 0'] ? `${round(growth['page 0'].p50, 2)}×` : '—',
        ),
        row(`growth: cold filtered page 0 ${at}`, `\`status=in_progress\` (25 %) ${pair(cold.status)}; \`assigneeId\` (1 %) ${pair(cold.assignee)}`, t.filtered, within(cold.status, L.filteredPageP50Ms) && within(cold.assignee, L.filteredPageP50Ms)),
        sizes.every((size) => size.refused)
          ? row(`growth: \`page=5000\` refused (400 naming \`page\`: offset past the bound) ${at}`, `${pair(large.refused)} (${small.label}: ${pair(small.refused)})`, t.refused, sizes.every((size) => within(size.refused, L.coldPageP50Ms, L.coldPageP99Ms)))
          : { benchmark: `growth: \`page=5000\` refused (400 naming \`page\`) ${at}`, headline: 'not measured in this run', ceiling: '—', ratio: '—', target: t.refused, met: null, notJudged: 'not judged (not measured)' },
      ]
    }
    case 'growth-writes': {
      const sizes = results[name]!.figures.sizes
      if (!sizes.length) return []
      const judged = sizes.at(-1)!.rows >= 1_000_000 ? {} : { met: null, notJudged: 'not judged (not a 10k → 1M run)' }
      return [
        { benchmark: 'growth: `PATCH …/work-items/{id}` (rename) on the grown project', headline: sizes.map((s) => `${s.label}: ${rps(s.patch.title.requestsPerSecond)} (${latency(s.patch.title)})`).join('; '), ...reported, target: TARGETS[name].rename },
        {
          benchmark: 'growth: `PATCH` changing a status (moves the maintained counts) vs a rename, same run',
          headline: sizes.map((s) => `${s.label}: ${rps(s.patch.status.requestsPerSecond)} vs ${rps(s.patch.title.requestsPerSecond)}`).join('; '),
          ceiling: 'rename, same run',
          ratio: sizes.map((s) => `${round(s.patch.statusOverTitle, 2)}×`).join(' / '),
          target: TARGETS[name].status,
          met: sizes.every((s) => s.patch.statusOverTitle >= L.statusOverRename),
          ...judged,
        },
      ]
    }
    case 'answers': {
      const shapes = results[name]!.figures.shapes
      const largest = Math.max(...shapes.map((shape) => shape.bytes))
      const [text, stream] = (['string', 'stream'] as const).map((body) => shapes.find((shape) => shape.bytes === largest && shape.body === body)!)
      return [
        {
          benchmark: `answers: a ${round(largest)}-byte answer after an \`await\` on Bun.serve, one-chunk stream (what the service sends) vs string`,
          headline: `${rps(stream!.requestsPerSecond)} (${round(stream!.userMicros + stream!.kernelMicros, 1)} µs CPU per answer, ${round(stream!.kernelMicros, 1)} in the kernel)`,
          ...reported,
          ceiling: `${rps(text!.requestsPerSecond)} as a string (${round(text!.userMicros + text!.kernelMicros, 1)} µs, ${round(text!.kernelMicros, 1)} in the kernel)`,
          ratio: `${round(stream!.requestsPerSecond / text!.requestsPerSecond, 2)}×`,
          target: TARGETS[name].bodies,
        },
      ]
    }
    case 'driver': {
      const f = results[name]!.figures
      const [service] = f.shapes
      const ceiling = Math.max(f.pgbench32, f.pgbench10)
      return [
        {
          benchmark: 'driver: the list access check through postgres.js as the service runs it (prepared, pool of 10)',
          headline: `${round(service!.queriesPerSecond)} queries/s (${round(service!.clientMicros, 1)} µs of client CPU per query)`,
          ...reported,
          ceiling: `${round(ceiling)} TPS pgbench, same statement`,
          ratio: round(service!.queriesPerSecond / ceiling, 2),
          target: TARGETS[name].accessCheck,
        },
      ]
    }
    case 'fields': {
      const f = results[name]!.figures
      return [
        { benchmark: `fields: custom-field filters, page 0 after a write, ${round(f.rows)} work items`, headline: f.shapes.map((s) => `${s.name} ${pair(s)}`).join('; '), ...reported, target: TARGETS[name].filters },
        { benchmark: 'fields: 100 work items in one bulk request vs 100 single POSTs', headline: `${round(f.bulkMs, 1)} ms vs ${round(f.singleMs, 1)} ms`, ...reported, ratio: `${round(f.singleMs / f.bulkMs, 1)}×`, target: TARGETS[name].filters },
      ]
    }
    case 'bulk': {
      const f = results[name]!.figures
      const t = TARGETS[name]
      const ms = (value: number) => round(value, 1)
      const load = (l: BulkLoad) => `${round(l.itemsPerSecond)} items/s (${rps(l.requestsPerSecond)} of 100, ${latency(l)}; 5xx ${l.serverErrors}, non-200 ${l.non200}, socket errors ${l.socketErrors})`
      const r = f.robustness
      return [
        { benchmark: 'bulk: `POST …/work-items/bulk` of 100 plain items, one client', headline: `median ${ms(f.create.p50)} ms (p90 ${ms(f.create.p90)} ms; \`PATCH …/bulk\` of 100 status changes: median ${ms(f.patch.p50)} / p90 ${ms(f.patch.p90)} ms; ${rss(f.peakRssMiB)})`, ceiling: '—', ratio: '—', target: t.latency, met: f.create.p50 <= L.bulkCreateP50Ms },
        { benchmark: 'bulk: bulk create of 100 vs a single `POST …/work-items`, one client', headline: `median ${ms(f.create.p50)} ms`, ceiling: `median ${ms(f.single.p50)} ms single (p90 ${ms(f.single.p90)} ms)`, ratio: `${round(f.ratio, 2)}×`, target: t.ratio, met: f.ratio <= L.bulkOverSingle },
        { benchmark: `bulk: ${f.throughput.clients} clients, bulk creates of 100 into one project`, headline: load(f.throughput), ceiling: `${round(f.pgbenchItemsPerSecond)} items/s pgbench, the database's part alone`, ratio: round(f.throughput.itemsPerSecond / f.pgbenchItemsPerSecond, 2), target: t.throughput, met: f.throughput.itemsPerSecond >= L.bulkItemsPerSecond },
        { benchmark: `bulk: ${r.clients} clients, bulk creates of 100 into one project`, headline: `${load(r)}; ${round(r.rows)} work items, numbers 1..N without a gap: ${r.numbersGapless ? 'yes' : 'NO'}, counts equal the rows: ${r.countsExact ? 'yes' : 'NO'}`, ceiling: '—', ratio: '—', target: t.robustness, met: r.serverErrors === 0 && r.numbersGapless && r.countsExact },
      ]
    }
    case 'export': {
      const f = results[name]!.figures
      const t = TARGETS[name]
      const mib = (value: number) => `${round(value, 1)} MiB`
      const items = `${round(f.items)} work items`
      const trend = f.slowReader.slopeMiBPerSecond * f.slowReader.seconds
      // VmHWM is folded in lazily by the kernel: the peak is the higher of it and the sampled VmRSS.
      const peak = Math.max(f.rss.hwmMiB, f.rss.peakMiB)
      return [
        {
          benchmark: `export: \`GET …/export\` of a project of ${items}, read as fast as curl can`,
          headline: `peak RSS ${mib(peak)} (VmHWM ${round(f.rss.hwmMiB, 1)}; VmRSS ${round(f.rss.firstMiB, 1)} before, ${round(f.rss.peakMiB, 1)} at most during, ${round(f.rss.afterMiB, 1)} after; ${round(f.seconds, 1)} s)${f.complete ? '' : '; **export incomplete**'}`,
          ceiling: '—',
          ratio: '—',
          target: t.memory,
          met: peak < L.exportPeakRssMiB && f.complete,
          ...(f.items >= 1_000_000 ? {} : { met: null, notJudged: 'not judged (fewer than 1M work items)' }),
        },
        {
          benchmark: `export: work items per second, ${items}`,
          headline: `${round(f.itemsPerSecond)} items/s (${round(f.seconds, 1)} s, ${round(f.bytes / 1024 / 1024)} MiB at ${round(f.mibPerSecond, 1)} MiB/s)`,
          ...reported,
          ceiling: `${round(f.ceiling.itemsPerSecond)} items/s psql \`\\copy\` of the same statement, no pages`,
          ratio: round(f.ratio, 2),
          target: t.throughput,
        },
        {
          benchmark: `export: a client reading at ${f.slowReader.rate}/s for ${f.slowReader.seconds} s, then gone`,
          headline: `VmRSS ${round(f.slowReader.firstMiB, 1)} → peak ${round(f.slowReader.peakMiB, 1)} → ${round(f.slowReader.lastMiB, 1)} MiB (trend ${trend >= 0 ? '+' : ''}${round(trend, 1)} MiB over the ${f.slowReader.seconds} s); snapshot given back ${f.slowReader.releaseSeconds === null ? 'not within 45 s' : `${round(f.slowReader.releaseSeconds, 2)} s`} after it went away`,
          ceiling: '—',
          ratio: '—',
          target: t.slowReader,
          met: trend <= L.exportSlowReaderGrowthMiB && f.slowReader.releaseSeconds !== null,
        },
      ]
    }
    case 'import': {
      const f = results[name]!.figures
      return [
        {
          benchmark: `import: \`POST …/import\` of the export's NDJSON, ${round(f.items)} work items + ${round(f.entries)} entries + ${round(f.relationships)} relationships (${round(f.bytes / 1024 / 1024, 1)} MiB), into an empty project, median of ${f.runs.length}`,
          headline: `${round(f.median.itemsPerSecond)} work items/s (${round(f.median.seconds, 2)} s, ${round(f.median.linesPerSecond)} lines/s; best ${round(f.best.itemsPerSecond)}; ${rss(f.peakRssMiB)})${f.complete ? '; counts exact' : '; **an import failed or its counts are off**'}`,
          ceiling: `${round(f.ceiling.itemsPerSecond)} work items/s psql \`\\copy\` of the same rows and counts, one transaction (${round(f.withoutText.itemsPerSecond)} without work_items' two text-search GIN indexes)`,
          ratio: round(f.ratio, 2),
          target: TARGETS[name].throughput,
          met: f.complete && f.median.itemsPerSecond >= L.importItemsPerSecond,
          ...(f.items >= 100_000 ? {} : { met: null, notJudged: 'not judged (fewer than 100k work items)' }),
        },
      ]
    }
    case 'work-sources': {
      const f = results[name]!.figures
      const large = f.alone.filter((a) => a.rows === f.rows)
      const worst = large.reduce((a, b) => (b.transaction.p95 > a.transaction.p95 ? b : a))
      const scanRatio = Math.min(...large.map((a) => a.scanMs / a.transaction.p50))
      const notJudged = f.rows >= 1_000_000 ? {} : { met: null, notJudged: 'not judged (fewer than 1M rows)' }
      return [
        {
          benchmark: `work-sources: recomputing one bound component after one change, ${round(f.rows)} work items`,
          headline: `worst p95 ${round(worst.transaction.p95, 1)} ms (${worst.label}); p50 ${round(Math.min(...large.map((a) => a.transaction.p50)), 1)}–${round(Math.max(...large.map((a) => a.transaction.p50)), 1)} ms`,
          ceiling: 'the same measure by SQL over the rows',
          ratio: `≥ ${round(scanRatio, 1)}× faster`,
          target: TARGETS[name].recompute,
          met: worst.transaction.p95 <= L.workSourceRecomputeMs,
          ...notJudged,
        },
        {
          benchmark: `work-sources: ${round(f.burst.writes)} writes at ${round(f.burst.rate)}/s, 20 bound components`,
          headline: `at most ${f.burst.mostInASecond} recomputations of one component in any second; ${f.burst.mismatches.length} of 20 final values off`,
          ...reported,
          target: TARGETS[name].burst,
          met: f.burst.mostInASecond <= L.workSourceRecomputationsPerSecond && f.burst.mismatches.length === 0,
          notJudged: undefined,
        },
      ]
    }
  }
}

/** Rewrites the summary section (first in RESULTS.md) from bench/results.json. */
export function writeSummary(): void {
  const results = readResults()
  const rows: string[] = []
  const machines = new Map<string, string[]>()
  for (const name of SCENARIOS) {
    const recorded = results[name]
    if (!recorded) {
      rows.push(`| ${name} | no figures recorded yet | | | ${Object.values(TARGETS[name]).join(' ')} | | |`)
      continue
    }
    machines.set(recorded.machine, [...(machines.get(recorded.machine) ?? []), name])
    for (const row of rowsOf(results, name)) {
      const status = row.met === null ? (row.notJudged ?? 'not judged') : row.met ? 'met' : '**missed**'
      rows.push(`| ${row.benchmark} | ${row.headline} | ${row.ceiling} | ${row.ratio} | ${row.target} | ${status} | ${recorded.date.slice(0, 16).replace('T', ' ')} |`)
    }
  }
  const peaks = SCENARIOS.flatMap((name) => {
    const figures = results[name]?.figures as { peakRssMiB?: number | null; storms?: Array<{ peakRssMiB: number }> } | undefined
    const values = [figures?.peakRssMiB, ...(figures?.storms ?? []).map((storm) => storm.peakRssMiB)].filter((value): value is number => typeof value === 'number')
    return values.length ? [{ name, peak: Math.max(...values) }] : []
  })
  if (peaks.length) {
    const worst = peaks.reduce((a, b) => (b.peak > a.peak ? b : a))
    rows.push(
      `| peak RSS of the service, every benchmark above | ${round(worst.peak, 1)} MiB (${worst.name}); ${peaks.map((p) => `${p.name} ${round(p.peak, 1)}`).join(', ')} | — | — | ${PEAK_RSS_TARGET} | ${worst.peak <= L.peakRssMiB ? 'met' : '**missed**'} | — |`,
    )
  }
  const machineLines = [...machines.entries()].map(([machine, names]) => `- ${machines.size === 1 ? 'Machine' : `Machine of ${names.join(', ')}`}: ${machine}`)
  writeSection(
    'summary',
    `## Summary

Generated by \`npm run bench\` (bench/summary.ts) from the figures each benchmark recorded in
[\`bench/results.json\`](results.json) on its last run: re-running one benchmark refreshes its rows and
keeps the others'. Ratios compare figures from the same run; the targets are the sentences of
bench/targets.ts; details, commands and per-run figures are in each benchmark's section below.

| benchmark | headline | ceiling | ratio | target | status | run (UTC) |
|---|---|---|---:|---|---|---|
${rows.join('\n')}

${machineLines.join('\n')}`,
    { first: true },
  )
}

if (import.meta.main) writeSummary()
