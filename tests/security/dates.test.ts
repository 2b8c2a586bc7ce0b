/**
 * Dates from input are real RFC 3339 date-times that both JavaScript's Date and PostgreSQL's
 * timestamptz hold: an extended year (`+275760-…`), a day the month does not have, hour 24 or a
 * missing offset is 400 naming the field on every door (REST body and query, the account API and
 * form, MCP, the CLI), never 500; real dates still work.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import authPlugin from '../../plugins/auth'
import { ApiError } from '../../src/http/errors'
import { createDisplayFixture, type DisplayFixture } from '../helpers/display-fixture'
import { createProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { signIn, signInForm } from '../helpers/sessions'

let api: TestService
let display: DisplayFixture
let admin: TestUser
let adminKey: string
let sessionToken: string

beforeAll(async () => {
  api = await startTestService({ config: { display: { maxShareLinksPerPage: 100 }, auth: { maxKeysPerUser: 1000 } } })
  display = await createDisplayFixture(api)
  admin = await api.createUser(display.creator.organizationId, 'administrator', { password: 'admin password 1' })
  adminKey = (await api.createKey(admin.id, ['audit_logs:read'])).secret
  sessionToken = await signIn(api, admin)
})
afterAll(() => api.stop())

/** Date-times no door may accept: outside what Date or timestamptz hold, or not real calendar moments. */
const HOSTILE_VALUES = [
  '+010000-01-01T00:00:00Z',
  '+275760-09-13T00:00:00.000Z',
  '+275760-09-13T00:00:00.001Z',
  '-271821-04-20T00:00:00Z',
  '-000001-01-01T00:00:00Z',
  '10000-01-01T00:00:00Z',
  '9999-12-31T23:59:59-05:00',
  '0000-01-01T00:00:00Z',
  '2030-02-30T00:00:00Z',
  '2031-02-29T00:00:00Z',
  '2100-02-29T00:00:00Z',
  '2030-04-31T00:00:00Z',
  '2030-13-01T00:00:00Z',
  '2030-00-10T00:00:00Z',
  '2030-01-01T24:00:00Z',
  '2030-01-01T23:60:00Z',
  '2030-01-01T23:59:60Z',
  '2030-01-01T00:00:00+24:00',
  '2030-01-01T00:00:00',
  '2030-01-01',
  '2030-1-01T00:00:00Z',
  'x2030-01-01T00:00:00Z',
  '2030-01-01T00:00:00Zjunk',
  'Tue Jan 01 2030 00:00:00 GMT+0000 (UTC)',
  '01/01/2030',
  '2030-01-01T00:00:00.Z',
  `2030-01-01T00:00:00.${'1'.repeat(5000)}Z`,
]
/** [a printable label, the value] for test names. */
const HOSTILE_DATE_TIMES = HOSTILE_VALUES.map((value) => [value.length > 40 ? `${value.slice(0, 40)}… (${value.length} characters)` : value, value] as const)

/** Real future moments, in several RFC 3339 spellings. */
const VALID_FUTURE = ['2032-02-29T12:00:00Z', '2030-06-01T12:30:45.123+02:00', '2030-06-01t12:30:45.123456z', '9999-12-31T23:59:59Z', '2030-01-01T00:00:00-00:00']

/** The envelope of a 400 naming `field`. */
function expectRefusal(response: { status: number; body: any; text: string }, field: string, value: string) {
  if (response.status !== 400) throw new Error(`${value}: expected 400, got ${response.status} ${response.text.slice(0, 300)}`)
  expect(response.body).toMatchObject({ data: null, errors: [{ code: 'BAD_REQUEST', field }], meta: { requestId: expect.any(String) } })
}

describe('share links: POST /api/v1/pages/{id}/share-links expiresAt', () => {
  test.each(HOSTILE_DATE_TIMES)('%s is 400 naming expiresAt', async (_label, value) => {
    const response = await api.request('POST', `/api/v1/pages/${display.pageId}/share-links`, { key: display.creatorKey, body: { expiresAt: value } })
    expectRefusal(response, 'expiresAt', value)
  })

  test('real future dates are accepted and kept to the millisecond', async () => {
    for (const value of VALID_FUTURE) {
      const response = await api.request('POST', `/api/v1/pages/${display.pageId}/share-links`, { key: display.creatorKey, body: { expiresAt: value } })
      expect(response.status).toBe(201)
      expect(Date.parse(response.body.data.expiresAt)).toBe(Date.parse(value))
    }
  })
})

describe('account API keys: POST /account/api/keys expiresAt', () => {
  const create = (expiresAt: string) =>
    api.request('POST', '/account/api/keys', { headers: { authorization: `Bearer ${sessionToken}` }, body: { name: 'dated', scopes: [], expiresAt } })

  test.each(HOSTILE_DATE_TIMES)('%s is 400 naming expiresAt', async (_label, value) => {
    expectRefusal(await create(value), 'expiresAt', value)
  })

  test('real future dates are accepted', async () => {
    for (const value of VALID_FUTURE) {
      const response = await create(value)
      expect(response.status).toBe(201)
      expect(Date.parse(response.body.data.key.expiresAt)).toBe(Date.parse(value))
    }
  })
})

