/**
 * The decision of a display call, written once as Drizzle SQL fragments with named placeholders:
 * which account the key is (a live account of an active user), the charge on its daily limit (the
 * counter row's update is the check), the component or page it acts on and whether its user may
 * feed it (pages/access.ts), whether an update applies (not older than the data stored), the
 * write, and the usage columns of its answer. Those fragments make the three statements of a lone
 * call (count only, a component update, a call on a page by name) and the two of a group of calls
 * (one organization's, or several organizations'), each compiled once (src/statements.ts).
 *
 * Every table is read in the call's organization, a placeholder (the key's, KeyOrganizations), so
 * on Citus a statement runs on that organization's shard alone. The day's counter row must exist
 * (ensureCounters): a call that finds none is neither charged nor acts. (Not an upsert: Citus
 * refuses a subquery in the WHERE of an ON CONFLICT, and runs an INSERT inside a WITH apart from
 * the rest.)
 */
import { sql, type Placeholder, type SQL } from 'drizzle-orm'
import type { Executor } from '../../../src/db'
import { bind, compileStatement, runStatement, type CompiledStatement } from '../../../src/statements'
import { MAY_EDIT_PAGE, MAY_USE_PAGE } from '../pages/access'
import type { UsageRow } from './answers'

/** Today, the UTC day a call is charged on. */
export const TODAY = sql`(now() at time zone 'utc')::date`

const KEY = sql.placeholder('key')
const ORGANIZATION = sql.placeholder('organization')
const COMPONENT = sql.placeholder('component')
const DATA = sql.placeholder('data')
const TIMESTAMP = sql.placeholder('timestamp')
const TYPE = sql.placeholder('type')
const PAGE_NAME = sql.placeholder('pageName')
const KEYS = sql.placeholder('keys')
const ORGANIZATIONS = sql.placeholder('organizationIds')
const COMPONENTS = sql.placeholder('componentIds')
const TIMESTAMPS = sql.placeholder('timestamps')
const TYPES = sql.placeholder('types')

type Operand = SQL | Placeholder

// ---- the decision, once ---------------------------------------------------------------------

/** The accounts whose keys match `keys`, in `organizations`, of active users: `columns` of the account `a` and its user `u`. */
const activeAccounts = (columns: SQL, keys: SQL, organizations: SQL) => sql`select ${columns}
    from display_accounts a join user_directory u on u.id = a.user_id and u.organization_id = a.organization_id
    where ${keys} and ${organizations} and u.status = 'active'`

/**
 * Charges `calls` calls to today's counter row of each account of `source` (alias `l`: its
 * user_id and daily_limit), at most up to the limit, unless the limit is used up: the row update
 * is the check, so concurrent calls on any number of instances never pass it. `previous_calls`
 * keeps where the row stood.
 */
const charge = (source: SQL, calls: SQL, organization: Operand) => sql`update display_usage k set previous_calls = k.calls, calls = least(k.calls + ${calls}, l.daily_limit)
    from ${source} l
    where k.user_id = l.user_id and k.organization_id = ${organization} and k.day = ${TODAY} and k.calls < l.daily_limit`

/** A component `c` with its page `p`. */
const WITH_ITS_PAGE = sql`join pages p on p.id = c.page_id and p.organization_id = c.organization_id`

/**
 * An update of type `wanted` feeds the component of type `type`: its caller may feed the page
 * (`editable`), the component is not `bound` (fed by a plugin: 409 componentBound) and the types match.
 */
const feeds = (editable: SQL, bound: SQL, type: SQL, wanted: Operand) => sql`${editable} and not ${bound} and ${type} = ${wanted}`

/** Whether the component `c` is fed by a plugin (a work source), not by display calls. */
const BOUND = sql`c.feed is not null`

/** An update at `at` is not older than the data `stored` (equal or newer applies). */
const notOlder = (stored: SQL, at: Operand) => sql`(${stored} is null or ${at} >= ${stored})`

/** Writes `data` (JSON text) stamped `at` on the components `c` the statement names: a new version, which live pages draw again. */
const write = (data: Operand, at: Operand) => sql`update components c set data = ${data}::jsonb, data_timestamp = ${at}, version = c.version + 1, updated_at = now()`

