/**
 * Request body parsing with a size limit. A bad body never throws here: it becomes a
 * BodyProblem value, so the route's checks still run in the documented order (key, scope,
 * then input) and the problem is reported as a 400 once it is the caller's first problem.
 */
import { badRequest, type ApiError } from './errors'
import { excerpt } from './validation-items'

export const BODY_LIMIT_BYTES = 1024 * 1024

/** A body that could not be read; raised by `throwIfBodyProblem` or the error mapper. */
export class BodyProblem {
  constructor(readonly error: ApiError) {}
}

const tooLarge = () =>
  new BodyProblem(badRequest(`The request body is larger than ${BODY_LIMIT_BYTES} bytes (1 MiB).`))
const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * The media types a route reads itself, as a stream (an import's NDJSON or CSV): the parser leaves
 * such a body unread, and to every other route it is a problem like any unsupported type.
 */
const STREAMED_TYPES = new Set(['application/x-ndjson', 'text/csv'])

/** Reads the body as UTF-8 text, stopping as soon as it passes `limit` bytes. */
export async function readBodyText(request: Request, limit = BODY_LIMIT_BYTES): Promise<string | BodyProblem> {
  const declared = Number(request.headers.get('content-length') ?? '0')
  if (declared > limit) {
    await request.body?.cancel().catch(() => {})
    return tooLarge()
  }
  if (!request.body) return ''
  // A declared length within the limit: one read (the runtime holds the body to that length).
  if (request.headers.has('content-length')) return decode(new Uint8Array(await request.arrayBuffer()))
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      await reader.cancel().catch(() => {})
      return tooLarge()
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return decode(bytes)
}

function decode(bytes: Uint8Array): string | BodyProblem {
  try {
    return utf8.decode(bytes)
  } catch {
    return new BodyProblem(badRequest('The request body is not valid UTF-8.'))
  }
}

/** PostgreSQL text cannot hold U+0000: refused here as input, rather than failing in a statement. */
const nulCharacter = () => new BodyProblem(badRequest('The request body contains the character U+0000 (NUL), which text fields cannot hold.'))
/** `\u0000` in JSON text, unless its backslash is itself escaped (`\\u0000` is text). */
const ESCAPED_NUL = /(?:^|[^\\])(?:\\\\)*\\u0000/

/** PostgreSQL (UTF-8) cannot store half of a surrogate pair: refused as input, rather than failing in a statement. */
const loneSurrogate = () => new BodyProblem(badRequest('The request body contains an unpaired UTF-16 surrogate escape (such as \\ud800), which is not a character.'))
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** True when a string (or object key) anywhere in a parsed JSON value holds a lone surrogate. */
function holdsLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value)
  if (Array.isArray(value)) return value.some(holdsLoneSurrogate)
  if (value && typeof value === 'object') return Object.entries(value).some(([key, item]) => LONE_SURROGATE.test(key) || holdsLoneSurrogate(item))
  return false
}

/**
 * JSON nested deeper than this is refused before it is parsed: whatever walks a value recursively
 * (validators, error reports, `JSON.stringify`) would overflow the stack on it and answer 500.
 */
export const MAX_JSON_DEPTH = 256

/** True when arrays and objects in `text` nest deeper than `limit` (strings skipped; one pass). */
function nestsDeeperThan(text: string, limit: number): boolean {
  if (text.length <= limit) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (inString) {
      if (code === 0x5c) i++ // a backslash escapes the next character
      else if (code === 0x22) inString = false
    } else if (code === 0x22) inString = true
    else if (code === 0x5b || code === 0x7b) {
      if (++depth > limit) return true
    } else if (code === 0x5d || code === 0x7d) depth--
  }
  return false
}

/** Parses JSON text; an empty body is `undefined` (`parseRequestBody` hands it on as null). */
export function parseJsonText(text: string): unknown {
  if (text.trim() === '') return undefined
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) return new BodyProblem(badRequest(`The request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`))
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return new BodyProblem(badRequest('The request body is not valid JSON.'))
  }
  // A raw NUL cannot be in valid JSON text (outside a string it is not whitespace, inside one it must be escaped).
  if (text.includes('\\u0000') && ESCAPED_NUL.test(text)) return nulCharacter()
  // Valid UTF-8 cannot carry a surrogate either; only a `\uD800`-style escape can, so only then is the value walked.
  if (SURROGATE_ESCAPE.test(text) && holdsLoneSurrogate(value)) return loneSurrogate()
  return value
}

const unsupported = (type: string) => badRequest(`Unsupported Content-Type "${excerpt(type)}"; send application/json.`)

function mediaType(contentType: string | null): string {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase()
}

/**
 * The service's one body parser: JSON (also when no type is given) and URL-encoded forms (the
 * account pages). Anything else is refused. Never throws. No body (or an empty one) is null, never
 * undefined: Elysia would then run its own parser on the spent body and throw before the route's
 * checks, answering a bodiless DELETE with `Content-Type: application/json` 400 ahead of its key.
 */
export async function parseRequestBody(request: Request): Promise<unknown> {
  if (!request.body) return null
  const type = mediaType(request.headers.get('content-type'))
  const isJson = type === '' || type === 'application/json' || type.endsWith('+json')
  const isForm = type === 'application/x-www-form-urlencoded'
  if (STREAMED_TYPES.has(type)) return new BodyProblem(unsupported(type))
  const text = await readBodyText(request)
  if (text instanceof BodyProblem) return text
  // A type says nothing about a body that is not there.
  if (!isJson && !isForm) return text === '' ? null : new BodyProblem(unsupported(type))
  if (isJson) return parseJsonText(text) ?? null
  const fields = formFields(new URLSearchParams(text))
  return Object.entries(fields).some(([name, value]) => name.includes('\u0000') || [value].flat().some((item) => item.includes('\u0000'))) ? nulCharacter() : fields
}

/** Form fields as an object; a field sent more than once (checkboxes) becomes an array. */
function formFields(params: URLSearchParams): Record<string, string | string[]> {
  const fields: Record<string, string | string[]> = Object.create(null)
  for (const [name, value] of params) {
    const existing = fields[name]
    fields[name] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value]
  }
  return fields
}

/** Raises the body's problem, if it has one. */
export function throwIfBodyProblem(body: unknown): void {
  if (body instanceof BodyProblem) throw body.error
}
