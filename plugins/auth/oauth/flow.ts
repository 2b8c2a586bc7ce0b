/**
 * The authorization code flow (OAuth 2.1: PKCE S256 only): the authorization request's checks,
 * the grant and its one-time code on consent, the token endpoint's code and refresh exchanges
 * (refresh tokens rotate; a used one presented again revokes the grant), revocation (RFC 7009),
 * and the grants a user sees in "Connected apps". Codes and tokens are routed secrets: each
 * lookup names its organization. Every write is one transaction; grants' creation and revocation
 * are audited with it.
 */
import { createHash } from 'node:crypto'
import { queryText, type Executor, type Transaction } from '../../../src/db'
import type { EventBus } from '../../../src/events'
import type { Writes } from '../../../src/writes'
import { notFound } from '../../../src/http/errors'
import { generateRoutedSecret, hashSecret, routeOfSecret } from '../../../src/secrets'
import { writeAudit, type AuditActor } from '../../../src/audit'
import { uuidv7 } from '../../../src/ids'
import type { Actor, Door, PrincipalUser } from '../../../src/services/identity'
import type { ScopeDefinition } from '../../../src/plugin'
import { INVALIDATE_CHANNEL, type Invalidation } from '../service'
import { clientApproved, findClient, type ClientDocuments, type OAuthClient } from './clients'
import { ACCESS_PREFIX, CODE_PREFIX, CODE_SECONDS, doorOfResource, invalidGrant, OAuthError, REFRESH_PREFIX, type OAuthSettings } from './model'

/** What the consent page shows and its form carries back: the request, checked. */
export interface AuthorizationRequest {
  client: OAuthClient
  redirectUri: string
  state: string | undefined
  codeChallenge: string
  /** The scopes asked for (all the offered ones when the client named none). */
  scopes: string[]
  audience: Door | null
}

/** The outcome of checking an authorization request. */
export type Checked =
  | { ok: true; request: AuthorizationRequest }
  /** Unknown client or redirect URI: said to the user, never sent to the URI (RFC 6749 §4.1.2.1). */
  | { ok: false; fatal: string }
  /** Any other fault: sent back to the client's redirect URI. */
  | { ok: false; redirect: string }

const STATE_MAX = 1000
const PKCE = /^[A-Za-z0-9\-._~]{43,128}$/
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/

const one = (value: unknown): string | undefined => (typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : undefined)

/** The redirect back to the client with `values` (and `iss`, RFC 9207), its own query kept. */
export function redirectTo(uri: string, values: Record<string, string | undefined>, issuer: string): string {
  const url = new URL(uri)
  for (const [name, value] of Object.entries({ ...values, iss: issuer })) if (value !== undefined) url.searchParams.set(name, value)
  return url.toString()
}

export interface FlowContext {
  writes: Writes
  /** Revocations are published in their transaction (every instance) and emitted here after it commits (this one, at once). */
  events: EventBus
  settings: OAuthSettings
  /** Client ID metadata documents, as this instance reads and remembers them. */
  documents: ClientDocuments
  /** The scopes of the enabled plugins: what a client may ask for. */
  scopes: readonly ScopeDefinition[]
}

