/**
 * Share link views (`GET /s/<token>` and its events stream) need no account, so each instance
 * counts them per client address and per link over fixed one-minute windows: past either limit
 * the answer is 429 with Retry-After. Counted in memory, not in PostgreSQL: the limit guards this
 * instance's memory and CPU, and a flood of views must not become a flood of writes (N instances
 * admit up to N times the limit). The address is the one `server.trustProxy` makes of the request
 * (the socket's peer unless proxies are trusted), never a client's own X-Forwarded-For.
 */

/** Counters of one kind (addresses or links), each over a fixed window. */
export class WindowCounter {
  private readonly windows = new Map<string, { start: number; count: number }>()

  /**
   * @param limit views per window and key
   * @param maxKeys keys remembered at once: past it, ended windows go first, then the oldest (memory stays bounded under a spray of addresses)
   */
  constructor(
    private readonly limit: number,
    private readonly windowMs = 60_000,
    private readonly maxKeys = 50_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one view of `key`: 0 when it is allowed, otherwise the seconds until its window ends (not counted). */
  take(key: string): number {
    const now = this.now()
    let window = this.windows.get(key)
    if (!window || now - window.start >= this.windowMs) {
      this.windows.delete(key)
      window = { start: now, count: 0 }
      this.windows.set(key, window)
      if (this.windows.size > this.maxKeys) this.prune(now)
    }
    if (window.count >= this.limit) return Math.max(1, Math.ceil((window.start + this.windowMs - now) / 1000))
    window.count++
    return 0
  }

  private prune(now: number) {
    for (const [key, window] of this.windows) if (now - window.start >= this.windowMs) this.windows.delete(key)
    // Oldest windows first (a Map keeps insertion order, and a new window is inserted anew).
    for (const key of this.windows.keys()) {
      if (this.windows.size <= this.maxKeys) break
      this.windows.delete(key)
    }
  }
}

/** The two limits of share link views. */
export class ShareViewLimits {
  private readonly addresses: WindowCounter
  private readonly links: WindowCounter

  constructor(limits: { perAddressPerMinute: number; perLinkPerMinute: number }, now: () => number = Date.now) {
    this.addresses = new WindowCounter(limits.perAddressPerMinute, 60_000, 50_000, now)
    this.links = new WindowCounter(limits.perLinkPerMinute, 60_000, 50_000, now)
  }

  /** Counts a view from `address` (before the token is looked up): 0, or the seconds to wait. */
  fromAddress(address: string): number {
    return this.addresses.take(address)
  }

  /** Counts a view of the link `linkId` (a valid one): 0, or the seconds to wait. */
  ofLink(linkId: string): number {
    return this.links.take(linkId)
  }
}
