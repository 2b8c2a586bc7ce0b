/**
 * The statement batcher: one line of items (access checks, display calls…) that each have a
 * statement of their own, run at most `concurrency` statements at once, and group the items that
 * wait into ONE statement. A lone item runs at once as its own statement (no delay): a group forms
 * only while earlier statements are in flight, from the items that arrived meanwhile, in arrival
 * order, at most `maxItems` of them.
 *
 * On Citus a group holds one organization's items (its statement names that organization, a
 * router query on the organization's shard); on plain PostgreSQL and PGlite a group may span
 * organizations. Until the database is known, groups are per organization.
 *
 * An item names its organization, or a promise of it (a key whose organization is being looked
 * up): while one is pending, no item behind it starts, so the items of an organization start in
 * their arrival order whatever the lookups take. A lookup that finds none answers `undefined`.
 *
 * A failed group statement follows one rule. An error the server reported (a SQLSTATE and a
 * severity: the statement failed and its transaction rolled back, so nothing of it happened) runs
 * the group's items again, each as its own statement, one after another in arrival order, so each
 * sees the ones before it. Any other error (a lost connection: the commit is unknown) rejects every
 * item of the group with it, rather than run twice what may have committed.
 *
 * The users supply only their SQL: `one` (an item's own statement) and `group` (the grouped one,
 * whose answers must be, item for item, those of the items' own statements run in arrival order),
 * and, when their statements need rows made first, `prepare` and `again`.
 */

export interface BatcherOptions {
  /** Group the items that arrive while statements run (false: every item is its own statement, at once). */
  enabled: boolean
  /** Most items in one grouped statement. */
  maxItems: number
  /** Statements in flight at once; items beyond them wait and group. */
  concurrency: number
  /** Whether the database is Citus (`citusKnown(db)` of src/citus.ts), or the promise of it. */
  citus: boolean | PromiseLike<boolean>
}

export interface BatchRunners<Item, Answer> {
  /** The item's own statement, in its organization. */
  one(item: Item, organizationId: string): Promise<Answer>
  /**
   * One statement for `items` (two or more, in arrival order), answering each as `one` would have
   * in that order. `organizationId`: theirs when they are all of one organization, else null (each
   * is in its own, `organizations[i]`: a group spans organizations only off Citus).
   */
  group(items: readonly Item[], organizationId: string | null, organizations: readonly string[]): Promise<Answer[]>
  /** Work before a statement runs items of an organization (making rows they need), called per organization. */
  prepare?(organizationId: string, items: readonly Item[]): Promise<void>
  /**
   * Answers that need their item run again after `repair` (a row the statement needed was missing):
   * each statement's items so answered run again (together), up to `attempts` statements in all;
   * the last answer stands.
   */
  again?: {
    attempts: number
    needed(answer: Answer): boolean
    repair(organizationId: string, items: readonly Item[]): Promise<void>
  }
}

/** A server-reported error: the statement failed and its transaction rolled back (a lost connection is not one). */
export function rolledBack(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code } = error as { code?: unknown }
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && 'severity' in error
}

interface Waiting<Item, Answer> {
  item: Item
  /** Undefined while it is being looked up. */
  organizationId?: string
  resolve(answer: Answer | undefined): void
  reject(error: unknown): void
}

export class StatementBatcher<Item, Answer> {
  private readonly waiting: Waiting<Item, Answer>[] = []
  private running = 0
  /** Statements run (grouped or not), items they carried, items that went in groups, items run again alone after a group failed. */
  readonly stats = { statements: 0, items: 0, grouped: 0, retried: 0 }
  /** Whether a group may hold several organizations' items: not on Citus, nor until the database is known. */
  private spanning = false

  constructor(
    private readonly options: BatcherOptions,
    private readonly runners: BatchRunners<Item, Answer>,
  ) {
    const { citus } = options
    if (typeof citus === 'boolean') this.spanning = !citus
    else
      void Promise.resolve(citus).then(
        (known) => {
          this.spanning = !known
          this.next()
        },
        () => {},
      )
  }

  /** The item's answer, as its own statement gives it (undefined: its organization's lookup found none). */
  run(item: Item, organization: string | PromiseLike<string | null | undefined>): Promise<Answer | undefined> {
    if (typeof organization === 'string') {
      if (!this.options.enabled) return this.alone(item, organization)
      if (this.running < this.options.concurrency && !this.waiting.length) return this.slot(this.alone(item, organization))
    } else if (!this.options.enabled) return Promise.resolve(organization).then((organizationId) => (organizationId ? this.alone(item, organizationId) : undefined))
    return new Promise((resolve, reject) => {
      const waiting: Waiting<Item, Answer> = { item, resolve, reject }
      // In line at once, so the items of an organization keep their arrival order while one is looked up.
      this.waiting.push(waiting)
      if (typeof organization === 'string') {
        waiting.organizationId = organization
        return this.next()
      }
      const leave = () => this.waiting.splice(this.waiting.indexOf(waiting), 1)
      Promise.resolve(organization).then(
        (organizationId) => {
          if (organizationId) waiting.organizationId = organizationId
          else {
            leave()
            resolve(undefined)
          }
          this.next()
        },
        (error) => {
          leave()
          reject(error)
          this.next()
        },
      )
    })
  }

