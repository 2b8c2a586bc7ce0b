/**
 * Request body parsing with a size limit. A bad body never throws here: it becomes a
 * BodyProblem value, so the route's checks still run in the documented order (key, scope,
 * then input) and the problem is reported as a 400 once it is the caller's first problem.
 */
import { badRequest, type ApiError } from './errors'

export const BODY_LIMIT_BYTES = 1024 * 1024

/** A body that could not be read; raised by `throwIfBodyProblem` or the error mapper. */
export class BodyProblem {
  constructor(readonly error: ApiError) {}
}

const tooLarge = () =>
  new BodyProblem(badRequest(`The request body is larger than ${BODY_LIMIT_BYTES} bytes (1 MiB).`))
const utf8 = new TextDecoder('utf-8', { fatal: true })

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

/** Parses JSON text; an empty body is `undefined` (the route's schema decides if that is allowed). */
export function parseJsonText(text: string): unknown {
  if (text.trim() === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return new BodyProblem(badRequest('The request body is not valid JSON.'))
  }
}

function mediaType(contentType: string | null): string {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase()
}

/**
 * The service's one body parser: JSON (also when no type is given) and URL-encoded forms (the
 * account pages). Anything else is refused. Never throws.
 */
export async function parseRequestBody(request: Request): Promise<unknown> {
  const type = mediaType(request.headers.get('content-type'))
  const isJson = type === '' || type === 'application/json' || type.endsWith('+json')
  const isForm = type === 'application/x-www-form-urlencoded'
  if (!isJson && !isForm) {
    await request.body?.cancel().catch(() => {})
    return new BodyProblem(badRequest(`Unsupported Content-Type "${type}"; send application/json.`))
  }
  const text = await readBodyText(request)
  if (text instanceof BodyProblem) return text
  if (isJson) return parseJsonText(text)
  return formFields(new URLSearchParams(text))
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
