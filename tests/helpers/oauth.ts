/**
 * OAuth in tests: a PKCE pair, a registered client, and the browser's part of the authorization
 * code flow (the consent page read and its form posted with a web session's cookie), through the
 * service's own doors.
 */
import { createHash, randomBytes } from 'node:crypto'
import { expect } from 'bun:test'
import type { TestService } from './service'

export const pkcePair = () => {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

export const REDIRECT = 'http://127.0.0.1:8976/callback'

let registrations = 0

/** Registers a public client (RFC 7591) from an address of its own (the per-address bound is tested apart); its client_id. */
export async function registerClient(api: TestService, body: Record<string, unknown> = {}, ip = `10.77.${(++registrations >> 8) & 255}.${registrations & 255}`): Promise<string> {
  const response = await api.service.fetch(
    new Request('http://localhost/oauth/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'Test assistant', redirect_uris: [REDIRECT], ...body }) }),
    { ip },
  )
  expect(response.status).toBe(201)
  return ((await response.json()) as { client_id: string }).client_id
}

export interface Authorization {
  clientId: string
  redirectUri?: string
  challenge: string
  scope?: string
  resource?: string
  state?: string
}

export const authorizeQuery = (request: Authorization) =>
  new URLSearchParams({
    response_type: 'code',
    client_id: request.clientId,
    redirect_uri: request.redirectUri ?? REDIRECT,
    code_challenge: request.challenge,
    code_challenge_method: 'S256',
    state: request.state ?? 'st-1',
    ...(request.scope ? { scope: request.scope } : {}),
    ...(request.resource ? { resource: request.resource } : {}),
  })

/** GET with the cookie, not following redirects. */
export const browse = (api: TestService, url: string, cookie: string) => api.service.fetch(new Request(new URL(url, 'http://localhost'), { headers: { cookie }, redirect: 'manual' }))

/** The consent form's hidden fields and offered scopes, read from its page. */
export function consentForm(page: string): { fields: URLSearchParams; offered: string[] } {
  const fields = new URLSearchParams()
  for (const match of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) fields.append(match[1]!, decodeEntities(match[2]!))
  const offered = [...page.matchAll(/<input type="checkbox" name="scopes" value="([^"]+)"/g)].map((match) => match[1]!)
  return { fields, offered }
}

const decodeEntities = (text: string) => text.replace(/&(amp|lt|gt|quot|#39|#96);/g, (_, name) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#96': '`' })[name as string]!)

/**
 * The user's browser at an authorization URL: /oauth/authorize, the consent page, then the form
 * posted with `decision` and the scopes chosen (default: every one offered). The final redirect's URL.
 */
export async function consent(api: TestService, authorizationUrl: string, cookie: string, options: { decision?: 'approve' | 'deny'; scopes?: string[] } = {}): Promise<URL> {
  const site = new URL(authorizationUrl, 'http://localhost').origin
  const start = await browse(api, authorizationUrl, cookie)
  expect(start.status).toBe(302)
  const consentPath = start.headers.get('location')!
  expect(consentPath.startsWith('/account/authorize?')).toBe(true)
  const page = await browse(api, site + consentPath, cookie)
  expect(page.status).toBe(200)
  const { fields, offered } = consentForm(await page.text())
  fields.set('decision', options.decision ?? 'approve')
  for (const scope of options.scopes ?? offered) fields.append('scopes', scope)
  const posted = await api.service.fetch(
    new Request(`${site}/account/authorize`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: fields, redirect: 'manual' }),
  )
  expect(posted.status).toBe(303)
  return new URL(posted.headers.get('location')!)
}

/** Posts a form to the token endpoint; status and JSON. */
export async function tokenRequest(api: TestService, fields: Record<string, string>, path = '/oauth/token'): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await api.service.fetch(new Request(`http://localhost${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) }))
  return { status: response.status, body: await response.json(), headers: response.headers }
}

/** Registers, consents and exchanges: the tokens of a new grant for the cookie's user. */
export async function connectApp(api: TestService, cookie: string, options: { scope?: string; resource?: string } = {}) {
  const clientId = await registerClient(api)
  const { verifier, challenge } = pkcePair()
  const back = await consent(api, `/oauth/authorize?${authorizeQuery({ clientId, challenge, ...options })}`, cookie)
  const code = back.searchParams.get('code')!
  const exchanged = await tokenRequest(api, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier, ...(options.resource ? { resource: options.resource } : {}) })
  expect(exchanged.status).toBe(200)
  return { clientId, ...(exchanged.body as { access_token: string; refresh_token: string; scope: string; expires_in: number }) }
}