  /** Runs `work` as one of the statements in flight; when it settles, starts the groups waiting. */
  private slot<T>(work: Promise<T>): Promise<T> {
    this.running++
    const settle = () => {
      this.running--
      this.next()
    }
    work.then(settle, settle)
    return work
  }

  /**
   * Starts groups while there is room: each takes, in order, the items in line before any item
   * whose organization is still being looked up (it may be of the same organization, and must not
   * be overtaken): all of them where a group may span organizations, else those of the first
   * item's organization.
   */
  private next(): void {
    while (this.running < this.options.concurrency) {
      const pending = this.waiting.findIndex((waiting) => waiting.organizationId === undefined)
      const end = pending < 0 ? this.waiting.length : pending
      if (end === 0) return
      const organizationId = this.waiting[0]!.organizationId
      const group: Waiting<Item, Answer>[] = []
      const rest: Waiting<Item, Answer>[] = []
      for (let i = 0; i < this.waiting.length; i++) {
        const waiting = this.waiting[i]!
        const taken = i < end && group.length < this.options.maxItems && (this.spanning || waiting.organizationId === organizationId)
        ;(taken ? group : rest).push(waiting)
      }
      this.waiting.splice(0, this.waiting.length, ...rest)
      void this.slot(this.dispatch(group))
    }
  }

  private async dispatch(group: Waiting<Item, Answer>[]): Promise<void> {
    if (group.length === 1) {
      const [only] = group as [Waiting<Item, Answer>]
      return this.alone(only.item, only.organizationId!).then(only.resolve, only.reject)
    }
    this.stats.grouped += group.length
    const { prepare, again } = this.runners
    let pending = group
    for (let attempt = 1; ; attempt++) {
      let answers: Answer[]
      try {
        const work = attempt === 1 ? prepare : again!.repair
        if (work) for (const [organizationId, items] of byOrganization(pending)) await work.call(this.runners, organizationId, items)
        answers = await this.statement(pending)
      } catch (error) {
        if (!rolledBack(error)) {
          for (const waiting of pending) waiting.reject(error)
          return
        }
        // One by one, in arrival order, so each still sees the items before it.
        this.stats.retried += pending.length
        for (const waiting of pending) await this.alone(waiting.item, waiting.organizationId!).then(waiting.resolve, waiting.reject)
        return
      }
      // Answered items are done (their statement committed); only those that need it run again.
      const missing: Waiting<Item, Answer>[] = []
      pending.forEach((waiting, i) => (again && attempt < again.attempts && again.needed(answers[i]!) ? missing.push(waiting) : waiting.resolve(answers[i])))
      if (!missing.length) return
      pending = missing
    }
  }

  /** One statement for the items: the item's own for one, else the grouped one. */
  private statement(items: Waiting<Item, Answer>[]): Promise<Answer[]> {
    this.stats.statements++
    this.stats.items += items.length
    const organizations = items.map((waiting) => waiting.organizationId!)
    if (items.length === 1) return this.runners.one(items[0]!.item, organizations[0]!).then((answer) => [answer])
    const one = organizations.every((organizationId) => organizationId === organizations[0])
    return this.runners.group(
      items.map((waiting) => waiting.item),
      one ? organizations[0]! : null,
      organizations,
    )
  }

  /** The item's own statement (after `prepare`), run again while `again` asks for it. */
  private alone(item: Item, organizationId: string): Promise<Answer> {
    const { prepare, again } = this.runners
    if (prepare || again) return this.prepared(item, organizationId)
    this.stats.statements++
    this.stats.items++
    return this.runners.one(item, organizationId)
  }

  private async prepared(item: Item, organizationId: string): Promise<Answer> {
    const { prepare, again } = this.runners
    if (prepare) await prepare.call(this.runners, organizationId, [item])
    for (let attempt = 1; ; attempt++) {
      this.stats.statements++
      this.stats.items++
      const answer = await this.runners.one(item, organizationId)
      if (!again || attempt >= again.attempts || !again.needed(answer)) return answer
      await again.repair.call(this.runners, organizationId, [item])
    }
  }
}

/** The items of each organization, in arrival order. */
function byOrganization<Item, Answer>(waiting: readonly Waiting<Item, Answer>[]): Map<string, Item[]> {
  const organizations = new Map<string, Item[]>()
  for (const { item, organizationId } of waiting) {
    const items = organizations.get(organizationId!)
    if (items) items.push(item)
    else organizations.set(organizationId!, [item])
  }
  return organizations
}
