/**
 * What becomes of a claimed delivery before anything is sent (the outbox's rules, outbox.ts): it
 * goes now, with what is left of its TTL, or it is recorded at once: its recipient no longer is one,
 * it was claimed too often, its user muted the page, its TTL ran out, or its user's quiet hours hold
 * it. Pure functions of the claimed row and the time.
 */
import { isoFromText } from '../../src/sql'
import { MAX_TTL_SECONDS } from './messages'
import { quietUntil } from './quiet-hours'

/** A delivery as CLAIM returns it (outbox.ts): with its message's options, its user's preferences and whether its recipient still is one. */
export interface Claimed {
  id: string
  organizationId: string
  token: string
  /** The device's, while it is registered to the delivery's user (null otherwise: see `lapsed`). */
  platform: string | null
  p256dh: string | null
  auth: string | null
  /** null for a push to one user that no page sent (a notification about work). */
  pageId: string | null
  attempts: number
  /** `pending`, or `held` (quiet hours ended, or its TTL ran out while held). */
  claimedFrom: 'pending' | 'held'
  messageId: string
  pageName: string | null
  /** null with `body` null: a data-only message. */
  title: string | null
  body: string | null
  /** A user push's data (null: a page's message, whose data is its page and message). */
  data: Record<string, string> | null
  sentAt: string
  sendAt: string | null
  priority: 'high' | 'normal'
  ttlSeconds: number | null
  collapseKey: string | null
  critical: boolean
  quietStart: string | null
  quietEnd: string | null
  timeZone: string | null
  muted: boolean
  /**
   * Why the delivery's recipient no longer is one, as CLAIM found when it was claimed: `inactive`
   * (the user was deactivated), `unshared` (the user no longer sees the page), `device` (the
   * device was removed, or its token is now registered to someone else, here or in another
   * organization); null while they still are.
   */
  lapsed: 'inactive' | 'unshared' | 'device' | null
}

/** What becomes of a claimed delivery before anything is sent: it goes now (with what is left of its TTL), or it is recorded at once (with why, when that helps whoever reads it). */
export type Decision =
  | { send: true; ttlSeconds: number | null }
  | { send: false; state: 'held' | 'expired' | 'cancelled' | 'pruned' | 'failed'; until?: Date; reason?: string }

/** What a lapsed recipient's delivery becomes, and why. */
const LAPSED: Record<NonNullable<Claimed['lapsed']>, Extract<Decision, { send: false }>> = {
  inactive: { send: false, state: 'cancelled', reason: 'the user was deactivated before the push went out' },
  unshared: { send: false, state: 'cancelled', reason: 'the user lost access to the page before the push went out' },
  device: { send: false, state: 'pruned', reason: 'the device was removed, or registered to someone else, before the push went out' },
}

/**
 * Whether a claimed delivery's recipient still is one: its messages go only to devices still
 * registered to the same user in the organization, of a user still active and still on the page
 * (recipients are fixed when a message is recorded; a scheduled, held or retried one goes out
 * later). Null when they are; otherwise the delivery ends unsent.
 */
export function recipientLapsed(row: Pick<Claimed, 'lapsed'>): Extract<Decision, { send: false }> | null {
  return row.lapsed ? LAPSED[row.lapsed] : null
}

/**
 * A delivery claimed more than `maxAttempts` times was sent (or tried) each time but its result
 * was never recorded (its worker died, or the write-back failed): it is not sent again, so a result
 * that cannot be written repeats a push at most `maxAttempts` times.
 */
export function claimedTooOften(row: Pick<Claimed, 'attempts'>, maxAttempts: number): Extract<Decision, { send: false }> | null {
  return row.attempts > maxAttempts ? { send: false, state: 'failed', reason: `claimed ${row.attempts} times without a recorded result` } : null
}

/**
 * Seconds until the message's TTL runs out at `now` (its push services' longest, 4 weeks, when it
 * has none), never negative: no retry waits past it (one due then is `expired`, not sent).
 */
export function secondsToLive(row: Pick<Claimed, 'sendAt' | 'sentAt' | 'ttlSeconds'>, now: number): number {
  const due = Date.parse(isoFromText(row.sendAt ?? row.sentAt))
  return Math.max(0, (due + (row.ttlSeconds ?? MAX_TTL_SECONDS) * 1000 - now) / 1000)
}

/**
 * Whether a claimed delivery goes now, at `now`: not to a user who has muted the page since the
 * message was recorded (`cancelled`); not once its TTL has run out after quiet hours held it or a
 * retry waited (`expired`); not during its user's quiet hours unless critical (`held` until they
 * end, or until the TTL runs out, whichever comes first).
 */
export function decide(row: Omit<Claimed, 'lapsed'>, now: Date): Decision {
  if (row.muted) return { send: false, state: 'cancelled' }
  const due = isoFromText(row.sendAt ?? row.sentAt)
  const expiresAt = row.ttlSeconds === null ? null : new Date(Date.parse(due) + row.ttlSeconds * 1000)
  if (expiresAt && expiresAt <= now && (row.claimedFrom === 'held' || row.attempts > 1)) return { send: false, state: 'expired' }
  if (!row.critical && row.quietStart && row.quietEnd && row.timeZone) {
    const until = quietUntil({ start: row.quietStart, end: row.quietEnd, timeZone: row.timeZone }, now)
    if (until) return { send: false, state: 'held', until: expiresAt && expiresAt < until ? expiresAt : until }
  }
  return { send: true, ttlSeconds: expiresAt ? Math.max(0, Math.floor((expiresAt.getTime() - now.getTime()) / 1000)) : null }
}
