/**
 * Grouped display calls. The display API's statement is short, but it commits, and on a busy
 * account every call waits for the one before it to release the counter row. So calls that
 * arrive while a statement is in flight wait in line and go together, as ONE statement and one
 * commit: each account's counter rises once by the calls it counts, and each call's outcome is
 * decided inside that statement exactly as if the calls had run one after another in arrival
 * order — counted or 429 by its rank among its account's calls; 404, 403 and the type mismatch as
 * alone; stale or applied against the newest timestamp before it (the stored one, locked, or an
 * earlier call's); the last applied update of each component is the one written. There is no
 * fixed delay: a lone call runs at once as the single statement it always was, and a group forms
 * only while earlier statements run.
 *
 * A group statement that PostgreSQL refuses (a deadlock, a timeout) changed nothing: its calls
 * run again one by one, so no call fails for another's sake. A lost connection leaves the commit
 * unknown, so those calls get the error (503) rather than being counted twice.
 */
import { queryText, type Database } from '../../src/db'
import type { UsageRow } from './answers'
import { DISPLAY_CALL, DISPLAY_USAGE } from './calls'
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

/** $1 key hash: counts a call without doing anything else. */
export const COUNT_ONLY_SQL = `with ${DISPLAY_CALL} select ${DISPLAY_USAGE} from account a`

/** $1 key hash, $2 component id, $3 data (JSON text), $4 timestamp (seconds), $5 data type. Exported for the benchmarks. */
export const COMPONENT_UPDATE_SQL = `with ${DISPLAY_CALL},
  target as (
    select c.id, c.type, ${MAY_EDIT_PAGE} as editable from components c join pages p on p.id = c.page_id, account a
    where c.id = $2 and ${MAY_USE_PAGE}
  ),
  updated as (
    update components c set data = $3::jsonb, data_timestamp = $4, version = c.version + 1, updated_at = now()
    from target t, counted
    where c.id = t.id and t.editable and t.type = $5 and (c.data_timestamp is null or c.data_timestamp <= $4)
    returning c.id, c.page_id
  )
  select ${DISPLAY_USAGE}, (select type from target) as type, (select editable from target) as editable,
    (select id from updated) as "updatedId", (select page_id from updated) as "pageId"
  from account a`

/**
 * Calls in arrival order ($1 key hashes, $2 component ids, $3 data — null for a call that only
 * counts —, $4 timestamps, $5 data types): one answer row per call, in that order, with the single
 * statements' columns. Row locks are taken in one order by every statement (counter rows by
 * user, then components by id), so groups on several instances do not deadlock each other.
 */
export const GROUP_SQL = `with input as (
    select *, data is not null as is_update from unnest($1::text[], $2::uuid[], $3::text[], $4::float8[], $5::text[])
      with ordinality as i(key_hash, component_id, data, ts, type, ord)
  ),
  account as (
    select a.key_hash, a.user_id, a.daily_limit, u.organization_id, u.role
    from display_accounts a join user_directory u on u.id = a.user_id and u.organization_id = a.organization_id
    where a.key_hash = any($1::text[]) and u.status = 'active'
  ),
  calls as (
    select i.*, a.user_id, a.daily_limit, a.organization_id, a.role,
      row_number() over (partition by a.user_id order by i.ord) as rank, count(*) over (partition by a.user_id) as n
    from input i join account a on a.key_hash = i.key_hash
  ),
  counted as (
    insert into display_usage as u (user_id, organization_id, day, calls, previous_calls)
    select user_id, organization_id, (now() at time zone 'utc')::date, least(n, daily_limit), 0 from calls
    where rank = 1 and daily_limit > 0 order by user_id
    on conflict (user_id, day, organization_id) do update
      set previous_calls = u.calls, calls = least(u.calls + excluded.calls, (select c.daily_limit from calls c where c.user_id = u.user_id and c.rank = 1))
      where u.calls < (select c.daily_limit from calls c where c.user_id = u.user_id and c.rank = 1)
    returning u.user_id, u.calls, u.previous_calls
  ),
  decided as (
    select c.ord, c.user_id, c.organization_id, c.role, c.daily_limit, c.is_update, c.component_id, c.data, c.ts, c.type,
      coalesce(c.rank <= k.calls - k.previous_calls, false) as counted, (k.previous_calls + c.rank)::int as calls_after
    from calls c left join counted k on k.user_id = c.user_id
  ),
  target as (
    select a.ord, a.component_id, a.data, a.ts, a.type as wanted, c.type, c.page_id, c.data_timestamp, ${MAY_EDIT_PAGE} as editable
    from decided a join components c on c.id = a.component_id join pages p on p.id = c.page_id
    where a.counted and a.is_update and ${MAY_USE_PAGE}
    order by c.id for update of c
  ),
  eligible as (
    select t.ord, t.component_id, t.page_id, t.data, t.ts,
      (t.data_timestamp is null or t.ts >= t.data_timestamp)
        and t.ts >= coalesce(max(t.ts) over (partition by t.component_id order by t.ord rows between unbounded preceding and 1 preceding), '-infinity') as applied
    from target t where t.editable and t.type = t.wanted
  ),
  written as (
    update components c set data = w.data::jsonb, data_timestamp = w.ts, version = c.version + 1, updated_at = now()
    from (select distinct on (component_id) component_id, data, ts from eligible where applied order by component_id, ord desc) w
    where c.id = w.component_id
    returning c.id
  )
  select d.user_id as "userId", d.daily_limit as "dailyLimit", case when d.counted then d.calls_after end as calls,
    case when not d.counted then (select x.calls from display_usage x where x.user_id = d.user_id and x.organization_id = d.organization_id and x.day = (now() at time zone 'utc')::date) end as "callsBefore",
    t.type, t.editable, case when e.applied then e.component_id end as "updatedId", case when e.applied then e.page_id end as "pageId",
    (select count(*) from written) as written
  from input i left join decided d on d.ord = i.ord left join target t on t.ord = i.ord left join eligible e on e.ord = i.ord
  order by i.ord`

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
  resolve(row: UsageRow | undefined): void
  reject(error: unknown): void
}