/**
 * The usage columns of a call's answer (the account `row`: user_id, daily_limit): `calls`, the
 * day's count after it when it was `charged`, else `callsBefore`, the count it found (null: no
 * counter row today).
 */
const usage = (row: SQL, charged: SQL, callsAfter: SQL, organization: Operand) => sql`${row}.user_id as "userId", ${row}.daily_limit as "dailyLimit", case when ${charged} then ${callsAfter} end as calls,
    case when not ${charged} then (select x.calls from display_usage x where x.user_id = ${row}.user_id and x.organization_id = ${organization} and x.day = ${TODAY}) end as "callsBefore"`

// ---- a lone call ----------------------------------------------------------------------------

/** The first CTEs of a lone call: `account` (the key's account in the organization) and `charged` (this call charged, or nothing). */
const LONE_CALL = sql`account as (
    ${activeAccounts(sql`a.user_id, a.daily_limit, u.role`, sql`a.key_hash = ${KEY}`, sql`a.organization_id = ${ORGANIZATION}`)}
  ),
  charged as (
    ${charge(sql`account`, sql`1`, ORGANIZATION)}
    returning k.calls
  )`

/** The lone call's usage columns (account alias `a`). */
const LONE_USAGE = usage(sql`a`, sql`exists (select 1 from charged)`, sql`(select calls from charged)`, ORGANIZATION)

/**
 * The caller as the `a` of pages/access.ts's conditions: its organization is the placeholder
 * itself, not a column of `account`, so every `a.organization_id` of those conditions is the
 * organization's value and Citus sees each table named by it.
 */
const CALLER = sql`(select user_id, role, ${ORGANIZATION}::uuid as organization_id from account) a`

/** `key`, its `organization`: charges a call without doing anything else. */
const CHARGE_ONLY = compileStatement(sql`with ${LONE_CALL} select ${LONE_USAGE} from account a`)

/**
 * `key`, its `organization`, `component`, `data` (JSON text), `timestamp` (seconds), `type`: the
 * call charged and the component's data replaced, if its caller may feed it, the types match and
 * the update is not older than the data stored.
 */
const COMPONENT_UPDATE = compileStatement(sql`with ${LONE_CALL},
  target as (
    select c.id, c.type, ${MAY_EDIT_PAGE} as editable, ${BOUND} as bound
    from components c ${WITH_ITS_PAGE}, ${CALLER}
    where c.id = ${COMPONENT} and c.organization_id = ${ORGANIZATION} and ${MAY_USE_PAGE}
  ),
  updated as (
    ${write(DATA, TIMESTAMP)}
    from target t, charged
    where c.id = t.id and c.organization_id = ${ORGANIZATION} and ${feeds(sql`t.editable`, sql`t.bound`, sql`t.type`, TYPE)} and ${notOlder(sql`c.data_timestamp`, TIMESTAMP)}
    returning c.id, c.page_id
  )
  select ${LONE_USAGE}, (select type from target) as type, (select editable from target) as editable, (select bound from target) as bound,
    (select id from updated) as "updatedId", (select page_id from updated) as "pageId"
  from account a`)

/** `key`, its `organization`, `pageName`: the call charged and the page found by name, with whether the key's user may feed it. */
const PAGE_CALL = compileStatement(sql`with ${LONE_CALL},
  target as (
    select p.id, p.name, ${MAY_EDIT_PAGE} as editable from pages p, ${CALLER}
    where lower(p.name) = lower(${PAGE_NAME}) and ${MAY_USE_PAGE}
  )
  select ${LONE_USAGE}, (select id from target) as "pageId", (select name from target) as "pageName", (select editable from target) as editable
  from account a`)

// ---- a group of calls -----------------------------------------------------------------------

/**
 * The grouped statement: calls in arrival order (`keys`, `componentIds`, `data` — null for a call
 * that is only charged —, `timestamps`, `types`, and their `organization`, or `organizationIds`
 * one per call): one answer row per call, in that order, with the lone statements' columns. Each
 * account is charged once by the calls it admits, and each call is decided as if the calls had run
 * one after another in arrival order: charged or not by its rank among its account's calls;
 * applied against the newest timestamp before it (the stored one, locked, or an earlier call's);
 * the last applied update of each component is the one written. Row locks are taken in one order
 * by every statement (counter rows by user, then components by id), so groups on several
 * instances do not deadlock each other.
 *
 * `organization`: the calls of one organization, every table read in it (on Citus: its shard
 * alone). `calls`: each call in its own organization, for groups of several organizations where
 * one statement may read them all (plain PostgreSQL, PGlite).
 */
