/**
 * the HTTP conventions of API v1, documented on every operation they apply to: the
 * headers are written once under `components` and referenced. The behaviour itself is the v1
 * kit's (src/http/conventions.ts); this file only describes it.
 */

type Json = Record<string, any>

const text = (description: string, extra: Json = {}) => ({ description, schema: { type: 'string', ...extra } })
const integer = (description: string) => ({ description, schema: { type: 'integer', minimum: 0 } })

/** `components.headers`: response headers, by their canonical names. */
export const HEADERS: Readonly<Record<string, Json>> = {
  'X-Request-Id': {
    ...text('The request id, also `meta.requestId`: the incoming X-Request-Id when well formed (8..128 of `A-Z a-z 0-9 . _ : -`), otherwise a new UUID.'),
    required: true, // set on every request before anything else runs (src/app.ts), so the response contract checks it
  },
  // ETag, Link and Location are on every answer they are documented on (the v1 kit writes them,
  // src/http/conventions.ts): required, so the response contract checks each one the suite gets.
  ETag: {
    ...text('Weak validator of this answer (`W/"…"`). Send it back as If-None-Match for a 304 while the answer is unchanged, or as If-Match on an update or delete.'),
    required: true,
  },
  Link: {
    ...text(
      'RFC 8288 links to the `first` and `last` page, and to `prev`/`next` where they exist: relative references that keep the request\'s other query parameters, e.g. `</api/v1/teams?size=20&cursor=…>; rel="next"` (a list with cursors links `next` by cursor from its first page).',
    ),
    required: true,
  },
  Location: { ...text("The created resource's path under `/api/v1`.", { format: 'uri-reference' }), required: true },
  'Idempotent-Replayed': text('`true` when this is the stored answer to an earlier request with the same Idempotency-Key.', { enum: ['true'] }),
  'Retry-After': integer('Seconds to wait before retrying.'),
  'X-RateLimit-Limit': integer('Requests per minute this API key may make on this instance (sent when the per-key rate limit is on).'),
  'X-RateLimit-Remaining': integer("Requests left in the current minute's window, after this one (sent when the per-key rate limit is on)."),
  'X-RateLimit-Reset': integer('Unix time in seconds at which the current window ends (sent when the per-key rate limit is on).'),
}

/** `components.parameters`: request headers of the conventions. */
export const PARAMETERS: Readonly<Record<string, Json>> = {
  IfNoneMatch: {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description: 'ETag(s) of an earlier answer: 304 Not Modified, without a body, while the answer would be the same.',
    schema: { type: 'string' },
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes the POST safe to retry: 1..255 visible ASCII characters, kept 24 hours per API key. A retry gets the first answer (with Idempotent-Replayed: true); the same key with another body is 422.',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
  },
}

const header = (name: string) => ({ [name]: { $ref: `#/components/headers/${name}` } })
const RATE_LIMIT = { ...header('X-RateLimit-Limit'), ...header('X-RateLimit-Remaining'), ...header('X-RateLimit-Reset') }
const parameter = (name: string) => ({ $ref: `#/components/parameters/${name}` })

const NOT_MODIFIED = {
  description: 'Not Modified: the If-None-Match names the current ETag. No body.',
  headers: { ...header('ETag'), ...header('X-Request-Id'), ...RATE_LIMIT },
}

/** The request body of POST/PATCH/PUT must be JSON; said on the route's 400. */
export const NOT_JSON = 'A body whose Content-Type is not `application/json` is 400 "Content-Type must be application/json".'

const dataOf = (response: Json): Json | undefined => response.content?.['application/json']?.schema?.properties?.data
/** Whether a success answer is a page: an array of items with the page meta beside it. */
const isPage = (response: Json) =>
  dataOf(response)?.type === 'array' && Boolean(response.content['application/json'].schema.properties.meta?.properties?.page)
/** A resource with a version (`updatedAt`) carries its ETag on every answer, for a later If-Match. */
const isVersioned = (response: Json) => Boolean(dataOf(response)?.properties?.updatedAt)

/** Documents the conventions on one API v1 operation, in place. */
export function documentConventions(method: string, operation: Json): void {
  // A success streamed as another type (the project export's NDJSON) has no ETag to send back; a
  // body of another type (an import's NDJSON or CSV) is read as a stream, with no Idempotency-Key.
  const streamed = Boolean(operation.responses['200']?.content) && !operation.responses['200'].content['application/json']
  const uploaded = Boolean(operation.requestBody?.content) && !operation.requestBody.content['application/json']
  const parameters: Json[] = (operation.parameters ??= [])
  if (method === 'get' && !streamed) {
    parameters.push(parameter('IfNoneMatch'))
    operation.responses['304'] ??= NOT_MODIFIED
  }
  if (method === 'post' && !uploaded) parameters.push(parameter('IdempotencyKey'))
  if (parameters.length === 0) delete operation.parameters

  for (const [status, response] of Object.entries<Json>(operation.responses)) {
    if (status === '304') continue
    const headers: Json = { ...header('X-Request-Id'), ...RATE_LIMIT }
    if (status.startsWith('2') && !streamed && (method === 'get' || isVersioned(response))) Object.assign(headers, header('ETag'))
    if (status === '200' && isPage(response)) Object.assign(headers, header('Link'))
    if (status === '201') Object.assign(headers, header('Location'))
    if (method === 'post' && !uploaded && Number(status) < 300) Object.assign(headers, header('Idempotent-Replayed'))
    if (status === '429' || status === '503') Object.assign(headers, header('Retry-After'))
    response.headers = { ...headers, ...response.headers }
  }

  const badRequest = operation.responses['400']
  if (operation.requestBody && !uploaded && badRequest && !badRequest.description.includes('Content-Type')) badRequest.description = `${badRequest.description} ${NOT_JSON}`
}
