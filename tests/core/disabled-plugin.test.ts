import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestService, type TestService } from '../helpers/service'

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
