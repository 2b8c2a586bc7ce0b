/**
 * The organizations that may have background work (due webhook or push deliveries), taken in
 * turn by an outbox's workers. On Citus a row lock must name one organization (`FOR UPDATE SKIP
 * LOCKED` over every organization spans shards, which Citus refuses), so workers claim within one
 * organization per statement; the round tells them which organizations to try, in an order where
 * no busy organization starves the others: each one tried goes to the back, and one whose claim
 * came back short leaves the round.
 *
 * Organizations join when their work is announced (a NOTIFY naming the organization), when a
 * worker has just done work there, and from a discovery: one read over every organization,
 * without row locks (on Citus one plain query per shard). A discovery runs when announced work
 * names no organization (`stale`, at most every `minGapMs`), and otherwise before any turn once
 * the last is `rediscoverAfterMs` old, which finds the work nobody announced: retries coming due,
 * leases of dead workers running out.
 */
export class OrganizationRound {
  private readonly members = new Set<string>()
  private discoveredAt = Number.NEGATIVE_INFINITY
  private forced = true
  private discovery: Promise<void> | undefined
  private readonly minGapMs: number

  /**
   * `discover` reads which organizations have due work (the longest waiting first);
   * `rediscoverAfterMs` is the longest a discovery is relied on (an outbox's poll interval).
   */
  constructor(
    private readonly discover: () => Promise<string[]>,
    private readonly rediscoverAfterMs: number,
    minGapMs = 100,
  ) {
    this.minGapMs = Math.min(minGapMs, rediscoverAfterMs)
  }

  /** The organization has work now: it joins the round, at the back, unless it is in it. */
  add(organizationId: string): void {
    this.members.add(organizationId)
  }

  /** Work was announced without naming its organization: the next turn discovers first. */
  stale(): void {
    this.forced = true
  }

  /** The organizations to try now, in turn order; a discovery first when one is due. Report each one tried with `tried`. */
  async turn(): Promise<string[]> {
    const age = performance.now() - this.discoveredAt
    if (this.discovery || age >= this.rediscoverAfterMs || (this.forced && age >= this.minGapMs)) await this.rediscover()
    else if (this.forced) {
      // Announced too soon after the last discovery: wait out the gap rather than lose the announcement.
      await new Promise((resolve) => setTimeout(resolve, this.minGapMs - age))
      return this.turn()
    }
    return [...this.members]
  }

  /**
   * A claim in the organization was made: `more` (it took all it asked for, so more may be
   * waiting) sends the organization to the back of the round; otherwise it leaves the round
   * until its work is announced, a worker finishing there adds it, or a discovery finds it.
   */
  tried(organizationId: string, more: boolean): void {
    this.members.delete(organizationId)
    if (more) this.members.add(organizationId)
  }

  /**
   * Claims up to `wanted` items (streams, deliveries) in the organizations of a turn, in waves of
   * at most `parallel` organizations at once (one statement each, side by side), the items still
   * wanted shared out among a wave's organizations; an organization that filled its share is
   * asked again after the others, until enough are claimed or none has more. Each organization
   * tried is reported (`tried`). `claimIn(organizationId, n)` claims at most n there and says how
   * many it claimed. A failed claim fails the whole when nothing was claimed; otherwise it goes to
   * `onError` and the claim stops there with what it has (the organization keeps its place).
   */
  async claim(
    wanted: number,
    parallel: number,
    claimIn: (organizationId: string, wanted: number) => Promise<number>,
    onError: (error: unknown) => void,
  ): Promise<number> {
    const queue = await this.turn()
    let claimed = 0
    while (claimed < wanted && queue.length) {
      const remaining = wanted - claimed
      const wave = queue.splice(0, Math.min(parallel, remaining))
      const shares = wave.map((_, i) => Math.floor(remaining / wave.length) + (i < remaining % wave.length ? 1 : 0))
      const results = await Promise.allSettled(wave.map((organizationId, i) => claimIn(organizationId, shares[i]!)))
      let failure: unknown
      results.forEach((result, i) => {
        if (result.status === 'rejected') return void (failure ??= result.reason)
        claimed += result.value
        const more = result.value >= shares[i]!
        this.tried(wave[i]!, more)
        if (more) queue.push(wave[i]!)
      })
      if (failure !== undefined) {
        if (!claimed) throw failure
        onError(failure)
        break
      }
    }
    return claimed
  }

  /** One discovery at a time; callers arriving meanwhile wait for it. */
  private rediscover(): Promise<void> {
    this.discovery ??= (async () => {
      const startedAt = performance.now()
      this.forced = false
      try {
        for (const organizationId of await this.discover()) this.members.add(organizationId)
        this.discoveredAt = startedAt
      } catch (error) {
        this.forced = true
        throw error
      } finally {
        this.discovery = undefined
      }
    })()
    return this.discovery
  }
}
