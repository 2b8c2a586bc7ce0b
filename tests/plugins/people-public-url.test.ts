/**
 * `server.publicUrl`: invitation links start with it, over REST (whatever the request's Host) and
 * over MCP (which has no request origin of its own); the link it gives opens the invitation page.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { timeLimit } from '../helpers/database'
import { startTestService, type TestService } from '../helpers/service'

const PUBLIC = 'https://track.example.com'
let api: TestService
let key = ''

beforeAll(async () => {
  api = await startTestService({ config: { server: { publicUrl: PUBLIC } } })
  const organization = await api.createOrganization('Public URL')
  const admin = await api.createUser(organization, 'administrator', { username: 'admin' })
  key = (await api.createKey(admin.id, api.service.core.scopes.map((scope) => scope.name))).secret
}, timeLimit(60_000))
afterAll(() => api.stop())

test('a REST invitation link starts with server.publicUrl, not the Host the request came by', async () => {
  const response = await api.request('POST', '/api/v1/users', { key, body: { email: 'rest-invitee@example.com' }, headers: { host: 'internal.local:3000' } })
  expect(response.status).toBe(201)
  expect(response.body.data.inviteUrl).toMatch(/^https:\/\/track\.example\.com\/account\/invite\/wti_[0-9A-Za-z]+$/)
  const page = await api.service.fetch(new Request(`http://localhost${new URL(response.body.data.inviteUrl).pathname}`))
  expect(page.status).toBe(200)
})

test('an MCP invitation link starts with it too', async () => {
  const response = await api.request('POST', '/mcp', {
    key,
    body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'invite_user', arguments: { email: 'mcp-invitee@example.com' } } },
    headers: { accept: 'application/json, text/event-stream' },
  })
  expect(response.body.result.structuredContent.inviteUrl).toMatch(/^https:\/\/track\.example\.com\/account\/invite\/wti_/)
})

test('a publicUrl that is not scheme://host[:port] refuses start-up', async () => {
  await expect(startTestService({ config: { server: { publicUrl: 'track.example.com/path' } } })).rejects.toThrow(/publicUrl/)
})
