/** Signing in, shared by the account pages and the JSON API: throttled, identical failures. */
import type { Database } from '../../src/db'
import { rateLimited, unauthorized } from '../../src/http/errors'
import type { SessionKind, Sessions, StartedSession } from '../../src/services/auth'
import { clearAccount, recordFailure, throttledFor, throttleKeys, type ThrottlePolicy } from './throttle'

const WRONG_CREDENTIALS = 'Email or password is incorrect.'

/** 401 with the Bearer challenge every 401 carries (RFC 9110 §15.5.2): what a session token is used as. */
const signInRefused = () => unauthorized(WRONG_CREDENTIALS)
const tooManySignIns = (seconds: number) => rateLimited(seconds, 'Too many failed sign-ins; try again later.')

export interface SignIn {
  email: string
  password: string
  address: string
  kind: SessionKind
  requestId: string | null
}

/**
 * Starts a session, or throws 429 (throttled) or 401 — the same 401 whether the email is unknown
 * or the password wrong, after the same password work.
 */
export async function signIn(db: Database, sessions: Sessions, policy: ThrottlePolicy, attempt: SignIn): Promise<StartedSession> {
  const keys = throttleKeys(attempt.email, attempt.address)
  const wait = await throttledFor(db, keys, policy)
  if (wait) throw tooManySignIns(wait)
  const user = await sessions.verifyCredentials(attempt.email, attempt.password)
  if (!user) {
    await recordFailure(db, keys, policy)
    throw signInRefused()
  }
  await clearAccount(db, keys[0]!)
  return sessions.start(user, attempt.kind, attempt.requestId)
}
