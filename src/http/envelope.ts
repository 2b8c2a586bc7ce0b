/** The one JSON envelope of API v1: `{data, errors, meta}`, for successes, pages and errors. */
import { t, type TSchema } from 'elysia'
import type { ErrorItem } from './errors'

export interface PageMeta {
  page: number
  size: number
  totalItems: number
  totalPages: number
}

/** A handler returns a Page for a paginated list; the envelope puts its meta beside the data. */
export class Page<T> {
  constructor(
    readonly items: T[],
    readonly meta: PageMeta,
  ) {}
}

/** Wraps a handler's return value into the envelope. */
export function envelope(value: unknown, requestId: string) {
  if (value instanceof Page) return { data: value.items, errors: [], meta: { requestId, ...value.meta } }
  return { data: value ?? null, errors: [], meta: { requestId } }
}

/** The error envelope. */
export function errorEnvelope(errors: ErrorItem[], requestId: string) {
  return { data: null, errors, meta: { requestId } }
}

const RequestMeta = t.Object({ requestId: t.String({ description: 'Also sent as the X-Request-Id header.' }) })

const PageMetaSchema = t.Object({
  requestId: t.String(),
  page: t.Integer({ minimum: 0, description: 'Zero-based page index.' }),
  size: t.Integer({ minimum: 1, maximum: 100 }),
  totalItems: t.Integer({ minimum: 0 }),
  totalPages: t.Integer({ minimum: 0 }),
})

const ErrorItemSchema = t.Object({
  code: t.String({ description: 'Stable error code, e.g. BAD_REQUEST, NOT_FOUND.' }),
  message: t.String(),
  field: t.Optional(t.String({ description: 'Dotted JSON path of the offending body field, or the query parameter.' })),
  existingId: t.Optional(t.String({ description: 'On a duplicate (409): the id of the existing resource.' })),
})

/** OpenAPI/response schema of an error response. */
export const ErrorEnvelope = t.Object(
  { data: t.Null(), errors: t.Array(ErrorItemSchema, { minItems: 1 }), meta: RequestMeta },
  { title: 'ErrorEnvelope' },
)

/** Response schema of a single resource: `{data: T, errors: [], meta: {requestId}}`. */
export const Envelope = <T extends TSchema>(data: T) =>
  t.Object({ data, errors: t.Array(ErrorItemSchema, { maxItems: 0 }), meta: RequestMeta })

/** Response schema of a paginated list. */
export const PageEnvelope = <T extends TSchema>(item: T) =>
  t.Object({ data: t.Array(item), errors: t.Array(ErrorItemSchema, { maxItems: 0 }), meta: PageMetaSchema })

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'BAD_REQUEST: invalid JSON, query parameter, size or field (`field` names it).',
  401: 'UNAUTHORIZED: missing, malformed, unknown, revoked or expired key, or a deactivated owner.',
  403: 'INSUFFICIENT_SCOPE (the key lacks a scope) or FORBIDDEN (access level or role too low).',
  404: 'NOT_FOUND: unknown, or not visible to the key owner.',
  409: 'CONFLICT: duplicate (names the existing id), last owner, or stale precondition.',
  422: 'IDEMPOTENCY_MISMATCH: the Idempotency-Key was used with a different body.',
  429: 'RATE_LIMITED: per-key request rate exceeded; see Retry-After.',
  500: 'INTERNAL: never carries internal detail.',
  503: 'UNAVAILABLE: the database is unreachable; retry.',
}

const errorResponse = (status: number) => t.Object(ErrorEnvelope.properties, { description: ERROR_DESCRIPTIONS[status] })
type ErrorResponse = ReturnType<typeof errorResponse>

/** The documented error responses of every authenticated v1 route. */
const COMMON_ERRORS = {
  400: errorResponse(400),
  401: errorResponse(401),
  403: errorResponse(403),
  404: errorResponse(404),
  429: errorResponse(429),
  500: errorResponse(500),
  503: errorResponse(503),
}

/**
 * The `response` map of a v1 route: its success schema under `status` (default 200) plus the
 * documented error envelopes; `extra` adds statuses beyond the common ones (409, 422).
 */
export function responses<S extends TSchema, const C extends number = 200>(
  success: S,
  options: { status?: C; extra?: readonly (409 | 422)[] } = {},
): { [K in C]: S } & typeof COMMON_ERRORS & { 409: ErrorResponse; 422: ErrorResponse } {
  const map: Record<number, TSchema> = { ...COMMON_ERRORS }
  for (const status of options.extra ?? []) map[status] = errorResponse(status)
  map[options.status ?? 200] = success
  return map as never
}
