/**
 * Display API calls (`POST /api/component`, and `POST /api/message` through this plugin's public
 * face): the key's organization found (KeyOrganizations: held after the first call), then the key
 * checked, the call counted against the account's daily limit and the work done in ONE statement
 * that names that organization (on Citus: one shard). The counter row's update is the check, so
 * concurrent calls on any number of instances never pass the limit; every call with a valid key
 * counts except one refused with 429. A call on a page (`POST /api/message`) runs that statement
 * and then the caller's own statements in one transaction.
 */
import type { Counter } from 'prom-client'
import { queryText, type Database, type Executor } from '../../src/db'
import { hashSecret, isWellFormedSecret } from '../../src/secrets'
import { limitExceeded, readOnly, unknownKey, usageOf, type DisplayError, type Outcome, type Refusal, type UsageRow } from './answers'
import type { DisplayCalls, PageEffect } from './api'
import type { CallGroups } from './call-groups'
import { DISPLAY_KEY_PREFIX, PAGE_NAME_PATTERN } from './model'
import { MAY_EDIT_PAGE, MAY_USE_PAGE } from './page-access'

/** Today, the UTC day a call counts on. */
export const TODAY = `(now() at time zone 'utc')::date`

/**
 * The first CTEs of a display API call: `account` (the key $1 of a live account of an active user
 * in organization $2: the user, the daily limit and `role` from auth's user directory) and
 * `counted` (this call counted, unless the day's limit is used up: the row update is the check).
 * The day's counter row must exist (ensureCounters): a call that finds none neither counts nor acts.
 * Every table is read in organization $2, the key's (KeyOrganizations), so on Citus the
 * statement runs on that organization's shard alone. (Not an upsert: Citus refuses a subquery in
 * the WHERE of an ON CONFLICT, and runs an INSERT inside a WITH apart from the rest.)
 */
export const DISPLAY_CALL = `account as (
    select a.user_id, a.daily_limit, u.role
    from display_accounts a join user_directory u on u.id = a.user_id and u.organization_id = a.organization_id
    where a.key_hash = $1 and a.organization_id = $2 and u.status = 'active'
  ),
  counted as (
    update display_usage k set previous_calls = k.calls, calls = k.calls + 1
    from account a
    where k.user_id = a.user_id and k.organization_id = $2 and k.day = ${TODAY} and k.calls < a.daily_limit
    returning k.calls
  )`

/**
 * The caller as the `a` of page-access.ts's conditions: its organization is the parameter $2
 * itself, not a column of `account`, so PostgreSQL writes every `a.organization_id` of those
 * conditions as $2 and Citus sees each table named by the organization.
 */
export const CALLER = `(select user_id, role, $2::uuid as organization_id from account) a`

/** The usage columns of a display call's answer (account alias `a`); `callsBefore` null: no counter row today. */
export const DISPLAY_USAGE = `a.user_id as "userId", a.daily_limit as "dailyLimit", (select calls from counted) as calls,
    (select calls from display_usage where user_id = a.user_id and organization_id = $2 and day = ${TODAY}) as "callsBefore"`

/** $1 key hashes, $2 their organization: today's counter rows of their accounts that have none (and a limit above 0). */
const ENSURE_COUNTERS = `insert into display_usage (user_id, organization_id, day, calls)
  select user_id, organization_id, ${TODAY}, 0 from display_accounts where key_hash = any($1::text[]) and organization_id = $2 and daily_limit > 0
  on conflict do nothing`

/**
 * Whether the call's statement found no counter row for today (none made yet, or the day began
 * since it was): nothing was counted or done; make the row (ensureCounters) and run it again.
 */
export const counterMissing = (row: UsageRow) => row.calls === null && row.callsBefore === null && row.dailyLimit > 0

/** Makes today's counter rows of the accounts of `keyHashes` (of one organization) that have none. */
export async function ensureCounters(executor: Executor, organizationId: string, keyHashes: readonly string[]): Promise<void> {
  await queryText(executor, ENSURE_COUNTERS, [[...new Set(keyHashes)], organizationId])
}

/** The first check of every display call: a JSON object with a well-formed `apiKey`; its hash, or the refusal. */
export function displayKeyOf(body: unknown): { keyHash: string } | Refusal {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: false, status: 400, error: { message: 'invalidRequest', detail: 'The body must be a JSON object.' } }
  const apiKey = (body as { apiKey?: unknown }).apiKey
  if (typeof apiKey !== 'string') return { ok: false, status: 400, error: { message: 'invalidRequest', detail: 'apiKey is required.', field: 'apiKey' } }
  if (!isWellFormedSecret(DISPLAY_KEY_PREFIX, apiKey)) return unknownKey()
  return { keyHash: hashSecret(apiKey) }
}

