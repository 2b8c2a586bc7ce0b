/**
 * Prometheus metrics, one registry per service (tests run several services in one process, so
 * never prom-client's global one): requests by route pattern, method and status with their
 * latency, the database pool, and what plugins register through `core.metrics` (push: outbox
 * depth, display: calls by outcome), so a disabled plugin exports nothing. `GET /metrics` serves
 * them only to `server.metricsToken` (metricsRoutes).
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { Elysia } from 'elysia'
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client'
import type { DatabaseHandle } from './db'
import { unauthorized } from './http/errors'
import { bearerToken } from './http/credentials'
import type { Logger } from './log'

/** What a plugin may register (`core.metrics`); names are `worktrack_…`, one owner each. */
export interface Metrics {
  /** A counter; on a hot path keep `counter.labels(…)` children instead of passing labels per call. */
  counter<L extends string = never>(options: { name: string; help: string; labelNames?: readonly L[] }): Counter<L>
  /** A gauge that `collect` sets at each scrape (e.g. a bounded count of the plugin's own rows); a failing collect exports NaN. */
  gauge<L extends string = never>(options: { name: string; help: string; labelNames?: readonly L[]; collect(gauge: Gauge<L>): void | Promise<void> }): Gauge<L>
}

/** The methods kept as label values; anything else is `OTHER` (a client chooses the method). */
export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'OTHER'] as const

export function methodIndex(method: string): number {
  switch (method) {
    case 'GET':
      return 0
    case 'HEAD':
      return 1
    case 'POST':
      return 2
    case 'PUT':
      return 3
    case 'PATCH':
      return 4
    case 'DELETE':
      return 5
    case 'OPTIONS':
      return 6
    default:
      return 7
  }
}

/** Seconds; the service answers most requests in well under a millisecond. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const

interface RequestSeries {
  route: string
  method: string
  status: number
  count: number
  sum: number
  /** Observations per bucket (not cumulative; made cumulative at scrape). */
  buckets: Float64Array
}

/**
 * Request counts and latency, kept as plain numbers: prom-client's own Counter and Histogram hash
 * their labels on every call (~0.5 µs per request, measured), this is two Map lookups and three
 * additions. The series' labels are bounded: route patterns, eight methods, statuses.
 */
class RequestStats {
  private readonly routes = new Map<string, Map<number, RequestSeries>>()

  observe(route: string, method: number, status: number, seconds: number): void {
    let byKey = this.routes.get(route)
    if (!byKey) this.routes.set(route, (byKey = new Map()))
    const key = method * 1000 + status
    let series = byKey.get(key)
    if (!series) byKey.set(key, (series = { route, method: METHODS[method]!, status, count: 0, sum: 0, buckets: new Float64Array(LATENCY_BUCKETS.length) }))
    series.count++
    series.sum += seconds
    for (let i = 0; i < LATENCY_BUCKETS.length; i++)
      if (seconds <= LATENCY_BUCKETS[i]!) {
        series.buckets[i]!++
        break
      }
  }

  *series(): Iterable<RequestSeries> {
    for (const byKey of this.routes.values()) yield* byKey.values()
  }
}

