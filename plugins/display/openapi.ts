/**
 * OpenAPI descriptions of the display API's answers, shared by every plugin serving a display API
 * route (display, push): documentation only, nothing here runs per request.
 */
import { Type } from '@sinclair/typebox'

export const DISPLAY_TAGS = ['Display API']
export const NOT_ENVELOPE = 'Display API: answers are not the API v1 envelope; errors are `{"message", "detail", "field"?}`.'
/** OpenAPI content of a TypeBox model (JSON Schema, which OpenAPI 3.1 uses; only the TS types differ). */
export const json = (schema: object) => ({ 'application/json': { schema } })
export const header = (description: string, required: boolean, schema: object = { type: 'integer' }) => ({ description, required, schema })
/** X-RateLimit-* of an answer to a valid display key (`required` when the key is known to be valid). */
export const usageHeaderDocs = (required: boolean) => ({
  'X-RateLimit-Limit': header("The display account's calls per UTC day.", required),
  'X-RateLimit-Remaining': header('Calls left today, after this one.', required),
  'X-RateLimit-Used': header('Calls used today, this one included.', required),
  'X-RateLimit-Reset': header('Unix seconds of the next UTC midnight, when the count starts again.', required),
})

/** A display API error answer: `{message, detail, field?}` with one of `codes` (429 adds `limitRemaining: 0`). */
export const displayErrorDoc = (description: string, codes: readonly string[], headers: Record<string, ReturnType<typeof header>> = {}) => ({
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
