/**
 * Building blocks of request and response models. Body integers use TypeBox's own Integer:
 * Elysia's `t.Integer` also accepts numeric strings, which a JSON body should not.
 */
import { FormatRegistry, Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { UUID_PATTERN } from '../ids'

/** A strict JSON integer for bodies. */
export const Integer = Type.Integer

/** A UUID written out (Elysia's `uuid` format also admits a `urn:uuid:` prefix). */
export const UuidString = (options: { description?: string } = {}) =>
  t.String({ pattern: UUID_PATTERN, ...options })

/** What `me` stands for: the caller's own user id. */
export const ME = 'me'

/**
 * A user named in a request body or a tool's arguments: a user's id, or `me` for the caller (the
 * user whose API key or session made the request). Services resolve it with `userOf`.
 */
export const UserRef = t.Union([UuidString(), t.Literal(ME)], { title: 'UserRef', description: 'A user id, or `me`: the caller.' })
export type UserRef = typeof UserRef.static

/**
 * The user id a `UserRef` names (`me`: the caller's), other values as given (null and undefined
 * included: "none" and "not given" in a PATCH). The one resolver of `me`.
 */
export function userOf<T extends string | null | undefined>(caller: { userId: string }, ref: T): T | string {
  return ref === ME ? caller.userId : ref
}

/** An ISO 8601 timestamp in a response. */
export const Timestamp = (options: { description?: string } = {}) => t.String({ format: 'date-time', ...options })

/** `data` of a DELETE: the id of what was removed. */
export const Deleted = t.Object({ id: t.String() }, { title: 'Deleted' })

/**
 * The moments every store here holds alike: JavaScript's Date reaches ±275,760 years, PostgreSQL's
 * timestamptz 4713 BC..294276 AD and its date type has no year 0; years 0001..9999 in UTC are in all
 * of them, and their ISO forms have the four-digit years the drivers send (`+010000-…` is refused).
 */
const FIRST_INSTANT = new Date('0001-01-01T00:00:00Z').getTime()
const LAST_INSTANT = new Date('9999-12-31T23:59:59.999Z').getTime()
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
const isLeapYear = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
/** Whether year-month-day is a day of the calendar (year 0001..9999). */
const isRealDay = (year: number, month: number, day: number) =>
  year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= (month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]!)

const CALENDAR_DATE = /^(\d{4})-(\d{2})-(\d{2})$/
/** RFC 3339 `date-time`: seconds required, at most nanoseconds, `Z` or a `±hh:mm` offset. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/

/** `YYYY-MM-DD` that exists on the calendar, year 0001..9999 (the stock `date` format lets 2027-02-30 through). */
export function isCalendarDate(value: string): boolean {
  const match = CALENDAR_DATE.exec(value)
  return match !== null && isRealDay(Number(match[1]), Number(match[2]), Number(match[3]))
}

/**
 * The instant of an RFC 3339 date-time (`2026-11-23T14:30:00Z`, `…14:30:00.5+01:00`), or
 * undefined when it is not one: a day the month lacks, hour 24, a leap second (Date has none),
 * no offset, or an instant outside 0001..9999 UTC. `new Date(value)` reads every accepted value
 * as this same instant (checked), so services may parse validated input with it.
 */
export function parseDateTime(value: string): Date | undefined {
  const match = DATE_TIME.exec(value)
  if (!match) return undefined
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  if (!isRealDay(year, month, day) || hour > 23 || minute > 59 || second > 59) return undefined
  let offsetMinutes = 0
  if (match[8]) {
    const offsetHours = Number(match[9])
    const offsetRest = Number(match[10])
    if (offsetHours > 23 || offsetRest > 59) return undefined
    offsetMinutes = (match[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetRest)
  }
  const instant = new Date(0)
  instant.setUTCFullYear(year, month - 1, day)
  instant.setUTCHours(hour, minute - offsetMinutes, second, Number((match[7] ?? '').slice(0, 3).padEnd(3, '0')))
  const time = instant.getTime()
  if (!(time >= FIRST_INSTANT && time <= LAST_INSTANT) || new Date(value).getTime() !== time) return undefined
  return instant
}

// Elysia registers lax `date` and `date-time` formats (unanchored, any string Date can parse);
// these replace them whichever module loaded first. `calendar-date` is the name schemas used
// before the document said the standard `date`; kept registered for any schema still naming it.
FormatRegistry.Set('calendar-date', isCalendarDate)
FormatRegistry.Set('date', isCalendarDate)
FormatRegistry.Set('date-time', (value) => parseDateTime(value) !== undefined)

/** A calendar date, `YYYY-MM-DD`. */
export const CalendarDate = (options: { description?: string } = {}) => t.String({ format: 'date', description: 'YYYY-MM-DD', ...options })
