/**
 * The display API's answers, shared by every route that serves it (display, push): `{message,
 * detail, field?}` errors, the X-RateLimit-* headers of a counted call, and body checks compiled
 * from the same TypeBox schemas the OpenAPI document shows.
 */
import type { TSchema } from '@sinclair/typebox'
import { ValueErrorType } from '@sinclair/typebox/errors'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { BodyProblem } from '../../src/http/body'
import { bearerToken } from '../../src/http/credentials'
import { ApiError } from '../../src/http/errors'
import { mapError } from '../../src/http/error-mapper'
import { describeValueError, excerpt, isUnknownField, MAX_ERROR_ITEMS, pointerToField, throughUnions, type ValueErrorLike } from '../../src/http/validation-items'
import { describeError, type Logger } from '../../src/log'
import type { Principal } from '../../src/services/identity'
import type { Sessions } from '../auth/api'

export interface DisplayError {
  message: string
  detail: string
  field?: string
  /** Every problem of a refused body (the first is `message`, `detail`, `field` themselves). */
  errors?: DisplayError[]
}

export interface UsageRow {
  userId: string
  dailyLimit: number
  calls: number | null
  callsBefore: number | null
  type?: string | null
  /** The key's user may feed the page (creator, administrator, or an editor entry). */
  editable?: boolean | null
  updatedId?: string | null
  pageId?: string | null
}

export interface Usage {
  limit: number
  used: number
  /** Counted (not refused with 429). */
  counted: boolean
}

/** A display call refused with an error (and, if the key was valid, its usage). */
export interface Refusal {
  ok: false
  status: number
  error: DisplayError
  usage?: Usage
}

/** The result of a display call: a refusal, or success with its usage and `S`. */
export type Outcome<S extends object = {}> = Refusal | ({ ok: true; usage: Usage } & S)

export const unknownKey = (): Refusal => ({ ok: false, status: 401, error: { message: 'invalidApiKey', detail: 'The apiKey is not a valid display key.' } })

export function usageOf(row: UsageRow): Usage {
  if (row.calls === null) return { limit: row.dailyLimit, used: Math.max(row.dailyLimit, row.callsBefore ?? 0), counted: false }
  return { limit: row.dailyLimit, used: row.calls, counted: true }
}

/** 403: the key's user sees the page but is only a viewer of it (counted). */
export const readOnly = (usage: Usage): Refusal => ({
  ok: false,
  status: 403,
  usage,
  error: { message: 'readOnlyAccess', detail: 'You are a viewer of this page; only its editors, its creator and administrators may feed it.' },
})

export const limitExceeded = (usage: Usage): Refusal => ({
  ok: false,
  status: 429,
  usage,
  error: { message: 'limitExceeded', detail: `The daily limit of ${usage.limit} calls is used up; it resets at the next UTC midnight.` },
})

/** Seconds since the epoch of the next UTC midnight. */
export function nextUtcMidnight(now = Date.now()): number {
  const date = new Date(now)
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1) / 1000
}

/** The X-RateLimit-* headers (and Retry-After on a 429) of an authenticated answer. */
export function usageHeaders(usage: Usage | undefined, status: number): Record<string, string> {
  if (!usage) return {}
  const reset = nextUtcMidnight()
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(usage.limit),
    'x-ratelimit-remaining': String(Math.max(0, usage.limit - usage.used)),
    'x-ratelimit-used': String(usage.used),
    'x-ratelimit-reset': String(reset),
  }
  if (status === 429) headers['retry-after'] = String(Math.max(1, Math.ceil(reset - Date.now() / 1000)))
  return headers
}

/** A JSON answer of the display API (no envelope: `{message, detail, field?}` or the success body). */
export function displayJson(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers } })
}

/** An unexpected failure, in the display API's own shape (never with internal detail). */
export function displayFailure(error: unknown, log: Logger, where: { requestId: string; route: string }): Response {
  const mapped = mapError(error)
  if (mapped.unexpected) log.error('display request failed', { ...where, status: mapped.status, ...describeError(error) })
  const message = mapped.status === 503 ? 'serviceUnavailable' : mapped.status >= 500 ? 'internalError' : 'invalidRequest'
  return displayJson(mapped.status, { message, detail: mapped.items[0]!.message }, mapped.headers)
}

/** The signed-in user of a mobile session token (`Authorization: Bearer`), or the 401 invalidSession answer. */
export async function mobileSession(sessions: Sessions, request: Request): Promise<Principal | Response> {
  try {
    return await sessions.authenticate(bearerToken(request.headers.get('authorization')), 'mobile')
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return displayJson(401, { message: 'invalidSession', detail: error.message }, error.headers)
    throw error
  }
}

/** 400 unless the request says JSON and its body parsed: the error answer, or null. */
export function requireJson(request: Request, body: unknown): Response | null {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/json') return displayJson(400, { message: 'invalidRequest', detail: 'Content-Type must be application/json.' } satisfies DisplayError)
  if (body instanceof BodyProblem) return displayJson(400, { message: 'invalidRequest', detail: body.error.message } satisfies DisplayError)
  return null
}

/** The answer of a refused call, with the usage headers (and `limitRemaining: 0` on a 429). */
export function refusalResponse(refusal: Refusal): Response {
  const headers = usageHeaders(refusal.usage, refusal.status)
  return displayJson(refusal.status, refusal.status === 429 ? { ...refusal.error, limitRemaining: 0 } : refusal.error, headers)
}

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>()

/**
 * Each offending field of `errors` (TypeBox value errors, `prefix` before their paths), at most
 * MAX_ERROR_ITEMS, as the display API reports it: `invalidRequest` naming the field (at most its
 * first 64 characters, as API v1 names it), in the same words as API v1. An error at the root (not
 * an object) is reported alone.
 */
export function displayProblems(errors: Iterable<ValueErrorLike>, prefix = '', seen = new Set<string>()): DisplayError[] {
  const problems: DisplayError[] = []
  for (const error of throughUnions(errors)) {
    const field = pointerToField(`${prefix}${error.path}`)
    if (field === '') return [{ message: 'invalidRequest', detail: error.type === ValueErrorType.Object ? 'The body must be a JSON object.' : `The body ${describeValueError(error)}.` }]
    if (seen.has(field)) continue
    seen.add(field)
    // A field name comes from the body: shown as API v1 shows it, never a 200,000-character echo.
    const shown = excerpt(field)
    problems.push({ message: 'invalidRequest', detail: `${shown} ${isUnknownField(error) ? 'is not a known field' : describeValueError(error)}.`, field: shown })
    if (seen.size >= MAX_ERROR_ITEMS) break
  }
  return problems
}

/** A 400 `invalidRequest` of every problem found: the first one's `{message, detail, field}`, and all of them in `errors`. */
export function invalidRequest(problems: readonly DisplayError[]): DisplayError {
  const all = problems.length ? problems : [{ message: 'invalidRequest', detail: 'The body is invalid.' }]
  return { ...all[0]!, errors: [...all] }
}

/**
 * Every problem of `body` against `schema` (compiled once), as the display API reports it:
 * `invalidRequest` naming the first field and listing all; null when the body is valid.
 */
export function checkBody(schema: TSchema, body: unknown): DisplayError | null {
  let check = compiled.get(schema)
  if (!check) {
    check = TypeCompiler.Compile(schema)
    compiled.set(schema, check)
  }
  if (check.Check(body)) return null
  return invalidRequest(displayProblems(check.Errors(body)))
}