/** A valid key's call whose body was refused: counted and 400 with `problem` (or 429 / 401), grouped like every display call. */
export async function refuseCounted(groups: CallGroups, keyHash: string, problem: DisplayError): Promise<Refusal> {
  const row = await groups.run({ keyHash })
  if (!row) return unknownKey()
  const usage = usageOf(row)
  return usage.counted ? { ok: false, status: 400, usage, error: problem } : limitExceeded(usage)
}

const PAGE_NAME = new RegExp(PAGE_NAME_PATTERN)

/** Counts one display call: `ok`, its refusal's message (`limitExceeded`, `staleUpdate`…) or `failed` (an unexpected error). */
export type CountDisplayCall = (call: 'component' | 'message', outcome: string) => void

/** CountDisplayCall on `worktrack_display_calls_total`; the outcomes are the API's own message names, a bounded set. */
export function displayCallCounter(counter: Counter<'call' | 'outcome'>): CountDisplayCall {
  return (call, outcome) => counter.inc({ call, outcome })
}

/** The seam push uses (api.ts), its calls counted as `message` calls from the moment they reach it. */
export function createDisplayCalls(db: Database, groups: CallGroups, countCall: CountDisplayCall): DisplayCalls {
  const calls = uncountedDisplayCalls(db, groups)
  const counted = async <O extends Outcome<object>>(decided: Promise<O>): Promise<O> => {
    try {
      const outcome = await decided
      countCall('message', outcome.ok ? 'ok' : outcome.error.message)
      return outcome
    } catch (error) {
      countCall('message', 'failed')
      throw error
    }
  }
  return {
    ...calls,
    keyOf(body) {
      const key = calls.keyOf(body)
      if ('ok' in key) countCall('message', key.error.message)
      return key
    },
    refuseCounted: (keyHash, problem) => counted(calls.refuseCounted(keyHash, problem)),
    onPage: (keyHash, pageName, effect) => counted(calls.onPage(keyHash, pageName, effect)),
  }
}

/**
 * $1 key hash, $2 its organization, $3 page name: the call counted and the page found by name
 * with whether the key's user may feed it (ONE statement, on the organization's shard).
 */
const PAGE_CALL = `with ${DISPLAY_CALL},
  target as (
    select p.id, p.name, ${MAY_EDIT_PAGE} as editable from pages p, ${CALLER}
    where lower(p.name) = lower($3) and ${MAY_USE_PAGE}
  )
  select ${DISPLAY_USAGE}, (select id from target) as "pageId", (select name from target) as "pageName", (select editable from target) as editable
  from account a`

/**
 * A counted call on a page its editors may act on: in one transaction, the call's statement, then
 * the caller's effect (its own statements); a refused call commits its count alone.
 */
function uncountedDisplayCalls(db: Database, groups: CallGroups): DisplayCalls {
  return {
    keyOf: displayKeyOf,
    refuseCounted: (keyHash, problem) => refuseCounted(groups, keyHash, problem),
    groupStats: () => ({ ...groups.stats }),
    async onPage<R>(keyHash: string, pageName: string, effect: PageEffect<R>): Promise<Outcome<{ result: R }>> {
      const organizationId = await groups.keys.of(keyHash)
      if (!organizationId) return unknownKey()
      // No page has a name outside the pattern (`a%00b` holds U+0000, which text cannot): such a call counts and finds nothing.
      const name = PAGE_NAME.test(pageName) ? pageName : ''
      type PageRow = UsageRow & { pageName: string | null }
      return db.transaction(async (tx): Promise<Outcome<{ result: R }>> => {
        let [row] = await queryText<PageRow>(tx, PAGE_CALL, [keyHash, organizationId, name])
        // The transaction's day stays the same, so once the row exists the call counts.
        if (row && counterMissing(row)) {
          await ensureCounters(tx, organizationId, [keyHash])
          ;[row] = await queryText<PageRow>(tx, PAGE_CALL, [keyHash, organizationId, name])
        }
        if (!row) return unknownKey()
        const usage = usageOf(row)
        if (!usage.counted) return limitExceeded(usage)
        if (!row.pageId) return { ok: false, status: 404, usage, error: { message: 'pageNotFound', detail: 'No such page, or not one this key can use.', field: 'pageName' } }
        if (!row.editable) return readOnly(usage)
        const result = await effect(tx, { organizationId, pageId: row.pageId, pageName: row.pageName!, userId: row.userId })
        return { ok: true, usage, result }
      })
    },
  }
}
