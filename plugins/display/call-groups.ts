/**
 * Grouped display calls. The display API's statement is short, but it commits, and on a busy
 * account every call waits for the one before it to release the counter row. So calls that
 * arrive while a statement is in flight wait in line and go together, as ONE statement and one
 * commit. On Citus a group holds one organization's calls and its statement names that
 * organization (it runs on its shard alone); on plain PostgreSQL a group may hold several
 * organizations' calls. Each account's counter rises once by the calls it counts, and each
 * call's outcome is decided inside that statement exactly as if the calls had run one after
 * another in arrival order — counted or 429 by its rank among its account's calls; 404, 403 and
 * the type mismatch as alone; stale or applied against the newest timestamp before it (the stored
 * one, locked, or an earlier call's); the last applied update of each component is the one
 * written. There is no fixed delay: a lone call runs at once as the single statement it always
 * was, and a group forms only while earlier statements run.
 *
 * A group statement that PostgreSQL refuses (a deadlock, a timeout) changed nothing: its calls
 * run again one by one, so no call fails for another's sake. A lost connection leaves the commit
 * unknown, so those calls get the error (503) rather than being counted twice.
 */
import { citusKnown } from '../../src/citus'
import { queryText, type Database } from '../../src/db'
import type { UsageRow } from './answers'
import { CALLER, counterMissing, DISPLAY_CALL, DISPLAY_USAGE, ensureCounters, TODAY } from './calls'
import { KeyOrganizations } from './key-organizations'
import { MAY_EDIT_PAGE, MAY_USE_PAGE } from './page-access'

/** One display call: the key's hash and, for `POST /api/component` with a valid body, the update. */
export interface DisplayCall {
  keyHash: string
  update?: ComponentWrite
}

export interface ComponentWrite {
  /** null when the body's componentId is no UUID (no component has it). */
  componentId: string | null
  /** The `data` as JSON text. */
  data: string
  /** Unix seconds. */
  timestamp: number
  /** `data.type`. */
  type: string
}

/** $1 key hash, $2 its organization: counts a call without doing anything else. */
export const COUNT_ONLY_SQL = `with ${DISPLAY_CALL} select ${DISPLAY_USAGE} from account a`

/**
 * $1 key hash, $2 its organization, $3 component id, $4 data (JSON text), $5 timestamp (seconds),
 * $6 data type. Exported for the benchmarks.
 */
export const COMPONENT_UPDATE_SQL = `with ${DISPLAY_CALL},
  target as (
    select c.id, c.type, ${MAY_EDIT_PAGE} as editable
    from components c join pages p on p.id = c.page_id and p.organization_id = c.organization_id, ${CALLER}
    where c.id = $3 and c.organization_id = $2 and ${MAY_USE_PAGE}
  ),
  updated as (
    update components c set data = $4::jsonb, data_timestamp = $5, version = c.version + 1, updated_at = now()
    from target t, counted
    where c.id = t.id and c.organization_id = $2 and t.editable and t.type = $6 and (c.data_timestamp is null or c.data_timestamp <= $5)
    returning c.id, c.page_id
  )
  select ${DISPLAY_USAGE}, (select type from target) as type, (select editable from target) as editable,
    (select id from updated) as "updatedId", (select page_id from updated) as "pageId"
  from account a`

/**
 * The grouped statement: calls in arrival order ($1 key hashes, $2 their organization — one for
 * all, or one per call —, $3 component ids, $4 data — null for a call that only counts —, $5
 * timestamps, $6 data types): one answer row per call, in that order, with the single statements'
 * columns. Row locks are taken in one order by every statement (counter rows by user, then
 * components by id), so groups on several instances do not deadlock each other.
 *
 * `organization`: the calls of one organization, every table read in $2 itself (on Citus: its
 * shard alone). `calls`: each call in its own organization ($2 an array), for groups of several
 * organizations where one statement may read them all (plain PostgreSQL, PGlite).
 */