/** prom-client formats any registered object with a `get()`; these two read RequestStats. */
function requestMetrics(stats: RequestStats): Metric[] {
  const labelsOf = (series: RequestSeries) => ({ route: series.route, method: series.method, status: String(series.status) })
  const counter = {
    name: 'worktrack_http_requests_total',
    help: 'HTTP requests answered, by route pattern (unmatched paths as "(unmatched)"), method and status.',
    get: async () => ({
      name: counter.name,
      help: counter.help,
      type: 'counter',
      aggregator: 'sum',
      values: [...stats.series()].map((series) => ({ labels: labelsOf(series), value: series.count })),
    }),
  }
  const histogram = {
    name: 'worktrack_http_request_duration_seconds',
    help: 'Time to answer an HTTP request (until the response head; a stream counts until it starts), by route pattern, method and status.',
    get: async () => {
      const values: Array<{ metricName: string; labels: Record<string, string>; value: number }> = []
      for (const series of stats.series()) {
        const labels = labelsOf(series)
        let cumulative = 0
        LATENCY_BUCKETS.forEach((bound, i) => {
          cumulative += series.buckets[i]!
          values.push({ metricName: `${histogram.name}_bucket`, labels: { ...labels, le: String(bound) }, value: cumulative })
        })
        values.push({ metricName: `${histogram.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: series.count })
        values.push({ metricName: `${histogram.name}_sum`, labels, value: series.sum })
        values.push({ metricName: `${histogram.name}_count`, labels, value: series.count })
      }
      return { name: histogram.name, help: histogram.help, type: 'histogram', aggregator: 'sum', values }
    },
  }
  return [counter, histogram] as unknown as Metric[]
}

const NAME = /^worktrack_[a-z0-9_]+$/

/** The service's metrics: the registry, the request statistics and the plugins' face. */
export class ServiceMetrics implements Metrics {
  readonly registry = new Registry()
  private readonly requests = new RequestStats()

  constructor(
    private readonly log: Logger,
    database: Pick<DatabaseHandle, 'kind' | 'db'>,
    inFlight: () => number,
  ) {
    for (const metric of requestMetrics(this.requests)) this.registry.registerMetric(metric)
    this.gauge({ name: 'worktrack_http_requests_in_flight', help: 'Requests being answered now.', collect: (gauge) => gauge.set(inFlight()) })
    this.gauge({
      name: 'worktrack_database_pool_max_connections',
      help: 'Connections the database pool may open (postgres.js `max`; the embedded PGlite: 1). postgres.js reports no in-use or idle counts.',
      collect: (gauge) => gauge.set(poolSize(database)),
    })
  }

  /**
   * The process's own: prom-client's default collectors under their usual names (`process_cpu_*`,
   * `process_resident_memory_bytes`, `nodejs_eventloop_lag_*` with percentiles, heap and handles),
   * and the peak resident memory the memory targets of docs/performance.md are stated in. Called once, when
   * someone can read them (`metricsRoutes` with a token): the event-loop monitor runs from then on.
   */
  collectProcessMetrics(): void {
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 20 })
    this.gauge({
      name: 'worktrack_process_peak_resident_memory_bytes',
      help: 'The most resident memory the process has held since it started (VmHWM; getrusage maxrss).',
      collect: (gauge) => gauge.set(process.resourceUsage().maxRSS * 1024),
    })
  }

  /** One answered request (route pattern, METHODS index, status, seconds). */
  observeRequest(route: string, method: number, status: number, seconds: number): void {
    this.requests.observe(route, method, status, seconds)
  }

  counter<L extends string = never>(options: { name: string; help: string; labelNames?: readonly L[] }): Counter<L> {
    return new Counter<L>({ name: checkedName(options.name), help: options.help, labelNames: options.labelNames ?? [], registers: [this.registry] })
  }

  gauge<L extends string = never>(options: { name: string; help: string; labelNames?: readonly L[]; collect(gauge: Gauge<L>): void | Promise<void> }): Gauge<L> {
    const log = this.log
    return new Gauge<L>({
      name: checkedName(options.name),
      help: options.help,
      labelNames: options.labelNames ?? [],
      registers: [this.registry],
      // One failing source must not fail the scrape: its gauge says NaN and the log says why.
      async collect() {
        try {
          await options.collect(this)
        } catch (error) {
          log.warn('metrics: a gauge could not be collected', { metric: options.name, error: (error as Error).message })
          if (!options.labelNames?.length) (this as Gauge<string>).set(Number.NaN)
        }
      },
    })
  }
}

function checkedName(name: string): string {
  if (!NAME.test(name)) throw new Error(`metric names are worktrack_ and lowercase letters, digits or _ (got "${name}")`)
  return name
}

/** The pool size the database reports: postgres.js's `max` through Drizzle's `$client`; PGlite is one connection. */
function poolSize(database: Pick<DatabaseHandle, 'kind' | 'db'>): number {
  if (database.kind === 'pglite') return 1
  const max = (database.db as unknown as { $client?: { options?: { max?: unknown } } }).$client?.options?.max
  return typeof max === 'number' ? max : Number.NaN
}

const digest = (value: string) => createHash('sha256').update(value).digest()

/**
 * `GET /metrics` for a Bearer token equal to `token` (compared as SHA-256 digests, in constant
 * time); 401 otherwise. Without a token there is no route: 404 like any unknown path.
 */
export function metricsRoutes(metrics: ServiceMetrics, token: string | undefined) {
  const routes = new Elysia({ name: 'metrics' })
  if (!token) return routes
  metrics.collectProcessMetrics()
  const expected = digest(token)
  return routes.get(
    '/metrics',
    async ({ request }) => {
      const presented = bearerToken(request.headers.get('authorization'))
      if (presented === undefined || !timingSafeEqual(digest(presented), expected))
        throw unauthorized('The metrics token is required (Authorization: Bearer).', presented !== undefined)
      return new Response(await metrics.registry.metrics(), { headers: { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' } })
    },
    { detail: { hide: true } },
  )
}
