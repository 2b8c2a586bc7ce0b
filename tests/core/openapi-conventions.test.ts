/**
 * What the served OpenAPI document promises clients beyond the route schemas: operation ids a
 * generated client can call, integer paging parameters, and the headers on API v1.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { deriveOperationId, returnsList } from '../../plugins/docs/operation-ids'

/** The v1 operations whose body is not JSON: the export's answer streams NDJSON, the import reads NDJSON or CSV. */
const STREAMED = '/api/v1/projects/{projectId}/export'
const UPLOADED = '/api/v1/projects/{projectId}/import'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let document: any
const operations: { method: string; path: string; operation: any }[] = []

beforeAll(async () => {
  api = await startTestService()
  document = (await api.request('GET', '/docs/json')).body
  for (const [path, methods] of Object.entries<any>(document.paths))
    for (const [method, operation] of Object.entries<any>(methods)) operations.push({ method, path, operation })
})
afterAll(() => api.stop())

const v1 = () => operations.filter(({ path }) => path.startsWith('/api/v1/'))
const operationAt = (method: string, path: string) => document.paths[path][method]
const resolveRef = (ref: string) => ref.split('/').slice(1).reduce((node: any, key) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], document)
/** A response as written, or the shared one its `$ref` names (`#/components/responses/NotFound`). */
const resolved = (response: any) => (response?.$ref ? resolveRef(response.$ref) : response)
/** A response's header names (each header a `$ref` to components.headers). */
const headerNames = (response: any) => Object.keys(resolved(response).headers ?? {})

test('every request gets the same document (tidying does not pile up on the generated one)', async () => {
  const again = await api.request('GET', '/docs/json')
  expect(again.body).toEqual(document)
})

describe('operation ids', () => {
  test('name what the operation does', () => {
    const expected = {
      'get /api/v1/projects/{projectId}/work-items': 'listWorkItems',
      'post /api/v1/projects/{projectId}/work-items': 'createWorkItem',
      'get /api/v1/projects/{projectId}/work-items/{workItemId}': 'getWorkItem',
      'patch /api/v1/projects/{projectId}/work-items/{workItemId}': 'updateWorkItem',
      'delete /api/v1/projects/{projectId}/work-items/{workItemId}': 'deleteWorkItem',
      'get /api/v1/teams': 'listTeams',
      'post /api/v1/teams': 'createTeam',
      'get /api/v1/users/me': 'getCurrentUser',
      'get /api/v1/users/{userId}': 'getUser',
      'get /api/v1/teams/{teamId}/members': 'listTeamMembers',
      'post /api/v1/teams/{teamId}/members': 'addTeamMember',
      'get /api/v1/projects/{projectId}/audit-logs': 'listProjectAuditLogs',
      'get /api/v1/work-items/{workItemId}/entries': 'listEntries',
      'get /health': 'getHealth',
      'get /api/pages/{pageName}': 'getDisplayPage',
      // Actions are named by their verb, never as a created sub-resource (`createWebhookTest`).
      'post /api/v1/webhooks/{webhookId}/rotate-secret': 'rotateWebhookSecret',
      'post /api/v1/webhooks/{webhookId}/test': 'testWebhook',
      'post /api/v1/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver': 'redeliverWebhookDelivery',
      'post /api/v1/projects/{projectId}/work-items/bulk': 'bulkCreateWorkItems',
      'patch /api/v1/projects/{projectId}/work-items/bulk': 'bulkUpdateWorkItems',
      'post /api/v1/projects/{projectId}/custom-fields': 'enableProjectCustomField',
      'delete /api/v1/projects/{projectId}/custom-fields/{fieldId}': 'disableProjectCustomField',
    }
    const actual = Object.fromEntries(Object.keys(expected).map((key) => [key, operationAt(key.split(' ')[0]!, key.split(' ')[1]!).operationId]))
    expect(actual).toEqual(expected)
  })

  test('are unique camelCase names, each the derived one (no collision fell back to the generator)', () => {
    const ids = operations.map(({ operation }) => operation.operationId)
    expect(ids.filter((id) => !/^[a-z][A-Za-z0-9]+$/.test(id))).toEqual([])
    expect(ids.filter((id, index) => ids.indexOf(id) !== index)).toEqual([])
    // A POST to a path with no GET (and no DELETE) is an action: named by what it does, not `create…`.
    const actions = operations.filter(({ method, path }) => method === 'post' && !operationAt('get', path) && !operationAt('delete', path))
    expect(actions.filter(({ operation }) => operation.operationId.startsWith('create') && operation.operationId !== 'createSession').map(({ path }) => path)).toEqual([])
    for (const { method, path, operation } of operations) expect(`${method} ${path} ${operation.operationId}`).toBe(`${method} ${path} ${deriveOperationId(method, path, returnsList(operation))}`)
  })
})