function groupStatement(scope: 'organization' | 'calls'): string {
  /** `column` in the organization of the call row `row`. */
  const inOrganization = (column: string, row: string) => (scope === 'organization' ? `${column} = $2` : `${column} = ${row}.organization_id`)
  return `with input as (
    select *, data is not null as is_update from unnest($1::text[], $3::uuid[], $4::text[], $5::float8[], $6::text[]${scope === 'calls' ? ', $2::uuid[]' : ''})
      with ordinality as i(key_hash, component_id, data, ts, type${scope === 'calls' ? ', organization_id' : ''}, ord)
  ),
  account as (
    select a.key_hash, a.user_id, a.organization_id, a.daily_limit, u.role
    from display_accounts a join user_directory u on u.id = a.user_id and u.organization_id = a.organization_id
    where a.key_hash = any($1::text[]) and ${scope === 'organization' ? 'a.organization_id = $2' : 'a.organization_id = any($2::uuid[])'} and u.status = 'active'
  ),
  calls as (
    select i.*, a.user_id, a.daily_limit, a.role,
      row_number() over (partition by a.user_id order by i.ord) as rank, count(*) over (partition by a.user_id) as n
    from input i join account a on a.key_hash = i.key_hash${scope === 'calls' ? ' and a.organization_id = i.organization_id' : ''}
  ),
  locked as (
    select k.user_id, k.organization_id, c.n, c.daily_limit from display_usage k join calls c on c.user_id = k.user_id and c.rank = 1
    where ${inOrganization('k.organization_id', 'c')} and k.day = ${TODAY}
    order by k.user_id for update of k
  ),
  counted as (
    update display_usage k set previous_calls = k.calls, calls = least(k.calls + l.n, l.daily_limit)
    from locked l
    where k.user_id = l.user_id and ${inOrganization('k.organization_id', 'l')} and k.day = ${TODAY} and k.calls < l.daily_limit
    returning k.user_id, k.calls, k.previous_calls
  ),
  decided as (
    select c.*, coalesce(c.rank <= k.calls - k.previous_calls, false) as counted, (k.previous_calls + c.rank)::int as calls_after
    from calls c left join counted k on k.user_id = c.user_id
  ),
  target as (
    select d.ord, d.component_id, d.data, d.ts, d.type as wanted, c.type, c.organization_id, c.page_id, c.data_timestamp, ${MAY_EDIT_PAGE} as editable
    from decided d cross join lateral (select d.user_id, d.role, ${scope === 'organization' ? '$2::uuid' : 'd.organization_id'} as organization_id) a
      join components c on c.id = d.component_id and ${inOrganization('c.organization_id', 'd')}
      join pages p on p.id = c.page_id and p.organization_id = c.organization_id
    where d.counted and d.is_update and ${MAY_USE_PAGE}
    order by c.id for update of c
  ),
  eligible as (
    select t.ord, t.component_id, t.organization_id, t.page_id, t.data, t.ts,
      (t.data_timestamp is null or t.ts >= t.data_timestamp)
        and t.ts >= coalesce(max(t.ts) over (partition by t.component_id order by t.ord rows between unbounded preceding and 1 preceding), '-infinity') as applied
    from target t where t.editable and t.type = t.wanted
  ),
  written as (
    update components c set data = w.data::jsonb, data_timestamp = w.ts, version = c.version + 1, updated_at = now()
    from (select distinct on (component_id) component_id, organization_id, data, ts from eligible where applied order by component_id, ord desc) w
    where c.id = w.component_id and ${inOrganization('c.organization_id', 'w')}
    returning c.id
  )
  select d.user_id as "userId", d.daily_limit as "dailyLimit", case when d.counted then d.calls_after end as calls,
    case when not d.counted then (select x.calls from display_usage x where x.user_id = d.user_id and ${inOrganization('x.organization_id', 'd')} and x.day = ${TODAY}) end as "callsBefore",
    t.type, t.editable, case when e.applied then e.component_id end as "updatedId", case when e.applied then e.page_id end as "pageId",
    (select count(*) from written) as written
  from input i left join decided d on d.ord = i.ord left join target t on t.ord = i.ord left join eligible e on e.ord = i.ord
  order by i.ord`
}

/** Calls of one organization ($2 its id): every table read in it, so on Citus the statement runs on its shard alone. */
export const ORGANIZATION_GROUP_SQL = groupStatement('organization')

