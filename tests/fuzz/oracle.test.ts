/** The fuzz oracle can fail: answers that break the contract are reported, good ones are not. */
import { describe, expect, test } from 'bun:test'
import { errorRecorder, type LoggedError } from './logged'
import { checkAnswer, checkLogged, resolveOperation, type Answer } from './oracle'
import { hiddenOperations, type Operation } from './routes'
import type { Change } from './checksum'

const v1: Operation = {
  method: 'GET',
  template: '/api/v1/teams/{teamId}',
  pathParams: ['teamId'],
  query: [],
  documented: new Set([200, 400, 401, 403, 404, 500, 503]),
  family: 'v1',
  auth: 'key',
  destructive: false,
}
const ops = [v1, ...hiddenOperations()]

function answer(status: number, body: unknown, headers: Record<string, string> = {}): Answer {
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  return { status, headers: new Headers({ 'content-type': 'application/json', 'x-request-id': 'abcdefgh-1', ...headers }), text, json: typeof body === 'string' ? undefined : body, isJson: typeof body !== 'string' }
}
const error = (code: string, message = 'm') => ({ data: null, errors: [{ code, message }], meta: { requestId: 'abcdefgh-1' } })
const problems = (op: Operation | null, reply: Answer, method = 'GET', pathname = '/api/v1/teams/x') => checkAnswer({ op, method, pathname }, reply, undefined)

describe('the fuzz oracle', () => {
  test('a documented error in the envelope passes', () => {
    expect(problems(v1, answer(404, error('NOT_FOUND')))).toEqual([])
    expect(problems(v1, answer(401, error('UNAUTHORIZED'), { 'www-authenticate': 'Bearer error="invalid_token"' }))).toEqual([])
  })

  test('a 5xx, a code that does not fit, an undocumented status and a database fallback are each reported', () => {
    expect(problems(v1, answer(500, error('INTERNAL')))).toContain('server error 500')
    expect(problems(v1, answer(404, error('BAD_REQUEST')))).toContain('code "BAD_REQUEST" does not fit status 404')
    expect(problems(v1, answer(409, error('CONFLICT'))).join()).toContain('status 409 is not documented')
    expect(problems(v1, answer(400, error('BAD_REQUEST', 'A value has an invalid format.'))).join()).toContain("mapper's fallback")
    expect(problems(v1, answer(401, error('UNAUTHORIZED')))).toContain('401 without WWW-Authenticate: Bearer')
  })

  test('the envelope shape and the request id are checked', () => {
    const bare = problems(v1, answer(400, { errors: [], meta: { requestId: 'abcdefgh-1' } }))
    expect(bare.length).toBeGreaterThan(0)
    expect(bare).toContain('an error without error items')
    expect(bare).toContain('an error has data other than null')
    expect(problems(v1, answer(404, error('NOT_FOUND'), { 'x-request-id': 'other-id-1' }))).toContain('meta.requestId differs from the X-Request-Id header')
    expect(problems(v1, answer(404, 'not json'))).toContain('expected the JSON envelope, got application/json')
  })

  test('display errors need their own shape, and pages must not echo markup', () => {
    const component = resolveOperation(ops, 'POST', '/api/component')!
    expect(problems(component, answer(400, { message: 'invalidRequest', detail: 'd', field: 'x' }), 'POST', '/api/component')).toEqual([])
    const enveloped = problems(component, answer(400, error('BAD_REQUEST')), 'POST', '/api/component')
    expect(enveloped.length).toBeGreaterThan(0)
    expect(enveloped).toContain('display error has unexpected keys data, errors, meta')
    expect(enveloped).toContain('display error without detail')
    const page = resolveOperation(ops, 'GET', '/account')!
    const echoed = { ...answer(200, 'x'), headers: new Headers({ 'content-type': 'text/html', 'x-request-id': 'abcdefgh-1', 'content-security-policy': "default-src 'self'" }), text: '<p><script>alert(1)</script></p>' }
    expect(problems(page, echoed, 'GET', '/account')).toContain('the page echoes <script>alert(1)</script> unescaped')
  })

  test('a redirect that leaves the site and an oversized error are reported', () => {
    const signIn = resolveOperation(ops, 'GET', '/account/sign-in')!
    const redirect = (location: string) => ({ ...answer(303, ''), headers: new Headers({ location, 'x-request-id': 'abcdefgh-1' }) })
    for (const location of ['//evil.example/phish', '/\\evil.example', 'https://evil.example/', '/\t/evil.example'])
      expect(problems(signIn, redirect(location), 'GET', '/account/sign-in').join()).toContain('a redirect leaves the site')
    for (const location of ['/account/keys', '/pages/ops?kiosk=1', '/%2f%2fevil.example', '/pages/ops?back=//evil.example'])
      expect(problems(signIn, redirect(location), 'GET', '/account/sign-in')).toEqual([])
    const large = error('BAD_REQUEST', `Unknown field "${'a'.repeat(70_000)}".`)
    expect(problems(v1, answer(400, large)).join()).toContain('an error answer of')
  })

  test('a webhook answer carrying a non-public target is reported; a public one is not', () => {
    const patch: Operation = { ...v1, method: 'PATCH', template: '/api/v1/webhooks/{webhookId}', pathParams: ['webhookId'], documented: new Set([200, 400]) }
    const saved = (url: string) => answer(200, { data: { id: 'w', url }, errors: [], meta: { requestId: 'abcdefgh-1' } })
    for (const url of ['http://[::ffff:0:a9fe:a9fe]/', 'http://[2002:a9fe:a9fe::1]/', 'http://127.0.0.1/'])
      expect(problems(patch, saved(url), 'PATCH', '/api/v1/webhooks/w').join()).toContain('a webhook accepted the non-public target')
    expect(problems(patch, saved('http://8.8.8.8/fuzz'), 'PATCH', '/api/v1/webhooks/w')).toEqual([])
  })

  test('an error logged while a request ran is reported, with its SQL cut short; nothing logged, nothing reported', () => {
    const lines: LoggedError[] = []
    const log = errorRecorder(lines)
    log.info('request', { status: 400 })
    log.warn('slow')
    expect(checkLogged(lines)).toEqual([])
    log.child({ plugin: 'x' }).error('request failed', { route: 'GET /api/v1/teams', status: 400, error: 'database error', code: '22003', sql: `select ${'x'.repeat(1000)}` })
    const [problem, ...rest] = checkLogged(lines)
    expect(rest).toEqual([])
    expect(problem).toStartWith('an unexpected error was logged: request failed {"plugin":"x","route":"GET /api/v1/teams","status":400,"error":"database error","code":"22003","sql":"select xxx')
    expect(problem!.length).toBeLessThan(500)
  })

  test('routes resolve by whole segments, literal templates first', () => {
    expect(resolveOperation(ops, 'GET', '/pages/assets/live.css')!.template).toBe('/pages/assets/live.css')
    expect(resolveOperation(ops, 'GET', '/pages/dash')!.template).toBe('/pages/{pageName}')
    expect(resolveOperation(ops, 'GET', '/api/v1/teams/x/')!.template).toBe('/api/v1/teams/{teamId}')
    expect(resolveOperation(ops, 'PUT', '/api/v1/teams/x')).toBeNull()
  })
})