/** Checks an authorization request's parameters (the query of /oauth/authorize, or the consent form's copy of it). */
export async function checkAuthorization(flow: FlowContext, params: Record<string, unknown>, origin: string): Promise<Checked> {
  const clientId = one(params.client_id)
  const client = clientId ? await findClient(flow.writes.db, flow.documents, clientId) : undefined
  if (!client) return { ok: false, fatal: clientId ? 'This app is not registered here (unknown client_id), or its client metadata document could not be read.' : 'The request names no client (client_id).' }
  const asked = one(params.redirect_uri)
  const redirectUri = asked ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined)
  if (!redirectUri || !client.redirectUris.includes(redirectUri))
    return { ok: false, fatal: asked ? 'The redirect URI is not one this app registered (they must match exactly).' : 'The request names no redirect URI (redirect_uri), and this app registered more than one.' }
  const state = one(params.state)
  const refuse = (error: string, description: string): Checked => ({ ok: false, redirect: redirectTo(redirectUri, { error, error_description: description, state: state && state.length <= STATE_MAX ? state : undefined }, origin) })
  if (state !== undefined && state.length > STATE_MAX) return refuse('invalid_request', `state is at most ${STATE_MAX} characters.`)
  if (one(params.response_type) !== 'code') return refuse('unsupported_response_type', 'Only the authorization code flow (response_type=code) is supported.')
  const challenge = one(params.code_challenge)
  if (!challenge || one(params.code_challenge_method) !== 'S256' || !CHALLENGE.test(challenge))
    return refuse('invalid_request', 'PKCE is required: code_challenge (base64url SHA-256 of the verifier) with code_challenge_method=S256.')
  const offered = flow.scopes.map((scope) => scope.name)
  const scopeParam = one(params.scope)?.trim()
  const scopes = scopeParam ? [...new Set(scopeParam.split(/\s+/))] : offered
  const unknown = scopes.filter((scope) => !offered.includes(scope))
  if (unknown.length) return refuse('invalid_scope', `Unknown scope(s): ${unknown.slice(0, 10).join(' ')}.`)
  const resource = one(params.resource)
  const audience = resource === undefined ? null : doorOfResource(origin, resource)
  if (audience === undefined) return refuse('invalid_target', `resource is ${origin}/mcp or ${origin}/api/v1.`)
  return { ok: true, request: { client, redirectUri, state, codeChallenge: challenge, scopes, audience } }
}

/** The scopes of `asked` the user's role may hold, and those it may not (dropped from the grant). */
export function scopesFor(scopes: readonly ScopeDefinition[], asked: readonly string[], role: PrincipalUser['role']) {
  const administrator = role === 'administrator' || role === 'superadministrator'
  const only = new Set(scopes.filter((scope) => scope.administratorsOnly).map((scope) => scope.name))
  return { allowed: asked.filter((scope) => administrator || !only.has(scope)), refused: asked.filter((scope) => !administrator && only.has(scope)) }
}

const grantAudit = (action: 'oauth.grant.created' | 'oauth.grant.revoked', grant: { id: string; clientId: string; clientName: string; scopes: string[]; audience: string | null }, reason?: string) => ({
  action,
  resourceType: 'oauth_grant',
  resourceId: grant.id,
  changes: {
    [action === 'oauth.grant.created' ? 'after' : 'before']: { clientId: grant.clientId, clientName: grant.clientName, scopes: grant.scopes, audience: grant.audience },
    ...(reason ? { after: { revokedReason: reason } } : {}),
  },
})

/**
 * On consent: the grant (the scopes chosen of those asked, less those the role cannot hold) and
 * its code, audited; answers the redirect carrying the code. No scope left: `access_denied`.
 */
export async function approve(flow: FlowContext, actor: Actor, request: AuthorizationRequest, chosen: readonly string[], origin: string): Promise<string> {
  const { allowed } = scopesFor(flow.scopes, request.scopes.filter((scope) => chosen.includes(scope)), actor.role)
  if (!allowed.length) return redirectTo(request.redirectUri, { error: 'access_denied', error_description: 'No scope was granted.', state: request.state }, origin)
  const code = generateRoutedSecret(CODE_PREFIX, actor.organizationId)
  await flow.writes.change(actor, null, async ({ tx, audit }) => {
    const [grant] = await queryText<{ id: string }>(
      tx,
      `insert into oauth_grants (id, organization_id, user_id, client_id, client_name, redirect_uri, scopes, audience)
       values ($8, $1, $2, $3, $4, $5, $6::text[], $7) returning id`,
      [actor.organizationId, actor.userId, request.client.id, request.client.name, request.redirectUri, allowed, request.audience, uuidv7()],
    )
    await queryText(
      tx,
      `insert into oauth_codes (code_hash, organization_id, grant_id, code_challenge, redirect_uri, expires_at) values ($1, $2, $3, $4, $5, $6::timestamptz)`,
      [hashSecret(code), actor.organizationId, grant!.id, request.codeChallenge, request.redirectUri, new Date(Date.now() + CODE_SECONDS * 1000).toISOString()],
    )
    await audit(grantAudit('oauth.grant.created', { id: grant!.id, clientId: request.client.id, clientName: request.client.name, scopes: allowed, audience: request.audience }))
  })
  await clientApproved(flow.writes.db, request.client)
  return redirectTo(request.redirectUri, { code, state: request.state }, origin)
}