/** Calls of several organizations ($2 each call's): one statement for them all, where one database holds them all (plain PostgreSQL, PGlite). */
export const GROUP_SQL = groupStatement('calls')

export interface CallGroupOptions {
  /** Group calls that arrive while statements run (false: every call is its own statement). */
  enabled: boolean
  /** Most calls in one statement. */
  maxCalls: number
  /** Statements in flight at once per instance; calls beyond wait and group. */
  concurrency: number
}

interface Waiting {
  call: DisplayCall
  /** The key's organization; undefined while it is being looked up. */
  organizationId?: string
  resolve(row: UsageRow | undefined): void
  reject(error: unknown): void
}

/** A server-reported error: the statement failed and its transaction rolled back (a lost connection is not one). */
const rolledBack = (error: unknown) => typeof (error as { code?: unknown }).code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code) && 'severity' in (error as object)

/** Runs of a call whose counter row was missing (the day can begin between a statement and the next). */
const COUNTER_ATTEMPTS = 3

/** Keys whose counter row this line remembers as made today; past this the memory starts again. */
const MAX_READY_KEYS = 20_000

/** The per-instance line of display calls. */
export class CallGroups {
  private readonly waiting: Waiting[] = []
  private running = 0
  /** Statements run and calls they carried, for the metrics and the tests. */
  readonly stats = { statements: 0, calls: 0, grouped: 0, retried: 0 }
  /** Key hash → the UTC day (YYYY-MM-DD) its account's counter row was last made sure of. */
  private readonly countersReady = new Map<string, string>()

  /**
   * Whether a group may hold several organizations' calls (GROUP_SQL): on plain PostgreSQL and
   * PGlite, where one statement reads them all and groups stay as large as the calls waiting. On
   * Citus a group is one organization's calls, one statement on its shard; so is every group until
   * the database is known (the first moments of the first line).
   */
  private spanning = false

  /** `keys`: the organizations of display keys (shared by every line of the instance). */
  constructor(
    private readonly db: Database,
    private readonly options: CallGroupOptions,
    readonly keys = new KeyOrganizations(db),
  ) {
    const known = citusKnown(db)
    if (typeof known === 'boolean') this.spanning = !known
    else
      void known.then((citus) => {
        this.spanning = !citus
        this.next()
      })
  }

