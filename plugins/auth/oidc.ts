/**
 * Single sign-on with OpenID Connect providers from config (`auth.oidc.providers`): the
 * authorization code flow with PKCE, `state` and `nonce`, its ID token verified by openid-client
 * (signature from the issuer's JWKS, `iss`, `aud`, `exp`, `nonce`). The user is the one whose
 * email the token (or, when it has none, userinfo) names, only when the provider says it is verified and its domain is allowed,
 * in the provider's organization; with `createUsers`, an unknown verified user is created with
 * `defaultRole`. A matched user gets a normal web session.
 */
import { randomBytes } from 'node:crypto'
import * as client from 'openid-client'
import { Type, type Static } from '@sinclair/typebox'
import { and, eq } from 'drizzle-orm'
import type { Database } from '../../src/db'
import { ApiError, badRequest, forbidden, notFound } from '../../src/http/errors'
import { describeError, type Logger } from '../../src/log'
import type { PrincipalUser } from '../../src/services/identity'
import type { Writes } from '../../src/writes'
import type { StartedSession, UserCreatedHook } from './api'
import type { PasswordHasher } from './password'
import { userEmails, users } from './schema'
import { createUser } from './service'
import { principalUser } from './sessions'
import { USERNAME_MAX } from './model'

export const OidcProvider = Type.Object(
  {
    id: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,39}$', description: 'Its name in URLs: /account/sso/<id> (lower-case letters, digits, "-").' }),
    name: Type.String({ minLength: 1, maxLength: 60, description: 'Shown on the sign-in page: "Sign in with <name>".' }),
    issuer: Type.String({ pattern: '^https?://\\S+$', description: 'The issuer URL (its /.well-known/openid-configuration is read). https; http only on a loopback address (tests).' }),
    clientId: Type.String({ minLength: 1 }),
    clientSecret: Type.String({ minLength: 1, writeOnly: true }),
    organizationId: Type.String({ format: 'uuid', description: "The organization whose users sign in with it." }),
    allowedDomains: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: 'Only e-mail addresses of these domains are matched (default: any).' })),
    createUsers: Type.Boolean({ default: false, description: 'Create an unknown verified user in the organization (else they are refused).' }),
    defaultRole: Type.Union([Type.Literal('member'), Type.Literal('administrator')], { default: 'member', description: 'The role of users it creates.' }),
  },
  { additionalProperties: false },
)
export type OidcProviderConfig = Static<typeof OidcProvider>

/** What the browser keeps between the redirect to the provider and its return (a cookie: HttpOnly, SameSite=Lax, 10 minutes). */
export interface SsoFlow {
  provider: string
  state: string
  nonce: string
  verifier: string
  next: string | undefined
}

export const SSO_COOKIE = 'wt_sso'
export const SSO_FLOW_SECONDS = 600

const LOOPBACK = /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(:\d+)?(\/|$)/

/** The callback path of a provider (the redirect URI to register with it, under the origin). */
export const callbackPath = (id: string) => `/account/sso/${id}/callback`

/** A refusal said on the sign-in page (403): never which users exist. */
const refused = (message: string) => forbidden(message)

export interface SingleSignOnDeps {
  db: Database
  writes: Writes
  hasher: PasswordHasher
  hooks: readonly UserCreatedHook[]
  log: Logger
  startSession(user: PrincipalUser, requestId: string | null): Promise<StartedSession>
}

