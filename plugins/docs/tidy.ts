/**
 * Tidies the document @elysiajs/swagger generates: OpenAPI 3.1 (TypeBox emits JSON Schema
 * 2020-12, e.g. `type: "null"`), JSON content only, every response described, the error
 * envelope written once under components and referenced, and the answers every API v1 route
 * can give (the v1 kit's checks and Idempotency-Key) documented on each of them.
 */
import { ERROR_DESCRIPTIONS, ErrorEnvelope, V1_ERROR_STATUSES, V1_POST_ERROR_STATUSES } from '../../src/http/envelope'

const STATUS_TEXT: Record<string, string> = { '200': 'OK', '201': 'Created', '202': 'Accepted', '204': 'No Content', '503': 'Not ready' }
const ERROR_SCHEMA = 'ErrorEnvelope'
const ERROR_REF = { $ref: `#/components/schemas/${ERROR_SCHEMA}` }

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

export function tidyDocument(document: Json): Json {
  const schemas: Json = { ...(document.components?.schemas ?? {}) }
  for (const operations of Object.values<Json>(document.paths ?? {})) {
    for (const [method, operation] of Object.entries<Json>(operations)) {
      const body = operation.requestBody?.content
      if (body?.['application/json']) operation.requestBody.content = { 'application/json': body['application/json'] }
      operation.responses ??= {}
      for (const [status, response] of Object.entries<Json>(operation.responses)) {
        delete response.noValidate // the run-time marker of `responses()` (src/http/envelope.ts)
        const json = response.content?.['application/json']
        if (Number(status) >= 400 && json?.schema?.properties?.errors) {
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
    }
  }
  // The code's own schema when no route declared one (the JSON round trip drops TypeBox's symbols).
  schemas[ERROR_SCHEMA] ??= { ...JSON.parse(JSON.stringify(ErrorEnvelope)), title: ERROR_SCHEMA }
  return { ...document, openapi: '3.1.0', components: { ...document.components, schemas } }
}
