/** Turns anything thrown while serving a request into an ApiError; the one place that does. */
import { NotFoundError, ParseError, ValidationError } from 'elysia'
import { BodyProblem } from './body'
import { ApiError, badRequest, BusyError, conflict, internal, notFound, unavailable, type ErrorItem } from './errors'
import { describeValueError, excerpt, itemsFromValueErrors, type ValueErrorLike } from './validation-items'

/** The error items of a route's validation failure. */
export function validationItems(error: ValidationError): ErrorItem[] {
  const all = error.all as ValueErrorLike[]
  // A single query parameter's conversion failed: its name is the schema's title (pagination.ts).
  if (error.type === 'property') {
    const name = (error.validator as { title?: string } | undefined)?.title
    const detail = all[0] ? describeValueError(all[0]) : 'invalid value'
    return [name ? { code: 'BAD_REQUEST', message: `Invalid query parameter "${name}": ${detail}.`, field: name } : { code: 'BAD_REQUEST', message: `Invalid query parameter: ${detail}.` }]
  }
  const value = error.value
  const schema = error.validator as { schema?: { type?: string }; type?: string } | undefined
  if (error.type === 'body' && (schema?.schema ?? schema)?.type === 'object' && (typeof value !== 'object' || value === null || Array.isArray(value)))
    return [{ code: 'BAD_REQUEST', message: 'The request body must be a JSON object.' }]
  if (error.type === 'query') return itemsFromValueErrors(all, 'query parameter', 'query')
  if (error.type === 'params') return itemsFromValueErrors(all, 'path parameter', 'path')
  return itemsFromValueErrors(all, 'field', 'request body')
}

/** PostgreSQL SQLSTATEs that mean "the database cannot serve right now", not "your input". */
const UNAVAILABLE_STATES = new Set(['57014', '57P01', '57P02', '57P03', '53300', '08000', '08003', '08006', '08001', '08004'])
const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'EPIPE', 'ETIMEDOUT'])

/**
 * Citus's coordinator at COMMIT when a worker's connection failed after the transaction's
 * statements ran there (the worker stopped or went away): XX000, an internal error by its code
 * alone. Whether that worker committed its part is unknown, as when the connection to a single
 * server dies at commit; the schema has no deferred constraints, the other cause Citus names.
 */
const CITUS_COMMIT_FAILED = /^could not commit transaction for shard \d+ on at least one active node$/

/** The SQLSTATE or connection code in the error's cause chain, with the message of the error carrying it. */
function databaseState(error: unknown): { code: string; message: string } | undefined {
  let current: any = error
  for (let depth = 0; current && depth < 4; depth++) {
    if (typeof current.code === 'string') {
      if (/^[0-9A-Z]{5}$/.test(current.code) || UNAVAILABLE_NODE_CODES.has(current.code)) return { code: current.code, message: String(current.message ?? '') }
    }
    current = current.cause
  }
  return undefined
}

/**
 * The constraint a database error names (postgres.js `constraint_name`, PGlite `constraint`) when
 * its SQLSTATE is `code`: for a service that turns a race it cannot prevent into a precise answer.
 */
export function violatedConstraint(error: unknown, code: string): string | undefined {
  let current: any = error
  for (let depth = 0; current && depth < 4; depth++) {
    if (current.code === code) return current.constraint_name ?? current.constraint
    current = current.cause
  }
  return undefined
}

function unavailableState({ code, message }: { code: string; message: string }): boolean {
  return UNAVAILABLE_STATES.has(code) || UNAVAILABLE_NODE_CODES.has(code) || (code === 'XX000' && CITUS_COMMIT_FAILED.test(message))
}

export interface MappedError {
  status: number
  items: ErrorItem[]
  headers: Record<string, string>
  /** True when the error is a bug or an outage worth logging with its stack. */
  unexpected: boolean
}

/** The longest message an error item carries; the services' own are far shorter. */
const MESSAGE_MAX = 2048

/**
 * Maps a thrown value (and the Elysia error code) to a status, items and headers. Whatever an
 * item quotes from the request, the answer stays small: `field` at most 64 characters, the
 * message at most 2,048 (each cut with an ellipsis).
 */
export function mapError(error: unknown, elysiaCode?: string | number): MappedError {
  const mapped = mapUnbounded(error, elysiaCode)
  const items = mapped.items.map((item) => ({ ...item, message: excerpt(item.message, MESSAGE_MAX), ...(item.field === undefined ? {} : { field: excerpt(item.field) }) }))
  return { ...mapped, items }
}

function mapUnbounded(error: unknown, elysiaCode?: string | number): MappedError {
  if (error instanceof BodyProblem) error = error.error
  if (error instanceof ValidationError) {
    if (error.value instanceof BodyProblem) error = error.value.error
    else if (error.type === 'response') return fromApiError(internal(), true)
    else return { status: 400, items: validationItems(error), headers: {}, unexpected: false }
  }
  if (error instanceof ApiError) return fromApiError(error, error.status >= 500 && !(error instanceof BusyError))
  const undecodable = decodeCheckError(error)
  // Its path is within the parameter (`/0`), which it does not name.
  if (undecodable) return { status: 400, items: [{ code: 'BAD_REQUEST', message: `A parameter ${describeValueError(undecodable)}.` }], headers: {}, unexpected: false }
  if (error instanceof NotFoundError || elysiaCode === 'NOT_FOUND') return fromApiError(notFound('No such route.'), false)
  if (error instanceof ParseError || elysiaCode === 'PARSE') return fromApiError(badRequest('The request body is not valid JSON.'), false)
  const database = databaseState(error)
  if (database !== undefined) {
    const state = database.code
    if (unavailableState(database)) return fromApiError(unavailable(), true)
    // A unique violation that a service did not turn into a precise 409 itself.
    if (state === '23505') return fromApiError(conflict('The resource already exists.'), true)
    if (state === '22P02' || state === '22003' || state === '22007' || state === '22008')
      return fromApiError(badRequest('A value has an invalid format.'), true)
  }
  return fromApiError(internal(), true)
}

/**
 * The value error of TypeBox's TransformDecodeCheckError: Elysia decodes a query after its own
 * coercing check, and a value that passed that check can still fail the schema there (a
 * repeated-or-single filter parameter longer than its maxLength): the request's fault, not a 500.
 * Matched by shape, not class: Elysia may load another build of TypeBox than this module.
 */
function decodeCheckError(error: unknown): ValueErrorLike | undefined {
  if (!(error instanceof Error) || error.constructor.name !== 'TransformDecodeCheckError') return undefined
  const inner = (error as { error?: ValueErrorLike }).error
  return inner && typeof inner.path === 'string' ? inner : undefined
}

function fromApiError(error: ApiError, unexpected: boolean): MappedError {
  return { status: error.status, items: error.toItems(), headers: error.headers, unexpected }
}
