/**
 * Quiet hours read on a time zone's wall clock (plugins/push/quiet-hours.ts), DST gaps and repeats
 * included, and the outbox's decision for a claimed delivery (`decide` in plugins/push/decisions.ts).
 */
import { describe, expect, test } from 'bun:test'
import { decide } from '../../plugins/push/decisions'
import { clockMinutes, isTimeZone, quietUntil } from '../../plugins/push/quiet-hours'

/** When quiet hours `start`–`end` in `timeZone` holding `at` end (ISO), or null outside them. */
const until = (start: string, end: string, timeZone: string, at: string) => quietUntil({ start, end, timeZone }, new Date(at))?.toISOString() ?? null

describe('quietUntil', () => {
  test('a span within one day: inside from its start, outside from its end', () => {
    expect(until('09:00', '17:00', 'UTC', '2026-06-01T12:00:00Z')).toBe('2026-06-01T17:00:00.000Z')
    expect(until('09:00', '17:00', 'UTC', '2026-06-01T09:00:00Z')).toBe('2026-06-01T17:00:00.000Z')
    expect(until('09:00', '17:00', 'UTC', '2026-06-01T16:59:59.999Z')).toBe('2026-06-01T17:00:00.000Z')
    expect(until('09:00', '17:00', 'UTC', '2026-06-01T17:00:00Z')).toBeNull()
    expect(until('09:00', '17:00', 'UTC', '2026-06-01T08:59:59Z')).toBeNull()
  })

  test('a span across midnight ends the next morning when it holds the evening, the same morning after midnight', () => {
    // Europe/Berlin in January is UTC+1.
    expect(until('22:00', '07:00', 'Europe/Berlin', '2026-01-15T22:30:00Z')).toBe('2026-01-16T06:00:00.000Z')
    expect(until('22:00', '07:00', 'Europe/Berlin', '2026-01-15T21:00:00Z')).toBe('2026-01-16T06:00:00.000Z')
    expect(until('22:00', '07:00', 'Europe/Berlin', '2026-01-16T05:00:00Z')).toBe('2026-01-16T06:00:00.000Z')
    expect(until('22:00', '07:00', 'Europe/Berlin', '2026-01-15T20:59:00Z')).toBeNull()
    expect(until('22:00', '07:00', 'Europe/Berlin', '2026-01-16T06:00:00Z')).toBeNull()
    // Ending at midnight: the midnight that follows.
    expect(until('22:00', '00:00', 'UTC', '2026-01-15T23:30:00Z')).toBe('2026-01-16T00:00:00.000Z')
    expect(until('22:00', '00:00', 'UTC', '2026-01-16T00:00:00Z')).toBeNull()
  })

  test('Europe/Berlin spring forward (2026-03-29): an end the clocks skip ends them when the clocks jump', () => {
    // 02:00 CET becomes 03:00 CEST at 01:00Z; 02:30 does not exist that night.
    expect(until('22:00', '02:30', 'Europe/Berlin', '2026-03-28T22:00:00Z')).toBe('2026-03-29T01:00:00.000Z')
    expect(until('22:00', '02:30', 'Europe/Berlin', '2026-03-29T00:59:59Z')).toBe('2026-03-29T01:00:00.000Z')
    // 03:00 CEST: past the end.
    expect(until('22:00', '02:30', 'Europe/Berlin', '2026-03-29T01:00:00Z')).toBeNull()
    // An end the clocks do show that night is read with the new offset: 04:00 CEST is 02:00Z.
    expect(until('22:00', '04:00', 'Europe/Berlin', '2026-03-28T22:00:00Z')).toBe('2026-03-29T02:00:00.000Z')
  })

  test('Europe/Berlin fall back (2026-10-25): an end shown twice ends them the first time, the second once the first has passed', () => {
    // 03:00 CEST becomes 02:00 CET at 01:00Z: 02:45 is 00:45Z, then again 01:45Z.
    expect(until('22:00', '02:45', 'Europe/Berlin', '2026-10-24T21:00:00Z')).toBe('2026-10-25T00:45:00.000Z')
    // 02:50 CEST, after the first 02:45: outside, until the clocks go back into the span.
    expect(until('22:00', '02:45', 'Europe/Berlin', '2026-10-25T00:50:00Z')).toBeNull()
    // 02:15 CET, the second time round: the second 02:45.
    expect(until('22:00', '02:45', 'Europe/Berlin', '2026-10-25T01:15:00Z')).toBe('2026-10-25T01:45:00.000Z')
  })

  test('America/New_York: summer offset, and the spring-forward gap', () => {
    // EDT (UTC-4): 23:00 on June 30 is 03:00Z; 06:30 EDT is 10:30Z.
    expect(until('21:00', '06:30', 'America/New_York', '2026-07-01T03:00:00Z')).toBe('2026-07-01T10:30:00.000Z')
    // EST (UTC-5) in winter: 06:30 EST is 11:30Z.
    expect(until('21:00', '06:30', 'America/New_York', '2026-01-10T03:00:00Z')).toBe('2026-01-10T11:30:00.000Z')
    // 2026-03-08: 02:00 EST becomes 03:00 EDT at 07:00Z; 02:30 is skipped.
    expect(until('01:00', '02:30', 'America/New_York', '2026-03-08T06:30:00Z')).toBe('2026-03-08T07:00:00.000Z')
  })

  test('Asia/Kolkata (+05:30): half-hour offset', () => {
    // 23:30 IST on Feb 10 is 18:00Z; 06:15 IST on Feb 11 is 00:45Z.
    expect(until('23:00', '06:15', 'Asia/Kolkata', '2026-02-10T18:00:00Z')).toBe('2026-02-11T00:45:00.000Z')
    expect(until('23:00', '06:15', 'Asia/Kolkata', '2026-02-10T17:29:00Z')).toBeNull()
    expect(until('23:00', '06:15', 'Asia/Kolkata', '2026-02-10T17:30:00Z')).toBe('2026-02-11T00:45:00.000Z')
  })

  test('Australia/Lord_Howe: a 30-minute DST, both ways', () => {
    // 2026-10-04: 02:00 LHST (+10:30) becomes 02:30 LHDT (+11) at 15:30Z the day before; 02:15 is skipped.
    expect(until('22:00', '02:15', 'Australia/Lord_Howe', '2026-10-03T12:00:00Z')).toBe('2026-10-03T15:30:00.000Z')
    // 2026-04-05: 02:00 LHDT becomes 01:30 LHST at 15:00Z the day before; 01:45 is 14:45Z, then 15:15Z.
    expect(until('22:00', '01:45', 'Australia/Lord_Howe', '2026-04-04T11:30:00Z')).toBe('2026-04-04T14:45:00.000Z')
    expect(until('22:00', '01:45', 'Australia/Lord_Howe', '2026-04-04T15:00:00Z')).toBe('2026-04-04T15:15:00.000Z')
  })

  test('no quiet hours when start equals end or a clock is not HH:MM', () => {
    expect(until('08:00', '08:00', 'UTC', '2026-06-01T08:00:00Z')).toBeNull()
    expect(until('24:00', '08:00', 'UTC', '2026-06-01T07:00:00Z')).toBeNull()
    expect(until('22:00', '8:00', 'UTC', '2026-06-01T07:00:00Z')).toBeNull()
  })
})

