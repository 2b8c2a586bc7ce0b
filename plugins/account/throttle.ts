/**
 * Sign-in throttling, counted before the password is checked: every attempt is charged to three
 * counters at once, in one transaction, and only if none of them is full, so concurrent guesses
 * can never pass a limit (check-then-hash-then-record could). The counters, each over a fixed
 * window: the email + client address pair (`maxFailures`), the email alone (a higher
 * `maxFailuresPerAccount`: a stranger guessing from one address locks out only that address), and
 * the address alone (`maxFailuresPerAddress`: one address guessing across many accounts). A wrong
 * password keeps its charge; a right one ends the pair's count and gives back its other charges; an
 * attempt that could not be checked (503) gives back all three. Keys are fixed-size hashes, however
 * long the email or address.
 */
import { createHash } from 'node:crypto'
import { queryText, type Database } from '../../src/db'

export interface ThrottlePolicy {
  maxFailures: number
  maxFailuresPerAccount: number
  maxFailuresPerAddress: number
  windowSeconds: number
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/** The counters of an attempt: `p` pair, `a` account (email), `i` address; 65 characters each. */
export function throttleKeys(email: string, address: string): string[] {
  const account = email.trim().toLowerCase()
  return [`p${sha256(`${account}\n${address}`)}`, `a${sha256(account)}`, `i${sha256(address)}`]
}

/** A counter's limit, by its key's first letter ($3 pair, $4 account, $5 address). */
const LIMIT = `case left(t.key, 1) when 'p' then $3::int when 'a' then $4::int else $5::int end`
const EXPIRED = 't.window_start <= now() - make_interval(secs => $2)'

/** $1 keys, $2 window seconds, $3..$5 limits: charges every counter that is not full (a past window starts again). */
const CHARGE = `insert into sign_in_throttle as t (key, window_start, failures)
    select key, now(), 1 from unnest($1::text[]) as key order by key
  on conflict (key) do update set
    failures = case when ${EXPIRED} then 1 else t.failures + 1 end,
    window_start = case when ${EXPIRED} then now() else t.window_start end
  where ${EXPIRED} or t.failures < ${LIMIT}
  returning t.key`

/** Seconds until the full counters among $1 (not $6, those just charged) open again. */
const WAIT = `select max(extract(epoch from (t.window_start + make_interval(secs => $2) - now()))) as wait
  from sign_in_throttle t where t.key = any($1) and not t.key = any($6) and not ${EXPIRED} and t.failures >= ${LIMIT}`

class Full {
  constructor(readonly seconds: number) {}
}

/**
 * Charges one attempt to each of `keys`, or to none when any is full: returns 0, or the seconds to
 * wait. The counters stay locked until the charge commits, so concurrent attempts queue behind it.
 */
export async function chargeAttempt(db: Database, keys: string[], policy: ThrottlePolicy): Promise<number> {
  const limits = [policy.maxFailures, policy.maxFailuresPerAccount, policy.maxFailuresPerAddress]
  try {
    await db.transaction(async (tx) => {
      const charged = (await queryText<{ key: string }>(tx, CHARGE, [keys, policy.windowSeconds, ...limits])).map((row) => row.key)
      if (charged.length === keys.length) return
      const [row] = await queryText<{ wait: number | string | null }>(tx, WAIT, [keys, policy.windowSeconds, ...limits, charged])
      throw new Full(Math.max(1, Math.ceil(Number(row?.wait ?? 1))))
    })
    return 0
  } catch (error) {
    if (error instanceof Full) return error.seconds
    throw error
  }
}

/** The password was right: the pair's count ends; the account's and address's charge is given back. */
export async function chargeSucceeded(db: Database, keys: string[]): Promise<void> {
  await queryText(
    db,
    `with pair as (delete from sign_in_throttle where key = $1)
     update sign_in_throttle set failures = greatest(failures - 1, 0) where key = any($2)`,
    [keys[0], keys.slice(1)],
  )
}

/** The password could not be checked (e.g. every hashing slot busy): the attempt is not a failure. */
export async function chargeWithdrawn(db: Database, keys: string[]): Promise<void> {
  await queryText(db, 'update sign_in_throttle set failures = greatest(failures - 1, 0) where key = any($1)', [keys])
}

/** Deletes counters whose window ended (run periodically; a counter starts again anyway). */
export async function purgeThrottle(db: Database, windowSeconds: number): Promise<number> {
  return (await queryText(db, 'delete from sign_in_throttle where window_start <= now() - make_interval(secs => $1) returning 1', [windowSeconds])).length
}
