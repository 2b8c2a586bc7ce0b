/**
 * What an error echoes is bounded and never secret: a 200,000-character field or parameter name
 * comes back as its first 64 characters and an ellipsis (REST, MCP, any ApiError through the
 * mapper), and a configuration error names a secret setting (tokens, keys, passwords) without
 * its value.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { registry } from '../../plugins'
import { loadConfig } from '../../src/config'
import { openDatabase } from '../../src/db'
import { describeError } from '../../src/log'
import { mapError } from '../../src/http/error-mapper'
import { badRequest } from '../../src/http/errors'
import { startTestService, type TestService } from '../helpers/service'

const LONG = 'a'.repeat(200_000)
const SHOWN = `${'a'.repeat(64)}…`

let api: TestService
let key: string

beforeAll(async () => {
  api = await startTestService({ plugins: ['auth', 'users', 'teams', 'mcp', 'account'] })
  const user = await api.createUser(await api.createOrganization(), 'administrator')
  key = (await api.createKey(user.id, api.service.core.scopes.map((scope) => scope.name))).secret
})
afterAll(() => api.stop())

describe('error answers echo at most 64 characters of a name', () => {
  test('a 200,000-character unknown body field: a small 400 naming its first 64 characters', async () => {
    const response = await api.request('POST', '/api/v1/teams', { key, body: { name: 'echo', [LONG]: 1 }, unchecked: true })
    expect(response.status).toBe(400)
    expect(response.text.length).toBeLessThan(1000)
    expect(response.body.errors[0]).toEqual({ code: 'BAD_REQUEST', message: `Unknown field "${SHOWN}".`, field: SHOWN })
  })

  test('a 200,000-character unknown query parameter: the same', async () => {
    const response = await api.request('GET', `/api/v1/teams?${LONG}=1`, { key, unchecked: true })
    expect(response.status).toBe(400)
    expect(response.text.length).toBeLessThan(1000)
    expect(response.body.errors[0]).toEqual({ code: 'BAD_REQUEST', message: `Unknown query parameter "${SHOWN}".`, field: SHOWN })
  })

  test('a 200,000-character unknown MCP argument: a small tool error', async () => {
    const response = await api.service.fetch(
      new Request('http://localhost/mcp', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_teams', arguments: { [LONG]: 1 } } }),
      }),
    )
    const text = await response.text()
    expect(response.status).toBe(200)
    expect(text.length).toBeLessThan(2000)
    expect(JSON.parse(text).result.structuredContent.errors[0]).toMatchObject({ code: 'BAD_REQUEST', field: SHOWN })
  })

  test('an unsupported 100,000-character Content-Type is not echoed whole', async () => {
    const response = await api.request('POST', '/account/api/sessions', { rawBody: 'x', headers: { 'content-type': `text/${'x'.repeat(100_000)}` }, unchecked: true })
    expect(response.status).toBe(400)
    expect(response.text.length).toBeLessThan(1000)
  })

  test('any error item through the mapper: field at most 64 characters, message at most 2,048', () => {
    const mapped = mapError(badRequest(`Unknown scope "${LONG}".`, `scopes.${LONG}`))
    expect(mapped.items[0]!.field).toBe(`scopes.${'a'.repeat(57)}…`)
    expect(mapped.items[0]!.message.length).toBeLessThanOrEqual(2049)
    expect(mapped.items[0]!.message).toEndWith('…')
    // Short ones are untouched.
    expect(mapError(badRequest('Invalid field "name": too long.', 'name')).items[0]).toEqual({ code: 'BAD_REQUEST', message: 'Invalid field "name": too long.', field: 'name' })
  })
})

describe('configuration errors never echo a secret setting', () => {
  const refusal = (raw: Record<string, unknown>) => {
    try {
      loadConfig(registry, { raw, env: {} })
    } catch (error) {
      return (error as Error).message
    }
    throw new Error('the configuration was accepted')
  }

  test('a too-short server.metricsToken is named, its value not shown', () => {
    const message = refusal({ server: { metricsToken: 'short-secret' } })
    expect(message).toStartWith('config server.metricsToken: ')
    expect(message).not.toContain('short-secret')
  })

  test('a secret of the wrong type (metricsToken, webhooks.encryptionKey) is not shown either', () => {
    for (const raw of [{ server: { metricsToken: 987654321987 } }, { webhooks: { encryptionKey: 987654321987 } }, { webhooks: { encryptionKey: ['s3cr3t-key-material'] } }]) {
      const message = refusal(raw)
      expect(message).not.toContain('987654321987')
      expect(message).not.toContain('s3cr3t-key-material')
      expect(message).toContain('value not shown')
    }
  })

  test('a config file that is not JSON does not quote the secret it was cut at', () => {
    const directory = mkdtempSync(join(tmpdir(), 'worktrack-config-'))
    try {
      const file = join(directory, 'service.config.json')
      writeFileSync(file, '{"server": {"metricsToken": supersecretvalue1234567}}')
      let message = ''
      try {
        loadConfig(registry, { file, env: {} })
      } catch (error) {
        message = (error as Error).message
      }
      expect(message).toStartWith(`${file} is not valid JSON`)
      expect(message).not.toContain('supersecretvalue1234567')
    } finally {
      rmSync(directory, { recursive: true, force: true })
    }
  })

  test('a DATABASE_URL that cannot be used is refused (and logged) without its password', async () => {
    for (const url of ['postgres://admin:hunter2secret@127.0.0.1:1/db', 'postgres://admin:hunter2 secret@[bad/db', 'mysql://admin:hunter2secret@db.example/db', 'admin:hunter2secret@db.example']) {
      // A server URL opens lazily: its first statement meets the refusal.
      const refusal = await openDatabase(url, { maxConnections: 1 }).then(
        async (database) => {
          try {
            await database.db.execute(sql`select 1`)
            return 'connected'
          } catch (error) {
            return `${(error as Error).message} ${JSON.stringify(describeError(error))}`
          } finally {
            await database.close().catch(() => {})
          }
        },
        (error: Error) => error.message,
      )
      expect(refusal).not.toBe('connected')
      expect(refusal).not.toContain('hunter2')
    }
  })

  test('other settings still show what they got, at most 64 characters of it', () => {
    expect(refusal({ auth: { keyCacheTtlSeconds: 'forever' } })).toBe('config auth.keyCacheTtlSeconds: must be an integer from 0 to 3600 (got "forever")')
    const long = refusal({ auth: { keyCacheTtlSeconds: 'x'.repeat(100_000) } })
    expect(long.length).toBeLessThan(200)
    expect(long).toEndWith('…)')
  })
})