  /** The call's answer row (the single statements' columns), or undefined for a key that is no live display key. */
  run(call: DisplayCall): Promise<UsageRow | undefined> {
    if (!this.options.enabled)
      return this.keys.of(call.keyHash).then((organizationId) => (organizationId ? this.alone(call, organizationId) : undefined))
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { call, resolve, reject }
      const held = this.keys.cached(call.keyHash)
      if (held === null) return resolve(undefined)
      // In line at once, so the calls of an organization keep their arrival order while a key is looked up.
      this.waiting.push(waiting)
      if (held !== undefined) {
        waiting.organizationId = held
        return this.next()
      }
      this.keys.of(call.keyHash).then(
        (organizationId) => {
          if (organizationId) waiting.organizationId = organizationId
          else {
            this.waiting.splice(this.waiting.indexOf(waiting), 1)
            resolve(undefined)
          }
          this.next()
        },
        (error) => {
          this.waiting.splice(this.waiting.indexOf(waiting), 1)
          reject(error)
          this.next()
        },
      )
    })
  }

  /**
   * Starts groups while there is room: each takes, in order, the calls in line before any call
   * whose key is still being looked up (that call may be of the same organization, and must not
   * be overtaken): all of them where a group may span organizations, else those of the first
   * call's organization.
   */
  private next(): void {
    while (this.running < this.options.concurrency) {
      const pending = this.waiting.findIndex((waiting) => !waiting.organizationId)
      const end = pending < 0 ? this.waiting.length : pending
      if (end === 0) return
      const organizationId = this.waiting[0]!.organizationId
      const group: Waiting[] = []
      for (let i = 0; i < end && group.length < this.options.maxCalls; i++)
        if (this.spanning || this.waiting[i]!.organizationId === organizationId) group.push(this.waiting[i]!)
      const taken = new Set(group)
      this.waiting.splice(0, this.waiting.length, ...this.waiting.filter((waiting) => !taken.has(waiting)))
      this.running++
      void this.dispatch(group).finally(() => {
        this.running--
        this.next()
      })
    }
  }

  private async dispatch(group: Waiting[]): Promise<void> {
    if (group.length === 1) {
      const [only] = group as [Waiting]
      return this.alone(only.call, only.organizationId!).then(only.resolve, only.reject)
    }
    try {
      const rows = await this.together(group.map((waiting) => ({ call: waiting.call, organizationId: waiting.organizationId! })))
      group.forEach((waiting, i) => waiting.resolve(rows[i]))
    } catch (error) {
      if (!rolledBack(error)) {
        for (const waiting of group) waiting.reject(error)
        return
      }
      // One by one, in arrival order, so each still sees the calls before it.
      this.stats.retried += group.length
      for (const waiting of group) await this.alone(waiting.call, waiting.organizationId!).then(waiting.resolve, waiting.reject)
    }
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

  private async alone(call: DisplayCall, organizationId: string): Promise<UsageRow | undefined> {
    const { keyHash, update } = call
    await this.prepareCounters(organizationId, [keyHash])
    for (let attempt = 1; ; attempt++) {
      this.stats.statements++
      this.stats.calls++
      const [row] = update
        ? await queryText<UsageRow>(this.db, COMPONENT_UPDATE_SQL, [keyHash, organizationId, update.componentId, update.data, update.timestamp, update.type])
        : await queryText<UsageRow>(this.db, COUNT_ONLY_SQL, [keyHash, organizationId])
      if (!row || !counterMissing(row) || attempt === COUNTER_ATTEMPTS) return row
      await ensureCounters(this.db, organizationId, [keyHash])
    }
  }

  /** The answers of a group; calls that still found no counter row for today (the day began meanwhile) run again, together, once it exists. */
  private async together(calls: { call: DisplayCall; organizationId: string }[]): Promise<Array<UsageRow | undefined>> {
    this.stats.grouped += calls.length
    const keysByOrganization = new Map<string, string[]>()
    for (const { call, organizationId } of calls) keysByOrganization.set(organizationId, [...(keysByOrganization.get(organizationId) ?? []), call.keyHash])
    for (const [organizationId, keyHashes] of keysByOrganization) await this.prepareCounters(organizationId, keyHashes)
    const rows = await this.statement(calls)
    for (let attempt = 2; attempt <= COUNTER_ATTEMPTS; attempt++) {
      const missing = rows.flatMap((row, i) => (row && counterMissing(row) ? [i] : []))
      if (!missing.length) break
      for (const organizationId of new Set(missing.map((i) => calls[i]!.organizationId)))
        await ensureCounters(this.db, organizationId, missing.filter((i) => calls[i]!.organizationId === organizationId).map((i) => calls[i]!.call.keyHash))
      const again = await this.statement(missing.map((i) => calls[i]!))
      missing.forEach((i, j) => (rows[i] = again[j]))
    }
    return rows
  }

  /** One statement for the calls: ORGANIZATION_GROUP_SQL when they are of one organization, else GROUP_SQL. */
  private async statement(calls: { call: DisplayCall; organizationId: string }[]): Promise<Array<UsageRow | undefined>> {
    this.stats.statements++
    this.stats.calls += calls.length
    const organizations = calls.map(({ organizationId }) => organizationId)
    const one = organizations.every((organizationId) => organizationId === organizations[0])
    const rows = await queryText<UsageRow>(this.db, one ? ORGANIZATION_GROUP_SQL : GROUP_SQL, [
      calls.map(({ call }) => call.keyHash),
      one ? organizations[0] : organizations,
      calls.map(({ call }) => call.update?.componentId ?? null),
      calls.map(({ call }) => call.update?.data ?? null),
      calls.map(({ call }) => call.update?.timestamp ?? null),
      calls.map(({ call }) => call.update?.type ?? null),
    ])
    return rows.map((row) => (row.userId ? row : undefined))
  }
}
