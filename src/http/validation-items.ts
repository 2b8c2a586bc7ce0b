/** TypeBox value errors → the envelope's error items, the same for routes, the CLI and MCP. */
import { ValueErrorType } from '@sinclair/typebox/errors'
import { UUID_PATTERN } from '../ids'
import { MAX_ERROR_ITEMS, type ErrorItem } from './errors'

export interface ValueErrorLike {
  path: string
  /** TypeBox's ValueErrorType: which rule failed. Its `message` is never shown (it is the validator's, not ours). */
  type?: number
  message: string
  /** The schema the value failed (TypeBox's value errors carry it): says what was allowed. */
  schema?: unknown
  /** The value that failed. */
  value?: unknown
  /** A union's errors, one iterable per variant, in the order of its `anyOf`. */
  errors?: Iterable<ValueErrorLike>[]
}

/** The errors of a union's only object variant, for an object value that failed the union; undefined otherwise. */
function objectVariantErrors(error: ValueErrorLike): ValueErrorLike[] | undefined {
  if (error.type !== ValueErrorType.Union || typeof error.value !== 'object' || error.value === null || Array.isArray(error.value)) return undefined
  const variants = ((error.schema as { anyOf?: Array<{ type?: unknown }> } | undefined)?.anyOf ?? []).map((variant, index) => ({ variant, index }))
  const objects = variants.filter(({ variant }) => variant.type === 'object')
  const iterable = objects.length === 1 ? error.errors?.[objects[0]!.index] : undefined
  if (!iterable) return undefined
  const inner: ValueErrorLike[] = []
  for (const each of iterable) if (inner.push(each) >= MAX_ERROR_ITEMS) break
  return inner.length ? inner : undefined
}

/**
 * `errors`, with an object that failed a union of one object schema and others (`{…} | null`)
 * reported by its own fields' errors: `quietHours.start must be …`, not "quietHours must be an
 * object or null", which says nothing about what is wrong with the object given.
 */
export function* throughUnions(errors: Iterable<ValueErrorLike>): Generator<ValueErrorLike> {
  for (const error of errors) {
    const inner = objectVariantErrors(error)
    if (inner) yield* throughUnions(inner)
    else yield error
  }
}

/** How each string format is written, as an error message says it. */
const FORMATS: Readonly<Record<string, string>> = {
  'date-time': 'a date-time in ISO 8601 / RFC 3339 form (e.g. 2026-11-23T14:30:00Z)',
  date: 'a calendar date in the form YYYY-MM-DD (e.g. 2026-11-23)',
  'calendar-date': 'a calendar date in the form YYYY-MM-DD (e.g. 2026-11-23)',
  uuid: 'a UUID (e.g. 0b6f4f8e-2c1d-4f7a-9a39-6f1f2b7d8c90)',
  email: 'an email address',
  uri: 'an absolute URI (e.g. https://example.com/a.png)',
  'uri-reference': 'a URI or a path',
  integer: 'an integer',
  numeric: 'a number',
  'notification-text': 'a text of 1 to 4,000 characters, not only spaces',
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

interface SchemaLike {
  const?: unknown
  enum?: unknown[]
  anyOf?: SchemaLike[]
  type?: string
  format?: string
  pattern?: string
  description?: string
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  multipleOf?: number
  minLength?: number
  maxLength?: number
  minItems?: number
  maxItems?: number
  minProperties?: number
  maxProperties?: number
}

const plural = (count: number, noun: string) => `${count.toLocaleString('en')} ${noun}${count === 1 ? '' : 's'}`
/** `a, b or c`. */
const orList = (words: readonly string[]) => (words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`)

/** The characters a simple pattern's classes allow (`[A-Za-z0-9_.-]` → letters, digits and _ . -), or undefined. */
function characterWords(pattern: string): string | undefined {
  if (!/^\^(\[[^\]]+\](\{\d+(,\d*)?\}|[*+?])?)+\$$/.test(pattern)) return undefined
  let rest = [...pattern.matchAll(/\[([^\]]+)\]/g)].map((match) => match[1]!).join('')
  if (rest.includes('\\x21-\\x7e')) return 'printable characters without spaces'
  const words: string[] = []
  if (rest.includes('A-Z')) words.push('letters')
  else if (rest.includes('a-z')) words.push('lower-case letters')
  if (rest.includes('0-9')) words.push('digits')
  rest = rest.replace(/A-Z|a-z|0-9|\\/g, '')
  const others = [...new Set(rest)]
  if (others.length) words.push(others.join(' '))
  return words.length > 1 ? `${words.slice(0, -1).join(', ')} and ${words.at(-1)}` : words.join('')
}

/** What a pattern asks for, in words: a UUID, a color, the schema's own description, or its characters. */
function patternWords(schema: SchemaLike): string {
  const pattern = schema.pattern ?? ''
  if (pattern === UUID_PATTERN) return FORMATS.uuid!
  if (pattern.startsWith('^#') && pattern.includes('0-9a-fA-F')) {
    const digits = [...new Set([...pattern.matchAll(/\{(\d+)\}/g)].map((match) => match[1]!))]
    return `a color like #33aaff (# and ${orList(digits)} hex digits)`
  }
  if (schema.description) return `in the form: ${schema.description.replace(/\.$/, '')}`
  const characters = characterWords(pattern)
  return characters ? `made of ${characters} only` : 'in the accepted form'
}