function groupStatement(scope: 'organization' | 'calls'): CompiledStatement {
  const spanning = scope === 'calls'
  /** The organization of the call row `row`. */
  const organizationOf = (row: string): Operand => (spanning ? sql.raw(`${row}.organization_id`) : ORGANIZATION)
  return compileStatement(sql`with input as (
    select *, data is not null as is_update from unnest(${KEYS}::text[], ${COMPONENTS}::uuid[], ${DATA}::text[], ${TIMESTAMPS}::float8[], ${TYPES}::text[]${spanning ? sql`, ${ORGANIZATIONS}::uuid[]` : sql``})
      with ordinality as i(key_hash, component_id, data, ts, type${spanning ? sql`, organization_id` : sql``}, ord)
  ),
  account as (
    ${activeAccounts(
      sql`a.key_hash, a.user_id, a.organization_id, a.daily_limit, u.role`,
      sql`a.key_hash = any(${KEYS}::text[])`,
      spanning ? sql`a.organization_id = any(${ORGANIZATIONS}::uuid[])` : sql`a.organization_id = ${ORGANIZATION}`,
    )}
  ),
  calls as (
    select i.*, a.user_id, a.daily_limit, a.role,
      row_number() over (partition by a.user_id order by i.ord) as rank, count(*) over (partition by a.user_id) as n
    from input i join account a on a.key_hash = i.key_hash${spanning ? sql` and a.organization_id = i.organization_id` : sql``}
  ),
  locked as (
    select k.user_id, k.organization_id, c.n, c.daily_limit from display_usage k join calls c on c.user_id = k.user_id and c.rank = 1
    where k.organization_id = ${organizationOf('c')} and k.day = ${TODAY}
    order by k.user_id for update of k
  ),
  charged as (
    ${charge(sql`locked`, sql`l.n`, organizationOf('l'))}
    returning k.user_id, k.calls, k.previous_calls
  ),
  decided as (
    select c.*, coalesce(c.rank <= k.calls - k.previous_calls, false) as charged, (k.previous_calls + c.rank)::int as calls_after
    from calls c left join charged k on k.user_id = c.user_id
  ),
  target as (
    select d.ord, d.component_id, d.data, d.ts, d.type as wanted, c.type, c.organization_id, c.page_id, c.data_timestamp, ${MAY_EDIT_PAGE} as editable, ${BOUND} as bound
    from decided d cross join lateral (select d.user_id, d.role, ${spanning ? sql`d.organization_id` : sql`${ORGANIZATION}::uuid`} as organization_id) a
      join components c on c.id = d.component_id and c.organization_id = ${organizationOf('d')}
      ${WITH_ITS_PAGE}
    where d.charged and d.is_update and ${MAY_USE_PAGE}
    order by c.id for update of c
  ),
  eligible as (
    select t.ord, t.component_id, t.organization_id, t.page_id, t.data, t.ts,
      ${notOlder(sql`t.data_timestamp`, sql`t.ts`)}
        and t.ts >= coalesce(max(t.ts) over (partition by t.component_id order by t.ord rows between unbounded preceding and 1 preceding), '-infinity') as applied
    from target t where ${feeds(sql`t.editable`, sql`t.bound`, sql`t.type`, sql`t.wanted`)}
  ),
  written as (
    ${write(sql`w.data`, sql`w.ts`)}
    from (select distinct on (component_id) component_id, organization_id, data, ts from eligible where applied order by component_id, ord desc) w
    where c.id = w.component_id and c.organization_id = ${organizationOf('w')}
    returning c.id
  )
  select ${usage(sql`d`, sql`d.charged`, sql`d.calls_after`, organizationOf('d'))},
    t.type, t.editable, t.bound, case when e.applied then e.component_id end as "updatedId", case when e.applied then e.page_id end as "pageId",
    (select count(*) from written) as written
  from input i left join decided d on d.ord = i.ord left join target t on t.ord = i.ord left join eligible e on e.ord = i.ord
  order by i.ord`)
}

