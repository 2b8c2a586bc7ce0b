/**
 * Grouped display calls. The display API's statement is short, but it commits, and on a busy
 * account every call waits for the one before it to release the counter row. So calls that
 * arrive while a statement is in flight wait in line and go together, as ONE statement and one
 * commit. On Citus a group holds one organization's calls and its statement names that
 * organization (it runs on its shard alone); on plain PostgreSQL a group may hold several
 * organizations' calls. Each account's counter rises once by the calls it is charged, and each
 * call's outcome is decided inside that statement exactly as if the calls had run one after
 * another in arrival order — charged or 429 by its rank among its account's calls; 404, 403 and
 * the type mismatch as alone; stale or applied against the newest timestamp before it (the stored
 * one, locked, or an earlier call's); the last applied update of each component is the one
 * written (decision.ts writes that decision once, for lone calls and groups). There is no fixed
 * delay: a lone call runs at once as its own statement, and a group forms only while earlier
 * statements run.
 *
 * The line is the core's statement batcher (src/batcher.ts): this file gives it display's
 * statements (decision.ts), the key's organization (KeyOrganizations: a call whose key is being
 * looked up holds the calls behind it, so an organization's calls start in arrival order), the
 * counter rows made before a statement (`prepare`) and the run again of calls that found none
 * (`again`). A group statement that PostgreSQL refuses (a deadlock, a timeout) changed nothing:
 * its calls run again one by one, so no call fails for another's sake. A lost connection leaves
 * the commit unknown, so those calls get the error (503) rather than being charged twice.
 */
import { StatementBatcher } from '../../../src/batcher'
import { citusKnown } from '../../../src/citus'
import { queryText, type Database } from '../../../src/db'
import type { UsageRow } from './answers'
import { counterMissing, ensureCounters, groupStatementOf, runAlone, type DisplayCall } from './decision'
import { KeyOrganizations } from './key-organizations'

export interface CallGroupOptions {
  /** Group calls that arrive while statements run (false: every call is its own statement). */
  enabled: boolean
  /** Most calls in one statement. */
  maxCalls: number
  /** Statements in flight at once per instance; calls beyond wait and group. */
  concurrency: number
}

/** Statements a call whose counter row was missing runs in all (the day can begin between a statement and the next). */
const COUNTER_ATTEMPTS = 3

/** Keys whose counter row this line remembers as made today; past this the memory starts again. */
const MAX_READY_KEYS = 20_000

const keyHashes = (calls: readonly DisplayCall[]) => calls.map((call) => call.keyHash)

/** The per-instance line of display calls. */
export class CallGroups {
  private readonly line: StatementBatcher<DisplayCall, UsageRow | undefined>
  /** Statements run, the calls they carried, those that went in groups and those a refused group ran again alone: for the metrics and the tests. */
  readonly stats: StatementBatcher<DisplayCall, UsageRow | undefined>['stats']
  /** Key hash → the UTC day (YYYY-MM-DD) its account's counter row was last made sure of. */
  private readonly countersReady = new Map<string, string>()

  /** `keys`: the organizations of display keys (shared by every line of the instance). */
  constructor(
    private readonly db: Database,
    options: CallGroupOptions,
    readonly keys = new KeyOrganizations(db),
  ) {
    this.line = new StatementBatcher<DisplayCall, UsageRow | undefined>(
      { enabled: options.enabled, maxItems: options.maxCalls, concurrency: options.concurrency, citus: citusKnown(db) },
      {
        one: (call, organizationId) => runAlone(db, { call, organizationId }),
        async group(calls, _organizationId, organizations) {
          // Of their organization when they share one, else spanning theirs (groupStatementOf picks).
          const { text, values } = groupStatementOf(calls.map((call, i) => ({ call, organizationId: organizations[i]! })))
          const rows = await queryText<UsageRow>(db, text, values)
          return rows.map((row) => (row.userId ? row : undefined))
        },
        prepare: (organizationId, calls) => this.prepareCounters(organizationId, keyHashes(calls)),
        again: {
          attempts: COUNTER_ATTEMPTS,
          needed: (row) => row !== undefined && counterMissing(row),
          repair: (organizationId, calls) => ensureCounters(db, organizationId, keyHashes(calls)),
        },
      },
    )
    this.stats = this.line.stats
  }

  /** The call's answer row (the single statements' columns), or undefined for a key that is no live display key. */
  run(call: DisplayCall): Promise<UsageRow | undefined> {
    const held = this.keys.cached(call.keyHash)
    if (held === null) return Promise.resolve(undefined)
    return this.line.run(call, held ?? this.keys.of(call.keyHash))
  }

  /**
   * Makes today's counter rows of the keys that this line has not seen with one today, before
   * their statement (a statement that found none would do nothing, and run again after the calls
   * beside it). Remembers the keys as ready for the UTC day.
   */
  private async prepareCounters(organizationId: string, keyHashes: readonly string[]): Promise<void> {
    const today = new Date().toISOString().slice(0, 10)
    const unseen = keyHashes.filter((keyHash) => this.countersReady.get(keyHash) !== today)
    if (!unseen.length) return
    await ensureCounters(this.db, organizationId, unseen)
    if (this.countersReady.size > MAX_READY_KEYS) this.countersReady.clear()
    for (const keyHash of unseen) this.countersReady.set(keyHash, today)
  }
}
