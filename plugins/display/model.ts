/**
 * Models of the display API: the five component data shapes of the seed (every field required,
 * unknown fields refused) and the management resources of API v1.
 */
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { BodyProblem } from '../../src/http/body'
import { bearerToken } from '../../src/http/credentials'
import { ApiError } from '../../src/http/errors'
import { mapError } from '../../src/http/error-mapper'
import { Timestamp, UuidString } from '../../src/http/models'
import { describeError, type Logger } from '../../src/log'
import { queryText, type Database } from '../../src/db'
import { hashSecret, isWellFormedSecret } from '../../src/secrets'
import type { Principal } from '../../src/services/identity'
import type { Sessions } from '../auth/api'
import { COMPONENT_TYPES, DISPLAY_CALL, DISPLAY_USAGE, PAGE_LEVELS } from './schema'

/** Display keys: `dpk_` + 36 base62 characters + a 6-character checksum. */
export const DISPLAY_KEY_PREFIX = 'dpk'

const MAX_POINTS = 1000
const MAX_TEXT = 1000

const Hex = Type.String({ pattern: '^#([0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$', description: '# and 3, 4, 6 or 8 hex digits' })
const strict = { additionalProperties: false } as const

const Text = Type.Object(
  {
    value: Type.String({ maxLength: MAX_TEXT }),
    size: Type.Integer({ minimum: 1, maximum: 512 }),
    color: Hex,
  },
  strict,
)
const Point = Type.Object({ x: Type.String({ maxLength: 200 }), y: Type.Number(), color: Hex }, strict)
const PiePoint = Type.Object({ x: Type.String({ maxLength: 200 }), y: Type.Number(), color: Type.Union([Hex, Type.Literal('')]) }, strict)
const Height = Type.Integer({ minimum: 1, maximum: 4096 })
const points = <T extends typeof Point | typeof PiePoint>(point: T) => Type.Array(point, { maxItems: MAX_POINTS })

export const ComponentData = {
  horizontalBox: Type.Object(
    { type: Type.Literal('horizontalBox'), backgroundColor: Hex, leftText: Text, middleText: Text, rightText: Text },
    strict,
  ),
  verticalBox: Type.Object({ type: Type.Literal('verticalBox'), backgroundColor: Hex, topText: Text, bottomText: Text }, strict),
  barChart: Type.Object(
    { type: Type.Literal('barChart'), backgroundColor: Hex, xNumber: Type.Boolean(), height: Height, points: points(Point) },
    strict,
  ),
  lineChart: Type.Object(
    {
      type: Type.Literal('lineChart'),
      backgroundColor: Hex,
      cubic: Type.Boolean(),
      xNumber: Type.Boolean(),
      fillColor: Hex,
      height: Height,
      points: points(Point),
    },
    strict,
  ),
  pieChart: Type.Object({ type: Type.Literal('pieChart'), backgroundColor: Hex, height: Height, points: points(PiePoint) }, strict),
}

/** The envelope of `POST /api/component`, before `data` is checked against its own type. */
export const ComponentUpdate = Type.Object(
  {
    componentId: Type.String({ maxLength: 100 }),
    apiKey: Type.String({ maxLength: 100 }),
    timestamp: Type.Number({ minimum: 0, description: 'Unix seconds (fractional allowed); above 10^11 it is read as milliseconds.' }),
    data: Type.Object({ type: Type.String() }),
  },
  strict,
)

// ---- API v1 management -----------------------------------------------------------------------

export const PAGE_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'

export const Page = t.Object(
  {
    id: UuidString(),
    name: t.String(),
    title: t.Union([t.String(), t.Null()]),
    createdBy: t.Union([UuidString(), t.Null()]),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Page' },
)

export const PageInput = t.Object(
  {
    name: t.String({ pattern: PAGE_NAME_PATTERN, description: 'Letters, digits, ".", "_" and "-", 1..100; unique in the organization (any case).' }),
    title: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Null()])),
  },
  { additionalProperties: false },
)

export const PagePatch = t.Object(
  { name: t.Optional(t.String({ pattern: PAGE_NAME_PATTERN })), title: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Null()])) },
  { additionalProperties: false, minProperties: 1 },
)

const PageLevel = t.Union(PAGE_LEVELS.map((level) => t.Literal(level)), {
  description: '`viewer` (default) sees the page and receives its messages; `editor` also feeds it through the display API.',
})

