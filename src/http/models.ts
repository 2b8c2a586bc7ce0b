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

/** An ISO 8601 timestamp in a response. */
export const Timestamp = (options: { description?: string } = {}) => t.String({ format: 'date-time', ...options })

/** `data` of a DELETE: the id of what was removed. */
export const Deleted = t.Object({ id: t.String() }, { title: 'Deleted' })

/** `YYYY-MM-DD` that exists on the calendar (the stock `date` format lets 2027-02-30 through). */
FormatRegistry.Set('calendar-date', (value) => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false
  const date = new Date(`${value}T00:00:00Z`)
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value)
})

/** A calendar date, `YYYY-MM-DD`. */
export const CalendarDate = (options: { description?: string } = {}) => t.String({ format: 'calendar-date', description: 'YYYY-MM-DD', ...options })
