/**
 * The envelope hook of the enveloped route groups and the envelope's schemas (OpenAPI and the
 * `response` maps of routes). What is written, and its validators, come from answer.ts.
 */
import type { TProperties } from '@sinclair/typebox'
import { t, type TSchema } from 'elysia'
import { Answer, answerBody, answerEtag, EncodedResource, envelope, envelopeText, locationOf, noneMatchHits, notModified, Page, pageLinks } from './answer'
import { CachedPage } from './list-cache'
import { requestIdOf } from './request-id'

/**
 * The one after-handle hook of the enveloped route groups (API v1, the account API): a
 * `Response` passes through, anything else is wrapped; `prepare` may first swap the value (v1:
 * an idempotent replay), and `conventions` (v1) adds ETag/304, Link and Location.
 */
export function enveloping(prepare?: (fields: { responseValue: unknown; set: any; idempotency: any }) => unknown, conventions = false) {
  // Destructured: Elysia parses for a route only the context fields its hooks name.
  return async ({ responseValue, set, request, idempotency }: any) => {
    if (responseValue instanceof Response) return responseValue
    if (responseValue instanceof CachedPage)
      return responseValue.response(request.headers.get('if-none-match'), set, conventions ? (meta) => pageLinks(request.url, meta) : undefined)
    let value = prepare ? await prepare({ responseValue, set, idempotency }) : responseValue
    if (value instanceof Answer) {
      set.status = value.status
      const location = locationOf(value, new URL(request.url).pathname)
      if (location) set.headers.location = location
      value = value.value
    }
    return conventions ? conventionalAnswer(request, set, value) : envelope(value, requestIdOf(set))
  }
}

/**
 * The v1 answer of `value`, encoded here once: its ETag (every GET, and any resource with
 * `updatedAt`), 304 for a GET whose If-None-Match names it, `Link` on a page.
 */
function conventionalAnswer(request: Request, set: any, value: unknown): Response | string {
  const requestId = requestIdOf(set)
  const headers = set.headers as Record<string, string>
  if (value instanceof EncodedResource) {
    // Written and tagged before: only the envelope and the request id are new.
    if (request.method === 'GET' && noneMatchHits(request.headers.get('if-none-match'), value.etag)) return notModified(value.etag)
    headers.etag = value.etag
    headers['content-type'] = 'application/json'
    return answerBody(envelopeText(value.data, requestId), set.status)
  }
  const page = value instanceof Page ? value : undefined
  const data = JSON.stringify(page ? page.items : (value ?? null))
  if (page) headers.link = pageLinks(request.url, page.meta)
  const updatedAt = page ? undefined : (value as { updatedAt?: unknown } | null)?.updatedAt
  if (request.method === 'GET' || updatedAt !== undefined) {
    // A list's meta is part of what it shows: the same rows on a page past a new last page differ.
    const etag = answerEtag(page ? data + JSON.stringify(page.meta) : data, updatedAt)
    if (request.method === 'GET' && noneMatchHits(request.headers.get('if-none-match'), etag)) return notModified(etag)
    headers.etag = etag
  }
  // Text with the type in `set`: Elysia answers a string with the set headers as they are, where
  // a Response of ours had them merged into its Headers (3 µs more per answer, measured).
  headers['content-type'] = 'application/json'
  return answerBody(envelopeText(data, requestId, page?.meta), set.status)
}

const RequestMeta = t.Object({ requestId: t.String({ description: 'Also sent as the X-Request-Id header.' }) })

const PageMetaSchema = t.Object({
  requestId: t.String(),
  page: t.Optional(t.Integer({ minimum: 0, description: 'Zero-based page index; absent on a page read by `cursor`.' })),
  size: t.Integer({ minimum: 1, maximum: 100 }),
  totalItems: t.Integer({ minimum: 0, description: 'Exact, with the filters applied.' }),
  totalPages: t.Integer({ minimum: 0 }),
  nextCursor: t.Optional(
    t.Union([t.String(), t.Null()], { description: 'On lists that take `cursor`: the cursor of the next page, null on the last page.' }),
  ),
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
export const PageEnvelope = <T extends TSchema>(item: T, extraMeta: TProperties = {}) =>
  t.Object({
    data: t.Array(item),
    errors: t.Array(ErrorItemSchema, { maxItems: 0 }),
    meta: Object.keys(extraMeta).length ? t.Object({ ...PageMetaSchema.properties, ...extraMeta }) : PageMetaSchema,
  })

/**
 * What each error status means: the one table behind every route's documented error answers
 * (`responses()` here, the v1 answers the docs plugin adds to each route, the account API).
 */
export const ERROR_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: 'BAD_REQUEST: invalid JSON, query parameter, size or field (`field` names it).',
  401: 'UNAUTHORIZED: missing, malformed, unknown, revoked or expired key, or a deactivated owner.',
  403: 'INSUFFICIENT_SCOPE (the key lacks a scope) or FORBIDDEN (access level or role too low).',
  404: 'NOT_FOUND: unknown, or not visible to the key owner.',
  409: 'CONFLICT: a duplicate (names the existing id), last owner, or a request with the same Idempotency-Key still running.',
  412: "PRECONDITION_FAILED: the If-Match (or a bulk item's `ifMatch`) names an older version: the resource changed since it was read.",
  422: 'IDEMPOTENCY_MISMATCH: the Idempotency-Key was used with a different body.',
  429: 'RATE_LIMITED: per-key request rate exceeded; see Retry-After.',
  500: 'INTERNAL: never carries internal detail.',
  503: 'UNAVAILABLE: the database is unreachable; retry.',
}

/** What the v1 kit (src/http/v1.ts) can answer on any route: key, scope, input, visibility, rate, failures. */
export const V1_ERROR_STATUSES = [400, 401, 403, 404, 429, 500, 503] as const
/** And on any POST, through Idempotency-Key. */
export const V1_POST_ERROR_STATUSES = [409, 422] as const

/** The error envelope's schema as a response, described by the table unless `description` says more. */
export const errorResponse = (status: number, description = ERROR_DESCRIPTIONS[status]) => t.Object(ErrorEnvelope.properties, { description })
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
  for (const [status, schema] of Object.entries(map)) map[Number(status)] = unchecked(schema)
  return map as never
}

/**
 * A response schema that documents without being checked at run time (Elysia's `noValidate`):
 * checking every answer against its schema cost each request a walk of every row, and the test
 * suite already checks every answer it gets against the served document (tests/helpers/contract.ts).
 * The docs plugin drops the marker from the document.
 */
const unchecked = (schema: TSchema): TSchema => ({ ...schema, noValidate: true })
