/**
 * What every answered request leaves behind: one access-log line (request id, method, route
 * pattern, status, duration) and its count and latency in the metrics. The route is the matched
 * route's pattern (`/api/v1/projects/:projectId/work-items`), never the path, and any path no
 * route matched is UNMATCHED_ROUTE, so a client can neither grow the metrics' label sets nor
 * write its text into the log. On the hot path: no await, one object for the log line, no
 * allocation for the metrics.
 */
import { Elysia } from 'elysia'
import type { Logger } from '../log'
import { METHODS, methodIndex, type ServiceMetrics } from '../metrics'
import { REQUEST_ID_HEADER, requestIdOfRequest } from './request-id'

export const UNMATCHED_ROUTE = '(unmatched)'

/** Where a matched request keeps its route pattern (a symbol property: ~1 ns, a WeakMap ~100 ns). */
const ROUTE = Symbol('route')
type Routed = Request & { [ROUTE]?: string }

/** Marks every matched request with its route pattern; a transform hook, so a body refused with 400 is marked too. */
export const routeMarking = new Elysia({ name: 'route-marking' }).onTransform({ as: 'global' }, ({ request, route }) => {
  ;(request as Routed)[ROUTE] = route
})

/** Records one answered request; `started` is its `performance.now()` on arrival. */
export type RequestObserver = (request: Request, response: Response, started: number) => void

/**
 * The observer of a service: the access log when `accessLog` (at info), the request metrics when
 * `metrics` is given (only while /metrics is served); undefined when neither is wanted.
 */
export function createRequestObserver(options: { log: Logger; accessLog: boolean; metrics?: ServiceMetrics }): RequestObserver | undefined {
  const { log, accessLog, metrics } = options
  if (!accessLog && !metrics) return undefined
  return (request, response, started) => {
    const seconds = (performance.now() - started) / 1000
    const route = (request as Routed)[ROUTE] ?? UNMATCHED_ROUTE
    const method = methodIndex(request.method)
    const status = response.status
    metrics?.observeRequest(route, method, status, seconds)
    if (accessLog)
      log.info('request', { requestId: requestIdOfRequest(request) ?? response.headers.get(REQUEST_ID_HEADER), method: METHODS[method], route, status, durationMs: Math.round(seconds * 1e6) / 1e3 })
  }
}
