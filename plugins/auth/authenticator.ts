/**
 * The Bearer check on every request: shape and checksum first (no database for garbage), then
 * a cache of live keys, then one indexed lookup. Revocations and deactivations arrive by
 * NOTIFY and drop cached entries on every instance; after a missed notification window the
 * whole cache is dropped. The per-key rate limit is counted apart from that cache, so reloads,
 * drops and evictions never reset or fork a key's count.
 */
import { and, eq, isNull } from 'drizzle-orm'
import type { Database } from '../../src/db'
import { bearerToken } from '../../src/http/credentials'
import { rateLimited, unauthorized } from '../../src/http/errors'
import { describeError, type Logger } from '../../src/log'
import { hashSecret, isWellFormedSecret } from '../../src/secrets'
import type { Authenticator, Door, Principal } from '../../src/services/identity'
import { apiKeys, users } from './schema'
import { API_KEY_PREFIX, type Invalidation } from './service'
import { principalUser, SESSION_PREFIX } from './sessions'

/** Checks a Bearer credential of another kind for the resource it is presented to; throws 401 when it is not live there. */
export type BearerVerifier = (token: string, door: Door | undefined) => Promise<Principal>

export interface AuthenticatorSettings {
  cacheTtlSeconds: number
  cacheMaxEntries: number
  /** Requests per minute per key on this instance; 0 turns the limit off. */
  requestsPerMinute: number
}

/** A key's rate-limit window: it starts with the key's first request and lasts WINDOW_MS. */
interface RateWindow {
  start: number
  count: number
}

interface CachedKey {
  principal: Principal
  keyId: string
  userId: string
  expiresAt: number | null
  loadedAt: number
  lastUsedWrittenAt: number
}

const LAST_USED_EVERY_MS = 60_000
const WINDOW_MS = 60_000
const INVALID = 'The API key is invalid, revoked or expired.'
/**
 * A session token (a web session's cookie value or a mobile session token: `wts_…`, told apart
 * by its form alone, no database) where only keys are taken: said as such, not as a bad key.
 */
const SESSION_NOT_TAKEN = 'This is a session token (a sign-in); API v1 takes an API key, sent as `Authorization: Bearer <key>`: create one in the account area (/account).'

export class KeyAuthenticator implements Authenticator {
  private readonly cache = new Map<string, CachedKey>()
  /** One load per secret hash at a time: concurrent requests finding it expired share it. */
  private readonly loading = new Map<string, { generation: number; entry: Promise<CachedKey | undefined> }>()
  /** Moved by every invalidation: a load that began before one is not cached. */
  private generation = 0
  /** The rate-limit windows by key id: one count per key, whatever the cache does. */
  private readonly windows = new Map<string, RateWindow>()
  private windowsSweptAt = 0
  private readonly pending = new Set<Promise<unknown>>()

  constructor(
    private readonly db: Database,
    private readonly settings: AuthenticatorSettings,
    private readonly log: Logger,
  ) {}

  /** Mobile session tokens, which authenticateUser also accepts (the sessions are made after the keys). */
  private sessionOf: ((token: string) => Promise<Principal>) | null = null

  acceptSessions(authenticate: (token: string) => Promise<Principal>): void {
    this.sessionOf = authenticate
  }

  /** Other Bearer credentials by their prefix (`wto_`: OAuth access tokens), checked by whoever issues them. */
  private readonly others = new Map<string, BearerVerifier>()

  acceptBearer(prefix: string, verify: BearerVerifier): void {
    this.others.set(`${prefix}_`, verify)
  }

  authenticateUser(authorization: string | null | undefined, headers?: Record<string, unknown>, door?: Door): Promise<Principal> {
    const token = bearerToken(authorization)
    if (token && this.sessionOf && isWellFormedSecret(SESSION_PREFIX, token)) return this.sessionOf(token)
    return this.authenticateBearer(authorization, headers, door)
  }

  async authenticateBearer(authorization: string | null | undefined, headers?: Record<string, unknown>, door?: Door): Promise<Principal> {
    if (!authorization) throw unauthorized()
    const secret = bearerToken(authorization)
    if (!secret) throw unauthorized('The Authorization header must be "Bearer <API key>".', true)
    const other = this.others.size ? this.others.get(secret.slice(0, secret.indexOf('_') + 1)) : undefined
    if (other) {
      const principal = await other(secret, door)
      // One count per grant, as per key.
      this.countRequest(`grant:${principal.grant?.id}`, Date.now(), headers)
      return principal
    }
    const hash = hashSecret(secret)
    const now = Date.now()
    let entry = this.cache.get(hash)
    if (!entry || now - entry.loadedAt > this.settings.cacheTtlSeconds * 1000) {
      // Only a secret that is not cached is checked for its form (prefix, length, checksum)
      // before the database is asked: a cached one was a live key's, so it has the form.
      if (!entry && !isWellFormedSecret(API_KEY_PREFIX, secret)) throw unauthorized(isWellFormedSecret(SESSION_PREFIX, secret) ? SESSION_NOT_TAKEN : INVALID, true)
      entry = await this.reload(hash, now)
      if (!entry) throw unauthorized(INVALID, true)
    }
    if (entry.expiresAt !== null && entry.expiresAt <= now) throw unauthorized(INVALID, true)
    this.countRequest(entry.keyId, now, headers)
    this.touch(entry, now)
    return entry.principal
  }

