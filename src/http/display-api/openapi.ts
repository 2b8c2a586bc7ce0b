/**
 * The OpenAPI side of the display API: its answers' descriptions and `displayRoute`, which documents
 * a route in a few lines (tags, the not-an-envelope note, security, body, the session's 401 and the
 * failure answers every route has). Documentation only: nothing here runs per request.
 */
import { Type, type TSchema } from '@sinclair/typebox'

export const DISPLAY_TAGS = ['Display API']
export const NOT_ENVELOPE = 'Display API: answers are not the API v1 envelope; errors are `{"message", "detail", "field"?}`.'
/** What a mobile session route adds to its description. */
export const MOBILE_SESSION_NOTE = 'Signed in with a mobile session token (`Authorization: Bearer`, from POST /account/api/sessions).'
/** OpenAPI content of a TypeBox model (JSON Schema, which OpenAPI 3.1 uses; only the TS types differ). */
export const json = (schema: object) => ({ 'application/json': { schema } })
export const header = (description: string, required: boolean, schema: object = { type: 'integer' }) => ({ description, required, schema })
export type HeaderDoc = ReturnType<typeof header>
/** X-RateLimit-* of an answer to a valid display key (`required` when the key is known to be valid). */
export const usageHeaderDocs = (required: boolean) => ({
  'X-RateLimit-Limit': header("The display account's calls per UTC day.", required),
  'X-RateLimit-Remaining': header('Calls left today, after this one.', required),
  'X-RateLimit-Used': header('Calls used today, this one included.', required),
  'X-RateLimit-Reset': header('Unix seconds of the next UTC midnight, when the count starts again.', required),
})

/** A display API error answer: `{message, detail, field?}` with one of `codes` (429 adds `limitRemaining: 0`). */
export const displayErrorDoc = (description: string, codes: readonly string[], headers: Record<string, HeaderDoc> = {}) => ({
  description,
  headers,
  content: json(
    Type.Object(
      {
        message: Type.Union(codes.map((code) => Type.Literal(code)), { description: 'The error code.' }),
        detail: Type.String({ description: 'What was wrong, for people.' }),
        field: Type.Optional(Type.String({ description: 'The offending body field as a dotted path, e.g. `data.points[3].y`; a name longer than 64 characters is shown as its first 64 and an ellipsis (…).' })),
        ...(codes.includes('limitExceeded') ? { limitRemaining: Type.Literal(0) } : {}),
        ...(codes.includes('invalidRequest')
          ? {
              errors: Type.Optional(
                Type.Array(Type.Object({ message: Type.String(), detail: Type.String(), field: Type.Optional(Type.String()) }, { additionalProperties: false }), {
                  maxItems: 20,
                  description: 'A refused body: every offending field (at most 20), the first one being `message`, `detail` and `field` themselves.',
                }),
              ),
            }
          : {}),
      },
      { title: 'DisplayError', additionalProperties: false },
    ),
  ),
})

/** The 400 of a route checking a JSON body: `more` says what else it refuses, `headers` what it carries. */
export const invalidRequestDoc = (more = '', headers?: Record<string, HeaderDoc>) =>
  displayErrorDoc(`invalidRequest: not JSON, or a missing, unknown or invalid field (\`field\` names it).${more}`, ['invalidRequest'], headers)

/** 401 of a route taking a display key in the body. */
export const invalidApiKeyDoc = displayErrorDoc('invalidApiKey: the apiKey is not a valid display key (not counted).', ['invalidApiKey'])

/** 429 of a route counted on the display key's daily limit. */
export const limitExceededDoc = displayErrorDoc('limitExceeded: the daily limit is used up (not counted); `limitRemaining` is 0.', ['limitExceeded'], {
  ...usageHeaderDocs(true),
  'Retry-After': header('Seconds until the next UTC midnight.', true),
})

/** 401 of a route signed in with a mobile session token. */
export const invalidSessionDoc = displayErrorDoc('invalidSession: no live mobile session token (POST /account/api/sessions).', ['invalidSession'], {
  'WWW-Authenticate': header('Bearer, as RFC 6750.', true, { type: 'string' }),
})

/** Answers of any display API route when the service itself fails. */
export const failureDocs = {
  500: displayErrorDoc('internalError: never with internal detail.', ['internalError']),
  503: displayErrorDoc('serviceUnavailable: the database cannot answer right now; retry.', ['serviceUnavailable']),
}

/** A success answer's document: its description, then its content (`json(schema)` or another type) and headers, when it has them. */
export const answerDoc = (description: string, content?: object, headers?: Record<string, HeaderDoc>) => ({ description, ...(headers ? { headers } : {}), ...(content ? { content } : {}) })

/** How a display API route is described; `displayRoute` adds what every such route has. */
export interface DisplayRouteDoc {
  summary: string
  /** Said after the not-an-envelope note (and, on a mobile session route, the session's). */
  description?: string
  /** `mobile`: the kit's mobile session macro runs, the route is documented with the session token and its 401. Otherwise the route is public (a display key in the body is not an OpenAPI credential). */
  session?: 'mobile'
  /** The JSON request body's schema (required). */
  body?: TSchema | object
  parameters?: object[]
  /** By status; the session's 401 and the 500 and 503 answers are added. */
  responses: Record<number, object>
  tags?: string[]
}

/**
 * The route options of a display API route: the `mobile` macro when it takes a mobile session,
 * and its OpenAPI `detail`. Call it where the route is added, for each app: Elysia takes the
 * options object over (it replaces the macro's key with the hooks of the kit in use), so options
 * kept at module level would carry the first app's session hook into every later one.
 */
export function displayRoute<D extends DisplayRouteDoc>(doc: D): (D['session'] extends 'mobile' ? { mobile: true } : {}) & { detail: Record<string, unknown> } {
  const mobile = doc.session === 'mobile'
  const detail = {
    tags: doc.tags ?? DISPLAY_TAGS,
    summary: doc.summary,
    description: [NOT_ENVELOPE, ...(mobile ? [MOBILE_SESSION_NOTE] : []), ...(doc.description ? [doc.description] : [])].join(' '),
    security: mobile ? [{ sessionToken: [] }] : [],
    ...(doc.body ? { requestBody: { required: true, content: json(doc.body) } } : {}),
    ...(doc.parameters ? { parameters: doc.parameters } : {}),
    responses: { ...doc.responses, ...(mobile ? { 401: invalidSessionDoc } : {}), ...failureDocs },
  }
  return (mobile ? { mobile: true, detail } : { detail }) as never
}
