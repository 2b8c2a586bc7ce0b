/** The `auth` plugin: organizations, users, API keys, the Bearer check, the OAuth authorization server and the operator CLI. */
import { randomBytes } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import { onFlags } from '../../src/cli'
import { badRequest } from '../../src/http/errors'
import { definePlugin } from '../../src/plugin'
import { ApiKeyManagerRef, ClientDocumentAgentRef, OAuthServerRef, PeopleRef, SingleSignOnRef, SessionsRef, UserDirectoryRef, UserLifecycleRef, type Revocation, type UserCreatedHook } from './api'
import { AuthenticatorRef } from '../../src/services/identity'
import { KeyAuthenticator } from './authenticator'
import { apiKeys, oauthClients, oauthCodes, oauthGrants, oauthTokens, organizations, sessions, userEmails, userInvitations, users } from './schema'
import { createSessions, purgeSessions } from './sessions'
import { describeError } from '../../src/log'
import { createAccounts, INVALIDATE_CHANNEL, type Invalidation } from './service'
import { listApiKeys, serializeKey, userDirectory } from './views'
import { acceptInvitation, findInvitation, inviteUser, reissueInvitation } from './invitations'
import { findPerson, listPeople, operatorList, organizationNames, updatePerson } from './people'
import { AccessTokens } from './oauth/verifier'
import { createSingleSignOn, OidcProvider } from './oidc'
import { ClientDocuments, documentFetcher } from './oauth/clients'
import { approve, checkAuthorization, connectedApps, deny, disconnect, purgeExpired, scopesFor, type FlowContext } from './oauth/flow'
import { ACCESS_PREFIX, resourceMetadataUrl } from './oauth/model'
import { oauthRoutes } from './oauth/routes'
import { DEFAULT_LOG_N, DEFAULT_PARALLELISM, PasswordHasher } from './password'

const AuthConfig = Type.Object({
  keyCacheTtlSeconds: Type.Integer({
    minimum: 0,
    maximum: 3600,
    default: 30,
    description: 'How long a verified key is trusted before it is re-read (revocations apply at once regardless).',
  }),
  keyCacheMaxEntries: Type.Integer({ minimum: 1, default: 10000 }),
  requestsPerMinute: Type.Integer({ minimum: 0, default: 0, description: 'Per key and instance; 0 turns the limit off.' }),
  maxKeysPerUser: Type.Integer({ minimum: 1, maximum: 10_000, default: 100, description: 'Active (unrevoked, unexpired) API keys one user may hold; one more is 409.' }),
  passwordHashLogN: Type.Integer({ minimum: 10, maximum: 20, default: DEFAULT_LOG_N, description: 'scrypt memory cost, log2(N); a hash holds 2^N KiB (16 MiB at 14).' }),
  passwordHashParallelism: Type.Integer({ minimum: 1, maximum: 16, default: DEFAULT_PARALLELISM, description: "scrypt p: passes over the same memory (OWASP: N=2^14 with p=5 is N=2^17 with p=1's CPU in an eighth of the memory)." }),
  maxConcurrentHashes: Type.Integer({ minimum: 1, maximum: 64, default: 2, description: 'Password hashes running at once in this process (sign-in, user creation); the rest wait.' }),
  hashQueueTimeoutMs: Type.Integer({ minimum: 0, maximum: 60_000, default: 2000, description: 'How long a sign-in waits for a hashing slot before 503 with Retry-After.' }),
  webSessionIdleMinutes: Type.Integer({ minimum: 1, default: 30, description: 'Account pages: signed out after this long without a request.' }),
  webSessionHours: Type.Integer({ minimum: 1, default: 12, description: 'Account pages: signed out this long after signing in, whatever happens.' }),
  mobileSessionIdleDays: Type.Integer({ minimum: 1, default: 30 }),
  mobileSessionDays: Type.Integer({ minimum: 1, default: 90 }),
  oauth: Type.Object(
    {
      accessTokenSeconds: Type.Integer({ minimum: 5, maximum: 86_400, default: 3600, description: 'How long an OAuth access token lives.' }),
      refreshTokenDays: Type.Integer({ minimum: 1, maximum: 365, default: 30, description: 'How long a refresh token stays usable; each use rotates it for a new one.' }),
      registrationsPerHour: Type.Integer({ minimum: 1, default: 20, description: 'Dynamic client registrations per client address an hour; past it 429 with Retry-After.' }),
      maxClients: Type.Integer({ minimum: 1, default: 10_000, description: 'Registered clients in all; when full, clients never approved for 30 days are dropped first, then registration is 503.' }),
      documentCacheSeconds: Type.Integer({ minimum: 0, default: 3600, description: 'How long a client ID metadata document read from its URL is trusted.' }),
      documentMaxBytes: Type.Integer({ minimum: 256, maximum: 1_048_576, default: 10_240, description: 'The largest client ID metadata document read.' }),
      documentTimeoutMs: Type.Integer({ minimum: 100, maximum: 30_000, default: 5000, description: 'How long reading a client ID metadata document may take.' }),
      allowPrivateDocuments: Type.Boolean({ default: false, description: 'Read client ID metadata documents from loopback and private addresses too (tests, closed networks).' }),
    },
    { default: {}, additionalProperties: false, description: 'The OAuth 2.1 authorization server for MCP clients and apps (/oauth/*).' },
  ),
  oidc: Type.Object(
    { providers: Type.Array(OidcProvider, { default: [], description: 'OpenID Connect providers the sign-in page offers ("Sign in with <name>").' }) },
    { default: {}, additionalProperties: false, description: 'Single sign-on to the account area (docs/configuration.md, "Single sign-on").' },
  ),
})

