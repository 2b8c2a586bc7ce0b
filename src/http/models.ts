/**
 * Building blocks of request and response models. Body integers use TypeBox's own Integer:
 * Elysia's `t.Integer` also accepts numeric strings, which a JSON body should not.
 */
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'

/** A strict JSON integer for bodies. */
export const Integer = Type.Integer

/** A UUID written out (Elysia's `uuid` format also admits a `urn:uuid:` prefix). */
export const UuidString = (options: { description?: string } = {}) =>
  t.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$', ...options })

/** An ISO 8601 timestamp in a response. */
export const Timestamp = (options: { description?: string } = {}) => t.String({ format: 'date-time', ...options })

/** `data` of a DELETE: the id of what was removed. */
export const Deleted = t.Object({ id: t.String() }, { title: 'Deleted' })
