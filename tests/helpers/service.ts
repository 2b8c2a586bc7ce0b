/**
 * A running service for one test file, on its own fresh database, with the plugins it asks for,
 * plus a request helper and fixtures (organizations, users, keys) made through the real services.
 */
import { registry as defaultRegistry } from '../../plugins'
import { PasswordHasher } from '../../plugins/auth/password'
import { createApiKey, createOrganization, createUser, deactivateUser, revokeApiKey } from '../../plugins/auth/service'
import { createService, type Service, type ServiceOptions } from '../../src/app'
import { loadConfig } from '../../src/config'
import { createLogger } from '../../src/log'
import type { AnyPlugin } from '../../src/plugin'
import type { Role } from '../../src/services/identity'
import { UserLifecycleRef } from '../../plugins/auth/api'
import { contractFor, fetchDocument, type Contract } from './contract'
import { createTestDatabase, type TestDatabase } from './database'

/** Cheap password hashing keeps fixtures fast; the hash format and verification are the real ones. */
export const TEST_PASSWORD_LOG_N = 10
/** Hashes fixture passwords with the test services' parameters (so sign-in never re-hashes them). */
const fixtureHasher = new PasswordHasher({ logN: TEST_PASSWORD_LOG_N, maxConcurrent: 8 })
const cliActor = { userId: null, apiKeyId: null, via: 'cli' as const, requestId: null }

export interface TestUser {
  id: string
  organizationId: string
  email: string
  username: string
  password: string
  role: Role
  /** The display account key made with the user (when the display plugin is enabled). */
  displayApiKey?: string
}

export interface TestResponse<T = any> {
  status: number
  headers: Headers
  body: T
  text: string
}

export interface RequestOptions {
  key?: string
  body?: unknown
  /** Sent as-is instead of JSON-encoding `body`. */
  rawBody?: string | Uint8Array
  headers?: Record<string, string>
  /** Skips the response contract check (fixtures of a suite that examines other answers). */
  unchecked?: boolean
}

export interface TestServiceOptions {
  /** Enabled plugin names; default: every registered plugin. */
  plugins?: string[]
  /** service.config.json content merged over the test defaults. */
  config?: Record<string, any>
  registry?: readonly AnyPlugin[]
  /** Reuse a database (a second instance on the same database). */
  database?: TestDatabase
  /** Services provided before plugins are set up (e.g. FCM options pointing at a fake). */
  provide?: ServiceOptions['provide']
  log?: ServiceOptions['log']
  /** Environment seen by the config (default: none of the process's). */
  env?: Record<string, string | undefined>
}

export interface TestService {
  service: Service
  database: TestDatabase
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<TestResponse<T>>
  createOrganization(name?: string): Promise<string>
  createUser(organizationId: string, role?: Role, overrides?: Partial<TestUser>): Promise<TestUser>
  /** Creates a key and returns its secret. */
  createKey(userId: string, scopes: string[], options?: { name?: string; expiresAt?: string }): Promise<{ id: string; secret: string }>
  revokeKey(keyId: string): Promise<void>
  deactivateUser(userId: string): Promise<void>
  stop(): Promise<void>
}

let sequence = 0

