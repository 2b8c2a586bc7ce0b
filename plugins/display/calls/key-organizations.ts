/**
 * The organization of a display key, by the key's hash: what every display call names first, so
 * that its statement reads and writes that organization's rows alone (on Citus: one shard). The
 * hash alone cannot say where the key lives, so a key this instance has not seen costs one
 * indexed probe (on Citus, one per shard); after that the answer is held. It never goes stale:
 * a key's hash belongs to one account of one organization for as long as it exists, and a hash
 * no account had when probed is a secret nobody was given (keys are generated and stored before
 * they are shown). Whether the key still works (rotated, its user deactivated) is decided by the
 * call's own statement, every time.
 */
import { queryText, type Database } from '../../../src/db'

/** Keys (hashes) held per instance; the least recently used go first. */
const DEFAULT_CAPACITY = 20_000

/** $1 key hash: the organization of its account, if any. */
const KEY_ORGANIZATION = 'select organization_id as "organizationId" from display_accounts where key_hash = $1'

export class KeyOrganizations {
  /** Hash → organization id, or null for a hash no account has; in recency order. */
  private readonly known = new Map<string, string | null>()
  private readonly probing = new Map<string, Promise<string | null>>()
  /** Probes sent (cache misses), for the tests. */
  probes = 0

  constructor(
    private readonly db: Database,
    private readonly capacity = DEFAULT_CAPACITY,
  ) {}

  /** The held answer for `keyHash`: its organization, null (no such key), or undefined when it must be probed. */
  cached(keyHash: string): string | null | undefined {
    const organizationId = this.known.get(keyHash)
    if (organizationId === undefined) return undefined
    this.known.delete(keyHash)
    this.known.set(keyHash, organizationId)
    return organizationId
  }

  /** The organization of the key, or null when no account has it; concurrent misses share one probe. */
  of(keyHash: string): Promise<string | null> {
    const held = this.cached(keyHash)
    if (held !== undefined) return Promise.resolve(held)
    let probe = this.probing.get(keyHash)
    if (!probe) {
      this.probes++
      probe = queryText<{ organizationId: string }>(this.db, KEY_ORGANIZATION, [keyHash])
        .then(([row]) => {
          this.remember(keyHash, row?.organizationId ?? null)
          return row?.organizationId ?? null
        })
        .finally(() => this.probing.delete(keyHash))
      this.probing.set(keyHash, probe)
    }
    return probe
  }

  private remember(keyHash: string, organizationId: string | null): void {
    this.known.set(keyHash, organizationId)
    if (this.known.size > this.capacity) this.known.delete(this.known.keys().next().value!)
  }
}
