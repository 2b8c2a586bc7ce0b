/**
 * The official MCP SDK client connects with OAuth, end to end: its `OAuthClientProvider` finds the
 * authorization server from `/mcp`'s 401 (RFC 9728), registers (RFC 7591), sends the user to
 * consent (the account area, with a web session), exchanges the code with PKCE, calls tools,
 * refreshes when the access token is gone, and stops when the user disconnects the app.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import { queryText } from '../../src/db'
import { hashSecret } from '../../src/secrets'
import { callTool, listen, type Listening } from '../helpers/mcp'
import { consent } from '../helpers/oauth'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { webSession } from '../helpers/sessions'

let api: TestService
let http: Listening
let fx: ProjectFixture
let cookie: string

beforeAll(async () => {
  // Tokens are read again on every request (no cache), so an expiry set in SQL is seen at once.
  api = await startTestService({ config: { auth: { keyCacheTtlSeconds: 0 } } })
  http = listen(api)
  fx = await createProjectFixture(api)
  cookie = (await webSession(api, fx.users.editor)).cookie
})
afterAll(async () => {
  http.stop()
  await api.stop()
})

/** An assistant's OAuth state, in memory; its "browser" is the signed-in user consenting. */
class AssistantProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed
  saved?: OAuthTokens
  verifier = ''
  /** Where the user's browser was sent back to, with the code. */
  callback?: URL
  redirects = 0

  get redirectUrl() {
    return 'http://127.0.0.1:8976/callback'
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'SDK assistant', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' }
  }
  clientInformation() {
    return this.client
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.client = information
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  async redirectToAuthorization(url: URL) {
    this.redirects++
    this.callback = await consent(api, url.toString(), cookie)
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') {
    if (scope === 'all' || scope === 'tokens') this.saved = undefined
    if (scope === 'all' || scope === 'client') this.client = undefined
  }
}

async function connect(provider: AssistantProvider, path = '/mcp'): Promise<Client> {
  const url = new URL(path, http.url)
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider })
  const client = new Client({ name: 'sdk-assistant', version: '1.0.0' })
  try {
    await client.connect(first)
    return client
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error
  }
  expect(provider.callback?.searchParams.get('code')).toMatch(/^wtc_/)
  await first.finishAuth(provider.callback!.searchParams.get('code')!)
  const connected = new Client({ name: 'sdk-assistant', version: '1.0.0' })
  await connected.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }))
  return connected
}

describe('the MCP SDK client with OAuth', () => {
  const provider = new AssistantProvider()

  test('discovers, registers, is authorized, and calls tools as the user', async () => {
    const client = await connect(provider)
    expect(provider.redirects).toBe(1)
    expect(provider.saved?.access_token).toMatch(/^wto_/)
    // It asked for the resource it found (RFC 8707): the grant is bound to /mcp.
    const [grant] = await queryText<{ id: string; audience: string; scopes: string[] }>(api.service.core.db, `select id, audience, scopes from oauth_grants where client_id = $1`, [provider.client!.client_id])
    expect(grant!.audience).toBe('mcp')
    // An editor (a member): no administrators-only scope was granted, though the client asked for every one.
    expect(grant!.scopes).not.toContain('audit_logs:read')
    expect(grant!.scopes).toContain('work_items:write')
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toContain('create_work_item')
    const created = await callTool(client, 'create_work_item', { projectId: fx.projectId, title: 'Filed by an assistant' })
    expect(created.isError).toBe(false)
    const [record] = await queryText<{ via: string; grantId: string; userId: string }>(
      api.service.core.db,
      `select via, grant_id as "grantId", actor_user_id as "userId" from audit_logs where resource_id = $1 and action = 'work_item.created'`,
      [created.data.id],
    )
    expect(record).toEqual({ via: 'mcp', grantId: grant!.id, userId: fx.users.editor.id })
    // The token is for /mcp: API v1 refuses it.
    expect((await api.request('GET', '/api/v1/users/me', { key: provider.saved!.access_token })).status).toBe(401)
    await client.close()
  })

  test('refreshes with its rotating refresh token when the access token has expired, without the user', async () => {
    const before = provider.saved!
    await queryText(api.service.core.db, `update oauth_tokens set expires_at = now() - interval '1 second' where token_hash = $1`, [hashSecret(before.access_token)])
    const client = await connect(provider)
    expect(provider.redirects).toBe(1)
    expect(provider.saved!.access_token).not.toBe(before.access_token)
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token)
    expect((await callTool(client, 'list_work_items', { projectId: fx.projectId })).isError).toBe(false)
    await client.close()
  })

  test('disconnected in the account area, it cannot call again until the user consents anew', async () => {
    const [grant] = await queryText<{ id: string }>(api.service.core.db, `select id from oauth_grants where client_id = $1 and revoked_at is null`, [provider.client!.client_id])
    const apps = await api.service.fetch(new Request('http://localhost/account/apps', { headers: { cookie } }))
    const csrf = /name="csrf" value="([^"]+)"/.exec(await apps.text())![1]!
    const disconnected = await api.service.fetch(
      new Request(`http://localhost/account/apps/${grant!.id}/revoke`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ csrf }), redirect: 'manual' }),
    )
    expect(disconnected.status).toBe(303)
    const client = await connect(provider)
    // The stored tokens were refused, the refresh too; the user was asked again.
    expect(provider.redirects).toBe(2)
    expect((await client.listTools()).tools.length).toBeGreaterThan(0)
    await client.close()
  })
})
