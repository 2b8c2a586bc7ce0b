/**
 * Display API calls (`POST /api/component`, and `POST /api/message` through this plugin's public
 * face): the key's organization found (KeyOrganizations: held after the first call), then the key
 * checked, the call charged to the account's daily limit and the work done in ONE statement that
 * names that organization (on Citus: one shard; decision.ts). The counter row's update is the
 * check, so concurrent calls on any number of instances never pass the limit; every call with a
 * valid key is charged except one refused with 429. A call on a page (`POST /api/message`) runs
 * that statement and then the caller's own statements in one transaction.
 *
 * Words: a call is *charged* when it takes one of the day's calls of its account; it is *recorded*
 * when its outcome is tallied in `worktrack_display_calls_total`; its statement is *in flight*
 * from the moment it is sent until it answers.
 */
import type { Counter } from 'prom-client'
import type { Database } from '../../../src/db'
import type { DisplayError, Outcome, Refusal } from '../../../src/http/display-api'
import { hashSecret, isWellFormedSecret } from '../../../src/secrets'
import type { DisplayCalls, PageEffect } from '../api'
import { DISPLAY_KEY_PREFIX, PAGE_NAME_PATTERN } from '../model'
import { limitExceeded, readOnly, unknownKey, usageOf } from './answers'
import { counterMissing, ensureCounters, runPageCall } from './decision'
import type { CallGroups } from './groups'

/** The first check of every display call: a JSON object with a well-formed `apiKey`; its hash, or the refusal. */
export function displayKeyOf(body: unknown): { keyHash: string } | Refusal {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: false, status: 400, error: { message: 'invalidRequest', detail: 'The body must be a JSON object.' } }
  const apiKey = (body as { apiKey?: unknown }).apiKey
  if (typeof apiKey !== 'string') return { ok: false, status: 400, error: { message: 'invalidRequest', detail: 'apiKey is required.', field: 'apiKey' } }
  if (!isWellFormedSecret(DISPLAY_KEY_PREFIX, apiKey)) return unknownKey()
  return { keyHash: hashSecret(apiKey) }
}

/** A valid key's call whose body was refused: charged and 400 with `problem` (or 429 / 401), grouped like every display call. */
export async function refuseCharged(groups: CallGroups, keyHash: string, problem: DisplayError): Promise<Refusal> {
  const row = await groups.run({ keyHash })
  if (!row) return unknownKey()
  const usage = usageOf(row)
  return usage.charged ? { ok: false, status: 400, usage, error: problem } : limitExceeded(usage)
}

const PAGE_NAME = new RegExp(PAGE_NAME_PATTERN)

/** Records one display call's outcome: `ok`, its refusal's message (`limitExceeded`, `staleUpdate`…) or `failed` (an unexpected error). */
export type RecordDisplayCall = (call: 'component' | 'message', outcome: string) => void

/** RecordDisplayCall on `worktrack_display_calls_total`; the outcomes are the API's own message names, a bounded set. */
export function displayCallRecorder(counter: Counter<'call' | 'outcome'>): RecordDisplayCall {
  return (call, outcome) => counter.inc({ call, outcome })
}

/** The seam push uses (api.ts), its calls recorded as `message` calls from the moment they reach it. */
export function createDisplayCalls(db: Database, groups: CallGroups, recordCall: RecordDisplayCall): DisplayCalls {
  const calls = unrecordedDisplayCalls(db, groups)
  const recorded = async <O extends Outcome<object>>(decided: Promise<O>): Promise<O> => {
    try {
      const outcome = await decided
      recordCall('message', outcome.ok ? 'ok' : outcome.error.message)
      return outcome
    } catch (error) {
      recordCall('message', 'failed')
      throw error
    }
  }
  return {
    ...calls,
    keyOf(body) {
      const key = calls.keyOf(body)
      if ('ok' in key) recordCall('message', key.error.message)
      return key
    },
    refuseCharged: (keyHash, problem) => recorded(calls.refuseCharged(keyHash, problem)),
    onPage: (keyHash, pageName, effect) => recorded(calls.onPage(keyHash, pageName, effect)),
  }
}

/**
 * A charged call on a page its editors may act on: in one transaction, the call's statement, then
 * the caller's effect (its own statements); a refused call commits its charge alone.
 */
function unrecordedDisplayCalls(db: Database, groups: CallGroups): DisplayCalls {
  return {
    keyOf: displayKeyOf,
    refuseCharged: (keyHash, problem) => refuseCharged(groups, keyHash, problem),
    groupStats: () => ({ ...groups.stats }),
    async onPage<R>(keyHash: string, pageName: string, effect: PageEffect<R>): Promise<Outcome<{ result: R }>> {
      const organizationId = await groups.keys.of(keyHash)
      if (!organizationId) return unknownKey()
      // No page has a name outside the pattern (`a%00b` holds U+0000, which text cannot): such a call is charged and finds nothing.
      const name = PAGE_NAME.test(pageName) ? pageName : ''
      return db.transaction(async (tx): Promise<Outcome<{ result: R }>> => {
        let row = await runPageCall(tx, keyHash, organizationId, name)
        // The transaction's day stays the same, so once the row exists the call is charged.
        if (row && counterMissing(row)) {
          await ensureCounters(tx, organizationId, [keyHash])
          row = await runPageCall(tx, keyHash, organizationId, name)
        }
        if (!row) return unknownKey()
        const usage = usageOf(row)
        if (!usage.charged) return limitExceeded(usage)
        if (!row.pageId) return { ok: false, status: 404, usage, error: { message: 'pageNotFound', detail: 'No such page, or not one this key can use.', field: 'pageName' } }
        if (!row.editable) return readOnly(usage)
        const result = await effect(tx, { organizationId, pageId: row.pageId, pageName: row.pageName!, userId: row.userId })
        return { ok: true, usage, result }
      })
    },
  }
}
