/**
 * The OAuth 2.1 authorization server and its protected resources: registration and its bounds,
 * the authorization request's checks, consent, the code exchange with PKCE, refresh rotation with
 * reuse detection, audiences, revocation on every instance, Connected apps, audit, and hashes only.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { registry } from '../../plugins'
import { loadConfig } from '../../src/config'
import { queryText } from '../../src/db'
import { hashSecret } from '../../src/secrets'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { webSession } from '../helpers/sessions'
import { authorizeQuery, browse, connectApp, consent, pkcePair, REDIRECT, registerClient, tokenRequest } from '../helpers/oauth'

let api: TestService
let fx: ProjectFixture
let ownerCookie: string
let viewerCookie: string

beforeAll(async () => {
  api = await startTestService({ config: { auth: { oauth: { registrationsPerHour: 3, maxClients: 1000 } } } })
  fx = await createProjectFixture(api)
  ownerCookie = (await webSession(api, fx.users.owner)).cookie
  viewerCookie = (await webSession(api, fx.users.viewer)).cookie
})
afterAll(async () => {
  await api.stop()
})

const db = () => api.service.core.db
const bearer = (token: string, path = '/api/v1/users/me') => api.request('GET', path, { key: token })

describe('metadata', () => {
  test('the authorization server (RFC 8414) and the protected resources (RFC 9728) describe themselves', async () => {
    const server = await api.request('GET', '/.well-known/oauth-authorization-server', { unchecked: true })
    expect(server.status).toBe(200)
    expect(server.body).toMatchObject({
      issuer: 'http://localhost',
      authorization_endpoint: 'http://localhost/oauth/authorize',
      token_endpoint: 'http://localhost/oauth/token',
      registration_endpoint: 'http://localhost/oauth/register',
      revocation_endpoint: 'http://localhost/oauth/revoke',
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
    })
    expect(server.body.scopes_supported).toContain('work_items:read')
    const mcp = await api.request('GET', '/.well-known/oauth-protected-resource/mcp', { unchecked: true })
    expect(mcp.body).toMatchObject({ resource: 'http://localhost/mcp', authorization_servers: ['http://localhost'] })
    expect(mcp.body.scopes_supported).toEqual(server.body.scopes_supported)
    const v1 = await api.request('GET', '/.well-known/oauth-protected-resource/api/v1', { unchecked: true })
    expect(v1.body.resource).toBe('http://localhost/api/v1')
  })

  test('/mcp without a credential is 401 naming the resource metadata', async () => {
    const response = await api.request('POST', '/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' }, unchecked: true })
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toContain('resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp"')
  })
})

describe('registration', () => {
  const register = (body: unknown, ip: string) =>
    api.service.fetch(new Request('http://localhost/oauth/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }), { ip })

  test('public clients with https or loopback redirect URIs only', async () => {
    const refused = async (body: unknown, error: string) => {
      const response = await register(body, '198.51.100.1')
      expect(response.status).toBe(400)
      expect(((await response.json()) as { error: string }).error).toBe(error)
    }
    await refused({ redirect_uris: ['http://evil.example/cb'] }, 'invalid_redirect_uri')
    await refused({ redirect_uris: ['https://app.example/cb#x'] }, 'invalid_redirect_uri')
    await refused({ redirect_uris: [] }, 'invalid_redirect_uri')
    await refused({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'client_secret_basic' }, 'invalid_client_metadata')
    await refused({ redirect_uris: ['https://app.example/cb'], grant_types: ['client_credentials'] }, 'invalid_client_metadata')
    await refused([1], 'invalid_client_metadata')
    const made = await register({ client_name: 'Claude', redirect_uris: ['https://claude.example/cb', 'http://[::1]:33418/cb'] }, '198.51.100.1')
    expect(made.status).toBe(201)
    expect(made.headers.get('cache-control')).toBe('no-store')
    expect(await made.json()).toMatchObject({ client_name: 'Claude', token_endpoint_auth_method: 'none', redirect_uris: ['https://claude.example/cb', 'http://[::1]:33418/cb'] })
  })

  test('at most registrationsPerHour per address: then 429 with Retry-After, other addresses unaffected', async () => {
    for (let i = 0; i < 3; i++) expect((await register({ redirect_uris: [REDIRECT] }, '192.0.2.77')).status).toBe(201)
    const refused = await register({ redirect_uris: [REDIRECT] }, '192.0.2.77')
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(3000)
    expect(((await refused.json()) as { error: string }).error).toBe('too_many_registrations')
    expect((await register({ redirect_uris: [REDIRECT] }, '192.0.2.78')).status).toBe(201)
  })

  test('concurrent registrations from one address count each other', async () => {
    const answers = await Promise.all(Array.from({ length: 8 }, () => register({ redirect_uris: [REDIRECT] }, '192.0.2.90')))
    expect(answers.filter((answer) => answer.status === 201).length).toBe(3)
    expect(answers.filter((answer) => answer.status === 429).length).toBe(5)
  })
})

describe('registrations in all', () => {
  test('at most maxClients: clients never approved for 30 days are dropped first, then 503', async () => {
    const small = await startTestService({ config: { auth: { oauth: { maxClients: 2 } } } })
    try {
      const register = (ip: string) =>
        small.service.fetch(new Request('http://localhost/oauth/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT] }) }), { ip })
      const ids: string[] = []
      for (const ip of ['192.0.2.1', '192.0.2.2']) {
        const made = await register(ip)
        expect(made.status).toBe(201)
        ids.push(((await made.json()) as { client_id: string }).client_id)
      }
      const full = await register('192.0.2.3')
      expect(full.status).toBe(503)
      expect(full.headers.get('retry-after')).toBe('3600')
      const db = small.service.core.db
      // Both old: the one a user approved stays, the one never approved makes room.
      await queryText(db, `update oauth_clients set created_at = now() - interval '31 days' where id = any($1::text[])`, [ids])
      await queryText(db, `update oauth_clients set last_approved_at = now() where id = $1`, [ids[0]])
      expect((await register('192.0.2.3')).status).toBe(201)
      const left = await queryText<{ id: string }>(db, `select id from oauth_clients where id = any($1::text[])`, [ids])
      expect(left.map((row) => row.id)).toEqual([ids[0]!])
      expect((await register('192.0.2.4')).status).toBe(503)
    } finally {
      await small.stop()
    }
  })
})

describe('settings', () => {
  test('auth.oauth.accessTokenSeconds sets the access tokens\' life (at least 5 s); a provider entry is checked at start', async () => {
    expect(() => loadConfig(registry, { raw: { auth: { oauth: { accessTokenSeconds: 4 } } }, env: {} })).toThrow('auth.oauth.accessTokenSeconds')
    expect(() => loadConfig(registry, { raw: { auth: { oidc: { providers: [{ id: 'Bad Id', name: 'x', issuer: 'https://idp.example', clientId: 'a', clientSecret: 'b', organizationId: fx.organizationId }] } } }, env: {} })).toThrow('auth.oidc.providers')
    const short = await startTestService({ database: api.database, config: { auth: { oauth: { accessTokenSeconds: 5 } } } })
    try {
      const app = await connectApp(short, ownerCookie)
      expect(app.expires_in).toBe(5)
      const [{ life }] = await queryText<{ life: number }>(db(), `select round(extract(epoch from expires_at - created_at))::int as life from oauth_tokens where token_hash = $1`, [hashSecret(app.access_token)])
      expect(life).toBe(5)
    } finally {
      await short.stop()
    }
  })
})

describe('the authorization request', () => {
  test('an unknown client or a redirect URI not registered is said on a page, never redirected', async () => {
    const clientId = await registerClient(api)
    const { challenge } = pkcePair()
    const unknown = await browse(api, `/oauth/authorize?${authorizeQuery({ clientId: '00000000-0000-4000-8000-000000000000', challenge })}`, ownerCookie)
    expect(unknown.status).toBe(400)
    expect(unknown.headers.get('location')).toBeNull()
    expect(await unknown.text()).toContain('not registered')
    const elsewhere = await browse(api, `/oauth/authorize?${authorizeQuery({ clientId, challenge, redirectUri: 'http://127.0.0.1:8976/other' })}`, ownerCookie)
    expect(elsewhere.status).toBe(400)
    expect(elsewhere.headers.get('location')).toBeNull()
    // The consent page checks the same.
    const page = await browse(api, `/account/authorize?${authorizeQuery({ clientId, challenge, redirectUri: 'https://evil.example/cb' })}`, ownerCookie)
    expect(page.status).toBe(400)
  })

  test('PKCE S256 is required; other faults go back to the client with state', async () => {
    const clientId = await registerClient(api)
    const { challenge } = pkcePair()
    const back = async (query: URLSearchParams) => {
      const response = await browse(api, `/oauth/authorize?${query}`, ownerCookie)
      expect(response.status).toBe(302)
      const url = new URL(response.headers.get('location')!)
      expect(url.origin + url.pathname).toBe(REDIRECT)
      expect(url.searchParams.get('state')).toBe('st-1')
      expect(url.searchParams.get('iss')).toBe('http://localhost')
      return url.searchParams.get('error')
    }
    const plain = authorizeQuery({ clientId, challenge })
    plain.set('code_challenge_method', 'plain')
    expect(await back(plain)).toBe('invalid_request')
    const none = authorizeQuery({ clientId, challenge })
    none.delete('code_challenge')
    expect(await back(none)).toBe('invalid_request')
    const token = authorizeQuery({ clientId, challenge })
    token.set('response_type', 'token')
    expect(await back(token)).toBe('unsupported_response_type')
    expect(await back(authorizeQuery({ clientId, challenge, scope: 'work_items:read admin:everything' }))).toBe('invalid_scope')
    expect(await back(authorizeQuery({ clientId, challenge, resource: 'https://elsewhere.example/mcp' }))).toBe('invalid_target')
  })

  test('signed out, the consent page sends the browser to sign in and back', async () => {
    const clientId = await registerClient(api)
    const start = await browse(api, `/oauth/authorize?${authorizeQuery({ clientId, challenge: pkcePair().challenge })}`, '')
    const page = await browse(api, start.headers.get('location')!, '')
    expect(page.status).toBe(303)
    const signIn = new URL(page.headers.get('location')!, 'http://localhost')
    expect(signIn.pathname).toBe('/account/sign-in')
    expect(signIn.searchParams.get('next')).toBe(start.headers.get('location'))
  })

  test('the consent form is refused without its CSRF token', async () => {
    const clientId = await registerClient(api)
    const fields = authorizeQuery({ clientId, challenge: pkcePair().challenge })
    fields.set('decision', 'approve')
    const posted = await api.service.fetch(new Request('http://localhost/account/authorize', { method: 'POST', headers: { cookie: ownerCookie, 'content-type': 'application/x-www-form-urlencoded' }, body: fields, redirect: 'manual' }))
    expect(posted.status).toBe(403)
    const [{ count }] = await queryText<{ count: number }>(db(), `select count(*)::int as count from oauth_grants where client_id = $1`, [clientId])
    expect(count).toBe(0)
  })

  test('deny sends access_denied with the state', async () => {
    const clientId = await registerClient(api)
    const back = await consent(api, `/oauth/authorize?${authorizeQuery({ clientId, challenge: pkcePair().challenge, state: 'keep me' })}`, ownerCookie, { decision: 'deny' })
    expect(back.searchParams.get('error')).toBe('access_denied')
    expect(back.searchParams.get('state')).toBe('keep me')
    expect(back.searchParams.get('code')).toBeNull()
  })

  test("a scope the user's role cannot use is never granted, and the page says so", async () => {
    const clientId = await registerClient(api)
    const { verifier, challenge } = pkcePair()
    const url = `/oauth/authorize?${authorizeQuery({ clientId, challenge, scope: 'work_items:read audit_logs:read users:write' })}`
    const page = await browse(api, (await browse(api, url, viewerCookie)).headers.get('location')!, viewerCookie)
    const text = await page.text()
    expect(text).toContain('Not granted')
    expect(text).toContain('audit_logs:read')
    // Even a forged form naming them gets only what the role may hold.
    const back = await consent(api, url, viewerCookie, { scopes: ['work_items:read', 'audit_logs:read', 'users:write'] })
    const tokens = await tokenRequest(api, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier })
    expect(tokens.body.scope).toBe('work_items:read')
  })
})

describe('the token endpoint', () => {
  async function codeFor(cookie = ownerCookie, options: { scope?: string; resource?: string } = {}) {
    const clientId = await registerClient(api)
    const { verifier, challenge } = pkcePair()
    const back = await consent(api, `/oauth/authorize?${authorizeQuery({ clientId, challenge, ...options })}`, cookie)
    return { clientId, verifier, code: back.searchParams.get('code')! }
  }

  test('a code for its verifier, client and redirect URI: tokens, never cached, stored only as hashes', async () => {
    const { clientId, verifier, code } = await codeFor()
    expect(code).toMatch(/^wtc_/)
    const wrongVerifier = await tokenRequest(api, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: pkcePair().verifier })
    expect(wrongVerifier.status).toBe(400)
    expect(wrongVerifier.body.error).toBe('invalid_grant')
    const exchanged = await tokenRequest(api, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier })
    expect(exchanged.status).toBe(200)
    expect(exchanged.headers.get('cache-control')).toBe('no-store')
    expect(exchanged.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 })
    expect(exchanged.body.access_token).toMatch(/^wto_/)
    expect(exchanged.body.refresh_token).toMatch(/^wtr_/)
    const me = await bearer(exchanged.body.access_token)
    expect(me.status).toBe(200)
    expect(me.body.data.user.id).toBe(fx.users.owner.id)
    expect(me.body.data.key).toBeNull()
    expect(me.body.data.grant.clientName).toBe("Test assistant")
    const stored = JSON.stringify(await queryText(db(), `select * from oauth_tokens union all select code_hash, organization_id, grant_id, 'code', expires_at, used_at, null from oauth_codes`, []))
    for (const secret of [code, exchanged.body.access_token, exchanged.body.refresh_token]) expect(stored).not.toContain(secret.slice(4, 30))
  })

  test('a code is used once: presented again, everything it issued is revoked', async () => {
    const { clientId, verifier, code } = await codeFor()
    const fields = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier }
    const first = await tokenRequest(api, fields)
    expect((await bearer(first.body.access_token)).status).toBe(200)
    const again = await tokenRequest(api, fields)
    expect(again.body.error).toBe('invalid_grant')
    expect((await bearer(first.body.access_token)).status).toBe(401)
    expect((await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: clientId })).body.error).toBe('invalid_grant')
  })

  test('a code past its time, another client, or another redirect URI is invalid_grant', async () => {
    const other = await registerClient(api)
    const { clientId, verifier, code } = await codeFor()
    const base = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier }
    expect((await tokenRequest(api, { ...base, client_id: other })).body.error).toBe('invalid_grant')
    expect((await tokenRequest(api, { ...base, redirect_uri: 'http://127.0.0.1:8976/other' })).body.error).toBe('invalid_grant')
    await queryText(db(), `update oauth_codes set expires_at = now() - interval '1 second' where code_hash = $1`, [hashSecret(code)])
    expect((await tokenRequest(api, base)).body.error).toBe('invalid_grant')
    const [{ lifetime }] = await queryText<{ lifetime: number }>(db(), `select max(extract(epoch from expires_at - now()))::int as lifetime from oauth_codes`, [])
    expect(lifetime).toBeLessThanOrEqual(600)
  })

  test('malformed requests get the RFC 6749 errors', async () => {
    expect((await tokenRequest(api, { grant_type: 'password', client_id: 'x' })).body.error).toBe('unsupported_grant_type')
    expect((await tokenRequest(api, { client_id: 'x' })).body.error).toBe('invalid_request')
    expect((await tokenRequest(api, { grant_type: 'authorization_code', client_id: 'x', code: 'garbage' })).body.error).toBe('invalid_grant')
    const json = await api.service.fetch(new Request('http://localhost/oauth/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' }))
    expect(json.status).toBe(400)
    expect(((await json.json()) as { error: string }).error).toBe('invalid_request')
  })

  test('refresh tokens rotate; a used one presented again revokes the grant', async () => {
    const app = await connectApp(api, ownerCookie)
    const rotated = await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: app.refresh_token, client_id: app.clientId })
    expect(rotated.status).toBe(200)
    expect(rotated.body.refresh_token).not.toBe(app.refresh_token)
    expect((await bearer(rotated.body.access_token)).status).toBe(200)
    // The old access token lives on until its time (it was not stolen); the old refresh token is spent.
    const replayed = await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: app.refresh_token, client_id: app.clientId })
    expect(replayed.body.error).toBe('invalid_grant')
    expect((await bearer(rotated.body.access_token)).status).toBe(401)
    expect((await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: rotated.body.refresh_token, client_id: app.clientId })).body.error).toBe('invalid_grant')
    const [revoked] = await queryText<{ reason: string }>(db(), `select revoked_reason as reason from oauth_grants where client_id = $1`, [app.clientId])
    expect(revoked!.reason).toBe('refresh_token_reused')
  })

  test('an access token past its time is refused', async () => {
    const app = await connectApp(api, ownerCookie)
    await queryText(db(), `update oauth_tokens set expires_at = now() - interval '1 second' where token_hash = $1`, [hashSecret(app.access_token)])
    const response = await bearer(app.access_token)
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toContain('invalid_token')
  })
})

describe('protected resources', () => {
  test('a token is accepted by the resource it was issued for only; one without a resource by both', async () => {
    const mcpOnly = await connectApp(api, ownerCookie, { resource: 'http://localhost/mcp' })
    expect((await bearer(mcpOnly.access_token)).status).toBe(401)
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' }
    const headers = { accept: 'application/json, text/event-stream' }
    expect((await api.request('POST', '/mcp', { key: mcpOnly.access_token, body: list, headers, unchecked: true })).status).toBe(200)
    const apiOnly = await connectApp(api, ownerCookie, { resource: 'http://localhost/api/v1' })
    expect((await bearer(apiOnly.access_token)).status).toBe(200)
    expect((await api.request('POST', '/mcp', { key: apiOnly.access_token, body: list, headers, unchecked: true })).status).toBe(401)
    const both = await connectApp(api, ownerCookie)
    expect((await bearer(both.access_token)).status).toBe(200)
    expect((await api.request('POST', '/mcp', { key: both.access_token, body: list, headers, unchecked: true })).status).toBe(200)
  })

  test('scopes hold as for keys, on session-or-scope routes too; writes say via "oauth" with the grant', async () => {
    const reader = await connectApp(api, ownerCookie, { scope: 'work_items:read projects:read' })
    const created = await api.request('POST', `/api/v1/projects/${fx.projectId}/work-items`, { key: reader.access_token, body: { title: 'nope' } })
    expect(created.status).toBe(403)
    expect(created.body.errors[0].code).toBe('INSUFFICIENT_SCOPE')
    expect((await api.request('GET', '/api/v1/notifications', { key: reader.access_token })).status).toBe(403)
    const writer = await connectApp(api, ownerCookie, { scope: 'work_items:write work_items:read' })
    const item = await api.request('POST', `/api/v1/projects/${fx.projectId}/work-items`, { key: writer.access_token, body: { title: 'by an app' } })
    expect(item.status).toBe(201)
    const [grant] = await queryText<{ id: string }>(db(), `select id from oauth_grants where client_id = $1`, [writer.clientId])
    const [record] = await queryText<{ via: string; grantId: string; apiKeyId: string | null; userId: string }>(
      db(),
      `select via, grant_id as "grantId", api_key_id as "apiKeyId", actor_user_id as "userId" from audit_logs where resource_id = $1 and action = 'work_item.created'`,
      [item.body.data.id],
    )
    expect(record).toEqual({ via: 'oauth', grantId: grant!.id, apiKeyId: null, userId: fx.users.owner.id })
    const admin = await api.createUser(fx.organizationId, 'administrator')
    await fx.as('owner', 'POST', `/api/v1/projects/${fx.projectId}/members`, { userId: admin.id, accessLevel: 'viewer' })
    const audit = await api.request('GET', `/api/v1/projects/${fx.projectId}/audit-logs?action=work_item.created`, { key: (await api.createKey(admin.id, ['audit_logs:read'])).secret })
    expect(audit.status, audit.text).toBe(200)
    expect(audit.body.data.find((entry: { resourceId: string }) => entry.resourceId === item.body.data.id)).toMatchObject({ via: 'oauth', grantId: grant!.id })
  })
})

describe('revocation and Connected apps', () => {
  test('RFC 7009: revoking the refresh token stops the access token at once; unknown tokens are 200 too', async () => {
    const app = await connectApp(api, ownerCookie)
    expect((await bearer(app.access_token)).status).toBe(200)
    const other = await registerClient(api)
    const foreign = await tokenRequest(api, { token: app.refresh_token, client_id: other }, '/oauth/revoke')
    expect(foreign.status).toBe(200)
    expect((await bearer(app.access_token)).status).toBe(200)
    const revoked = await tokenRequest(api, { token: app.refresh_token, client_id: app.clientId }, '/oauth/revoke')
    expect(revoked.status).toBe(200)
    expect((await bearer(app.access_token)).status).toBe(401)
    expect((await tokenRequest(api, { token: 'wto_nonsense', client_id: app.clientId }, '/oauth/revoke')).status).toBe(200)
  })

  test('Connected apps lists the grant and disconnecting it stops its tokens; audited both ways', async () => {
    const app = await connectApp(api, ownerCookie, { scope: 'work_items:read' })
    const [grant] = await queryText<{ id: string }>(db(), `select id from oauth_grants where client_id = $1`, [app.clientId])
    const page = await browse(api, '/account/apps', ownerCookie)
    const text = await page.text()
    expect(text).toContain(`data-grant="${grant!.id}"`)
    expect(text).toContain('Test assistant')
    const csrf = /name="csrf" value="([^"]+)"/.exec(text)![1]!
    // Someone else's grant is not found.
    const stranger = await api.service.fetch(
      new Request(`http://localhost/account/apps/${grant!.id}/revoke`, { method: 'POST', headers: { cookie: viewerCookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ csrf: /name="csrf" value="([^"]+)"/.exec(await (await browse(api, '/account/apps', viewerCookie)).text())![1]! }) }),
    )
    expect(stranger.status).toBe(404)
    expect((await bearer(app.access_token)).status).toBe(200)
    const posted = await api.service.fetch(
      new Request(`http://localhost/account/apps/${grant!.id}/revoke`, { method: 'POST', headers: { cookie: ownerCookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ csrf }), redirect: 'manual' }),
    )
    expect(posted.status).toBe(303)
    expect((await bearer(app.access_token)).status).toBe(401)
    expect(await (await browse(api, '/account/apps', ownerCookie)).text()).not.toContain(grant!.id)
    const actions = await queryText<{ action: string; via: string }>(db(), `select action, via from audit_logs where resource_id = $1 order by occurred_at`, [grant!.id])
    expect(actions).toEqual([
      { action: 'oauth.grant.created', via: 'account' },
      { action: 'oauth.grant.revoked', via: 'account' },
    ])
  })

  test("a user's deactivation stops their tokens and refreshes", async () => {
    const user = await api.createUser(fx.organizationId)
    const cookie = (await webSession(api, user)).cookie
    const app = await connectApp(api, cookie)
    expect((await bearer(app.access_token)).status).toBe(200)
    await api.deactivateUser(user.id)
    expect((await bearer(app.access_token)).status).toBe(401)
    expect((await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: app.refresh_token, client_id: app.clientId })).body.error).toBe('invalid_grant')
  })

  test('a revocation reaches another instance at once, whatever it cached', async () => {
    const second = await startTestService({ database: api.database })
    try {
      const app = await connectApp(api, ownerCookie)
      expect((await second.request('GET', '/api/v1/users/me', { key: app.access_token })).status).toBe(200)
      await tokenRequest(api, { token: app.access_token, client_id: app.clientId }, '/oauth/revoke')
      const deadline = Date.now() + 5000
      let status = 200
      while (status === 200 && Date.now() < deadline) {
        status = (await second.request('GET', '/api/v1/users/me', { key: app.access_token })).status
        if (status === 200) await Bun.sleep(20)
      }
      expect(status).toBe(401)
    } finally {
      await second.stop()
    }
  })
})

describe('MCP', () => {
  test('a grant of read scopes only gets the read tools', async () => {
    const reader = await connectApp(api, ownerCookie, { scope: 'work_items:read work_items:write' })
    const readOnly = await connectApp(api, ownerCookie, { scope: 'work_items:read projects:read' })
    const names = async (token: string) => {
      const response = await api.request('POST', '/mcp', { key: token, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' }, unchecked: true })
      return (response.body.result.tools as Array<{ name: string; annotations: { readOnlyHint: boolean } }>).map((tool) => tool.name)
    }
    expect(await names(reader.access_token)).toContain('create_work_item')
    const reads = await names(readOnly.access_token)
    expect(reads).toContain('list_work_items')
    expect(reads).not.toContain('create_work_item')
  })
})