/** Starts a service; call `stop()` in afterAll. */
export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const registry = options.registry ?? defaultRegistry
  const raw = {
    ...options.config,
    auth: { passwordHashLogN: TEST_PASSWORD_LOG_N, ...options.config?.auth },
    ...(options.plugins ? { plugins: { enabled: options.plugins } } : {}),
  }
  // The config first: a test of a refused config makes no database (made first, it was never dropped).
  const config = loadConfig(registry, { raw, env: options.env ?? {} })
  const ownsDatabase = !options.database
  const database = options.database ?? (await createTestDatabase())
  // requireAudit: a write with a list scope that changes rows without an audit record fails the test (src/writes.ts).
  const service = await createService({ registry, config, database, provide: options.provide, log: options.log, requireAudit: true }).catch(async (error) => {
    if (ownsDatabase) await database.close()
    throw error
  })
  const db = service.core.db
  const contract = loadContract(service, registry, raw, options, database)

  const request = async (method: string, path: string, requestOptions: RequestOptions = {}) => {
    const headers: Record<string, string> = { ...requestOptions.headers }
    if (requestOptions.key) headers.authorization = `Bearer ${requestOptions.key}`
    let body: BodyInit | undefined
    if (requestOptions.rawBody !== undefined) body = requestOptions.rawBody as BodyInit
    else if (requestOptions.body !== undefined) {
      body = JSON.stringify(requestOptions.body)
      headers['content-type'] ??= 'application/json'
    }
    const response = await service.fetch(new Request(`http://localhost${path}`, { method, headers, body }))
    const text = await response.text()
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {
      // not JSON: keep the text
    }
    const answer = { status: response.status, headers: response.headers, body: parsed as any, text }
    if (requestOptions.unchecked) return answer
    const checked = await contract.get()
    checked?.check(method, path, answer)
    return answer
  }

  return {
    service,
    database,
    request,
    async createOrganization(name = `Organization ${++sequence}`) {
      return (await createOrganization(service.core.writes, cliActor, { name })).id
    },
    async createUser(organizationId, role = 'member', overrides = {}) {
      const n = ++sequence
      const input = {
        email: overrides.email ?? `user${n}-${Math.random().toString(36).slice(2, 8)}@example.com`,
        username: overrides.username ?? `user${n}`,
        password: overrides.password ?? `password-${n}`,
      }
      const hooks = service.core.services.find(UserLifecycleRef)?.createdHooks() ?? []
      const { user, extra } = await createUser(
        service.core.writes,
        cliActor,
        { organizationId, email: input.email, username: input.username, displayName: `User ${n}`, role, password: input.password },
        { hasher: fixtureHasher, hooks },
      )
      return {
        id: user.id,
        organizationId,
        email: user.email,
        username: user.username,
        password: input.password,
        role,
        ...(typeof extra.displayApiKey === 'string' ? { displayApiKey: extra.displayApiKey } : {}),
      }
    },
    async createKey(userId, scopes, keyOptions = {}) {
      const known = new Set(service.core.scopes.map((scope) => scope.name))
      const { key, secret } = await createApiKey(
        service.core.writes,
        cliActor,
        userId,
        { name: keyOptions.name ?? 'test key', scopes, ...(keyOptions.expiresAt ? { expiresAt: keyOptions.expiresAt } : {}) },
        known,
      )
      return { id: key.id, secret }
    },
    async revokeKey(keyId) {
      await revokeApiKey(service.core.writes, service.core.events, cliActor, keyId)
    },
    async deactivateUser(userId) {
      await deactivateUser(service.core.writes, service.core.events, cliActor, userId)
    },
    async stop() {
      await contract.settled()
      await service.stop()
      if (ownsDatabase) await database.close()
    },
  }
}

interface ContractHandle {
  /** The contract, or null when the registry has no docs plugin to describe the service. */
  get(): Promise<Contract | null>
  /** Resolves once any loading has finished (before the database goes away). */
  settled(): Promise<void>
}

/**
 * The response contract of a service: its own OpenAPI document, read at the first request; or,
 * when it runs without the docs plugin, the document of a twin with the same plugins plus docs
 * (same database, no background work, stopped at once), built now while the database is intact.
 */
function loadContract(service: Service, registry: readonly AnyPlugin[], raw: Record<string, any>, options: TestServiceOptions, database: TestDatabase): ContractHandle {
  const plugins = service.plugins.map((plugin) => plugin.name)
  let loading: Promise<Contract | null> | undefined
  const handle = {
    get: () => (loading ??= contractFor(registry, plugins, () => fetchDocument(service.fetch))),
    settled: async () => void (await loading?.catch(() => null)),
  }
  if (plugins.includes('docs')) return handle
  if (!registry.some((plugin) => plugin.name === 'docs')) loading = Promise.resolve(null)
  else
    loading = contractFor(registry, plugins, async () => {
      const config = loadConfig(registry, { raw: { ...raw, plugins: { enabled: [...plugins, 'docs'] } }, env: options.env ?? {} })
      const twin = await createService({ registry, config, database, provide: options.provide, log: createLogger('silent'), background: false })
      try {
        return await fetchDocument(twin.fetch)
      } finally {
        await twin.stop()
      }
    })
  loading.catch(() => {}) // reported by the first request
  return handle
}

/** Waits until `check` passes or `timeoutMs` elapses (for effects that cross a NOTIFY). */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 2000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
}
