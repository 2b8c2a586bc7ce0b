/** Cookies and CSRF tokens of the account pages. */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

export { readCookie, SESSION_COOKIE } from '../../src/http/credentials'
export const SIGN_IN_COOKIE = 'wt_signin'
/** The invitation page's double-submit token (the invitee has no session yet). */
export const INVITE_COOKIE = 'wt_invite'

/** HttpOnly, SameSite=Strict, Secure over HTTPS; `maxAge` 0 deletes it. */
export function cookie(name: string, value: string, options: { secure: boolean; maxAge: number }): string {
  return [
    `${name}=${encodeURIComponent(value)}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${Math.max(0, Math.floor(options.maxAge))}`,
    ...(options.secure ? ['Secure'] : []),
  ].join('; ')
}

/** The CSRF token of a session: derived from its secret token, so nothing more is stored. */
export const csrfFor = (sessionToken: string) => createHmac('sha256', sessionToken).update('worktrack csrf').digest('base64url')

/** A fresh random value for the sign-in form's double-submit check. */
export const newFormToken = () => randomBytes(24).toString('base64url')

/** Constant-time comparison of two tokens. */
export function sameToken(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}
