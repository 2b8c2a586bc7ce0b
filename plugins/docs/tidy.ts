/**
 * Tidies the document @elysiajs/swagger generates: OpenAPI 3.1 (TypeBox emits JSON Schema
 * 2020-12, e.g. `type: "null"`), JSON content only, every response described, the error
 * envelope written once under components (`Error`) and referenced, the answers every API v1 route
 * can give (the v1 kit's checks and Idempotency-Key) and the headers documented on each
 * of them, an `operationId` a generated client can use, request bodies and resources as named
 * schemas (schemas.ts), the answers many operations share as named responses (responses.ts), and
 * what the linters ask of a document (tests/core/openapi-lint.test.ts): a server, and `security`
 * on every operation (API v1's naming the route's scopes, from the v1 kit).
 */
import { ERROR_DESCRIPTIONS, ErrorEnvelope, V1_ERROR_STATUSES, V1_POST_ERROR_STATUSES } from '../../src/http/envelope'
import { documentConventions, HEADERS, PARAMETERS } from './conventions'
import { nameOperations } from './operation-ids'
import { shareResponses } from './responses'
import { nameSchemas, SchemaNames } from './schemas'

const STATUS_TEXT: Record<string, string> = { '200': 'OK', '201': 'Created', '202': 'Accepted', '204': 'No Content', '503': 'Not ready' }
const ERROR_SCHEMA = 'Error'
const ERROR_REF = { $ref: `#/components/schemas/${ERROR_SCHEMA}` }

/** Whether an operation takes If-Match: the header, or (the bulk PATCH) an `ifMatch` on each item of its body. */
const takesIfMatch = (operation: Json) =>
  (operation.parameters ?? []).some((parameter: Json) => parameter.in === 'header' && String(parameter.name).toLowerCase() === 'if-match') ||
  Boolean(operation.requestBody?.content?.['application/json']?.schema?.properties?.items?.items?.properties?.ifMatch)

type Json = Record<string, any>

const isV1 = (operation: Json) => Array.isArray(operation.security) && operation.security.some((requirement: Json) => 'bearerAuth' in requirement)

/**
 * Elysia's `t.Integer`/`t.Numeric` also admit numeric strings (`anyOf: [{type: string, format:
 * integer}, {type: integer}]`), which query parameters need; an answer never carries one, so
 * response schemas keep only the number.
 */
function withoutNumericStrings(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutNumericStrings)
  if (typeof schema !== 'object' || schema === null) return schema
  const result: Json = {}
  for (const [key, value] of Object.entries(schema)) if (key !== 'noValidate') result[key] = withoutNumericStrings(value)
  const branches = result.anyOf
  if (Array.isArray(branches) && branches.length === 2) {
    const text = branches.find((branch: Json) => branch.type === 'string' && (branch.format === 'integer' || branch.format === 'numeric'))
    const number = branches.find((branch: Json) => branch.type === 'integer' || branch.type === 'number')
    if (text && number) {
      const { anyOf: _, ...outer } = result
      return { ...outer, ...number }
    }
  }
  return result
}

/**
 * A query or header parameter's schema as a client should send it: numeric strings are how the
 * query carries a number, not a second type (`page` is an integer with its bounds and default);
 * a union of string constants is an `enum` (a drop-down in Swagger UI); `title` is only the
 * parameter's name, carried for validation messages (src/http/pagination.ts).
 */
function tidyParameter(parameter: Json): Json {
  if (!parameter.schema) return parameter
  const { title, ...schema } = withoutNumericStrings(parameter.schema) as Json
  if (title !== undefined && title !== parameter.name) schema.title = title
  if (schema.description === parameter.description) delete schema.description
  const constants = Array.isArray(schema.anyOf) ? schema.anyOf.map((branch: Json) => branch.const) : []
  if (constants.length > 0 && constants.every((value: unknown) => typeof value === 'string')) {
    delete schema.anyOf
    Object.assign(schema, { type: 'string', enum: constants })
  }
  return { ...parameter, schema }
}