describe('clockMinutes and isTimeZone', () => {
  test('clockMinutes reads HH:MM from 00:00 to 23:59 and nothing else', () => {
    expect(clockMinutes('00:00')).toBe(0)
    expect(clockMinutes('07:05')).toBe(425)
    expect(clockMinutes('23:59')).toBe(1439)
    for (const bad of ['24:00', '7:00', '07:60', '07:00 ', ' 07:00', '0700', '07:00:00', '', '-1:00']) expect(clockMinutes(bad)).toBeNull()
  })

  test('isTimeZone accepts zones the runtime knows, refuses others', () => {
    for (const zone of ['Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'UTC']) expect(isTimeZone(zone)).toBe(true)
    for (const zone of ['Mars/Olympus', 'Europe/Berlinn', '', 'Europe/' + 'x'.repeat(60)]) expect(isTimeZone(zone)).toBe(false)
  })
})

type Row = Parameters<typeof decide>[0]

/** A claimed delivery, first attempt from `pending`, created at `sentAt` (text as PostgreSQL returns it). */
const row = (overrides: Partial<Row> = {}): Row => ({
  id: '1',
  organizationId: '00000000-0000-0000-0000-000000000001',
  token: 'token',
  platform: 'android',
  p256dh: null,
  auth: null,
  pageId: '00000000-0000-0000-0000-000000000003',
  attempts: 1,
  claimedFrom: 'pending',
  messageId: '00000000-0000-0000-0000-000000000002',
  pageName: 'ops',
  title: 'ops',
  body: 'disk full',
  data: null,
  sentAt: '2026-06-01 12:00:00+00',
  sendAt: null,
  priority: 'high',
  ttlSeconds: null,
  collapseKey: null,
  critical: false,
  quietStart: null,
  quietEnd: null,
  timeZone: null,
  muted: false,
  ...overrides,
})

/** Quiet hours 22:00–07:00 UTC: 2026-06-01T23:00Z is inside them, ending 2026-06-02T07:00Z. */
const quiet = { quietStart: '22:00', quietEnd: '07:00', timeZone: 'UTC' }
const at = (iso: string) => new Date(iso)

describe('decide', () => {
  test('a muted page cancels the delivery, critical or not, inside quiet hours or not', () => {
    expect(decide(row({ muted: true }), at('2026-06-01T12:00:05Z'))).toEqual({ send: false, state: 'cancelled' })
    expect(decide(row({ muted: true, critical: true, ...quiet }), at('2026-06-01T23:00:00Z'))).toEqual({ send: false, state: 'cancelled' })
  })

  test('no TTL and no quiet hours: sent with the push services\' default TTL', () => {
    expect(decide(row(), at('2026-06-01T12:00:05Z'))).toEqual({ send: true, ttlSeconds: null })
  })

  test('the TTL passed on is what is left of it, counted from the message (or its sendAt)', () => {
    expect(decide(row({ ttlSeconds: 3600 }), at('2026-06-01T12:10:00.400Z'))).toEqual({ send: true, ttlSeconds: 2999 })
    // A scheduled message counts from its sendAt, not from when it was recorded.
    expect(decide(row({ ttlSeconds: 3600, sentAt: '2026-05-30 08:00:00+00', sendAt: '2026-06-01 12:00:00+00' }), at('2026-06-01T12:01:00Z'))).toEqual({ send: true, ttlSeconds: 3540 })
  })

  test('a run-out TTL expires only a held or retried delivery; a first attempt goes with TTL 0', () => {
    const late = at('2026-06-01T13:00:00Z')
    expect(decide(row({ ttlSeconds: 60 }), late)).toEqual({ send: true, ttlSeconds: 0 })
    expect(decide(row({ ttlSeconds: 60, claimedFrom: 'held' }), late)).toEqual({ send: false, state: 'expired' })
    expect(decide(row({ ttlSeconds: 60, attempts: 2 }), late)).toEqual({ send: false, state: 'expired' })
    // Exactly at the expiry counts as run out.
    expect(decide(row({ ttlSeconds: 60, claimedFrom: 'held' }), at('2026-06-01T12:01:00Z'))).toEqual({ send: false, state: 'expired' })
    // A held one with time left is not expired (and, outside quiet hours, goes).
    expect(decide(row({ ttlSeconds: 60, claimedFrom: 'held' }), at('2026-06-01T12:00:59Z'))).toEqual({ send: true, ttlSeconds: 1 })
  })

  test('quiet hours hold a non-critical delivery until they end; a critical one goes through', () => {
    const night = at('2026-06-01T23:00:00Z')
    expect(decide(row(quiet), night)).toEqual({ send: false, state: 'held', until: at('2026-06-02T07:00:00Z') })
    expect(decide(row({ ...quiet, claimedFrom: 'held' }), night)).toEqual({ send: false, state: 'held', until: at('2026-06-02T07:00:00Z') })
    expect(decide(row({ ...quiet, critical: true }), night)).toEqual({ send: true, ttlSeconds: null })
    // Outside them: sent.
    expect(decide(row(quiet), at('2026-06-01T12:00:05Z'))).toEqual({ send: true, ttlSeconds: null })
  })

  test('held until the TTL runs out when it does before the quiet hours end', () => {
    const night = at('2026-06-01T23:00:00Z')
    // Recorded 22:30Z with 1 h to live: expires 23:30Z, before 07:00Z.
    expect(decide(row({ ...quiet, sentAt: '2026-06-01 22:30:00+00', ttlSeconds: 3600 }), night)).toEqual({ send: false, state: 'held', until: at('2026-06-01T23:30:00Z') })
    // With 12 h to live it outlasts them: held until they end.
    expect(decide(row({ ...quiet, sentAt: '2026-06-01 22:30:00+00', ttlSeconds: 43_200 }), night)).toEqual({ send: false, state: 'held', until: at('2026-06-02T07:00:00Z') })
    // A first attempt whose TTL is already over (0: now or never) is held until its expiry, i.e. due at once, then expired.
    expect(decide(row({ ...quiet, sentAt: '2026-06-01 23:00:00+00', ttlSeconds: 0 }), night)).toEqual({ send: false, state: 'held', until: at('2026-06-01T23:00:00Z') })
    expect(decide(row({ ...quiet, sentAt: '2026-06-01 23:00:00+00', ttlSeconds: 0, claimedFrom: 'held' }), night)).toEqual({ send: false, state: 'expired' })
  })
})