const cliActor = { userId: null, apiKeyId: null, via: 'cli' as const, requestId: null }

/**
 * The scopes of `key create --scopes`: a comma list, where `all` stands for every valid scope
 * (those of the enabled plugins); an unknown one is refused with the list of valid ones.
 */
function requestedScopes(list: string, valid: readonly string[]): string[] {
  const asked = list.split(',').map((scope) => scope.trim()).filter(Boolean)
  if (asked.includes('all')) return [...valid]
  const unknown = asked.filter((scope) => !valid.includes(scope))
  if (unknown.length)
    throw badRequest(`unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.map((scope) => `"${scope}"`).join(', ')}; valid: ${valid.join(', ')}, or all`, 'scopes')
  return asked
}

export default definePlugin({
  name: 'auth',
  description: 'Organizations, users, API keys with scopes, the Bearer check every API v1 route uses, and the OAuth 2.1 authorization server (/oauth/*) for MCP clients and apps.',
  config: AuthConfig,
  tables: { organizations, users, userEmails, apiKeys, sessions, userInvitations, oauthClients, oauthGrants, oauthCodes, oauthTokens },
  placement: {
    organizations: { kind: 'reference', reason: 'The tenants themselves: every distributed row points at one, so every node holds them all.' },
    oauth_clients: {
      kind: 'reference',
      reason: 'OAuth clients register before any organization is known (RFC 7591), and one client serves users of many organizations; bounded in number (auth.oauth.maxClients).',
    },
    user_emails: {
      kind: 'reference',
      reason: 'Sign-in is by email alone, so an email is unique across organizations; this small table is the one place that holds it globally.',
    },
  },
  readModels: { user_directory: 'Users as others may read them: id, organization_id, username, display_name, avatar_url, role, status (never email or password hash).' },

  async setup(context) {
    const { config, db, events, log, services } = context
    const hasher = new PasswordHasher({
      logN: config.passwordHashLogN,
      parallelism: config.passwordHashParallelism,
      maxConcurrent: config.maxConcurrentHashes,
      maxWaitMs: config.hashQueueTimeoutMs,
    })
    // Organization names kept for `/users/me`, forgotten on a rename (below).
    const names = organizationNames(db)
    const authenticator = new KeyAuthenticator(
      db,
      { cacheTtlSeconds: config.keyCacheTtlSeconds, cacheMaxEntries: config.keyCacheMaxEntries, requestsPerMinute: config.requestsPerMinute },
      log,
    )
    // Key revocations drop cached keys; sign-outs and deactivations also go to the sessions' listeners (live streams).
    const revocations = new Set<(revocation: Revocation) => void>()
    const resyncs = new Set<() => void>()
    const accessTokens = new AccessTokens(db, { cacheTtlSeconds: config.keyCacheTtlSeconds, cacheMaxEntries: config.keyCacheMaxEntries }, log)
    authenticator.acceptBearer(ACCESS_PREFIX, (token, door) => accessTokens.verify(token, door))
    await events.subscribe(
      INVALIDATE_CHANNEL,
      (event: Invalidation) => {
        if ('organizationId' in event) return names.forget(event.organizationId)
        authenticator.invalidate(event)
        if ('grantId' in event || 'userId' in event) accessTokens.invalidate(event)
        // A role change only drops cached keys (they carry the role); sessions and their streams go on.
        if ('sessionId' in event || ('userId' in event && !event.roleChanged)) for (const listener of revocations) listener(event)
      },
      () => {
        authenticator.clear()
        accessTokens.clear()
        names.clear()
        for (const resync of resyncs) resync()
      },
    )
    context.onStop(() => authenticator.settle())
    if (context.background) {
      // Ended sessions are kept a day (for support questions), then deleted: sign-ins cannot grow the table without end.
      const purge = setInterval(() => {
        void purgeSessions(db).catch((error) => log.warn('could not purge ended sessions', describeError(error)))
        void purgeExpired(db).catch((error) => log.warn('could not purge expired OAuth codes and tokens', describeError(error)))
      }, 3_600_000)
      purge.unref?.()
      context.onStop(() => clearInterval(purge))
    }
    const sessions = createSessions(
      context.writes,
      {
        idleSeconds: { web: config.webSessionIdleMinutes * 60, mobile: config.mobileSessionIdleDays * 86_400 },
        absoluteSeconds: { web: config.webSessionHours * 3600, mobile: config.mobileSessionDays * 86_400 },
      },
      hasher,
    )
    authenticator.acceptSessions((token) => sessions.authenticate(token, 'mobile'))
    services.provide(AuthenticatorRef, authenticator)
    services.provide(SessionsRef, {
      ...sessions,
      onRevoked(listener, onResync) {
        revocations.add(listener)
        if (onResync) resyncs.add(onResync)
      },
    })
    const hooks: UserCreatedHook[] = []
    services.provide(UserLifecycleRef, { onUserCreated: (hook) => void hooks.push(hook), createdHooks: () => hooks })
    services.provide(UserDirectoryRef, userDirectory)
    const invitations = { writes: context.writes, hasher, hooks }
    services.provide(PeopleRef, {
      list: (actor, query, request) => listPeople(db, actor, query, request),
      invite: (actor, input, origin, request) => inviteUser(invitations, actor, input, origin, request),
      reissue: (actor, userId, origin, request) => reissueInvitation(invitations, actor, userId, origin, request),
      find: (actor, userId) => findPerson(db, actor, userId),
      update: (actor, userId, patch) => updatePerson({ writes: context.writes, events }, actor, userId, patch),
      organization: names.read,
      invitation: (token) => findInvitation(db, token),
      accept: (token, password, requestId) => acceptInvitation({ ...invitations, db }, token, password, requestId),
    })
    const accounts = createAccounts({ writes: context.writes, events, hasher, hooks, knownScopes: new Set(context.scopes.map((scope) => scope.name)), maxKeysPerUser: config.maxKeysPerUser })
    services.provide(ApiKeyManagerRef, {
      create: async (actor, ownerId, input) => {
        const { key, secret } = await accounts.createApiKey(actor, ownerId, input)
        return { key: serializeKey(key), secret }
      },
      revoke: async (actor, ownerId, keyId) => serializeKey(await accounts.revokeApiKey(actor, keyId, ownerId)),
      list: (owner, request) => listApiKeys(db, owner, request),
    })
    const singleSignOn = createSingleSignOn(config.oidc.providers, {
      db,
      writes: context.writes,
      hasher,
      hooks,
      log,
      startSession: (user, requestId) => sessions.start(user, 'web', requestId),
    })
    services.provide(SingleSignOnRef, singleSignOn)
    const flow: FlowContext = {
      writes: context.writes,
      events,
      settings: config.oauth,
      documents: new ClientDocuments(config.oauth, documentFetcher(config.oauth, services.find(ClientDocumentAgentRef))),
      scopes: context.enabledScopes,
    }
    services.provide(OAuthServerRef, {
      check: (params, origin) => checkAuthorization(flow, params, origin),
      scopesFor: (asked, role) => scopesFor(flow.scopes, asked, role),
      approve: (actor, request, chosen, origin) => approve(flow, actor, request, chosen, origin),
      deny,
      connectedApps: (user) => connectedApps(flow, user),
      disconnect: (actor, grantId) => disconnect(flow, actor, grantId),
      resourceMetadataUrl,
    })
    return { accounts, flow }
  },

  routes: (context, { flow }) => oauthRoutes(context, flow),

  cli: {
    setup: {
      description:
        "First run, in one command (with or without the server running): an organization, its superadministrator and an API key with every scope of the enabled plugins, all or nothing; prints the key's secret and the password this once, and what to try next. Refused once the service has users.",
      flags: {
        org: { description: 'Organization name (default: My organization)' },
        email: { description: 'The superadministrator\'s email, their sign-in name (default: admin@example.com)' },
        username: { description: 'Their username (default: admin)' },
        name: { description: 'Their display name (default: Administrator)' },
        password: { description: 'Their password, at least 8 characters (default: a random one, printed this once)' },
      },
      async run(context, flags, { accounts }) {
        const password = flags.password ?? randomBytes(12).toString('base64url')
        const input = {
          organization: { name: flags.org ?? 'My organization' },
          user: { email: flags.email ?? 'admin@example.com', username: flags.username ?? 'admin', displayName: flags.name ?? 'Administrator', role: 'superadministrator', password },
          key: { name: 'setup', scopes: context.scopes.map((scope) => scope.name) },
        }
        const made = await onFlags({ displayName: 'name', name: 'org' }, () => accounts.setUp(cliActor, input))
        const base = `http://localhost:${process.env.PORT || 3000}`
        return {
          organization: { id: made.organization.id, name: made.organization.name },
          user: { id: made.user.id, email: made.user.email, username: made.user.username, role: made.user.role, ...(flags.password ? {} : { password }) },
          key: { id: made.key.id, secret: made.secret, scopes: made.key.scopes },
          ...made.extra,
          next: [
            `curl -H 'Authorization: Bearer ${made.secret}' ${base}/api/v1/users/me`,
            `curl -H 'Authorization: Bearer ${made.secret}' -H 'Content-Type: application/json' -d '{"name":"First project"}' ${base}/api/v1/projects`,
            ...(context.scopes.some((scope) => scope.name === 'users:write')
              ? [`curl -H 'Authorization: Bearer ${made.secret}' -H 'Content-Type: application/json' -d '{"email":"teammate@example.com"}' ${base}/api/v1/users`]
              : []),
            `sign in at ${base}/account as ${made.user.email} to make more keys; invite teammates on its People page (${base}/account/people) or with POST /api/v1/users {"email": …}, which answers the one-time inviteUrl to send them; the API's documentation is at ${base}/docs`,
          ],
        }
      },
    },
    'org create': {
      description: 'Create an organization.',
      flags: { name: { required: true, description: 'Organization name, 1..200 characters' } },
      async run(_context, flags, { accounts }) {
        const organization = await accounts.createOrganization(cliActor, { name: flags.name })
        return { id: organization.id }
      },
    },
    'org update': {
      description: "Change an organization: its name, or whether its users may sign in with a password (false: the account area's form and POST /account/api/sessions refuse passwords).",
      flags: {
        id: { required: true, description: 'Organization id' },
        name: { description: 'Its new name, 1..200 characters' },
        'password-sign-in': { description: 'true | false' },
      },
      async run(_context, flags, { accounts }) {
        const value = flags['password-sign-in']
        if (value !== undefined && value !== 'true' && value !== 'false') throw badRequest('Must be true or false.', 'password-sign-in')
        const input = { ...(flags.name === undefined ? {} : { name: flags.name }), ...(value === undefined ? {} : { passwordSignIn: value === 'true' }) }
        const organization = await onFlags({ passwordSignIn: 'password-sign-in' }, () => accounts.updateOrganization(cliActor, flags.id!, input))
        return { id: organization.id, name: organization.name, passwordSignIn: organization.passwordSignIn }
      },
    },
    'user create': {
      description: 'Create a user (and, with the display plugin, their display account, whose key is printed this once).',
      flags: {
        org: { required: true, description: 'Organization id, the UUID org create printed' },
        email: { required: true, description: 'Email (sign-in name)' },
        username: { required: true, description: 'Username, unique in the organization: letters, digits, ".", "_", "-"' },
        name: { required: true, description: 'Display name' },
        role: { required: true, description: 'member | administrator | superadministrator' },
        password: { required: true, description: 'Password, at least 8 characters' },
      },
      async run(_context, flags, { accounts }) {
        const input = {
          organizationId: flags.org,
          email: flags.email,
          username: flags.username,
          displayName: flags.name,
          role: flags.role,
          password: flags.password,
        }
        const { user, extra } = await onFlags({ organizationId: 'org', displayName: 'name' }, () => accounts.createUser(cliActor, input))
        return { id: user.id, ...extra }
      },
    },
    'user list': {
      description: 'List the users of an organization: id, email, username, role and status, by username.',
      flags: {
        org: { description: 'Organization id (optional when there is only one organization)' },
        status: { description: 'Only users with this status: active | deactivated | invited' },
      },
      async run(context, flags) {
        const { organization, users: rows } = await operatorList(context.db, flags.org, flags.status)
        return { organization, users: rows }
      },
    },
    'user deactivate': {
      description: "Deactivate a user; their keys and sessions stop working at once.",
      flags: { id: { required: true, description: 'User id' } },
      async run(_context, flags, { accounts }) {
        const user = await accounts.deactivateUser(cliActor, flags.id!)
        return { id: user.id, status: user.status }
      },
    },
    'key create': {
      description: 'Create an API key; the secret is printed this once.',
      flags: {
        user: { required: true, description: 'Owner user id' },
        name: { required: true, description: 'Key name' },
        scopes: { required: true, description: 'Comma-separated scopes such as users:read,teams:read, or all: every scope of the enabled plugins' },
        expires: { description: 'Expiry, an ISO 8601 date-time in the future such as 2030-01-01T00:00:00Z; without it the key never expires' },
      },
      async run(context, flags, { accounts }) {
        const scopes = requestedScopes(flags.scopes!, context.scopes.map((scope) => scope.name))
        const input = { name: flags.name, scopes, ...(flags.expires ? { expiresAt: flags.expires } : {}) }
        const { key, secret } = await onFlags({ expiresAt: 'expires', userId: 'user' }, () => accounts.createApiKey(cliActor, flags.user!, input))
        return { id: key.id, secret, prefix: key.prefix, scopes: key.scopes }
      },
    },
    'key revoke': {
      description: 'Revoke an API key; it stops working on every instance at once.',
      flags: { id: { required: true, description: 'Key id' } },
      async run(_context, flags, { accounts }) {
        const key = await accounts.revokeApiKey(cliActor, flags.id!)
        return { id: key.id, revokedAt: key.revokedAt!.toISOString() }
      },
    },
  },
})
