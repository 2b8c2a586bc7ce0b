/** Signing in, shared by the account pages and the JSON API: length caps, throttled, identical failures. */
import type { Database } from '../../src/db'
import { badRequest, rateLimited, unauthorized } from '../../src/http/errors'
import type { ApiKeyManager, OAuthServer, People, SingleSignOn, SessionKind, Sessions, StartedSession } from '../auth/api'
import type { DisplayAccounts } from '../display/api'
import { EMAIL_MAX, PASSWORD_MAX } from '../auth/api'
import { chargeAttempt, chargeSucceeded, chargeWithdrawn, throttleKeys, type ThrottlePolicy } from './throttle'

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

/** 400 for an email or password over its cap: before any SQL or hashing, on every door. */
export function checkCredentialLengths(email: string, password: string): void {
  if (email.length > EMAIL_MAX) throw badRequest(`Email must be at most ${EMAIL_MAX} characters.`, 'email')
  if (password.length > PASSWORD_MAX) throw badRequest(`Password must be at most ${PASSWORD_MAX} characters.`, 'password')
}

/**
 * Starts a session, or throws 400 (too long), 429 (throttled), 503 (no hashing slot) or 401 — the
 * same 401 whether the email is unknown or the password wrong, after the same password work.
 */
export async function signIn(db: Database, sessions: Sessions, policy: ThrottlePolicy, attempt: SignIn): Promise<StartedSession> {
  checkCredentialLengths(attempt.email, attempt.password)
  const keys = throttleKeys(attempt.email, attempt.address)
  const wait = await chargeAttempt(db, keys, policy)
  if (wait) throw tooManySignIns(wait)
  let user: Awaited<ReturnType<Sessions['verifyCredentials']>>
  try {
    user = await sessions.verifyCredentials(attempt.email, attempt.password)
  } catch (error) {
    await chargeWithdrawn(db, keys).catch(() => {})
    throw error
  }
  if (!user) throw signInRefused()
  await chargeSucceeded(db, keys)
  return sessions.start(user, attempt.kind, attempt.requestId)
}

/** The account area's services, bound once at setup (routes of the pages and of the JSON API). */
export interface AccountServices {
  sessions: Sessions
  keys: ApiKeyManager
  display: DisplayAccounts | undefined
  /** The organization's people: the People page (administrators) and invitation links. */
  people: People
  /** The OAuth authorization server: the consent page and Connected apps. */
  oauth: OAuthServer
  /** Single sign-on with the configured OpenID Connect providers. */
  singleSignOn: SingleSignOn
  /** `server.publicUrl` when configured: invitation links start with it (else with the request's origin). */
  publicUrl: string | undefined
  signIn(attempt: SignIn): Promise<StartedSession>
}