/** Calls of one organization: every table read in it, so on Citus the statement runs on its shard alone. */
const ORGANIZATION_GROUP = groupStatement('organization')

/** Calls of several organizations: one statement for them all, where one database holds them all (plain PostgreSQL, PGlite). */
const SPANNING_GROUP = groupStatement('calls')

// ---- running them ---------------------------------------------------------------------------

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

/** A call with its key's organization. */
export interface AddressedCall {
  call: DisplayCall
  organizationId: string
}

/** A statement ready to run: its text, the placeholder each `$n` takes, and the values in that order. */
export interface RunnableStatement {
  text: string
  parameters: string[]
  values: unknown[]
}

const runnable = (statement: CompiledStatement, values: Record<string, unknown>): RunnableStatement => ({ text: statement.text, parameters: statement.parameters, values: bind(statement, values) })

/** The values of a lone call's statement. */
function loneValues({ call, organizationId }: AddressedCall): Record<string, unknown> {
  const { keyHash, update } = call
  return update
    ? { key: keyHash, organization: organizationId, component: update.componentId, data: update.data, timestamp: update.timestamp, type: update.type }
    : { key: keyHash, organization: organizationId }
}

/**
 * The statement a lone call runs (a component update, or a call charged only), ready to run: for
 * measuring it apart from the service (the benchmarks' pgbench ceiling). Its placeholders are
 * `key`, `organization` and, with an update, `component`, `data`, `timestamp` and `type`.
 */
export const displayCallStatement = (keyHash: string, organizationId: string, update?: ComponentWrite): RunnableStatement =>
  runnable(update ? COMPONENT_UPDATE : CHARGE_ONLY, loneValues({ call: { keyHash, update }, organizationId }))

/** Runs a lone call: its answer row, or none for a key that is no live account's. */
export async function runAlone(executor: Executor, call: AddressedCall): Promise<UsageRow | undefined> {
  const [row] = await runStatement<UsageRow>(executor, call.call.update ? COMPONENT_UPDATE : CHARGE_ONLY, loneValues(call))
  return row
}

/** The statement of a group of calls: of their organization when they share one, else spanning theirs. */
export function groupStatementOf(calls: readonly AddressedCall[]): RunnableStatement {
  const organizations = calls.map(({ organizationId }) => organizationId)
  const one = organizations.every((organizationId) => organizationId === organizations[0])
  return runnable(one ? ORGANIZATION_GROUP : SPANNING_GROUP, {
    keys: calls.map(({ call }) => call.keyHash),
    organization: organizations[0],
    organizationIds: organizations,
    componentIds: calls.map(({ call }) => call.update?.componentId ?? null),
    data: calls.map(({ call }) => call.update?.data ?? null),
    timestamps: calls.map(({ call }) => call.update?.timestamp ?? null),
    types: calls.map(({ call }) => call.update?.type ?? null),
  })
}

/** A call on the page named `pageName` (matched in any case): the usage columns and the page's id, name and whether the caller may feed it. */
export async function runPageCall(executor: Executor, keyHash: string, organizationId: string, pageName: string) {
  const [row] = await runStatement<UsageRow & { pageName: string | null }>(executor, PAGE_CALL, { key: keyHash, organization: organizationId, pageName })
  return row
}

/** Today's counter rows of the accounts of `keys` that have none (and a limit above 0). */
const ENSURE_COUNTERS = compileStatement(sql`insert into display_usage (user_id, organization_id, day, calls)
  select user_id, organization_id, ${TODAY}, 0 from display_accounts where key_hash = any(${KEYS}::text[]) and organization_id = ${ORGANIZATION} and daily_limit > 0
  on conflict do nothing`)

/**
 * Whether the call's statement found no counter row for today (none made yet, or the day began
 * since it was): nothing was charged or done; make the row (ensureCounters) and run it again.
 */
export const counterMissing = (row: UsageRow) => row.calls === null && row.callsBefore === null && row.dailyLimit > 0

/** Makes today's counter rows of the accounts of `keyHashes` (of one organization) that have none. */
export async function ensureCounters(executor: Executor, organizationId: string, keyHashes: readonly string[]): Promise<void> {
  await runStatement(executor, ENSURE_COUNTERS, { keys: [...new Set(keyHashes)], organization: organizationId })
}
