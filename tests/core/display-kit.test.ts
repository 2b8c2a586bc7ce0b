/**
 * The display API kit (src/http/display-api): its error handler answers every kind of failure as
 * `{message, detail, field?}` with the right status (and never a 500 for a malformed body), its
 * route builder documents a route, and its session macros refuse a missing or invalid token with
 * the documented answer. The routes run behind an error hook that answers in another shape, as
 * the service's root does: the kit must answer its failures itself.
 */
import { describe, expect, test } from 'bun:test'
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { parseRequestBody } from '../../src/http/body'
import { SESSION_COOKIE } from '../../src/http/credentials'
import {
  createDisplayKit,
  displayRoute,
  failureDocs,
  invalidRequestDoc,
  invalidSessionDoc,
  jsonBody,
  MOBILE_SESSION_NOTE,
  NOT_ENVELOPE,
  refuse,
  validBody,
  type SessionLookup,
} from '../../src/http/display-api'
import { badRequest, unauthorized, unavailable } from '../../src/http/errors'
import { assignRequestId } from '../../src/http/request-id'
import type { Principal } from '../../src/services/identity'
import { capturingLogger, type LoggedLine } from '../helpers/logger'

const user = { id: 'u1', organizationId: 'o1', email: 'a@example.com', username: 'a', displayName: 'A', avatarUrl: null, role: 'member' as const }
const principal: Principal = { user, key: null, scopes: new Set() }

/** Sessions as auth answers them: 401 with the RFC 6750 challenge for no token or a wrong one, 503 while "the database" is down. */
let databaseDown = false
const sessions: SessionLookup = {
  async authenticate(token, kind) {
    if (databaseDown) throw unavailable()
    if (!token) throw unauthorized('Sign in first.')
    if (token !== `good-${kind}`) throw unauthorized('The session is invalid or has expired; sign in again.', true)
    return principal
  },
}

const Body = Type.Object({ name: Type.String({ minLength: 1, maxLength: 10 }), size: Type.Optional(Type.Integer({ minimum: 0 })) }, { additionalProperties: false })
const lines: LoggedLine[] = []
const { plugin, handle } = createDisplayKit({ sessions, log: capturingLogger(lines), seed: 'test' })

const routes = new Elysia({ name: 'kit-routes' })
  .use(plugin)
  .post('/checked', handle(({ request, body }) => Response.json(validBody(Body, jsonBody(request, body)))), displayRoute({ summary: 'Checked.', body: Body, responses: { 200: invalidRequestDoc() } }))
  .post('/throws/:kind', handle(({ params }) => {
    if (params.kind === 'refusal') refuse(409, 'staleUpdate', 'Too late.')
    if (params.kind === 'refusal-field') refuse(404, 'pageNotFound', 'No such page.', 'pageName')
    if (params.kind === 'bad-request') throw badRequest('The target is refused.', 'subscription.endpoint')
    if (params.kind === 'unavailable') throw unavailable()
    if (params.kind === 'database') throw Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })
    throw new Error('a bug, with internal detail')
  }))
  .get('/mine', handle(({ principal }) => Response.json({ user: principal.user.id })), displayRoute({ session: 'mobile', summary: 'Mine.', responses: {} }))
  .post('/browser', handle(({ principal }) => Response.json({ user: principal.user.id })), { web: true, detail: { hide: true } })

/** What the service's root does around every route: a request id, the body parser, and an error hook answering in the API v1 envelope. */
const app = new Elysia()
  .onRequest(({ request, set }) => void assignRequestId(request, set))
  .onParse(({ request }) => parseRequestBody(request))
  .onError(({ error }) => Response.json({ data: null, errors: [{ code: 'INTERNAL', message: String((error as Error)?.message) }] }, { status: 500 }))
  .use(routes)

async function call(method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}) {
  const response = await app.handle(new Request(`http://localhost${path}`, { method, body: init.body, headers: init.headers }))
  return { status: response.status, headers: response.headers, text: await response.text() }
}
const post = (path: string, body: string, type = 'application/json') => call('POST', path, { body, headers: { 'content-type': type } })

