/**
 * Tidies the document @elysiajs/swagger generates: OpenAPI 3.1 (TypeBox emits JSON Schema
 * 2020-12, e.g. `type: "null"`), JSON content only, every response described, and the error
 * envelope written once under components and referenced.
 */

const STATUS_TEXT: Record<string, string> = { '200': 'OK', '201': 'Created', '202': 'Accepted', '204': 'No Content', '503': 'Not ready' }
const ERROR_SCHEMA = 'ErrorEnvelope'

type Json = Record<string, any>

export function tidyDocument(document: Json): Json {
  const schemas: Json = { ...(document.components?.schemas ?? {}) }
  for (const operations of Object.values<Json>(document.paths ?? {})) {
    for (const operation of Object.values<Json>(operations)) {
      const body = operation.requestBody?.content
      if (body?.['application/json']) operation.requestBody.content = { 'application/json': body['application/json'] }
      for (const [status, response] of Object.entries<Json>(operation.responses ?? {})) {
        const json = response.content?.['application/json']
        if (Number(status) >= 400 && json?.schema?.properties?.errors) {
          const { description, ...schema } = json.schema
          schemas[ERROR_SCHEMA] ??= { ...schema, title: ERROR_SCHEMA }
          operation.responses[status] = {
            description: response.description ?? description ?? 'Error',
            content: { 'application/json': { schema: { $ref: `#/components/schemas/${ERROR_SCHEMA}` } } },
          }
          continue
        }
        if (json) response.content = { 'application/json': json }
        response.description ??= STATUS_TEXT[status] ?? 'Response'
      }
    }
  }
  return { ...document, openapi: '3.1.0', components: { ...document.components, schemas } }
}