export const PageAccessEntry = t.Object(
  {
    principalType: t.Union([t.Literal('user'), t.Literal('team')]),
    principalId: UuidString(),
    name: t.String({ description: 'The username or the team name.' }),
    level: PageLevel,
    createdAt: Timestamp(),
  },
  { title: 'PageAccess' },
)

/** `{userId}` or `{teamId}` (exactly one; checked by the service, which names the field), and a level. */
export const PageAccessInput = t.Object(
  {
    userId: t.Optional(UuidString({ description: 'A user of your organization (give this or teamId).' })),
    teamId: t.Optional(UuidString({ description: 'A team of your organization (give this or userId).' })),
    level: t.Optional(PageLevel),
  },
  { additionalProperties: false },
)

export const PageAccessPatch = t.Object({ level: PageLevel }, { additionalProperties: false })

const Position = {
  x: t.Optional(Type.Integer({ minimum: 0, maximum: 23, description: 'Grid column (0..23).' })),
  y: t.Optional(Type.Integer({ minimum: 0, maximum: 10_000, description: 'Grid row.' })),
  width: t.Optional(Type.Integer({ minimum: 1, maximum: 24, description: 'Columns spanned (1..24).' })),
  height: t.Optional(Type.Integer({ minimum: 1, maximum: 48, description: 'Rows spanned (1..48); the live page sizes rows to their content.' })),
}

export const Component = t.Object(
  {
    id: UuidString({ description: 'The componentId of POST /api/component.' }),
    pageId: UuidString(),
    type: t.Union(COMPONENT_TYPES.map((type) => t.Literal(type))),
    title: t.Union([t.String(), t.Null()]),
    x: t.Integer(),
    y: t.Integer(),
    width: t.Integer(),
    height: t.Integer(),
    data: t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description: 'The last accepted data, as posted.' }),
    timestamp: t.Union([t.Number(), t.Null()], { description: 'Unix seconds of the last accepted update.' }),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Component' },
)

export const ComponentInput = t.Object(
  { type: t.Union(COMPONENT_TYPES.map((type) => t.Literal(type))), title: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Null()])), ...Position },
  { additionalProperties: false },
)

export const ComponentPatch = t.Object(
  { title: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Null()])), ...Position },
  { additionalProperties: false, minProperties: 1 },
)

export type PageInput = typeof PageInput.static
export type PageAccessInput = typeof PageAccessInput.static
export type PagePatch = typeof PagePatch.static
export type ComponentInput = typeof ComponentInput.static
export type ComponentPatch = typeof ComponentPatch.static

// ---- answers of the display API (shared with `push`) ----------------------------------------

export interface DisplayError {
  message: string
  detail: string
  field?: string
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
interface Refusal {
  ok: false
  status: number
  error: DisplayError
  usage?: Usage
}

/** The result of a display call: a refusal, or success with its usage and `S`. */
export type Outcome<S extends object = {}> = Refusal | ({ ok: true; usage: Usage } & S)

/** The first check of every display call: a JSON object with a well-formed `apiKey`; its hash, or the refusal. */
export function displayKeyOf(body: unknown): { keyHash: string } | Refusal {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: false, status: 400, error: { message: 'invalidRequest', detail: 'The body must be a JSON object.' } }
  const apiKey = (body as { apiKey?: unknown }).apiKey
  if (typeof apiKey !== 'string') return { ok: false, status: 400, error: { message: 'invalidRequest', detail: 'apiKey is required.', field: 'apiKey' } }
  if (!isWellFormedSecret(DISPLAY_KEY_PREFIX, apiKey)) return unknownKey()
  return { keyHash: hashSecret(apiKey) }
}

/** $1 key hash: counts a call without doing anything else. */
const COUNT_ONLY = `with ${DISPLAY_CALL} select ${DISPLAY_USAGE} from account a`

/** A valid key's call whose body was refused: counted and 400 with `problem` (or 429 / 401), in one statement. */
export async function refuseCounted(db: Database, keyHash: string, problem: DisplayError): Promise<Refusal> {
  const [row] = await queryText<UsageRow>(db, COUNT_ONLY, [keyHash])
  if (!row) return unknownKey()
  const usage = usageOf(row)
  return usage.counted ? { ok: false, status: 400, usage, error: problem } : limitExceeded(usage)
}

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
