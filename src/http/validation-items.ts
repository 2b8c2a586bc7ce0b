/** TypeBox value errors → the envelope's error items, the same for routes, the CLI and MCP. */
import { UUID_PATTERN } from '../ids'
import type { ErrorItem } from './errors'

export interface ValueErrorLike {
  path: string
  message: string
  /** The schema the value failed (TypeBox's value errors carry it): says what was allowed. */
  schema?: unknown
}

/** How each string format is written, as an error message says it. */
const FORMATS: Readonly<Record<string, string>> = {
  'date-time': 'a date-time in ISO 8601 / RFC 3339 form (e.g. 2026-11-23T14:30:00Z)',
  date: 'a date in the form YYYY-MM-DD (e.g. 2026-11-23)',
  'calendar-date': 'a calendar date in the form YYYY-MM-DD (e.g. 2026-11-23)',
  uuid: 'a UUID (e.g. 0b6f4f8e-2c1d-4f7a-9a39-6f1f2b7d8c90)',
  email: 'an email address',
  uri: 'an absolute URI (e.g. https://example.com/a.png)',
}

/** The most characters of a name (a field, a parameter, a Content-Type) an error message repeats. */
export const ECHO_MAX = 64

/**
 * `text` when it is at most `max` characters, else its first `max` and an ellipsis: an error
 * answer never repeats a 200,000-character field name (never splitting a surrogate pair).
 */
export function excerpt(text: string, max = ECHO_MAX): string {
  if (text.length <= max) return text
  const cut = /[\ud800-\udbff]/.test(text[max - 1]!) ? max - 1 : max
  return `${text.slice(0, cut)}…`
}

type SchemaLike = { const?: unknown; enum?: unknown[]; anyOf?: SchemaLike[]; type?: string; format?: string; pattern?: string; minimum?: number; maximum?: number }

/** What one alternative of a schema accepts, in words; undefined when it has no short description. */
function allowedBy(schema: SchemaLike): string[] | undefined {
  if ('const' in schema) return [JSON.stringify(schema.const)]
  if (Array.isArray(schema.enum)) return schema.enum.map((value) => JSON.stringify(value))
  if (schema.type === 'null') return ['null']
  if (schema.type === 'string' && schema.format && FORMATS[schema.format]) return [FORMATS[schema.format]!]
  if (schema.type === 'string' && schema.pattern === UUID_PATTERN) return [FORMATS.uuid!]
  if (schema.type === 'integer' && schema.minimum !== undefined && schema.maximum !== undefined) return [`an integer from ${schema.minimum} to ${schema.maximum}`]
  if (schema.type === 'integer' && schema.minimum !== undefined) return [`an integer of at least ${schema.minimum}`]
  if (schema.type === 'integer' && schema.maximum !== undefined) return [`an integer of at most ${schema.maximum}`]
  if (schema.type === 'integer') return ['an integer']
  if (schema.type === 'boolean') return ['true or false']
  if (Array.isArray(schema.anyOf)) {
    // Elysia's query integer: a numeric string or an integer, described as the integer it becomes.
    const number = schema.anyOf.find((member) => member.type === 'integer' || member.type === 'number')
    if (number && schema.anyOf.every((member) => member === number || (member.type === 'string' && (member.format === 'integer' || member.format === 'numeric'))))
      return allowedBy(number) ?? [number.type === 'integer' ? 'an integer' : 'a number']
    const parts = schema.anyOf.map(allowedBy)
    return parts.every(Boolean) ? (parts.flat() as string[]) : undefined
  }
  return undefined
}

/**
 * A value error's message saying what is allowed: the values of an enum ("must be one of
 * "todo", "in_progress", "done""), the form of a date or UUID, or TypeBox's own words.
 */
export function describeValueError(error: ValueErrorLike): string {
  const schema = error.schema as SchemaLike | undefined
  if (!schema || typeof schema !== 'object') return error.message
  const constants = Array.isArray(schema.anyOf) && schema.anyOf.every((member) => 'const' in member || member.type === 'null')
  const allowed = allowedBy(schema)
  if (!allowed) return error.message
  if (constants || Array.isArray(schema.enum)) return `must be one of ${allowed.join(', ')}`
  // Formats and unions of them; a plain type's own message ("Expected string") is clear already.
  if (schema.format || schema.anyOf || schema.pattern === UUID_PATTERN || schema.type === 'integer') return `must be ${allowed.join(' or ')}`
  return error.message
}

/** `/data/points/3/y` → `data.points[3].y`. */
export function pointerToField(pointer: string): string {
  let field = ''
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    if (/^\d+$/.test(part)) field += `[${part}]`
    else field += field === '' ? part : `.${part}`
  }
  return field
}

/** Validation reports at most this many fields: the rest would only cost time and bytes. */
export const MAX_ERROR_ITEMS = 20

/**
 * One item per offending field, at most MAX_ERROR_ITEMS, reading `errors` lazily so a value with
 * 400,000 bad items costs 20 error objects, not 400,000. `where` names what a field is ("field",
 * "query parameter"); `whole` names the value itself ("request body") for an error at its root,
 * which alone is reported since it makes every field error noise (validators report the root first).
 */
export function itemsFromValueErrors(errors: Iterable<ValueErrorLike>, where: string, whole: string): ErrorItem[] {
  const seen = new Set<string>()
  const items: ErrorItem[] = []
  for (const error of errors) {
    const field = pointerToField(error.path ?? '')
    if (field === '') return [{ code: 'BAD_REQUEST', message: `The ${whole} is invalid: ${error.message}.` }]
    if (seen.has(field)) continue
    seen.add(field)
    const shown = excerpt(field)
    const message = error.message === 'Unexpected property' ? `Unknown ${where} "${shown}".` : `Invalid ${where} "${shown}": ${describeValueError(error)}.`
    items.push({ code: 'BAD_REQUEST', message, field: shown })
    if (items.length === MAX_ERROR_ITEMS) break
  }
  return items.length ? items : [{ code: 'BAD_REQUEST', message: `The ${whole} is invalid.` }]
}
