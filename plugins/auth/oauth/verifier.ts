/**
 * The Bearer check of OAuth access tokens (`wto_…`): a cache of live tokens by hash; on a miss,
 * shape, checksum and organization from the token itself (no database for garbage), then one
 * lookup on the token's organization's shard (token, grant and user joined on the organization),
 * shared by concurrent requests. A revoked grant or a deactivated user drops cached tokens on
 * every instance (NOTIFY); after a missed notification window the cache is dropped whole. A token is accepted only by the resource it
 * was issued for (`/mcp`, `/api/v1`, or both when it names none).
 */
import { queryText, type Database } from '../../../src/db'
import { unauthorized } from '../../../src/http/errors'
import { describeError, type Logger } from '../../../src/log'
import { hashSecret, routeOfSecret } from '../../../src/secrets'
import type { Door, Principal } from '../../../src/services/identity'
import type { users } from '../schema'
import { principalUser } from '../sessions'
import { ACCESS_PREFIX, RESOURCE_PATHS } from './model'

interface CachedToken {
  principal: Principal
  grantId: string
  userId: string
  expiresAt: number
  loadedAt: number
}

const INVALID = 'The access token is invalid, revoked or expired.'
const LAST_USED_EVERY_MS = 60_000

type UserRow = typeof users.$inferSelect

export class AccessTokens {
  private readonly cache = new Map<string, CachedToken>()
  private generation = 0
  private readonly lastUsedWritten = new Map<string, number>()

  constructor(
    private readonly db: Database,
    private readonly settings: { cacheTtlSeconds: number; cacheMaxEntries: number },
    private readonly log: Logger,
  ) {}

  /** One read per token hash at a time: concurrent requests finding it missing or stale share it. */
  private readonly loading = new Map<string, { generation: number; entry: Promise<CachedToken | undefined> }>()

  /** The principal of a live access token presented to `door`; 401 otherwise. */
  async verify(token: string, door: Door | undefined): Promise<Principal> {
    const hash = hashSecret(token)
    const now = Date.now()
    let entry = this.cache.get(hash)
    if (!entry || now - entry.loadedAt > this.settings.cacheTtlSeconds * 1000) {
      // Only a token not cached is read for its form and organization (a cached one was a live token's).
      const organizationId = entry ? entry.principal.user.organizationId : routeOfSecret(ACCESS_PREFIX, token)
      if (!organizationId) throw unauthorized(INVALID, true)
      entry = await this.reload(hash, organizationId, now)
      if (!entry) throw unauthorized(INVALID, true)
    }
    if (entry.expiresAt <= now) throw unauthorized(INVALID, true)
    const audience = entry.principal.grant!.audience
    if (door && audience && audience !== door) throw unauthorized(`This access token was issued for ${RESOURCE_PATHS[audience]} (its resource), not ${RESOURCE_PATHS[door]}.`, true)
    this.touch(entry, now)
    return entry.principal
  }

  /**
   * The token's entry read again (and cached), or undefined when it is not live; concurrent callers
   * share one read. A read begun before an invalidation is neither joined nor cached.
   */
  private reload(hash: string, organizationId: string, now: number): Promise<CachedToken | undefined> {
    const inFlight = this.loading.get(hash)
    if (inFlight && inFlight.generation === this.generation) return inFlight.entry
    const generation = this.generation
    const entry = this.load(hash, organizationId, now)
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

  /** Drops the cached tokens of a grant or of a user (any instance revoked or deactivated them). */
  invalidate(event: { grantId?: string; userId?: string }): void {
    this.generation++
    for (const [hash, entry] of this.cache) if (entry.grantId === event.grantId || entry.userId === event.userId) this.cache.delete(hash)
  }

  clear(): void {
    this.generation++
    this.cache.clear()
  }

  private async load(hash: string, organizationId: string, now: number): Promise<CachedToken | undefined> {
    const [row] = await queryText<{ expiresAt: Date; grantId: string; clientId: string; clientName: string; scopes: string[]; audience: Door | null; user: UserRow }>(
      this.db,
      `select t.expires_at as "expiresAt", g.id as "grantId", g.client_id as "clientId", g.client_name as "clientName", g.scopes, g.audience,
              json_build_object('id', u.id, 'organizationId', u.organization_id, 'email', u.email, 'username', u.username, 'displayName', u.display_name,
                                'avatarUrl', u.avatar_url, 'role', u.role) as user
         from oauth_tokens t
         join oauth_grants g on g.id = t.grant_id and g.organization_id = t.organization_id
         join users u on u.id = g.user_id and u.organization_id = g.organization_id
        where t.token_hash = $1 and t.organization_id = $2 and t.kind = 'access' and g.revoked_at is null and u.status = 'active'`,
      [hash, organizationId],
    )
    if (!row) return undefined
    const user = principalUser(typeof row.user === 'string' ? JSON.parse(row.user) : row.user)
    return {
      grantId: row.grantId,
      userId: user.id,
      expiresAt: new Date(row.expiresAt).getTime(),
      loadedAt: now,
      principal: {
        user,
        key: null,
        grant: { id: row.grantId, clientId: row.clientId, clientName: row.clientName, audience: row.audience },
        scopes: new Set(row.scopes),
      },
    }
  }

  private remember(hash: string, entry: CachedToken) {
    this.cache.delete(hash)
    this.cache.set(hash, entry)
    if (this.cache.size > this.settings.cacheMaxEntries) this.cache.delete(this.cache.keys().next().value!)
  }

  /** The grant's `lastUsedAt` ("Connected apps"), at most once a minute per grant and instance, off the request's path. */
  private touch(entry: CachedToken, now: number) {
    if (now - (this.lastUsedWritten.get(entry.grantId) ?? 0) < LAST_USED_EVERY_MS) return
    if (this.lastUsedWritten.size > this.settings.cacheMaxEntries) this.lastUsedWritten.clear()
    this.lastUsedWritten.set(entry.grantId, now)
    void queryText(this.db, `update oauth_grants set last_used_at = $3::timestamptz where id = $1 and organization_id = $2`, [
      entry.grantId,
      entry.principal.user.organizationId,
      new Date(now).toISOString(),
    ]).catch((error: Error) => this.log.warn('could not record an OAuth grant lastUsedAt', { grantId: entry.grantId, ...describeError(error) }))
  }
}
