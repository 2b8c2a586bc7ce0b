/** The error classes every part of the service throws; one mapper turns them into responses. */

/** An answer names at most this many fields (validation, refused references): the rest would only cost time and bytes. */
export const MAX_ERROR_ITEMS = 20

export type ErrorCode =
  | 'BAD_REQUEST'
  | 'UNAUTHORIZED'
  | 'INSUFFICIENT_SCOPE'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'CONFLICT'
  | 'PRECONDITION_FAILED'
  | 'IDEMPOTENCY_MISMATCH'
  | 'RATE_LIMITED'
  | 'INTERNAL'
  | 'UNAVAILABLE'

export interface ErrorItem {
  code: ErrorCode
  message: string
  field?: string
  /** For a 409 on a duplicate: the id of the resource that already exists. */
  existingId?: string
}

/** An error with an HTTP status, a stable code and a message that is safe to show the caller. */
export class ApiError extends Error {
  readonly headers: Record<string, string>
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly field?: string,
    headers: Record<string, string> = {},
    readonly existingId?: string,
  ) {
    super(message)
    this.headers = headers
  }

  /** The items that go into the envelope's `errors` array. */
  toItems(): ErrorItem[] {
    const item: ErrorItem = { code: this.code, message: this.message }
    if (this.field !== undefined) item.field = this.field
    if (this.existingId !== undefined) item.existingId = this.existingId
    return [item]
  }
}

const REALM = 'realm="worktrack"'

/** 400: invalid JSON, query parameter, size or field; `field` names the JSON path or parameter. */
export const badRequest = (message: string, field?: string) => new ApiError(400, 'BAD_REQUEST', message, field)

/**
 * 400 naming each body field (its JSON path: `labels[1]`, `items[3].id`) whose id is unknown,
 * invisible to the caller, or in another organization or project. A path names what a request
 * acts on, so its miss is 404; a body only refers, so its miss makes the request wrong, and says
 * nothing about what exists elsewhere.
 */
export class UnknownReference extends ApiError {
  constructor(readonly fields: readonly string[], message: string) {
    super(400, 'BAD_REQUEST', message, fields[0])
  }

  override toItems(): ErrorItem[] {
    return this.fields.map((field) => ({ code: 'BAD_REQUEST', message: this.message, field }))
  }
}

/** `found` (what a body's reference at `field` resolved to among those the caller may name), or the 400 naming `field`. */
export function requireReference<T>(found: T | null | undefined, field: string, message: string): T {
  if (found === undefined || found === null) throw new UnknownReference([field], message)
  return found
}

/**
 * Refuses a body's list of ids unless each is among `found`, the ids (lower case) that the
 * statement reading the referenced rows returned; the 400 names each missing one by `path(index)`.
 */
export function requireReferences(ids: readonly string[], found: ReadonlySet<string>, path: (index: number) => string, message: string): void {
  const missing = ids.flatMap((id, index) => (found.has(id.toLowerCase()) ? [] : [path(index)]))
  if (missing.length) throw new UnknownReference(missing.slice(0, MAX_ERROR_ITEMS), message)
}

/**
 * 401 with the RFC 6750 challenge: a request without credentials gets the bare challenge,
 * one with a bad token gets `error="invalid_token"`.
 */
export const unauthorized = (message = 'A valid API key or OAuth access token is required.', tokenPresented = false) =>
  new ApiError(401, 'UNAUTHORIZED', message, undefined, {
    'www-authenticate': tokenPresented ? `Bearer ${REALM}, error="invalid_token"` : `Bearer ${REALM}`,
  })

/** 403 naming the scopes the key lacks, with the RFC 6750 `insufficient_scope` challenge. */
export const insufficientScope = (missing: readonly string[], credential = 'API key') =>
  new ApiError(403, 'INSUFFICIENT_SCOPE', `The ${credential} lacks the scope(s): ${missing.join(', ')}.`, undefined, {
    'www-authenticate': `Bearer ${REALM}, error="insufficient_scope", scope="${missing.join(' ')}"`,
  })

/** 403: the caller can see the resource but may not do this to it. */
export const forbidden = (message: string) => new ApiError(403, 'FORBIDDEN', message)

/** 404: unknown, or invisible to the caller; the two are never told apart. */
export const notFound = (message = 'Not found.') => new ApiError(404, 'NOT_FOUND', message)

/** 405: the path exists, under the methods `Allow` lists. */
export const methodNotAllowed = (method: string, allow: string[]) =>
  new ApiError(405, 'METHOD_NOT_ALLOWED', `${method.slice(0, 16)} is not allowed here; use ${allow.join(', ')}.`, undefined, { allow: allow.join(', ') })

/** 409: a duplicate (naming the existing resource's id) or the last owner (a stale If-Match is 412: preconditionFailed). */
export const conflict = (message: string, existingId?: string, field?: string) =>
  new ApiError(409, 'CONFLICT', message, field, {}, existingId)

/** 412 (RFC 9110): an If-Match (or a bulk item's `ifMatch`) that names none of the resource's current ETags. */
export const preconditionFailed = (message: string, field?: string) => new ApiError(412, 'PRECONDITION_FAILED', message, field)

/** 422: an Idempotency-Key reused with a different request. */
export const idempotencyMismatch = () =>
  new ApiError(422, 'IDEMPOTENCY_MISMATCH', 'This Idempotency-Key was already used with a different request.')

/** 429 with Retry-After in seconds (rounded up, at least 1); the message defaults to the per-key limit's. */
export const rateLimited = (retryAfterSeconds: number, message = 'Too many requests for this API key; retry later.') =>
  new ApiError(429, 'RATE_LIMITED', message, undefined, {
    'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))),
  })

/** 500: the message never carries internal detail. */
export const internal = () => new ApiError(500, 'INTERNAL', 'An internal error occurred.')

/**
 * 503 by design, not by failure: a bounded resource (the password-hashing slots) is busy. The
 * error mapper answers it like any 503 but does not log it: under attack it is the normal answer.
 */
export class BusyError extends ApiError {}

/** 503 with Retry-After for a busy bounded resource (see BusyError). */
export const busy = (message: string, retryAfterSeconds: number) => new BusyError(503, 'UNAVAILABLE', message, undefined, { 'retry-after': String(retryAfterSeconds) })

/** 503: the database is unreachable or too slow right now; safe to retry. */
export const unavailable = () =>
  new ApiError(503, 'UNAVAILABLE', 'The service is temporarily unavailable; retry shortly.', undefined, {
    'retry-after': '1',
  })
