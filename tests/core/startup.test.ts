import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestService, type TestService } from '../helpers/service'

/** Starts the real entry with `env` and returns its exit code and stderr. */
async function startProcess(env: Record<string, string>) {
  const child = Bun.spawn([process.execPath, 'entries/bun.ts'], {
    env: { ...process.env, DATABASE_URL: 'pglite://memory', PORT: '0', LOG_LEVEL: 'silent', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => child.kill(), 30_000)
  const code = await child.exited
  clearTimeout(timer)
  return { code, stderr: (await new Response(child.stderr).text()).trim() }
}

describe('start-up refusals (real process)', () => {
  test('an unknown plugin: exit 1 and one line naming it', async () => {
    const { code, stderr } = await startProcess({ PLUGINS_ENABLED: 'auth,serch' })
    expect(code).toBe(1)
    expect(stderr.split('\n')).toHaveLength(1)
    expect(stderr).toStartWith('startup refused: unknown plugin "serch"')
  })

  test('SERVICE_CONFIG naming a missing file: exit 1 and one line naming it (empty: no file, the defaults)', async () => {
    const { code, stderr } = await startProcess({ SERVICE_CONFIG: '/no/such/service.config.json' })
    expect(code).toBe(1)
    expect(stderr).toBe('startup refused: SERVICE_CONFIG names /no/such/service.config.json, which does not exist (set it empty for no config file)')
  })

  test('an unknown LOG_LEVEL: exit 1 and one line listing the levels', async () => {
    const { code, stderr } = await startProcess({ LOG_LEVEL: 'loud', SERVICE_CONFIG: '' })
    expect(code).toBe(1)
    expect(stderr).toBe('startup refused: LOG_LEVEL must be one of debug, info, warn, error, silent (got "loud")')
  })

  test('a missing dependency: exit 1 and one line naming both plugins', async () => {
    const { code, stderr } = await startProcess({ PLUGINS_ENABLED: 'users,docs' })
    expect(code).toBe(1)
    expect(stderr).toBe('startup refused: users needs auth, which is disabled')
  })

  test('a bad config value: exit 1 and one line naming the setting', async () => {
    const file = `/tmp/worktrack-config-${process.pid}.json`
    await Bun.write(file, JSON.stringify({ auth: { keyCacheTtlSeconds: 'forever' } }))
    const { code, stderr } = await startProcess({ SERVICE_CONFIG: file })
    expect(code).toBe(1)
    expect(stderr).toBe('startup refused: config auth.keyCacheTtlSeconds: Expected integer (got "forever")')
  })
})

describe('a disabled plugin', () => {
  let withUsers: TestService
  let withoutUsers: TestService
  let key: string

  beforeAll(async () => {
    withUsers = await startTestService({ plugins: ['auth', 'users', 'docs'] })
    withoutUsers = await startTestService({ plugins: ['auth', 'docs'], database: withUsers.database })
    const organization = await withUsers.createOrganization()
    const user = await withUsers.createUser(organization)
    key = (await withUsers.createKey(user.id, ['users:read'])).secret
  })
  afterAll(async () => {
    await withoutUsers.stop()
    await withUsers.stop()
  })

  test('its routes answer 404 in the envelope, with or without a key', async () => {
    expect((await withUsers.request('GET', '/api/v1/users/me', { key })).status).toBe(200)
    for (const options of [{ key }, {}]) {
      const response = await withoutUsers.request('GET', '/api/v1/users/me', options)
      expect(response.status).toBe(404)
      expect(response.body.errors[0].code).toBe('NOT_FOUND')
    }
  })

  test('its OpenAPI paths are absent', async () => {
    const enabled = (await withUsers.request('GET', '/docs/json')).body
    const disabled = (await withoutUsers.request('GET', '/docs/json')).body
    expect(Object.keys(enabled.paths)).toContain('/api/v1/users/me')
    expect(Object.keys(disabled.paths).filter((path) => path.startsWith('/api/v1/users'))).toEqual([])
    expect(disabled.tags.map((tag: { name: string }) => tag.name)).not.toContain('Users')
  })
})