/** The denial's redirect (RFC 6749 §4.1.2.1 `access_denied`). */
export const deny = (request: AuthorizationRequest, origin: string) =>
  redirectTo(request.redirectUri, { error: 'access_denied', error_description: 'The user denied the request.', state: request.state }, origin)

interface GrantRow {
  id: string
  organizationId: string
  userId: string
  clientId: string
  clientName: string
  scopes: string[]
  audience: Door | null
  revokedAt: Date | null
  userActive: boolean
}

const GRANT_COLUMNS = `g.id, g.organization_id as "organizationId", g.user_id as "userId", g.client_id as "clientId", g.client_name as "clientName", g.scopes, g.audience, g.revoked_at as "revokedAt"`

/**
 * Revokes a grant (its tokens and codes deleted), audited and published to every instance; false
 * when it already was. The caller calls `revoked` after the commit (this instance's cache).
 */
async function revokeGrant(flow: FlowContext, tx: Transaction, grant: GrantRow, reason: string, audit: (entry: ReturnType<typeof grantAudit>) => Promise<void>): Promise<boolean> {
  const rows = await queryText(
    tx,
    `update oauth_grants set revoked_at = $3::timestamptz, revoked_reason = $4 where id = $1 and organization_id = $2 and revoked_at is null returning id`,
    [grant.id, grant.organizationId, new Date().toISOString(), reason],
  )
  if (!rows.length) return false
  await queryText(tx, `delete from oauth_tokens where grant_id = $1 and organization_id = $2`, [grant.id, grant.organizationId])
  await queryText(tx, `delete from oauth_codes where grant_id = $1 and organization_id = $2`, [grant.id, grant.organizationId])
  await flow.events.publish(tx, INVALIDATE_CHANNEL, { grantId: grant.id } satisfies Invalidation)
  await audit(grantAudit('oauth.grant.revoked', grant, reason))
  return true
}

/** After a revocation's commit: this instance drops the grant's cached tokens at once. */
const revoked = (flow: FlowContext, grantId: string | undefined) => {
  if (grantId) flow.events.emitLocally(INVALIDATE_CHANNEL, { grantId } satisfies Invalidation)
}

/** The actor of what the service does to a grant on a client's request (reuse detection, RFC 7009): the grant's user, via OAuth. */
const grantActor = (grant: GrantRow, requestId: string): AuditActor => ({ organizationId: grant.organizationId, userId: grant.userId, apiKeyId: null, grantId: grant.id, via: 'oauth', requestId })

export interface TokenAnswer {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token: string
  scope: string
}

/** A new access and refresh token of the grant, in `tx`. */
async function issue(tx: Executor, flow: FlowContext, grant: GrantRow): Promise<TokenAnswer> {
  const access = generateRoutedSecret(ACCESS_PREFIX, grant.organizationId)
  const refresh = generateRoutedSecret(REFRESH_PREFIX, grant.organizationId)
  const now = Date.now()
  await queryText(
    tx,
    `insert into oauth_tokens (token_hash, organization_id, grant_id, kind, expires_at) values ($1, $3, $4, 'access', $5::timestamptz), ($2, $3, $4, 'refresh', $6::timestamptz)`,
    [hashSecret(access), hashSecret(refresh), grant.organizationId, grant.id, new Date(now + flow.settings.accessTokenSeconds * 1000).toISOString(), new Date(now + flow.settings.refreshTokenDays * 86_400_000).toISOString()],
  )
  await queryText(tx, `update oauth_grants set last_used_at = $3::timestamptz where id = $1 and organization_id = $2`, [grant.id, grant.organizationId, new Date(now).toISOString()])
  return { access_token: access, token_type: 'Bearer', expires_in: flow.settings.accessTokenSeconds, refresh_token: refresh, scope: grant.scopes.join(' ') }
}

const pkceMatches = (verifier: string, challenge: string) => PKCE.test(verifier) && createHash('sha256').update(verifier).digest('base64url') === challenge

/**
 * The token endpoint (form fields as parsed): `authorization_code` with PKCE, or `refresh_token`.
 * A used code or refresh token presented again revokes its grant (committed, then `invalid_grant`).
 */
