import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let document: any

beforeAll(async () => {
  api = await startTestService()
  document = (await api.request('GET', '/docs/json')).body
})
afterAll(() => api.stop())

describe('OpenAPI document', () => {
  test('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator()
    const result = await validator.validate(structuredClone(document))
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(document.openapi).toBe('3.1.0')
  })

  test('declares the Bearer scheme and every v1 operation uses it, naming known scopes', () => {
    expect(document.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' })
    const operations = Object.entries<any>(document.paths).filter(([path]) => path.startsWith('/api/v1/'))
    expect(operations.length).toBeGreaterThan(0)
    const known = new Set(api.service.core.scopes.map((scope) => scope.name))
    // The routes about the caller themselves also take the app's mobile session: any key (`signedIn`), or a key with scopes (`scopesOrSession`: the inbox).
    const signedIn = new Set(['/api/v1/users/me/notifications'])
    const inbox = (path: string) => path.startsWith('/api/v1/notifications')
    for (const [path, methods] of operations)
      for (const operation of Object.values<any>(methods)) {
        if (signedIn.has(path)) expect(operation.security).toEqual([{ bearerAuth: [] }, { sessionToken: [] }])
        else if (inbox(path)) expect(operation.security).toEqual([{ bearerAuth: [expect.stringMatching(/^notifications:(read|write)$/)] }, { sessionToken: [] }])
        else expect(operation.security).toEqual([{ bearerAuth: expect.any(Array) }])
        // Which scopes, exactly: tests/core/openapi-schemas.test.ts asks each route.
        for (const scope of operation.security[0].bearerAuth) expect(known.has(scope), `${path}: ${scope}`).toBe(true)
      }
  })

  test('describes the envelope and every error response of each v1 operation', () => {
    expect(document.components.schemas.Error.required).toEqual(['data', 'errors', 'meta'])
    // A shared answer is a `$ref` to components.responses (`NotFound`).
    const resolved = (response: any) => (response.$ref ? document.components.responses[response.$ref.split('/').pop()] : response)
    for (const [path, methods] of Object.entries<any>(document.paths)) {
      if (!path.startsWith('/api/v1/')) continue
      for (const operation of Object.values<any>(methods)) {
        for (const status of ['400', '401', '403', '404', '429', '500', '503']) {
          const response = resolved(operation.responses[status])
          expect(response.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' })
          expect(response.description).toBeString()
        }
        const success = operation.responses['200'] ?? operation.responses['201']
        // The one v1 answer that is not an envelope: a project's export streams NDJSON lines.
        if (path === '/api/v1/projects/{projectId}/export') {
          expect(Object.keys(success.content)).toEqual(['application/x-ndjson'])
          continue
        }
        expect(Object.keys(success.content['application/json'].schema.properties)).toEqual(['data', 'errors', 'meta'])
      }
    }
  })

  test('documents the error codes, the check order and pagination in its description', () => {
    for (const phrase of ['INSUFFICIENT_SCOPE', 'IDEMPOTENCY_MISMATCH', 'key, scope, input, visibility', 'zero-based']) expect(document.info.description).toContain(phrase)
  })
})

describe('Swagger UI', () => {
  test('is served at /docs from local assets only', async () => {
    const page = await api.request('GET', '/docs')
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toStartWith('text/html')
    expect(page.text).not.toMatch(/https?:\/\//)
    const assets = [...page.text.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)]
    expect(assets.length).toBeGreaterThanOrEqual(3)
    for (const asset of assets) {
      const response = await api.request('GET', asset[1]!)
      expect(response.status).toBe(200)
      expect(response.text.length).toBeGreaterThan(100)
    }
  })
})