/** A server-reported error: the statement failed and its transaction rolled back (a lost connection is not one). */
const rolledBack = (error: unknown) => typeof (error as { code?: unknown }).code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code) && 'severity' in (error as object)

/** The per-instance line of display calls. */
export class CallGroups {
  private readonly waiting: Waiting[] = []
  private running = 0
  /** Statements run and calls they carried, for the metrics and the tests. */
  readonly stats = { statements: 0, calls: 0, grouped: 0, retried: 0 }

  constructor(
    private readonly db: Database,
    private readonly options: CallGroupOptions,
  ) {}

  /** The call's answer row (the single statements' columns), or undefined for a key that is no live display key. */
  run(call: DisplayCall): Promise<UsageRow | undefined> {
    if (!this.options.enabled) return this.alone(call)
    return new Promise((resolve, reject) => {
      this.waiting.push({ call, resolve, reject })
      this.next()
    })
  }

  private next(): void {
    while (this.running < this.options.concurrency && this.waiting.length) {
      const group = this.waiting.splice(0, this.options.maxCalls)
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
      return this.alone(only.call).then(only.resolve, only.reject)
    }
    try {
      const rows = await this.together(group.map((waiting) => waiting.call))
      group.forEach((waiting, i) => waiting.resolve(rows[i]))
    } catch (error) {
      if (!rolledBack(error)) {
        for (const waiting of group) waiting.reject(error)
        return
      }
      // One by one, in arrival order, so each still sees the calls before it.
      this.stats.retried += group.length
      for (const waiting of group) await this.alone(waiting.call).then(waiting.resolve, waiting.reject)
    }
  }

  private async alone(call: DisplayCall): Promise<UsageRow | undefined> {
    this.stats.statements++
    this.stats.calls++
    const { keyHash, update } = call
    const [row] = update
      ? await queryText<UsageRow>(this.db, COMPONENT_UPDATE_SQL, [keyHash, update.componentId, update.data, update.timestamp, update.type])
      : await queryText<UsageRow>(this.db, COUNT_ONLY_SQL, [keyHash])
    return row
  }

  private async together(calls: DisplayCall[]): Promise<Array<UsageRow | undefined>> {
    this.stats.statements++
    this.stats.calls += calls.length
    this.stats.grouped += calls.length
    const rows = await queryText<UsageRow>(this.db, GROUP_SQL, [
      calls.map((call) => call.keyHash),
      calls.map((call) => call.update?.componentId ?? null),
      calls.map((call) => call.update?.data ?? null),
      calls.map((call) => call.update?.timestamp ?? null),
      calls.map((call) => call.update?.type ?? null),
    ])
    return rows.map((row) => (row.userId ? row : undefined))
  }
}