export function createSingleSignOn(providers: readonly OidcProviderConfig[], deps: SingleSignOnDeps) {
  const byId = new Map(providers.map((provider) => [provider.id, provider]))
  const configurations = new Map<string, Promise<client.Configuration>>()

  /** The provider's discovered configuration, read once (again after a failure). */
  function configurationOf(provider: OidcProviderConfig): Promise<client.Configuration> {
    let found = configurations.get(provider.id)
    if (!found) {
      const insecure = LOOPBACK.test(provider.issuer)
      // enableNonRepudiationChecks: the ID token's signature is checked against the issuer's JWKS
      // even though it came straight from the token endpoint (openid-client otherwise trusts TLS alone).
      found = client.discovery(new URL(provider.issuer), provider.clientId, undefined, client.ClientSecretPost(provider.clientSecret), {
        execute: [...(insecure ? [client.allowInsecureRequests] : []), client.enableNonRepudiationChecks],
      })
      found.catch((error) => {
        configurations.delete(provider.id)
        deps.log.warn('could not read an identity provider\'s configuration', { provider: provider.id, ...describeError(error) })
      })
      configurations.set(provider.id, found)
    }
    return found
  }

  function providerOf(id: string): OidcProviderConfig {
    const provider = byId.get(id)
    if (!provider) throw notFound('There is no such sign-in provider.')
    return provider
  }

  /** The user an ID token's claims name in the provider's organization, created when allowed; refused otherwise. */
  async function userOf(provider: OidcProviderConfig, claims: client.IDToken): Promise<PrincipalUser> {
    const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : ''
    if (!email) throw refused('The identity provider gave no e-mail address.')
    if (claims.email_verified !== true) throw refused('The identity provider does not say this e-mail address is verified.')
    const domain = email.slice(email.lastIndexOf('@') + 1)
    if (provider.allowedDomains && !provider.allowedDomains.some((allowed) => allowed.toLowerCase() === domain))
      throw refused(`Addresses of ${domain} may not sign in with ${provider.name}.`)
    const [claim] = await deps.db.select({ userId: userEmails.userId, organizationId: userEmails.organizationId }).from(userEmails).where(eq(userEmails.email, email))
    if (claim && claim.organizationId === provider.organizationId) {
      const [user] = await deps.db.select().from(users).where(and(eq(users.id, claim.userId), eq(users.organizationId, claim.organizationId)))
      if (user?.status === 'active') return principalUser(user)
      if (user?.status === 'invited') throw refused('Your invitation is not accepted yet: open its link first.')
      throw refused(`No active account for ${email}; ask an administrator.`)
    }
    if (claim || !provider.createUsers) throw refused(`No account for ${email} here; ask an administrator to invite you.`)
    return createFrom(provider, email, claims)
  }

  /** A new user for a verified e-mail address: a username from its local part (made unique), an unusable random password. */
  async function createFrom(provider: OidcProviderConfig, email: string, claims: client.IDToken): Promise<PrincipalUser> {
    const base = (email.slice(0, email.lastIndexOf('@')).replace(/[^A-Za-z0-9_.-]/g, '').replace(/^[^A-Za-z0-9]+/, '') || 'user').slice(0, USERNAME_MAX - 6)
    const name = typeof claims.name === 'string' && claims.name.trim() ? claims.name.trim().slice(0, 200) : base
    const actor = { userId: null, apiKeyId: null, via: 'account' as const, requestId: null }
    for (let attempt = 0; attempt < 5; attempt++) {
      const username = attempt === 0 ? base : `${base}-${randomBytes(3).toString('hex').slice(0, 5)}`
      try {
        const { user } = await createUser(
          deps.writes,
          actor,
          { organizationId: provider.organizationId, email, username, displayName: name, role: provider.defaultRole, password: randomBytes(32).toString('base64url') },
          { hasher: deps.hasher, hooks: deps.hooks },
        )
        return principalUser(user)
      } catch (error) {
        // The same person's first sign-in twice at once: the other made the user.
        if (error instanceof ApiError && error.status === 409 && error.field === 'email') return userOf(provider, claims)
        if (!(error instanceof ApiError && error.status === 409 && error.field === 'username')) throw error
      }
    }
    throw refused('Could not choose a username for you; ask an administrator.')
  }

  return {
    /** The providers the sign-in page offers. */
    providers: () => providers.map(({ id, name }) => ({ id, name })),

    /** Starts a sign-in: where to send the browser, and the flow it keeps. */
    async start(id: string, origin: string, next: string | undefined): Promise<{ redirect: string; flow: SsoFlow }> {
      const provider = providerOf(id)
      let configuration: client.Configuration
      try {
        configuration = await configurationOf(provider)
      } catch {
        throw new ApiError(503, 'UNAVAILABLE', `${provider.name} cannot be reached right now; try again later.`, undefined, { 'retry-after': '30' })
      }
      const flow = { provider: id, state: client.randomState(), nonce: client.randomNonce(), verifier: client.randomPKCECodeVerifier(), next }
      const url = client.buildAuthorizationUrl(configuration, {
        redirect_uri: origin + callbackPath(id),
        scope: 'openid email profile',
        response_type: 'code',
        state: flow.state,
        nonce: flow.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(flow.verifier),
        code_challenge_method: 'S256',
      })
      return { redirect: url.toString(), flow }
    },

    /**
     * The provider's answer at the callback (`currentUrl`, with its code and state): the ID token
     * verified against the flow, the user matched (or created), a web session started.
     */
    async finish(id: string, currentUrl: URL, flow: SsoFlow | undefined, requestId: string | null): Promise<StartedSession & { next: string | undefined }> {
      const provider = providerOf(id)
      if (!flow || flow.provider !== id) throw badRequest('This sign-in expired or began in another browser; start again.')
      if (currentUrl.searchParams.has('error')) throw refused(`${provider.name} did not sign you in (${currentUrl.searchParams.get('error')!.slice(0, 100)}).`)
      let claims: client.IDToken | undefined
      try {
        const configuration = await configurationOf(provider)
        const tokens = await client.authorizationCodeGrant(configuration, currentUrl, {
          pkceCodeVerifier: flow.verifier,
          expectedState: flow.state,
          expectedNonce: flow.nonce,
          idTokenExpected: true,
        })
        claims = tokens.claims()
        // A provider may give the e-mail claims at userinfo only (OpenID Connect Core 5.4, when an
        // access token is issued): read there, for the ID token's subject (openid-client checks it).
        if (claims && (claims.email === undefined || claims.email_verified === undefined)) {
          const info = await client.fetchUserInfo(configuration, tokens.access_token, claims.sub)
          claims = { ...claims, email: claims.email ?? info.email, email_verified: claims.email_verified ?? info.email_verified, name: claims.name ?? info.name }
        }
      } catch (error) {
        deps.log.warn('single sign-on refused', { provider: id, ...describeError(error) })
        throw refused(`The answer of ${provider.name} could not be verified; start again.`)
      }
      if (!claims) throw refused(`${provider.name} sent no ID token.`)
      const user = await userOf(provider, claims)
      return { ...(await deps.startSession(user, requestId)), next: flow.next }
    },
  }
}

export type SingleSignOn = ReturnType<typeof createSingleSignOn>

/** The flow as its cookie holds it, and back (a malformed cookie is no flow). */
export const encodeFlow = (flow: SsoFlow) => Buffer.from(JSON.stringify(flow)).toString('base64url')
export function decodeFlow(value: string | undefined): SsoFlow | undefined {
  if (!value || value.length > 4096) return undefined
  try {
    const parsed = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as SsoFlow
    return typeof parsed.provider === 'string' &&
      typeof parsed.state === 'string' &&
      typeof parsed.nonce === 'string' &&
      typeof parsed.verifier === 'string' &&
      (parsed.next === undefined || parsed.next === null || typeof parsed.next === 'string')
      ? { ...parsed, next: parsed.next ?? undefined }
      : undefined
  } catch {
    return undefined
  }
}