describe('the error handler', () => {
  test('a refusal is its own answer: status, message, detail and field when it names one', async () => {
    expect(await post('/throws/refusal', '{}')).toMatchObject({ status: 409, text: '{"message":"staleUpdate","detail":"Too late."}' })
    const named = await post('/throws/refusal-field', '{}')
    expect(named).toMatchObject({ status: 404, text: '{"message":"pageNotFound","detail":"No such page.","field":"pageName"}' })
    expect(named.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(named.headers.get('cache-control')).toBe('no-store')
    expect(named.headers.get('x-request-id')).toBeTruthy()
  })

  test('other errors: 400 invalidRequest naming the field, 503 serviceUnavailable with Retry-After, 500 internalError without internal detail (logged)', async () => {
    const bad = await post('/throws/bad-request', '{}')
    expect(bad).toMatchObject({ status: 400, text: '{"message":"invalidRequest","detail":"The target is refused.","field":"subscription.endpoint"}' })
    const down = await post('/throws/unavailable', '{}')
    expect(down).toMatchObject({ status: 503, text: '{"message":"serviceUnavailable","detail":"The service is temporarily unavailable; retry shortly."}' })
    expect(down.headers.get('retry-after')).toBe('1')
    expect((await post('/throws/database', '{}')).status).toBe(503)
    lines.length = 0
    const bug = await post('/throws/bug', '{}')
    expect(bug).toMatchObject({ status: 500, text: '{"message":"internalError","detail":"An internal error occurred."}' })
    expect(lines).toEqual([{ level: 'error', message: 'display request failed' }])
  })

  test('a body that passes its schema is the handler’s, typed', async () => {
    expect(await post('/checked', '{"name":"abc","size":2}')).toMatchObject({ status: 200, text: '{"name":"abc","size":2}' })
  })

  test('a refused body is 400 invalidRequest naming the first field and listing every one', async () => {
    const refused = await post('/checked', '{"name":"","size":-1,"extra":true}')
    expect(refused.status).toBe(400)
    const body = JSON.parse(refused.text)
    expect(body).toMatchObject({ message: 'invalidRequest', field: 'extra', detail: 'extra is not a known field.' })
    expect(body.errors.map((error: { field: string }) => error.field).sort()).toEqual(['extra', 'name', 'size'])
  })

  test('a malformed body is never a 500: each is a 400 invalidRequest', async () => {
    const malformed: Array<[string, string?]> = [
      ['{"name":'],
      ['not json'],
      [''],
      ['null'],
      ['[]'],
      ['"text"'],
      ['42'],
      ['{"name":"abc"}', 'text/plain'],
      ['{"name":"abc"}', 'application/x-www-form-urlencoded'],
      ['{"name":"a\\u0000b"}'],
      ['{"name":"\\ud800"}'],
      [`${'['.repeat(300)}${']'.repeat(300)}`],
      [`{"${'k'.repeat(5000)}":1}`],
      [JSON.stringify(Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`f${i}`, i])))],
      ['{"name":{"nested":[1,2,{"deep":null}]}}'],
      ['\u00ff\u00fe'],
    ]
    for (const [body, type] of malformed) {
      const answer = await post('/checked', body, type)
      expect({ body, status: answer.status }).toEqual({ body, status: 400 })
      const parsed = JSON.parse(answer.text)
      expect(parsed.message).toBe('invalidRequest')
      expect(typeof parsed.detail).toBe('string')
      if (parsed.field !== undefined) expect(parsed.field.length).toBeLessThanOrEqual(65)
    }
    const invalidUtf8 = await app.handle(new Request('http://localhost/checked', { method: 'POST', body: new Uint8Array([0x7b, 0xff, 0x7d]), headers: { 'content-type': 'application/json' } }))
    expect(invalidUtf8.status).toBe(400)
  })
})

