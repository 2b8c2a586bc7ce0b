import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { registry } from '../../plugins'
import { PROBE_ITEMS, probePlugin } from '../helpers/probe-plugin'
import { startTestService, type TestResponse, type TestService } from '../helpers/service'

let api: TestService
let key: string
let readOnlyKey: string

beforeAll(async () => {
  api = await startTestService({ registry: [...registry, probePlugin] })
  const organization = await api.createOrganization()
  const user = await api.createUser(organization)
  key = (await api.createKey(user.id, ['probe:read', 'probe:write'])).secret
  readOnlyKey = (await api.createKey(user.id, ['probe:read'])).secret
})
afterAll(() => api.stop())

/** Asserts the error envelope and returns its first error. */
function expectError(response: TestResponse, status: number, code: string) {
  expect(response.status).toBe(status)
  expect(response.body.data).toBeNull()
  expect(response.body.errors[0].code).toBe(code)
  expect(response.body.meta.requestId).toBe(response.headers.get('x-request-id')!)
  expect(response.headers.get('content-type')).toStartWith('application/json')
  return response.body.errors[0] as { code: string; message: string; field?: string }
}

describe('the envelope', () => {
  test('a success carries data, empty errors and the request id (also as a header)', async () => {
    const response = await api.request('POST', '/api/v1/probe/items', { key, body: { name: 'a' } })
    expect(response.status).toBe(201)
    expect(response.body).toEqual({ data: { name: 'a' }, errors: [], meta: { requestId: response.headers.get('x-request-id')! } })
  })

  test('a well-formed incoming X-Request-Id is kept; a malformed one is replaced', async () => {
    const kept = await api.request('GET', '/api/v1/probe/items', { key, headers: { 'x-request-id': 'trace-12345678' } })
    expect(kept.body.meta.requestId).toBe('trace-12345678')
    const replaced = await api.request('GET', '/api/v1/probe/items', { key, headers: { 'x-request-id': 'bad id <script>' } })
    expect(replaced.body.meta.requestId).not.toBe('bad id <script>')
    expect(replaced.body.meta.requestId).toMatch(/^[0-9a-f-]{36}$/)
  })

  test('an unknown route is 404 NOT_FOUND, with or without a key; a known path under another method is 405 with Allow', async () => {
    expectError(await api.request('GET', '/api/v1/nothing-here'), 404, 'NOT_FOUND')
    expectError(await api.request('GET', '/api/v1/nothing-here', { key }), 404, 'NOT_FOUND')
    const wrongMethod = await api.request('DELETE', '/api/v1/probe/items', { key })
    expectError(wrongMethod, 405, 'METHOD_NOT_ALLOWED')
    expect(wrongMethod.headers.get('allow')).toBe('GET, HEAD, POST')
  })
})