export async function exchange(flow: FlowContext, fields: Record<string, unknown>, origin: string, requestId: string): Promise<TokenAnswer> {
  const grantType = one(fields.grant_type)
  const clientId = one(fields.client_id)
  if (grantType !== 'authorization_code' && grantType !== 'refresh_token')
    throw new OAuthError(400, grantType ? 'unsupported_grant_type' : 'invalid_request', 'grant_type is authorization_code or refresh_token.')
  if (!clientId) throw new OAuthError(400, 'invalid_request', 'client_id is required (public clients identify themselves).')
  const resource = one(fields.resource)
  const audience = resource === undefined ? undefined : doorOfResource(origin, resource)
  if (resource !== undefined && audience === undefined) throw new OAuthError(400, 'invalid_target', `resource is ${origin}/mcp or ${origin}/api/v1.`)
  const secret = one(grantType === 'authorization_code' ? fields.code : fields.refresh_token)
  if (!secret) throw invalidRequest(grantType === 'authorization_code' ? 'code is required.' : 'refresh_token is required.')
  const organizationId = routeOfSecret(grantType === 'authorization_code' ? CODE_PREFIX : REFRESH_PREFIX, secret)
  const unknown = grantType === 'authorization_code' ? 'The code is invalid, used or expired.' : 'The refresh token is invalid, used or expired.'
  if (!organizationId) throw invalidGrant(unknown)

  let failure: OAuthError | undefined
  let revokedGrant: string | undefined
  const answer = await flow.writes.db.transaction(async (tx) => {
    const hash = hashSecret(secret)
    const [row] =
      grantType === 'authorization_code'
        ? await queryText<GrantRow & { usedAt: Date | null; expired: boolean; redirectUri: string; challenge: string }>(
            tx,
            `select ${GRANT_COLUMNS}, u.status = 'active' as "userActive", c.used_at as "usedAt", c.expires_at <= now() as expired, c.redirect_uri as "redirectUri", c.code_challenge as challenge
               from oauth_codes c join oauth_grants g on g.id = c.grant_id and g.organization_id = c.organization_id
               join users u on u.id = g.user_id and u.organization_id = g.organization_id
              where c.code_hash = $1 and c.organization_id = $2 for update of c`,
            [hash, organizationId],
          )
        : await queryText<GrantRow & { usedAt: Date | null; expired: boolean; redirectUri: string; challenge: string }>(
            tx,
            `select ${GRANT_COLUMNS}, u.status = 'active' as "userActive", t.used_at as "usedAt", t.expires_at <= now() as expired, g.redirect_uri as "redirectUri", '' as challenge
               from oauth_tokens t join oauth_grants g on g.id = t.grant_id and g.organization_id = t.organization_id
               join users u on u.id = g.user_id and u.organization_id = g.organization_id
              where t.token_hash = $1 and t.organization_id = $2 and t.kind = 'refresh' for update of t`,
            [hash, organizationId],
          )
    if (!row || row.revokedAt || row.clientId !== clientId) return void (failure = invalidGrant(unknown))
    if (row.usedAt) {
      // Presented again: whoever holds it, the grant is no longer safe. Revoked, committed, refused.
      const actor = grantActor(row, requestId)
      if (await revokeGrant(flow, tx, row, grantType === 'authorization_code' ? 'code_reused' : 'refresh_token_reused', (entry) => writeAudit(tx, actor, entry))) revokedGrant = row.id
      return void (failure = invalidGrant(`${unknown} It was used before, so every token of this grant is revoked.`))
    }
    if (row.expired || !row.userActive) return void (failure = invalidGrant(unknown))
    if (grantType === 'authorization_code') {
      if (one(fields.redirect_uri) !== row.redirectUri) return void (failure = invalidGrant('redirect_uri must be the one of the authorization request.'))
      const verifier = one(fields.code_verifier)
      if (!verifier || !pkceMatches(verifier, row.challenge)) return void (failure = invalidGrant('code_verifier does not match the code_challenge (PKCE S256).'))
    }
    if (audience !== undefined && row.audience !== null && row.audience !== audience) return void (failure = new OAuthError(400, 'invalid_target', 'The grant is for another resource.'))
    if (grantType === 'authorization_code')
      await queryText(tx, `update oauth_codes set used_at = $3::timestamptz where code_hash = $1 and organization_id = $2`, [hash, organizationId, new Date().toISOString()])
    else await queryText(tx, `update oauth_tokens set used_at = $3::timestamptz where token_hash = $1 and organization_id = $2`, [hash, organizationId, new Date().toISOString()])
    return issue(tx, flow, row)
  })
  revoked(flow, revokedGrant)
  if (failure) throw failure
  return answer!
}