describe('audit logs: GET /api/v1/audit-logs?since=&until=', () => {
  test.each(HOSTILE_DATE_TIMES)('%s is 400 naming the parameter', async (_label, value) => {
    for (const name of ['since', 'until']) {
      const response = await api.request('GET', `/api/v1/audit-logs?${name}=${encodeURIComponent(value)}`, { key: adminKey })
      expectRefusal(response, name, value)
    }
  })

  test('the first and last representable moments are accepted', async () => {
    const response = await api.request('GET', `/api/v1/audit-logs?since=${encodeURIComponent('0001-01-01T00:00:00Z')}&until=${encodeURIComponent('9999-12-31T23:59:59.999Z')}`, { key: adminKey })
    expect(response.status).toBe(200)
    expect(response.body.meta.totalItems).toBeGreaterThan(0)
  })
})

describe('work items: dueDate, a calendar date', () => {
  test('year 0000, an extended year or a day the month lacks is 400 naming dueDate; the first and last days of 0001..9999 work', async () => {
    const fx = await createProjectFixture(api)
    const create = (dueDate: string) => fx.call('editor', 'POST', `/api/v1/projects/${fx.projectId}/work-items`, { title: 'due', dueDate })
    for (const value of ['0000-01-01', '+010000-01-01', '-000001-01-01', '10000-01-01', '2031-02-29', '2030-04-31', '2030-02-30'])
      expectRefusal(await create(value), 'dueDate', value)
    for (const value of ['0001-01-01', '2032-02-29', '9999-12-31']) {
      const response = await create(value)
      expect(response.status).toBe(201)
      expect(response.body.data.dueDate).toBe(value)
    }
  })
})

describe('MCP: list_audit_logs since/until', () => {
  async function call(args: Record<string, unknown>) {
    const response = await api.service.fetch(
      new Request('http://localhost/mcp', {
        method: 'POST',
        headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_audit_logs', arguments: args } }),
      }),
    )
    expect(response.status).toBe(200)
    return (await response.json()).result
  }

  test.each(['+275760-09-13T00:00:00.000Z', '+010000-01-01T00:00:00Z', '2030-02-30T00:00:00Z', '9999-12-31T23:59:59-05:00'])('%s is a tool error naming the argument', async (value) => {
    const result = await call({ until: value })
    expect(result.isError).toBe(true)
    expect(result.structuredContent.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field: 'until' })
  })

  test('a real date works', async () => {
    const result = await call({ until: '9999-12-31T23:59:59Z' })
    expect(result.isError).toBeFalsy()
  })
})

describe('the account page form: expires', () => {
  test('an extended or impossible day re-renders the form with 400, a real one creates the key', async () => {
    // A web session made by the service itself through the sign-in form; the keys form posts with its CSRF token.
    const session = (await signInForm(api, admin, { ip: '198.51.100.250' })).cookie
    const keysPage = await (await api.service.fetch(new Request('http://localhost/account/keys', { headers: { cookie: session } }))).text()
    const csrf = /name="csrf" value="([^"]+)"/.exec(keysPage)![1]!
    const post = (expires: string) =>
      api.service.fetch(
        new Request('http://localhost/account/keys', {
          method: 'POST',
          headers: { cookie: session, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ csrf, name: 'form key', expires }),
        }),
      )
    for (const expires of ['+275760-09-13', '+010000-01-01', '2030-02-30', '0000-01-01']) {
      const response = await post(expires)
      expect(response.status).toBe(400)
      expect(await response.text()).toContain('expiresAt')
    }
    expect((await post('2032-02-29')).status).toBeLessThan(400)
  })
})

describe('the CLI: key create --expires', () => {
  test('an extended or impossible date names --expires; a real one creates the key', async () => {
    const { context, bound } = api.service.contextOf('auth')
    // As runCli calls it: the plugin's own context (its config typed by the plugin) and its bound value.
    const command = authPlugin.cli!['key create']!
    const run = (expires: string) => command.run({ ...context, scopes: context.enabledScopes } as Parameters<typeof command.run>[0], { user: admin.id, name: 'cli', scopes: 'users:read', expires }, bound as never)
    for (const expires of ['+275760-09-13T00:00:00.000Z', '+010000-01-01T00:00:00Z', '2030-02-30T00:00:00Z', '9999-12-31T23:59:59-05:00']) {
      const error = await run(expires).then(
        () => undefined,
        (thrown: unknown) => thrown,
      )
      expect(error).toBeInstanceOf(ApiError)
      expect(error).toMatchObject({ status: 400, field: 'expires' })
    }
    expect(await run('2032-02-29T00:00:00Z')).toMatchObject({ id: expect.any(String), secret: expect.stringMatching(/^wtk_/) })
  })
})