test('every string format is one OpenAPI and JSON Schema define (a generator knows `date`, not `calendar-date`)', () => {
  const formats = new Set<string>()
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk)
    if (!node || typeof node !== 'object') return
    const value = node as Record<string, unknown>
    if (typeof value.format === 'string' && value.type === 'string') formats.add(value.format)
    Object.values(value).forEach(walk)
  }
  walk(document)
  const standard = ['date', 'date-time', 'time', 'duration', 'uuid', 'email', 'uri', 'uri-reference', 'hostname', 'ipv4', 'ipv6', 'password', 'binary', 'byte']
  // The service's own, where no standard one says it (a generator treats it as a plain string): a
  // push text that is not blank and at most 4,000 characters.
  const own = ['notification-text']
  expect([...formats].filter((format) => !standard.includes(format) && !own.includes(format))).toEqual([])
  expect(formats.has('date')).toBe(true)
})

describe('query parameters', () => {
  test('page and size are plain integers with their bounds and defaults', () => {
    const parameters = operationAt('get', '/api/v1/teams').parameters
    // page's bound is page × size (below 10,000 rows), which its description states; no maximum of its own.
    expect(parameters.find((parameter: any) => parameter.name === 'page').schema).toEqual({ type: 'integer', minimum: 0, default: 0 })
    expect(parameters.find((parameter: any) => parameter.name === 'page').description).toContain('page × size may not reach 10,000 rows')
    expect(parameters.find((parameter: any) => parameter.name === 'size').schema).toEqual({ type: 'integer', minimum: 1, maximum: 100, default: 20 })
    for (const { operation } of operations)
      for (const parameter of operation.parameters ?? []) expect(JSON.stringify(parameter.schema ?? {})).not.toContain('"format":"integer"')
  })
})

describe('the headers of API v1', () => {
  test('every GET: If-None-Match, ETag on 200, and 304 without a body', () => {
    for (const { method, path, operation } of v1().filter(({ method }) => method === 'get')) {
      const at = `${method} ${path}`
      if (path === STREAMED) {
        // The export streams: nothing to tag before it is sent, so no ETag, If-None-Match or 304.
        expect((operation.parameters ?? []).map((parameter: any) => parameter.$ref ?? parameter.name), at).not.toContain('#/components/parameters/IfNoneMatch')
        expect(headerNames(operation.responses['200']), at).not.toContain('ETag')
        expect(operation.responses['304'], at).toBeUndefined()
        continue
      }
      expect(operation.parameters.map((parameter: any) => parameter.$ref ?? parameter.name), at).toContain('#/components/parameters/IfNoneMatch')
      expect(headerNames(operation.responses['200']), at).toContain('ETag')
      expect(resolved(operation.responses['304']).content, at).toBeUndefined()
      expect(headerNames(operation.responses['304']), at).toContain('ETag')
    }
    expect(resolveRef('#/components/parameters/IfNoneMatch')).toMatchObject({ name: 'If-None-Match', in: 'header', required: false })
  })

  test('every list: Link; every 201: Location; every POST: Idempotency-Key', () => {
    let lists = 0
    for (const { method, path, operation } of v1()) {
      const at = `${method} ${path}`
      if (returnsList(operation)) {
        lists++
        expect(headerNames(operation.responses['200']), at).toContain('Link')
      } else if (operation.responses['200']) expect(headerNames(operation.responses['200']), at).not.toContain('Link')
      if (operation.responses['201']) expect(headerNames(operation.responses['201']), at).toContain('Location')
      // An import reads its body as a stream and answers a retry 409: no Idempotency-Key.
      if (method === 'post' && path === UPLOADED) expect((operation.parameters ?? []).map((parameter: any) => parameter.$ref), at).not.toContain('#/components/parameters/IdempotencyKey')
      else if (method === 'post') expect(operation.parameters.map((parameter: any) => parameter.$ref), at).toContain('#/components/parameters/IdempotencyKey')
    }
    expect(lists).toBeGreaterThan(10)
    expect(operationAt('post', '/api/v1/teams').responses['201'].headers).toHaveProperty('Location')
  })

  test('every answer: X-Request-Id and the X-RateLimit-* headers, written once under components', () => {
    for (const { method, path, operation } of v1())
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        expect(headerNames(response), `${method} ${path} ${status}`).toEqual(expect.arrayContaining(['X-Request-Id', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']))
        for (const header of Object.values<any>(resolved(response).headers)) expect(resolveRef(header.$ref).schema).toBeDefined()
      }
    expect(headerNames(operationAt('get', '/api/v1/teams').responses['429'])).toContain('Retry-After')
  })

  test('a 400 of a request with a body names the JSON-only rule', () => {
    for (const { method, path, operation } of v1().filter(({ operation }) => operation.requestBody))
      if (path === UPLOADED) expect(resolved(operation.responses['400']).description, `${method} ${path}`).not.toContain('Content-Type must be application/json')
      else expect(resolved(operation.responses['400']).description, `${method} ${path}`).toContain('Content-Type must be application/json')
  })
})