describe('the session macros', () => {
  test('mobile: no token, or one that is not a live mobile session, is 401 invalidSession with the challenge', async () => {
    const none = await call('GET', '/mine')
    expect(none).toMatchObject({ status: 401, text: '{"message":"invalidSession","detail":"Sign in first."}' })
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="worktrack"')
    for (const authorization of ['Bearer wrong', 'Bearer good-web', 'Basic good-mobile']) {
      const refused = await call('GET', '/mine', { headers: { authorization } })
      expect(refused.status).toBe(401)
      expect(JSON.parse(refused.text).message).toBe('invalidSession')
      expect(refused.headers.get('www-authenticate')).toStartWith('Bearer realm="worktrack"')
      expect(refused.headers.get('cache-control')).toBe('no-store')
    }
    expect(await call('GET', '/mine', { headers: { authorization: 'Bearer good-mobile' } })).toMatchObject({ status: 200, text: '{"user":"u1"}' })
  })

  test('mobile: a session lookup that fails is answered in the same shape (503), not by the root', async () => {
    databaseDown = true
    try {
      expect(await call('GET', '/mine', { headers: { authorization: 'Bearer good-mobile' } })).toMatchObject({
        status: 503,
        text: '{"message":"serviceUnavailable","detail":"The service is temporarily unavailable; retry shortly."}',
      })
    } finally {
      databaseDown = false
    }
  })

  test('web: no session cookie, or a wrong one, is 401 invalidSession without a challenge', async () => {
    const attempts: Record<string, string>[] = [{}, { cookie: `${SESSION_COOKIE}=wrong` }, { cookie: `${SESSION_COOKIE}=good-mobile` }]
    for (const headers of attempts) {
      const refused = await call('POST', '/browser', { headers })
      expect(refused).toMatchObject({ status: 401, text: '{"message":"invalidSession","detail":"Sign in (the account area) first."}' })
      expect(refused.headers.get('www-authenticate')).toBeNull()
    }
    expect(await call('POST', '/browser', { headers: { cookie: `${SESSION_COOKIE}=good-web` } })).toMatchObject({ status: 200, text: '{"user":"u1"}' })
  })
})

describe('the route builder', () => {
  test('a mobile session route: the macro, the tags, the notes, the session token, its 401 and the failure answers', () => {
    const route = displayRoute({ session: 'mobile', summary: 'Yours.', description: 'More.', body: Body, parameters: [{ name: 'token', in: 'path' }], responses: { 204: { description: 'Done.' } } })
    expect(route.mobile).toBe(true)
    expect(route.detail).toEqual({
      tags: ['Display API'],
      summary: 'Yours.',
      description: `${NOT_ENVELOPE} ${MOBILE_SESSION_NOTE} More.`,
      security: [{ sessionToken: [] }],
      requestBody: { required: true, content: { 'application/json': { schema: Body } } },
      parameters: [{ name: 'token', in: 'path' }],
      responses: { 204: { description: 'Done.' }, 401: invalidSessionDoc, ...failureDocs },
    })
  })

  test('a public route: no credential, no 401 added, the note alone as its description', () => {
    const route = displayRoute({ summary: 'Public.', responses: { 200: { description: 'Yes.' } } })
    expect('mobile' in route).toBe(false)
    expect(route.detail).toEqual({ tags: ['Display API'], summary: 'Public.', description: NOT_ENVELOPE, security: [], responses: { 200: { description: 'Yes.' }, ...failureDocs } })
  })

  test('the documented error answers have the convention’s shape', () => {
    const schema = invalidRequestDoc(' Counted.').content['application/json'].schema as any
    expect(invalidRequestDoc(' Counted.').description).toBe('invalidRequest: not JSON, or a missing, unknown or invalid field (`field` names it). Counted.')
    expect(schema.title).toBe('DisplayError')
    expect(schema.required).toEqual(['message', 'detail'])
    expect(Object.keys(schema.properties)).toEqual(['message', 'detail', 'field', 'errors'])
    expect(Object.keys((failureDocs[500].content['application/json'].schema as any).properties)).toEqual(['message', 'detail', 'field'])
  })
})