describe('the error table', () => {
  test('invalid JSON is 400 BAD_REQUEST', async () => {
    const error = expectError(await api.request('POST', '/api/v1/probe/items', { key, rawBody: '{"name": ', headers: { 'content-type': 'application/json' } }), 400, 'BAD_REQUEST')
    expect(error.message).toBe('The request body is not valid JSON.')
  })

  test('a body over 1 MiB is 400 BAD_REQUEST, with or without Content-Length', async () => {
    const big = JSON.stringify({ name: 'a', padding: 'x'.repeat(1024 * 1024) })
    // Bun's Request sets no Content-Length for a string body: declared here, so the declared-length check runs.
    const error = expectError(
      await api.request('POST', '/api/v1/probe/items', { key, rawBody: big, headers: { 'content-type': 'application/json', 'content-length': String(big.length) } }),
      400,
      'BAD_REQUEST',
    )
    expect(error.message).toContain('1 MiB')
    // Without Content-Length: the same string, then a stream, both read until they pass the limit.
    const undeclared = expectError(await api.request('POST', '/api/v1/probe/items', { key, rawBody: big, headers: { 'content-type': 'application/json' } }), 400, 'BAD_REQUEST')
    expect(undeclared.message).toContain('1 MiB')
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 20; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(100_000)))
        controller.close()
      },
    })
    const response = await api.service.fetch(
      new Request('http://localhost/api/v1/probe/items', {
        method: 'POST',
        body: stream,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        // @ts-expect-error: required by fetch for streamed bodies
        duplex: 'half',
      }),
    )
    expect(response.status).toBe(400)
    expect((await response.json()).errors[0].message).toContain('1 MiB')
  })

  test('a body that is not UTF-8, or of another media type, is 400', async () => {
    expectError(await api.request('POST', '/api/v1/probe/items', { key, rawBody: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), headers: { 'content-type': 'application/json' } }), 400, 'BAD_REQUEST')
    expectError(await api.request('POST', '/api/v1/probe/items', { key, rawBody: 'name=a', headers: { 'content-type': 'text/csv' } }), 400, 'BAD_REQUEST')
  })

  // Found by the fuzz suite: each reached PostgreSQL (or a recursive walk) and answered 500, or 400 through the mapper's fallback.
  test('text PostgreSQL cannot store, and JSON nested past 256 levels, are 400 naming the problem, before any SQL', async () => {
    const cases: Array<[string, string]> = [
      ['{"name":"a\\u0000b"}', 'U+0000'],
      ['{"name":"\\ud800"}', 'surrogate'],
      ['{"name":"x\\uDFFFy"}', 'surrogate'],
      ['{"name":"a", "points": [{"\\ud800": 1}]}', 'surrogate'],
      [`{"name":${'['.repeat(300)}${']'.repeat(300)}}`, '256 levels'],
    ]
    for (const [rawBody, mention] of cases) {
      const error = expectError(await api.request('POST', '/api/v1/probe/items', { key, rawBody, headers: { 'content-type': 'application/json' } }), 400, 'BAD_REQUEST')
      expect(error.message).toContain(mention)
    }
    // An escaped backslash before `u0000`, and a well-formed pair, are ordinary text.
    expect((await api.request('POST', '/api/v1/probe/items', { key, rawBody: '{"name":"\\\\u0000"}', headers: { 'content-type': 'application/json' } })).status).toBe(201)
    const pair = await api.request('POST', '/api/v1/probe/items', { key, rawBody: '{"name":"\\ud83d\\ude00"}', headers: { 'content-type': 'application/json' } })
    expect(pair.status).toBe(201)
    expect(pair.body.data.name).toBe('😀')
  })

  test('a validation failure names the field by its dotted JSON path', async () => {
    const tooLong = expectError(await api.request('POST', '/api/v1/probe/items', { key, body: { name: 'x'.repeat(11) } }), 400, 'BAD_REQUEST')
    expect(tooLong.field).toBe('name')
    const nested = expectError(await api.request('POST', '/api/v1/probe/items', { key, body: { name: 'a', points: [{ x: '1', y: 1 }, { x: '2', y: 'high' }] } }), 400, 'BAD_REQUEST')
    expect(nested.field).toBe('points[1].y')
    const unknown = expectError(await api.request('POST', '/api/v1/probe/items', { key, body: { name: 'a', extra: true } }), 400, 'BAD_REQUEST')
    expect(unknown.field).toBe('extra')
    const missing = expectError(await api.request('POST', '/api/v1/probe/items', { key, body: {} }), 400, 'BAD_REQUEST')
    expect(missing.field).toBe('name')
    const notObject = expectError(await api.request('POST', '/api/v1/probe/items', { key, body: [1, 2] }), 400, 'BAD_REQUEST')
    expect(notObject.field).toBeUndefined()
  })

  test.each([
    ['size=101', 'size'],
    ['size=0', 'size'],
    ['page=-1', 'page'],
    ['page=abc', 'page'],
    ['page=1.5', 'page'],
    ['size=', 'size'],
  ])('%s is 400 naming the parameter', async (query, field) => {
    const error = expectError(await api.request('GET', `/api/v1/probe/items?${query}`, { key }), 400, 'BAD_REQUEST')
    expect(error.field).toBe(field)
  })

  test('checks run in order: key, then scope, then input', async () => {
    const badJson = { rawBody: '{nope', headers: { 'content-type': 'application/json' } }
    expectError(await api.request('POST', '/api/v1/probe/items', badJson), 401, 'UNAUTHORIZED')
    expectError(await api.request('POST', '/api/v1/probe/items', { key: readOnlyKey, ...badJson }), 403, 'INSUFFICIENT_SCOPE')
    expectError(await api.request('POST', '/api/v1/probe/items', { key, ...badJson }), 400, 'BAD_REQUEST')
    expectError(await api.request('GET', '/api/v1/probe/items?size=101'), 401, 'UNAUTHORIZED')
  })

  test('a thrown error is 500 INTERNAL with no internal detail', async () => {
    for (const path of ['/api/v1/probe/boom', '/api/v1/probe/db-boom']) {
      const response = await api.request('GET', path, { key })
      const error = expectError(response, 500, 'INTERNAL')
      expect(error.message).toBe('An internal error occurred.')
      expect(response.text).not.toMatch(/hunter2|no_such_table|srv|stack|unexpected/)
    }
  })

  test('answers are not checked against their schema at run time: the suite checks each against the document', async () => {
    // Checking cost every request a walk of its rows; every answer any test gets goes through
    // the contract check (tests/helpers/contract.ts), which refuses this one.
    const unchecked = await api.request('GET', '/api/v1/probe/bad-response', { key, unchecked: true })
    expect(unchecked.status).toBe(200)
    await expect(api.request('GET', '/api/v1/probe/bad-response', { key })).rejects.toThrow(/does not match .* body\/data must have required property 'n'/)
  })
})

describe('pagination', () => {
  test('defaults to page 0 of size 20 with the meta', async () => {
    const response = await api.request('GET', '/api/v1/probe/items', { key })
    expect(response.body.data).toEqual(PROBE_ITEMS.slice(0, 20))
    expect(response.body.meta).toMatchObject({ page: 0, size: 20, totalItems: 45, totalPages: 3 })
  })

  test('the last partial page and a page past the end', async () => {
    const last = await api.request('GET', '/api/v1/probe/items?page=2&size=20', { key })
    expect(last.body.data).toEqual(PROBE_ITEMS.slice(40))
    const past = await api.request('GET', '/api/v1/probe/items?page=9&size=20', { key })
    expect(past.status).toBe(200)
    expect(past.body.data).toEqual([])
    expect(past.body.meta).toMatchObject({ page: 9, size: 20, totalItems: 45, totalPages: 3 })
  })

  test('size 100 is allowed', async () => {
    const response = await api.request('GET', '/api/v1/probe/items?size=100', { key })
    expect(response.body.data).toHaveLength(45)
    expect(response.body.meta).toMatchObject({ page: 0, size: 100, totalPages: 1 })
  })
})
