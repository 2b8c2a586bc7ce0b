/**
 * Sign-in throttling: after `maxFailures` failed sign-ins within `windowSeconds`, for the account
 * or for the address, sign-in answers 429 with Retry-After until the window ends.
 */
import { queryText, type Database } from '../../src/db'

export interface ThrottlePolicy {
  maxFailures: number
  windowSeconds: number
}

export const throttleKeys = (email: string, address: string) => [`email:${email.trim().toLowerCase()}`, `ip:${address}`]

/** Seconds until sign-in is allowed again for any of `keys`, or 0. */
export async function throttledFor(db: Database, keys: string[], policy: ThrottlePolicy): Promise<number> {
  const [row] = await queryText<{ wait: number | string | null }>(
    db,
    `select max(extract(epoch from (window_start + make_interval(secs => $2) - now()))) as wait
       from sign_in_throttle where key = any($1) and failures >= $3 and window_start > now() - make_interval(secs => $2)`,
    [keys, policy.windowSeconds, policy.maxFailures],
  )
  return row?.wait ? Math.max(1, Math.ceil(Number(row.wait))) : 0
}

/** Counts one failure against each key (a new window once the old one has passed). */
export async function recordFailure(db: Database, keys: string[], policy: ThrottlePolicy): Promise<void> {
  await queryText(
    db,
    `insert into sign_in_throttle (key, window_start, failures) select unnest($1::text[]), now(), 1
       on conflict (key) do update set
         failures = case when sign_in_throttle.window_start <= now() - make_interval(secs => $2) then 1 else sign_in_throttle.failures + 1 end,
         window_start = case when sign_in_throttle.window_start <= now() - make_interval(secs => $2) then now() else sign_in_throttle.window_start end`,
    [keys, policy.windowSeconds],
  )
}

/** A successful sign-in clears the account's count (not the address's). */
export async function clearAccount(db: Database, emailKey: string): Promise<void> {
  await queryText(db, 'delete from sign_in_throttle where key = $1', [emailKey])
}