  /** Applies an invalidation received from any instance. */
  invalidate(event: Invalidation): void {
    this.generation++
    for (const [hash, entry] of this.cache) {
      if (('keyId' in event && entry.keyId === event.keyId) || ('userId' in event && entry.userId === event.userId))
        this.cache.delete(hash)
    }
  }

  /** Drops everything (notifications may have been missed). */
  clear(): void {
    this.generation++
    this.cache.clear()
  }

  /** Waits for the background `lastUsedAt` writes (shutdown). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.pending])
  }

  /**
   * The key's entry read again (and cached), or undefined when it is no longer live; concurrent
   * callers share one read. A read that began before an invalidation is neither joined by later
   * callers nor cached (it may predate a revocation); its own callers arrived before it.
   */
  private reload(hash: string, now: number): Promise<CachedKey | undefined> {
    const inFlight = this.loading.get(hash)
    if (inFlight && inFlight.generation === this.generation) return inFlight.entry
    const generation = this.generation
    const entry: Promise<CachedKey | undefined> = this.load(hash, now, this.cache.get(hash))
      .then((loaded) => {
        if (!loaded) this.cache.delete(hash)
        else if (generation === this.generation) this.remember(hash, loaded)
        return loaded
      })
      .finally(() => {
        if (this.loading.get(hash)?.entry === entry) this.loading.delete(hash)
      })
    this.loading.set(hash, { generation, entry })
    return entry
  }

  private async load(hash: string, now: number, previous: CachedKey | undefined): Promise<CachedKey | undefined> {
    const [row] = await this.db
      .select({ key: apiKeys, user: users })
      .from(apiKeys)
      // Joined on the organization too: a co-located join, which Citus runs shard by shard. A key
      // read again (its cache time ran out) is read in its organization, which never changes: on
      // Citus that runs on one shard, and keeps working while a worker holding others is down.
      .innerJoin(users, and(eq(users.id, apiKeys.ownerId), eq(users.organizationId, apiKeys.organizationId)))
      .where(
        and(
          eq(apiKeys.secretHash, hash),
          previous ? eq(apiKeys.organizationId, previous.principal.user.organizationId) : undefined,
          isNull(apiKeys.revokedAt),
          eq(users.status, 'active'),
        ),
      )
    if (!row) return undefined
    const { key, user } = row
    return {
      keyId: key.id,
      userId: user.id,
      expiresAt: key.expiresAt?.getTime() ?? null,
      loadedAt: now,
      lastUsedWrittenAt: Math.max(previous?.lastUsedWrittenAt ?? 0, key.lastUsedAt?.getTime() ?? 0),
      principal: {
        user: principalUser(user),
        key: {
          id: key.id,
          name: key.name,
          prefix: key.prefix,
          scopes: key.scopes,
          expiresAt: key.expiresAt?.toISOString() ?? null,
        },
        scopes: new Set(key.scopes),
      },
    }
  }

  private remember(hash: string, entry: CachedKey) {
    this.cache.delete(hash)
    this.cache.set(hash, entry)
    if (this.cache.size > this.settings.cacheMaxEntries) this.cache.delete(this.cache.keys().next().value!)
  }

  /**
   * Counts the request in the key's one-minute window (429 past the limit) and reports the window
   * in `headers` and on the 429 itself (MCP passes no headers): X-RateLimit-Limit, -Remaining
   * (after this request) and -Reset (the Unix time in seconds when the window starts over, as
   * GitHub's API and the display API say it). Synchronous from the read of the count to its
   * write, so concurrent requests are counted one after another.
   */
  private countRequest(keyId: string, now: number, headers: Record<string, unknown> | undefined) {
    const limit = this.settings.requestsPerMinute
    if (limit <= 0) return
    let window = this.windows.get(keyId)
    if (!window || now - window.start >= WINDOW_MS) {
      this.sweepWindows(now)
      window = { start: now, count: 0 }
      this.windows.set(keyId, window)
    }
    const refused = window.count >= limit
    if (!refused) window.count++
    const end = window.start + WINDOW_MS
    const reported = {
      'x-ratelimit-limit': String(limit),
      'x-ratelimit-remaining': String(limit - window.count),
      'x-ratelimit-reset': String(Math.ceil(end / 1000)),
    }
    if (headers) Object.assign(headers, reported)
    if (refused) {
      const error = rateLimited((end - now) / 1000)
      Object.assign(error.headers, reported)
      throw error
    }
  }

  /** Forgets windows that ended (at most once a window), so the map holds only keys used lately. */
  private sweepWindows(now: number) {
    if (now - this.windowsSweptAt < WINDOW_MS) return
    this.windowsSweptAt = now
    for (const [keyId, window] of this.windows) if (now - window.start >= WINDOW_MS) this.windows.delete(keyId)
  }

  /** Records `lastUsedAt` at most once a minute per key, off the request's path. */
  private touch(entry: CachedKey, now: number) {
    if (now - entry.lastUsedWrittenAt < LAST_USED_EVERY_MS) return
    entry.lastUsedWrittenAt = now
    const write = this.db
      .update(apiKeys)
      .set({ lastUsedAt: new Date(now) })
      .where(and(eq(apiKeys.id, entry.keyId), eq(apiKeys.organizationId, entry.principal.user.organizationId)))
      .catch((error: Error) => this.log.warn('could not record lastUsedAt', { keyId: entry.keyId, ...describeError(error) }))
    this.pending.add(write)
    void write.finally(() => this.pending.delete(write))
  }
}
