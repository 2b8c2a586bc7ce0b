/**
 * Display API calls (`POST /api/component`, and `POST /api/message` through this plugin's public
 * face): the key checked, the call counted against the account's daily limit and the work done in
 * ONE statement. The counter row's update is the check, so concurrent calls on any number of
 * instances never pass the limit; every call with a valid key counts except one refused with 429.
 */
import type { Counter } from 'prom-client'
import { queryText, type Database } from '../../src/db'
import { hashSecret, isWellFormedSecret } from '../../src/secrets'
import { limitExceeded, readOnly, unknownKey, usageOf, type DisplayError, type Outcome, type Refusal, type UsageRow } from './answers'
import type { DisplayCalls, PageEffect } from './api'
import type { CallGroups } from './call-groups'
import { DISPLAY_KEY_PREFIX, PAGE_NAME_PATTERN } from './model'
import { MAY_EDIT_PAGE, MAY_USE_PAGE } from './page-access'

/**
 * The first CTEs of every display API call: `account` (a live key of an active user; `role` and
 * `organization_id` from auth's user directory) and `counted` (this call counted, unless the day's
 * limit is used up: the row update is the check). $1 key hash.
 */
export const DISPLAY_CALL = `account as (
    select a.user_id, a.daily_limit, u.organization_id, u.role
    from display_accounts a join user_directory u on u.id = a.user_id and u.organization_id = a.organization_id
    where a.key_hash = $1 and u.status = 'active'
  ),
  counted as (
    insert into display_usage (user_id, organization_id, day, calls)
    select user_id, organization_id, (now() at time zone 'utc')::date, 1 from account where daily_limit > 0
    on conflict (user_id, day, organization_id) do update set previous_calls = display_usage.calls, calls = display_usage.calls + 1
      where display_usage.calls < (select daily_limit from account)
    returning calls
  )`

/** The usage columns of a display call's answer (account alias `a`). */
export const DISPLAY_USAGE = `a.user_id as "userId", a.daily_limit as "dailyLimit", (select calls from counted) as calls,
    (select calls from display_usage where user_id = a.user_id and organization_id = a.organization_id and day = (now() at time zone 'utc')::date) as "callsBefore"`

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

/** A counted call on a page its editors may act on, the caller's effect in the same statement. */
function uncountedDisplayCalls(db: Database, groups: CallGroups): DisplayCalls {
  return {
    keyOf: displayKeyOf,
    refuseCounted: (keyHash, problem) => refuseCounted(groups, keyHash, problem),
    groupStats: () => ({ ...groups.stats }),
    async onPage<R extends Record<string, unknown>>(keyHash: string, pageName: string, effect: PageEffect): Promise<Outcome<{ row: R }>> {
      // No page has a name outside the pattern (`a%00b` holds U+0000, which text cannot): such a call counts and finds nothing.
      const name = PAGE_NAME.test(pageName) ? pageName : ''
      const text = `with ${DISPLAY_CALL},
        target as (
          select p.id, p.name, p.organization_id, p.created_by, ${MAY_EDIT_PAGE} as editable from pages p, account a
          where lower(p.name) = lower($2) and ${MAY_USE_PAGE}
        ),
        ${effect.ctes(3)}
        select ${DISPLAY_USAGE}, (select id from target) as "pageId", (select editable from target) as editable, ${effect.columns}
        from account a`
      const [row] = await queryText<UsageRow & R>(db, text, [keyHash, name, ...effect.parameters])
      if (!row) return unknownKey()
      const usage = usageOf(row)
      if (!usage.counted) return limitExceeded(usage)
      if (!row.pageId) return { ok: false, status: 404, usage, error: { message: 'pageNotFound', detail: 'No such page, or not one this key can use.', field: 'pageName' } }
      if (!row.editable) return readOnly(usage)
      return { ok: true, usage, row }
    },
  }
}