/** How an operation without a description of its own is authenticated. */
const AUTHENTICATION: Readonly<Record<string, string>> = {
  none: 'No authentication.',
  sessionToken: 'Requires a mobile session token (`Authorization: Bearer wts_…`) from POST /account/api/sessions.',
}

const tidied = new WeakMap<object, Json>()

/**
 * The tidy copy of a generated document, made once per document: the generator hands out the
 * same object on every request, so it is copied (as JSON, which it is served as) and left as is.
 */
export function tidyDocument(generated: Json): Json {
  let document = tidied.get(generated)
  if (!document) tidied.set(generated, (document = tidy(JSON.parse(JSON.stringify(generated)))))
  return document
}

function tidy(document: Json): Json {
  const schemas: Json = { ...(document.components?.schemas ?? {}) }
  const paths: Json = document.paths ?? {}
  for (const operations of Object.values<Json>(paths)) {
    for (const [method, operation] of Object.entries<Json>(operations)) {
      const body = operation.requestBody?.content
      if (body?.['application/json']) operation.requestBody.content = { 'application/json': body['application/json'] }
      if (operation.parameters) operation.parameters = operation.parameters.map(tidyParameter)
      // An operation without a requirement inherits none, but linters cannot tell that from an omission.
      operation.security ??= []
      if (!operation.description) {
        const scheme = Object.keys(operation.security[0] ?? {})[0] ?? 'none'
        if (AUTHENTICATION[scheme]) operation.description = AUTHENTICATION[scheme]
      }
      operation.responses ??= {}
      for (const [status, response] of Object.entries<Json>(operation.responses)) {
        delete response.noValidate // the run-time marker of `responses()` (src/http/envelope.ts)
        const json = response.content?.['application/json']
        // The v1 envelope (`data` and `errors`); the display API's `{message, detail, errors?}` is its own.
        if (Number(status) >= 400 && json?.schema?.properties?.errors && json.schema.properties.data) {
          const { description, noValidate: _, ...schema } = json.schema
          schemas[ERROR_SCHEMA] ??= { ...schema, title: ERROR_SCHEMA }
          operation.responses[status] = { description: response.description ?? description ?? 'Error', content: { 'application/json': { schema: ERROR_REF } } }
          continue
        }
        if (json) response.content = { 'application/json': { ...json, schema: withoutNumericStrings(json.schema) } }
        response.description ??= STATUS_TEXT[status] ?? 'Response'
      }
      if (!isV1(operation)) continue
      const statuses = method === 'post' ? [...V1_ERROR_STATUSES, ...V1_POST_ERROR_STATUSES] : V1_ERROR_STATUSES
      for (const status of statuses)
        operation.responses[status] ??= { description: ERROR_DESCRIPTIONS[status], content: { 'application/json': { schema: ERROR_REF } } }
      if (takesIfMatch(operation)) operation.responses['412'] ??= { description: ERROR_DESCRIPTIONS[412], content: { 'application/json': { schema: ERROR_REF } } }
      documentConventions(method, operation)
    }
  }
  nameOperations(paths)
  // The code's own schema when no route declared one (the JSON round trip drops TypeBox's symbols).
  schemas[ERROR_SCHEMA] ??= { ...JSON.parse(JSON.stringify(ErrorEnvelope)), title: ERROR_SCHEMA }
  // Last: what the steps above read (pages, versions, the envelope) is still spelled out for them.
  nameSchemas(paths, new SchemaNames(schemas), ERROR_SCHEMA)
  const responses = shareResponses(paths)
  return {
    ...document,
    openapi: '3.1.0',
    // Relative: the host that served this document, whatever name or proxy a client reached it by.
    servers: [{ url: '/', description: 'This service: the origin that serves this document.' }],
    components: { ...document.components, schemas, responses, headers: HEADERS, parameters: PARAMETERS },
  }
}
