/**
 * The request side of API v1's HTTP conventions: a JSON-only request body. The answer
 * side (ETag and 304, Link, Location) is answer.ts, applied once by the envelope hook.
 */
import { badRequest } from './errors'

const JSON_BODY = /^application\/(?:[\w.+-]+\+)?json$/i

/**
 * A v1 request that sends a body must say it is JSON: a form (curl's `-d` default) or text
 * would otherwise reach the route as something else and fail with a misleading field error.
 * A body without any Content-Type is read as JSON, as before.
 */
export function throwIfNotJson(request: Request, body: unknown): void {
  if (body === null || body === undefined) return
  const type = request.headers.get('content-type')
  if (type === null) return
  const media = type.split(';', 1)[0]!.trim()
  if (media !== '' && !JSON_BODY.test(media)) throw badRequest('Content-Type must be application/json')
}