/** " from 1 to 512", " of at least 0"… for a number's bounds. */
function boundWords(schema: SchemaLike): string {
  const low = schema.minimum ?? schema.exclusiveMinimum
  const high = schema.maximum ?? schema.exclusiveMaximum
  if (schema.minimum !== undefined && schema.maximum !== undefined) return ` from ${schema.minimum} to ${schema.maximum}`
  const parts: string[] = []
  if (low !== undefined) parts.push(schema.minimum !== undefined ? `of at least ${low}` : `greater than ${low}`)
  if (high !== undefined) parts.push(schema.maximum !== undefined ? `of at most ${high}` : `less than ${high}`)
  return parts.length ? ` ${parts.join(' and ')}` : ''
}

/** " of at most 200 characters", " that is not empty"… for a string's lengths. */
function lengthWords(schema: SchemaLike): string {
  const { minLength: min, maxLength: max } = schema
  if (min !== undefined && max !== undefined) return ` of ${min} to ${plural(max, 'character')}`
  if (min !== undefined) return min === 1 ? ' that is not empty' : ` of at least ${plural(min, 'character')}`
  if (max !== undefined) return ` of at most ${plural(max, 'character')}`
  return ''
}

/** What one schema accepts, in words: `a UUID (…)`, `"todo"`, `an integer from 1 to 512`, `true or false`… */
function accepted(schema: SchemaLike): string[] {
  if ('const' in schema) return [JSON.stringify(schema.const)]
  if (Array.isArray(schema.enum)) return schema.enum.map((value) => JSON.stringify(value))
  if (Array.isArray(schema.anyOf)) {
    // Elysia's query integer: a numeric string or an integer, described as the integer it becomes.
    const number = schema.anyOf.find((member) => member.type === 'integer' || member.type === 'number')
    if (number && schema.anyOf.every((member) => member === number || (member.type === 'string' && (member.format === 'integer' || member.format === 'numeric'))))
      return accepted(number)
    return schema.anyOf.flatMap(accepted)
  }
  switch (schema.type) {
    case 'null':
      return ['null']
    case 'boolean':
      return ['true or false']
    case 'integer':
      return [`an integer${boundWords(schema)}`]
    case 'number':
      return [`a number${boundWords(schema)}`]
    case 'array':
      return [schema.maxItems !== undefined ? `a list of at most ${plural(schema.maxItems, 'item')}` : 'a list']
    case 'object':
      return ['an object']
    case 'string':
      if (schema.format) return [FORMATS[schema.format] ?? `a valid ${schema.format}`]
      if (schema.pattern) return [patternWords(schema)]
      return [`a string${lengthWords(schema)}`]
  }
  return ['a valid value']
}

/** `must be one of "a", "b"` for a set of constants, else `must be X or Y`. */
function mustBe(schema: SchemaLike): string {
  const constants = Array.isArray(schema.enum) || (Array.isArray(schema.anyOf) && schema.anyOf.length > 1 && schema.anyOf.every((member) => 'const' in member || member.type === 'null'))
  const words = accepted(schema)
  if (constants) return `must be one of ${words.join(', ')}`
  // A pattern reads as "must be in the form: …" / "must be made of …", a format or a type as "must be a …".
  return `must be ${orList([...new Set(words)])}`
}

/** Whether an error is a field the schema does not know (reported as "Unknown field"). */
export function isUnknownField(error: ValueErrorLike): boolean {
  return error.type === ValueErrorType.ObjectAdditionalProperties || error.type === ValueErrorType.IntersectUnevaluatedProperties || error.message === 'Unexpected property'
}

