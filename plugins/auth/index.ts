/** The `auth` plugin: organizations, users, API keys, the Bearer check and the operator CLI. */
import { Type, type Static } from '@sinclair/typebox'
import { definePlugin } from '../../src/plugin'
import { ApiKeyManagerRef, AuthenticatorRef, SessionsRef, UserDirectoryRef, UserLifecycleRef, type Revocation, type UserCreatedHook } from '../../src/services/auth'
import { KeyAuthenticator } from './authenticator'
import { apiKeys, organizations, sessions, users } from './schema'
import { createSessions, purgeSessions } from './sessions'
import { describeError } from '../../src/log'
import {
  createApiKey,
  createOrganization,
  createUser,
  deactivateUser,
  requireActiveUser,
  INVALIDATE_CHANNEL,
  listApiKeys,
  revokeApiKey,
  serializeKey,
  type Invalidation,
} from './service'
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
})

/** One password hasher (one hashing gate) per running service, shared by sign-in and user creation. */
const hashers = new WeakMap<object, PasswordHasher>()
function hasherOf(context: { services: object; config: Static<typeof AuthConfig> }): PasswordHasher {
  let hasher = hashers.get(context.services)
  if (!hasher) {
    const { passwordHashLogN, passwordHashParallelism, maxConcurrentHashes, hashQueueTimeoutMs } = context.config
    hasher = new PasswordHasher({ logN: passwordHashLogN, parallelism: passwordHashParallelism, maxConcurrent: maxConcurrentHashes, maxWaitMs: hashQueueTimeoutMs })
    hashers.set(context.services, hasher)
  }
  return hasher
}

const cliActor = { userId: null, apiKeyId: null, via: 'cli' as const, requestId: null }

export default definePlugin({
  name: 'auth',
  description: 'Organizations, users, API keys with scopes, and the Bearer check every API v1 route uses.',
  config: AuthConfig,
  tables: { organizations, users, apiKeys, sessions },

  async setup(context) {
    const authenticator = new KeyAuthenticator(
      context.db,
      {
        cacheTtlSeconds: context.config.keyCacheTtlSeconds,
        cacheMaxEntries: context.config.keyCacheMaxEntries,
        requestsPerMinute: context.config.requestsPerMinute,
      },
      context.log,
    )
    // Key revocations drop cached keys; sign-outs and deactivations also go to the sessions' listeners (live streams).
    const revocations = new Set<(revocation: Revocation) => void>()
    const resyncs = new Set<() => void>()
    await context.events.subscribe(
      INVALIDATE_CHANNEL,
      (event: Invalidation) => {
        authenticator.invalidate(event)
        if ('sessionId' in event || 'userId' in event) for (const listener of revocations) listener(event)
      },
      () => {
        authenticator.clear()
        for (const resync of resyncs) resync()
      },
    )
    context.onStop(() => authenticator.settle())
    if (context.background) {
      // Ended sessions are kept a day (for support questions), then deleted: sign-ins cannot grow the table without end.
      const purge = setInterval(() => void purgeSessions(context.db).catch((error) => context.log.warn('could not purge ended sessions', describeError(error))), 3_600_000)
      purge.unref?.()
      context.onStop(() => clearInterval(purge))
    }
    context.services.provide(AuthenticatorRef, authenticator)
    const { config, db, events } = context
    const sessions = createSessions(
      db,
      {
        idleSeconds: { web: config.webSessionIdleMinutes * 60, mobile: config.mobileSessionIdleDays * 86_400 },
        absoluteSeconds: { web: config.webSessionHours * 3600, mobile: config.mobileSessionDays * 86_400 },
      },
      hasherOf(context),
    )
    context.services.provide(SessionsRef, {
      ...sessions,
      onRevoked(listener, onResync) {
        revocations.add(listener)
        if (onResync) resyncs.add(onResync)
      },
    })
    const knownScopes = new Set(context.scopes.map((scope) => scope.name))
    context.services.provide(ApiKeyManagerRef, {
      create: async (actor, ownerId, input) => {
        const { key, secret } = await createApiKey(db, actor, ownerId, input, knownScopes, config.maxKeysPerUser)
        return { key: serializeKey(key), secret }
      },
      revoke: async (actor, ownerId, keyId) => serializeKey(await revokeApiKey(db, events, actor, keyId, ownerId)),
      list: (ownerId, request) => listApiKeys(db, ownerId, request),
    })
    const hooks: UserCreatedHook[] = []
    context.services.provide(UserDirectoryRef, { requireActiveUser })
    context.services.provide(UserLifecycleRef, { onUserCreated: (hook) => void hooks.push(hook), createdHooks: () => hooks })
  },

  cli: {
    'org create': {
      description: 'Create an organization.',
      flags: { name: { required: true, description: 'Organization name' } },
      async run(context, flags) {
        const organization = await createOrganization(context.db, cliActor, { name: flags.name })
        return { id: organization.id }
      },
    },
    'user create': {
      description: 'Create a user (and, with the display plugin, their display account).',
      flags: {
        org: { required: true, description: 'Organization id' },
        email: { required: true, description: 'Email (sign-in name)' },
        username: { required: true, description: 'Username, unique in the organization' },
        name: { required: true, description: 'Display name' },
        role: { required: true, description: 'member | administrator | superadministrator' },
        password: { required: true, description: 'Password (at least 8 characters)' },
      },
      async run(context, flags) {
        const { user, extra } = await createUser(
          context.db,
          cliActor,
          {
            organizationId: flags.org,
            email: flags.email,
            username: flags.username,
            displayName: flags.name,
            role: flags.role,
            password: flags.password,
          },
          { hasher: hasherOf(context), hooks: context.services.get(UserLifecycleRef).createdHooks() },
        )
        return { id: user.id, ...extra }
      },
    },
    'user deactivate': {
      description: "Deactivate a user; their keys and sessions stop working at once.",
      flags: { id: { required: true, description: 'User id' } },
      async run(context, flags) {
        const user = await deactivateUser(context.db, context.events, cliActor, flags.id!)
        return { id: user.id, status: user.status }
      },
    },
    'key create': {
      description: 'Create an API key; the secret is printed this once.',
      flags: {
        user: { required: true, description: 'Owner user id' },
        name: { required: true, description: 'Key name' },
        scopes: { required: true, description: 'Comma-separated scopes' },
        expires: { description: 'Expiry, ISO 8601 (optional)' },
      },
      async run(context, flags) {
        const scopes = flags.scopes!.split(',').map((scope) => scope.trim()).filter(Boolean)
        const { key, secret } = await createApiKey(
          context.db,
          cliActor,
          flags.user!,
          { name: flags.name, scopes, ...(flags.expires ? { expiresAt: flags.expires } : {}) },
          new Set(context.scopes.map((scope) => scope.name)),
          context.config.maxKeysPerUser,
        )
        return { id: key.id, secret, prefix: key.prefix, scopes: key.scopes }
      },
    },
    'key revoke': {
      description: 'Revoke an API key; it stops working on every instance at once.',
      flags: { id: { required: true, description: 'Key id' } },
      async run(context, flags) {
        const key = await revokeApiKey(context.db, context.events, cliActor, flags.id!)
        return { id: key.id, revokedAt: key.revokedAt!.toISOString() }
      },
    },
  },
})
