/**
 * `/docs` is as locked down as the account pages, and logs never carry secrets, hashes or SQL
 * parameter values.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { registry } from '../../plugins'
import { describeError } from '../../src/log'
import { capturingLogger } from '../helpers/logger'
import { probePlugin } from '../helpers/probe-plugin'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let key: string
const lines: Array<{ level: string; message: string; fields: Record<string, unknown> }> = []

beforeAll(async () => {
  api = await startTestService({ registry: [...registry, probePlugin], log: capturingLogger(lines, { fields: true }) })
  const organization = await api.createOrganization()
  const user = await api.createUser(organization)
  key = (await api.createKey(user.id, ['probe:read'])).secret
})
afterAll(() => api.stop())

describe('/docs', () => {
  test('sends the account pages\' security headers and runs no inline script', async () => {
    const page = await api.request('GET', '/docs')
    expect(page.status).toBe(200)
    const policy = page.headers.get('content-security-policy')!
    expect(policy).toContain("frame-ancestors 'none'")
    expect(policy).toMatch(/script-src 'self'(;|$)/)
    expect(policy).toContain("default-src 'self'")
    expect(page.headers.get('x-frame-options')).toBe('DENY')
    expect(page.headers.get('x-content-type-options')).toBe('nosniff')
    expect(page.headers.get('referrer-policy')).toBe('same-origin')
    expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
  })

  test('loads nothing from other origins and never keeps a key in local storage', async () => {
    const page = await api.request('GET', '/docs')
    const sources = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!)
    expect(sources.length).toBeGreaterThan(0)
    for (const source of sources) {
      expect(source).toStartWith('/')
      expect(source).not.toStartWith('//')
      const asset = await api.request('GET', source)
      expect(asset.status).toBe(200)
      if (source.endsWith('.js') && !source.includes('swagger-ui-bundle')) expect(asset.text).not.toContain('persistAuthorization: true')
    }
    expect(page.text).not.toContain('persistAuthorization')
  })

  test('the swagger plugin\'s own CDN page is not served', async () => {
    expect((await api.request('GET', '/docs/cdn', { unchecked: true })).status).toBe(404)
  })
})

describe('logs', () => {
  const errors = () => lines.filter((line) => line.level === 'error')

  test('an unexpected database error logs request id, route, SQL text and code, never a parameter value', async () => {
    for (const path of ['/api/v1/probe/db-secret', '/api/v1/probe/db-duplicate']) {
      lines.length = 0
      const response = await api.request('GET', path, { key, unchecked: true })
      expect(response.status).toBeGreaterThanOrEqual(400)
      const logged = errors()
      expect(logged).toHaveLength(1)
      const fields = logged[0]!.fields
      expect(fields.requestId).toBe(response.body.meta.requestId)
      expect(fields.route).toBe(`GET ${path}`)
      expect(String(fields.sql)).toStartWith(path.endsWith('secret') ? 'select $1::int' : 'insert into organizations')
      expect(fields.code).toMatch(/^[0-9A-Z]{5}$/)
      const text = JSON.stringify(logged)
      expect(text).not.toContain('probe-secret')
      expect(text).not.toContain('00000000-0000-7000-8000-00000000feed')
    }
  })

  test('describeError keeps the SQL text and code of a wrapped driver error and drops its parameters and messages', () => {
    const cause = Object.assign(new Error('duplicate key value violates unique constraint "api_keys_secret_hash_unique"'), {
      code: '23505',
      detail: 'Key (secret_hash)=(9f86d081884c7d659a2feaa0c55ad015) already exists.',
      constraint_name: 'api_keys_secret_hash_unique',
    })
    const wrapped = Object.assign(new Error('Failed query: insert into "api_keys" ("secret_hash") values ($1)\nparams: 9f86d081884c7d659a2feaa0c55ad015'), {
      query: 'insert into "api_keys" ("secret_hash") values ($1)',
      params: ['9f86d081884c7d659a2feaa0c55ad015'],
      cause,
    })
    const described = describeError(wrapped)
    expect(described).toMatchObject({ sql: 'insert into "api_keys" ("secret_hash") values ($1)', code: '23505', constraint: 'api_keys_secret_hash_unique' })
    expect(JSON.stringify(described)).not.toContain('9f86d081884c7d659a2feaa0c55ad015')
  })

  test('a programming error logs its message and stack frames, and the client sees none of it', async () => {
    lines.length = 0
    const response = await api.request('GET', '/api/v1/probe/boom', { key, unchecked: true })
    expect(response.status).toBe(500)
    expect(response.text).not.toContain('hunter2')
    const [line] = errors()
    expect(line!.fields).toMatchObject({ requestId: response.body.meta.requestId, route: 'GET /api/v1/probe/boom', status: 500 })
    expect(String(line!.fields.stack)).toContain('probe-plugin')
  })
})