function invalidRequest(description: string) {
  return new OAuthError(400, 'invalid_request', description)
}

/**
 * RFC 7009: an access or refresh token's grant revoked, every token of it with it. Unknown,
 * malformed or another client's tokens change nothing, and the answer is the same.
 */
export async function revokeToken(flow: FlowContext, fields: Record<string, unknown>, requestId: string): Promise<void> {
  const token = one(fields.token)
  if (!token) throw invalidRequest('token is required.')
  const clientId = one(fields.client_id)
  const access = routeOfSecret(ACCESS_PREFIX, token)
  const organizationId = access ?? routeOfSecret(REFRESH_PREFIX, token)
  if (!organizationId) return
  let revokedGrant: string | undefined
  await flow.writes.db.transaction(async (tx) => {
    const [row] = await queryText<GrantRow>(
      tx,
      `select ${GRANT_COLUMNS} from oauth_tokens t join oauth_grants g on g.id = t.grant_id and g.organization_id = t.organization_id
        where t.token_hash = $1 and t.organization_id = $2 for update of g`,
      [hashSecret(token), organizationId],
    )
    if (!row || (clientId !== undefined && clientId !== row.clientId)) return
    const actor = grantActor(row, requestId)
    if (await revokeGrant(flow, tx, row, 'client', (entry) => writeAudit(tx, actor, entry))) revokedGrant = row.id
  })
  revoked(flow, revokedGrant)
}

/** A grant as "Connected apps" lists it. */
export interface ConnectedApp {
  id: string
  clientId: string
  clientName: string
  redirectHost: string
  scopes: string[]
  audience: Door | null
  createdAt: string
  lastUsedAt: string | null
}

/** The user's live grants, newest first. */
export async function connectedApps(flow: FlowContext, user: PrincipalUser): Promise<ConnectedApp[]> {
  const rows = await queryText<{ id: string; clientId: string; clientName: string; redirectUri: string; scopes: string[]; audience: Door | null; createdAt: Date; lastUsedAt: Date | null }>(
    flow.writes.db,
    `select id, client_id as "clientId", client_name as "clientName", redirect_uri as "redirectUri", scopes, audience, created_at as "createdAt", last_used_at as "lastUsedAt"
       from oauth_grants where user_id = $1 and organization_id = $2 and revoked_at is null order by created_at desc, id desc limit 200`,
    [user.id, user.organizationId],
  )
  return rows.map((row) => ({
    id: row.id,
    clientId: row.clientId,
    clientName: row.clientName,
    redirectHost: new URL(row.redirectUri).host,
    scopes: row.scopes,
    audience: row.audience,
    createdAt: new Date(row.createdAt).toISOString(),
    lastUsedAt: row.lastUsedAt ? new Date(row.lastUsedAt).toISOString() : null,
  }))
}

/** The user revokes one of their grants ("Connected apps"); 404 for anyone else's or an unknown one. */
export async function disconnect(flow: FlowContext, actor: Actor, grantId: string): Promise<void> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(grantId)) throw notFound('No such connected app.')
  await flow.writes.change(actor, null, async ({ tx, audit }) => {
    const [row] = await queryText<GrantRow>(
      tx,
      `select ${GRANT_COLUMNS} from oauth_grants g where g.id = $1 and g.organization_id = $2 and g.user_id = $3 and g.revoked_at is null for update`,
      [grantId, actor.organizationId, actor.userId],
    )
    if (!row) throw notFound('No such connected app.')
    await revokeGrant(flow, tx, row, 'user', audit)
  })
  revoked(flow, grantId)
}

/** Deletes codes and tokens past their end (and a day of grace), every organization, no row locks. */
export async function purgeExpired(executor: Executor): Promise<void> {
  await queryText(executor, `delete from oauth_codes where expires_at < now() - interval '1 day'`, [])
  await queryText(executor, `delete from oauth_tokens where expires_at < now() - interval '1 day'`, [])
}