describe('the change log', () => {
  test('reports each change once, also when its sequence crosses into more digits (99 → 100)', async () => {
    const { createTestDatabase } = await import('../helpers/database')
    const { installChangeLog } = await import('./checksum')
    const { queryText } = await import('../../src/db')
    const { migrate } = await import('../../src/migrate')
    const database = await createTestDatabase()
    try {
      await migrate(database.db)
      const log = await installChangeLog(database)
      try {
        const seen: string[] = []
        // One row, then three per read, so one read spans 98..100 (each node's log starts at 1;
        // sign_in_throttle is the coordinator's own table on Citus, so one log holds them all).
        await queryText(database.db, `insert into sign_in_throttle (key, failures) values ('first', 1)`, [])
        expect(await log.since([], 0)).toHaveLength(1)
        for (let i = 0; i < 45; i++) {
          await queryText(database.db, `insert into sign_in_throttle (key, failures) select 'change-' || n, 1 from generate_series($1::int, $1::int + 2) n`, [i * 3])
          const changes = await log.since([], 0)
          expect(changes).toHaveLength(3)
          seen.push(...changes.map((change) => `${change.node}:${change.seq}`))
        }
        expect(new Set(seen).size).toBe(135)
        expect(seen).toContain('0:100')

        // On Citus every node holds a copy of a reference table's row, and each copy fires; a
        // distributed table's row is logged on the worker that holds it.
        const organization = crypto.randomUUID()
        const names = (changes: Change[]) => changes.map((change) => `${change.op} ${change.table}`)
        await queryText(database.db, `insert into organizations (id, name) values ($1, 'logged once')`, [organization])
        expect(names(await log.since([], 0))).toEqual(['INSERT organizations'])
        await queryText(
          database.db,
          `insert into users (id, organization_id, email, username, display_name, password_hash) values ($1, $2, 'once@example.com', 'once', 'Once', 'x')`,
          [crypto.randomUUID(), organization],
        )
        expect(names(await log.since([], 0))).toEqual(['INSERT users'])
      } finally {
        await log.close()
      }
    } finally {
      await database.close()
    }
  })
})