/**
 * A value error in the service's words, saying what is allowed ("is required", "must be one of
 * "todo", "in_progress"", "must be a color like #33aaff (…)", "must be at most 200 characters
 * long"); never the validator's own text, and never the value itself.
 */
export function describeValueError(error: ValueErrorLike): string {
  const schema = (error.schema && typeof error.schema === 'object' ? error.schema : {}) as SchemaLike
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return 'is required'
    case ValueErrorType.ObjectAdditionalProperties:
    case ValueErrorType.IntersectUnevaluatedProperties:
      return 'is not a known field'
    case ValueErrorType.StringMinLength:
      return schema.minLength === 1 ? 'must not be empty' : `must be at least ${plural(schema.minLength ?? 0, 'character')} long`
    case ValueErrorType.StringMaxLength:
      return `must be at most ${plural(schema.maxLength ?? 0, 'character')} long`
    case ValueErrorType.StringPattern:
      return `must be ${patternWords(schema)}`
    case ValueErrorType.StringFormat:
    case ValueErrorType.StringFormatUnknown:
      return `must be ${FORMATS[schema.format ?? ''] ?? 'in the accepted form'}`
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.IntegerMaximum:
    case ValueErrorType.NumberMinimum:
    case ValueErrorType.NumberMaximum:
    case ValueErrorType.IntegerExclusiveMinimum:
    case ValueErrorType.IntegerExclusiveMaximum:
    case ValueErrorType.NumberExclusiveMinimum:
    case ValueErrorType.NumberExclusiveMaximum:
      return mustBe(schema)
    case ValueErrorType.IntegerMultipleOf:
    case ValueErrorType.NumberMultipleOf:
      return `must be a multiple of ${schema.multipleOf}`
    case ValueErrorType.ArrayMinItems:
      return schema.minItems === 1 ? 'must not be empty' : `must have at least ${plural(schema.minItems ?? 0, 'item')}`
    case ValueErrorType.ArrayMaxItems:
      return `must have at most ${plural(schema.maxItems ?? 0, 'item')}`
    case ValueErrorType.ArrayUniqueItems:
      return 'must not hold the same item twice'
    case ValueErrorType.ArrayContains:
    case ValueErrorType.ArrayMinContains:
    case ValueErrorType.ArrayMaxContains:
      return 'does not hold the items it must'
    case ValueErrorType.ObjectMinProperties:
      return schema.minProperties === 1 ? 'must have at least one field' : `must have at least ${plural(schema.minProperties ?? 0, 'field')}`
    case ValueErrorType.ObjectMaxProperties:
      return `must have at most ${plural(schema.maxProperties ?? 0, 'field')}`
    case ValueErrorType.Never:
    case ValueErrorType.Not:
      return 'is not allowed'
    case ValueErrorType.Undefined:
      return 'must be left out'
    case ValueErrorType.Tuple:
    case ValueErrorType.TupleLength:
      return 'must be a list of the expected length'
  }
  if (isUnknownField(error)) return 'is not a known field'
  // A type mismatch (string, number, integer, boolean, array, object, null, literal, union): what is accepted.
  return error.schema && typeof error.schema === 'object' ? mustBe(schema) : 'is invalid'
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

export { MAX_ERROR_ITEMS } from './errors'

/**
 * One item per offending field, at most MAX_ERROR_ITEMS, reading `errors` lazily so a value with
 * 400,000 bad items costs 20 error objects, not 400,000. `where` names what a field is ("field",
 * "query parameter"); `whole` names the value itself ("request body") for an error at its root,
 * which alone is reported since it makes every field error noise (validators report the root first).
 */
export function itemsFromValueErrors(errors: Iterable<ValueErrorLike>, where: string, whole: string): ErrorItem[] {
  const seen = new Set<string>()
  const items: ErrorItem[] = []
  for (const error of throughUnions(errors)) {
    const field = pointerToField(error.path ?? '')
    if (field === '') return [{ code: 'BAD_REQUEST', message: `The ${whole} ${describeValueError(error)}.` }]
    if (seen.has(field)) continue
    seen.add(field)
    const shown = excerpt(field)
    const message = isUnknownField(error)
      ? `Unknown ${where} "${shown}".`
      : error.type === ValueErrorType.ObjectRequiredProperty
        ? `Missing ${where} "${shown}": it is required.`
        : `Invalid ${where} "${shown}": ${describeValueError(error)}.`
    items.push({ code: 'BAD_REQUEST', message, field: shown })
    if (items.length === MAX_ERROR_ITEMS) break
  }
  return items.length ? items : [{ code: 'BAD_REQUEST', message: `The ${whole} is invalid.` }]
}
