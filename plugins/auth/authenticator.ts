/**
 * The Bearer check on every request: shape and checksum first (no database for garbage), then
 * a cache of live keys, then one indexed lookup. Revocations and deactivations arrive by
 * NOTIFY and drop cached entries on every instance; after a missed notification window the
 * whole cache is dropped.
 */
import { and, eq, isNull } from 'drizzle-orm'
import type { Database } from '../../src/db'
import { bearerToken } from '../../src/http/credentials'
import { rateLimited, unauthorized } from '../../src/http/errors'
import { describeError, type Logger } from '../../src/log'
import { hashSecret, isWellFormedSecret } from '../../src/secrets'
import type { Authenticator, Principal } from '../../src/services/identity'
import { apiKeys, users } from './schema'
import { API_KEY_PREFIX, type Invalidation } from './service'
import { principalUser } from './sessions'

export interface AuthenticatorSettings {
  cacheTtlSeconds: number
  cacheMaxEntries: number
  /** Requests per minute per key on this instance; 0 turns the limit off. */
  requestsPerMinute: number
}

interface CachedKey {
  principal: Principal
  keyId: string
  userId: string
  expiresAt: number | null
  loadedAt: number
  lastUsedWrittenAt: number
  windowStart: number
  windowCount: number
}

const LAST_USED_EVERY_MS = 60_000
const INVALID = 'The API key is invalid, revoked or expired.'

export class KeyAuthenticator implements Authenticator {
  private readonly cache = new Map<string, CachedKey>()
  private readonly pending = new Set<Promise<unknown>>()

  constructor(
    private readonly db: Database,
    private readonly settings: AuthenticatorSettings,
    private readonly log: Logger,
  ) {}

  async authenticateBearer(authorization: string | null | undefined, headers?: Record<string, unknown>): Promise<Principal> {
    if (!authorization) throw unauthorized()
    const secret = bearerToken(authorization)
    if (!secret) throw unauthorized('The Authorization header must be "Bearer <API key>".', true)
    const hash = hashSecret(secret)
    const now = Date.now()
    let entry = this.cache.get(hash)
    if (!entry || now - entry.loadedAt > this.settings.cacheTtlSeconds * 1000) {
      // Only a secret that is not cached is checked for its form (prefix, length, checksum)
      // before the database is asked: a cached one was a live key's, so it has the form.
      if (!entry && !isWellFormedSecret(API_KEY_PREFIX, secret)) throw unauthorized(INVALID, true)
      entry = await this.load(hash, now, entry)
      if (!entry) {
        this.cache.delete(hash)
        throw unauthorized(INVALID, true)
      }
      this.remember(hash, entry)
    }
    if (entry.expiresAt !== null && entry.expiresAt <= now) throw unauthorized(INVALID, true)
    this.countRequest(entry, now, headers)
    this.touch(entry, now)
    return entry.principal
  }

  /** Applies an invalidation received from any instance. */
  invalidate(event: Invalidation): void {
    for (const [hash, entry] of this.cache) {
      if (('keyId' in event && entry.keyId === event.keyId) || ('userId' in event && entry.userId === event.userId))
        this.cache.delete(hash)
    }
  }

  /** Drops everything (notifications may have been missed). */
  clear(): void {
    this.cache.clear()
  }

  /** Waits for the background `lastUsedAt` writes (shutdown). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.pending])
  }

  private async load(hash: string, now: number, previous: CachedKey | undefined): Promise<CachedKey | undefined> {
    const [row] = await this.db
      .select({ key: apiKeys, user: users })
      .from(apiKeys)
      .innerJoin(users, eq(users.id, apiKeys.ownerId))
      .where(and(eq(apiKeys.secretHash, hash), isNull(apiKeys.revokedAt), eq(users.status, 'active')))
    if (!row) return undefined
    const { key, user } = row
    return {
      keyId: key.id,
      userId: user.id,
      expiresAt: key.expiresAt?.getTime() ?? null,
      loadedAt: now,
      lastUsedWrittenAt: Math.max(previous?.lastUsedWrittenAt ?? 0, key.lastUsedAt?.getTime() ?? 0),
      windowStart: previous?.windowStart ?? now,
      windowCount: previous?.windowCount ?? 0,
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
   * in `headers`: X-RateLimit-Limit, -Remaining (after this request) and -Reset (the Unix time in
   * seconds when the window starts over, as GitHub's API and the display API say it).
   */
  private countRequest(entry: CachedKey, now: number, headers: Record<string, unknown> | undefined) {
    const limit = this.settings.requestsPerMinute
    if (limit <= 0) return
    if (now - entry.windowStart >= 60_000) {
      entry.windowStart = now
      entry.windowCount = 0
    }
    const refused = entry.windowCount >= limit
    if (!refused) entry.windowCount++
    if (headers) {
      headers['x-ratelimit-limit'] = String(limit)
      headers['x-ratelimit-remaining'] = String(limit - entry.windowCount)
      headers['x-ratelimit-reset'] = String(Math.ceil((entry.windowStart + 60_000) / 1000))
    }
    if (refused) throw rateLimited((entry.windowStart + 60_000 - now) / 1000)
  }

  /** Records `lastUsedAt` at most once a minute per key, off the request's path. */
  private touch(entry: CachedKey, now: number) {
    if (now - entry.lastUsedWrittenAt < LAST_USED_EVERY_MS) return
    entry.lastUsedWrittenAt = now
    const write = this.db
      .update(apiKeys)
      .set({ lastUsedAt: new Date(now) })
      .where(eq(apiKeys.id, entry.keyId))
      .catch((error: Error) => this.log.warn('could not record lastUsedAt', { keyId: entry.keyId, ...describeError(error) }))
    this.pending.add(write)
    void write.finally(() => this.pending.delete(write))
  }
}
