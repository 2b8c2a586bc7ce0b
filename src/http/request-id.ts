/** The request id: taken from a well-formed incoming X-Request-Id, otherwise generated. */
import { randomUUID } from 'node:crypto'

const ACCEPTABLE = /^[A-Za-z0-9._:-]{8,128}$/
export const REQUEST_ID_HEADER = 'x-request-id'

type Headers = Record<string, unknown>

/** Where a request keeps its id (a symbol property, as the route's in access-log.ts): read back without the answer's Headers. */
const REQUEST_ID = Symbol('requestId')

/** Picks the id for `request` and sets it as the response's X-Request-Id header. */
export function assignRequestId(request: Request, set: { headers: Headers }): string {
  const incoming = request.headers.get(REQUEST_ID_HEADER)
  const id = incoming && ACCEPTABLE.test(incoming) ? incoming : randomUUID()
  set.headers[REQUEST_ID_HEADER] = id
  ;(request as Request & { [REQUEST_ID]?: string })[REQUEST_ID] = id
  return id
}

/** The id `assignRequestId` gave `request`; undefined for one that never reached it. */
export const requestIdOfRequest = (request: Request): string | undefined => (request as Request & { [REQUEST_ID]?: string })[REQUEST_ID]

/** The id assigned to the current request. */
export function requestIdOf(set: { headers: Headers }): string {
  return (set.headers[REQUEST_ID_HEADER] as string | undefined) ?? 'unknown'
}
