/**
 * The display API's answers, for every route that serves that convention (`POST /api/component`,
 * `POST /api/message`, `/api/devices`, the session routes beside them): success bodies as each
 * route documents them, errors `{message, detail, field?}`, never the API v1 envelope.
 */
import type { Logger } from '../../log'
import { describeError } from '../../log'
import type { Principal } from '../../services/identity'
import { BodyProblem } from '../body'
import { bearerToken, readCookie, SESSION_COOKIE } from '../credentials'
import { mapError } from '../error-mapper'
import { ApiError } from '../errors'

export interface DisplayError {
  message: string
  detail: string
  field?: string
  /** Every problem of a refused body (the first is `message`, `detail`, `field` themselves). */
  errors?: DisplayError[]
}

/** A JSON answer of the display API (no envelope: `{message, detail, field?}` or the success body), never cached. */
export function displayJson(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers } })
}

/** An empty 204, never cached. */
export const noContent = () => new Response(null, { status: 204, headers: { 'cache-control': 'no-store' } })

/**
 * A request refused with a documented display API error: thrown anywhere in a handler of the kit
 * (kit.ts), it is answered as `{message, detail, field?}` with its status and headers.
 */
export class DisplayRefusal extends Error {
  constructor(
    readonly status: number,
    readonly error: DisplayError,
    readonly headers: Record<string, string> = {},
  ) {
    super(error.detail)
  }

  toResponse(): Response {
    return displayJson(this.status, this.error, this.headers)
  }
}

/** Throws the refusal `status` with `{message, detail, field?}` (field left out when not given). */
export function refuse(status: number, message: string, detail: string, field?: string): never {
  throw new DisplayRefusal(status, field === undefined ? { message, detail } : { message, detail, field })
}

/** Where a failure happened, for the service log. */
export interface FailureSite {
  requestId: string
  route: string
}

/**
 * The display API's one error handler: anything thrown while serving a request, as its answer. A
 * DisplayRefusal is its own answer; anything else gets the status the core's error mapper gives it
 * (400 for a bad body or parameter, 503 when the database cannot answer, 500 for a bug, logged
 * with its stack) and `invalidRequest`, `serviceUnavailable` or `internalError`, never with
 * internal detail; `field` when the error names one.
 */
export function displayFailure(error: unknown, log: Logger, where: FailureSite): Response {
  if (error instanceof DisplayRefusal) return error.toResponse()
  const mapped = mapError(error)
  if (mapped.unexpected) log.error('display request failed', { ...where, status: mapped.status, ...describeError(error) })
  const message = mapped.status === 503 ? 'serviceUnavailable' : mapped.status >= 500 ? 'internalError' : 'invalidRequest'
  const { message: detail, field } = mapped.items[0]!
  return displayJson(mapped.status, field === undefined || mapped.status >= 500 ? { message, detail } : { message, detail, field }, mapped.headers)
}

/** The session lookup the kit is given (the auth plugin's sessions): the signed-in user of a live token of `kind`; throws a 401 ApiError otherwise. */
export interface SessionLookup {
  authenticate(token: string | null | undefined, kind: 'web' | 'mobile'): Promise<Principal>
}

/** The signed-in user of a mobile session token (`Authorization: Bearer`, from POST /account/api/sessions), or the 401 invalidSession answer. */
export async function mobileSession(sessions: SessionLookup, request: Request): Promise<Principal | Response> {
  try {
    return await sessions.authenticate(bearerToken(request.headers.get('authorization')), 'mobile')
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return displayJson(401, { message: 'invalidSession', detail: error.message }, error.headers)
    throw error
  }
}

/**
 * The signed-in user of the account area's session cookie, or the 401 invalidSession answer (no
 * challenge: a browser signs in through the account pages). A lookup that fails for any reason
 * is no session.
 */
export async function webSession(sessions: SessionLookup, request: Request): Promise<Principal | Response> {
  const principal = await sessions.authenticate(readCookie(request, SESSION_COOKIE), 'web').catch(() => null)
  return principal ?? displayJson(401, { message: 'invalidSession', detail: 'Sign in (the account area) first.' })
}

/** Whether a cookie-authenticated request comes from this site's own pages (the cookie is SameSite=Strict too): an Origin, when sent, naming this host. */
export function sameSite(request: Request): boolean {
  const origin = request.headers.get('origin')
  if (origin === null) return true
  try {
    return new URL(origin).host === (request.headers.get('host') ?? new URL(request.url).host)
  } catch {
    return false
  }
}

/** 400 unless the request says JSON and its body parsed: the error answer, or null. */
export function requireJson(request: Request, body: unknown): Response | null {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/json') return displayJson(400, { message: 'invalidRequest', detail: 'Content-Type must be application/json.' } satisfies DisplayError)
  if (body instanceof BodyProblem) return displayJson(400, { message: 'invalidRequest', detail: body.error.message } satisfies DisplayError)
  return null
}

/** The parsed JSON body, or a thrown 400 invalidRequest (not JSON, or a body that could not be read): `requireJson` for a kit handler. */
export function jsonBody(request: Request, body: unknown): unknown {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/json') refuse(400, 'invalidRequest', 'Content-Type must be application/json.')
  if (body instanceof BodyProblem) refuse(400, 'invalidRequest', body.error.message)
  return body
}

export interface Usage {
  limit: number
  used: number
  /** Charged: the call took one of the day's calls (it was not refused with 429). */
  charged: boolean
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

/** Seconds since the epoch of the next UTC midnight. */
export function nextUtcMidnight(now = Date.now()): number {
  const date = new Date(now)
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1) / 1000
}

/** The X-RateLimit-* headers (and Retry-After on a 429) of an answer to a valid display key. */
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

/** The answer of a refused display call, with the usage headers (and `limitRemaining: 0` on a 429). */
export function refusalResponse(refusal: Refusal): Response {
  const headers = usageHeaders(refusal.usage, refusal.status)
  return displayJson(refusal.status, refusal.status === 429 ? { ...refusal.error, limitRemaining: 0 } : refusal.error, headers)
}
