/**
 * What every answer must look like, per route family: never a 5xx; API v1 (and the account API
 * and an unknown route) the error envelope with a code that fits the status and a status the
 * OpenAPI document lists; the display API `{message, detail, field?}`; MCP JSON-RPC; the account
 * and live pages HTML (never echoing markup unescaped) or a redirect. And nothing a request does
 * may be logged as an unexpected error.
 */
import { HOSTILE_TARGET_URLS } from './generate'
import type { LoggedError } from './logged'
import type { Operation } from './routes'

export interface Answer {
  status: number
  headers: Headers
  text: string
  json: unknown
  isJson: boolean
}

const CODE_OF_STATUS: Record<number, string[]> = {
  400: ['BAD_REQUEST'],
  401: ['UNAUTHORIZED'],
  403: ['INSUFFICIENT_SCOPE', 'FORBIDDEN'],
  404: ['NOT_FOUND'],
  405: ['METHOD_NOT_ALLOWED'],
  409: ['CONFLICT'],
  412: ['PRECONDITION_FAILED'],
  422: ['IDEMPOTENCY_MISMATCH'],
  429: ['RATE_LIMITED'],
}
/** The statuses every route may answer (docs/api.md, "Errors"), beside what the document lists per operation. */
export const COMMON_ERROR_STATUSES = new Set([400, 401, 403, 404, 409, 422, 429])
const DISPLAY_MESSAGES: Record<number, string[]> = {
  400: ['invalidRequest', 'componentTypeMismatch'],
  401: ['invalidApiKey', 'invalidSession'],
  403: ['readOnlyAccess'],
  404: ['componentNotFound', 'pageNotFound', 'deviceNotFound', 'messageNotFound'],
  409: ['staleUpdate'],
  // limitExceeded: a display account's daily limit; tooManyStreams: a user's open streams; tooManyRequests: /s/ views of a link or an address.
  429: ['limitExceeded', 'tooManyStreams', 'tooManyRequests'],
}
const REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/
/**
 * Messages of the error mapper's fallbacks for database errors no service anticipated (it logs
 * them as unexpected): input that reached SQL unvalidated (22P02, 22003, 22007, 22008) or a unique
 * violation no service turned into its precise 409. Each is a bug, whatever its status.
 */
const DATABASE_FALLBACKS = ['A value has an invalid format.', 'The resource already exists.']
const INJECTED_MARKUP = ['<script>alert(1)</script>', '<img src=x onerror=alert(1)>']
/** An error answer (or a refused tool call) is never larger: it must not echo large input. */
export const MAX_ERROR_TEXT = 64 * 1024

/** Whether a browser following `location` from a page of the site stays on it. */
export function staysOnSite(location: string): boolean {
  const site = 'http://site.invalid'
  let resolved: URL
  try {
    resolved = new URL(location, `${site}/account/sign-in`)
  } catch {
    return false
  }
  return resolved.origin === site && location.startsWith('/') && !/^\/[/\\]/.test(location) && !/[\u0000-\u0020\u007f]/.test(location)
}

/** Webhook targets a lane must never accept, as the service stores them (WHATWG-normalised). */
const REFUSED_TARGETS = new Set(HOSTILE_TARGET_URLS.map((url) => new URL(url).toString()))

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const onlyKeys = (value: Record<string, unknown>, allowed: string[]) => Object.keys(value).filter((key) => !allowed.includes(key))

/** Problems with an API v1 envelope answer (success or error). */
function checkEnvelope(answer: Answer, problems: string[], requestId: string | undefined): void {
  if (!answer.isJson || !isObject(answer.json)) return void problems.push(`expected the JSON envelope, got ${answer.headers.get('content-type')}`)
  const body = answer.json
  const extra = onlyKeys(body, ['data', 'errors', 'meta'])
  if (extra.length) problems.push(`envelope has unexpected keys ${extra.join(', ')}`)
  if (!isObject(body.meta) || typeof body.meta.requestId !== 'string') problems.push('envelope meta.requestId missing')
  else {
    if (body.meta.requestId !== answer.headers.get('x-request-id')) problems.push('meta.requestId differs from the X-Request-Id header')
    if (!REQUEST_ID.test(body.meta.requestId)) problems.push(`request id "${body.meta.requestId}" is not well-formed`)
    if (requestId && REQUEST_ID.test(requestId) && body.meta.requestId !== requestId) problems.push('a well-formed incoming X-Request-Id was not kept')
  }
  if (!Array.isArray(body.errors)) return void problems.push('envelope errors is not an array')
  if (answer.status < 400) {
    if (body.errors.length) problems.push('a success carries errors')
    if (!('data' in body)) problems.push('a success has no data')
    return
  }
  if (body.data !== null) problems.push('an error has data other than null')
  if (!isObject(body.meta) || onlyKeys(body.meta, ['requestId']).length) problems.push('an error meta has more than requestId')
  if (!body.errors.length) problems.push('an error without error items')
  for (const item of body.errors) {
    if (!isObject(item)) {
      problems.push('an error item is not an object')
      continue
    }
    const unexpected = onlyKeys(item, ['code', 'message', 'field', 'existingId'])
    if (unexpected.length) problems.push(`an error item has unexpected keys ${unexpected.join(', ')}`)
    if (!(CODE_OF_STATUS[answer.status] ?? []).includes(item.code as string)) problems.push(`code ${JSON.stringify(item.code)} does not fit status ${answer.status}`)
    if (typeof item.message !== 'string' || !item.message) problems.push('an error item has no message')
    if ('field' in item && typeof item.field !== 'string') problems.push('an error item field is not a string')
    if ('existingId' in item && typeof item.existingId !== 'string') problems.push('an error item existingId is not a string')
    if (DATABASE_FALLBACKS.includes(item.message as string)) problems.push(`a database error reached the client through the mapper's fallback: ${JSON.stringify(item.message)}`)
  }
  if (answer.status === 401 && !/^Bearer /.test(answer.headers.get('www-authenticate') ?? '')) problems.push('401 without WWW-Authenticate: Bearer')
  if (answer.status === 429 && !answer.headers.get('retry-after')) problems.push('429 without Retry-After')
}

/** Problems with a display API answer (`{message, detail, field?}` on errors). */
function checkDisplay(op: Operation, answer: Answer, problems: string[]): void {
  if (answer.status >= 400) {
    if (!answer.isJson || !isObject(answer.json)) return void problems.push('expected a JSON {message, detail} error')
    const body = answer.json
    // A refused body lists every problem in `errors`, each a display error itself.
    const listed = answer.status === 400 && Array.isArray(body.errors) && body.errors.every((item) => isObject(item) && typeof item.detail === 'string' && onlyKeys(item, ['message', 'detail', 'field']).length === 0)
    const extra = onlyKeys(body, answer.status === 429 ? ['message', 'detail', 'field', 'limitRemaining'] : listed ? ['message', 'detail', 'field', 'errors'] : ['message', 'detail', 'field'])
    if (extra.length) problems.push(`display error has unexpected keys ${extra.join(', ')}`)
    if (!(DISPLAY_MESSAGES[answer.status] ?? []).includes(body.message as string)) problems.push(`display error message ${JSON.stringify(body.message)} does not fit status ${answer.status}`)
    if (typeof body.detail !== 'string' || !body.detail) problems.push('display error without detail')
    if (DATABASE_FALLBACKS.includes(body.detail as string)) problems.push(`a database error reached the client through the mapper's fallback: ${JSON.stringify(body.detail)}`)
    if ('field' in body && typeof body.field !== 'string') problems.push('display error field is not a string')
    if (answer.status === 429 && !answer.headers.get('retry-after')) problems.push('429 without Retry-After')
    if (body.message === 'limitExceeded' && body.limitRemaining !== 0) problems.push('limitExceeded without limitRemaining 0')
    return
  }
  if (op.template === '/api/component') {
    if (answer.status !== 200 || !isObject(answer.json) || answer.json.message !== 'updateSuccess' || typeof answer.json.limitRemaining !== 'number') problems.push('a component success is not 200 {message: updateSuccess, limitRemaining}')
    else if (answer.headers.get('x-ratelimit-remaining') !== String(answer.json.limitRemaining)) problems.push('X-RateLimit-Remaining differs from limitRemaining')
  } else if (op.template === '/api/message') {
    if (answer.status !== 200 || answer.text !== 'Message sent successfully' || !answer.headers.get('x-message-id')) problems.push('a message success is not 200 "Message sent successfully" with X-Message-Id')
  } else if (op.template === '/api/devices' && op.method === 'GET') {
    if (answer.status !== 200 || !isObject(answer.json) || !Array.isArray(answer.json.devices)) problems.push('a device list is not 200 {devices}')
  } else if (op.template === '/api/devices') {
    if (![200, 201].includes(answer.status) || !isObject(answer.json) || !isObject(answer.json.device)) problems.push('a device registration is not 200/201 {device}')
  } else if (op.template === '/api/devices/{token}') {
    if (answer.status !== 204) problems.push('a device removal is not 204')
  } else if (answer.status !== 200 || !isObject(answer.json) || !Array.isArray(answer.json.components)) problems.push('a page read is not 200 {page, components}')
}

const JSON_RPC_INTERNAL_ERROR = -32603

/** Problems with a JSON-RPC answer of /mcp. */
function checkJsonRpc(answer: Answer, problems: string[]): void {
  if (answer.status === 202 && answer.text === '') return
  if (!answer.isJson) return void problems.push(`expected JSON-RPC, got ${answer.headers.get('content-type')}: ${answer.text.slice(0, 80)}`)
  const messages = Array.isArray(answer.json) ? answer.json : [answer.json]
  if (!messages.length) problems.push('an empty JSON-RPC batch answer')
  for (const message of messages) {
    if (!isObject(message) || message.jsonrpc !== '2.0') {
      problems.push('not a JSON-RPC 2.0 message')
      continue
    }
    if ('error' in message === 'result' in message) problems.push('a JSON-RPC answer needs exactly one of result and error')
    if ('error' in message && (!isObject(message.error) || typeof message.error.code !== 'number' || typeof message.error.message !== 'string')) problems.push('a JSON-RPC error without code and message')
    // JSON-RPC's "Internal error" is MCP's 500: a client's message, however wrong, has a code of its own.
    else if (isObject(message.error) && message.error.code === JSON_RPC_INTERNAL_ERROR) problems.push(`a JSON-RPC internal error (${JSON_RPC_INTERNAL_ERROR}): ${String(message.error.message).slice(0, 200)}`)
    if (answer.status >= 400 && !('error' in message)) problems.push(`HTTP ${answer.status} without a JSON-RPC error`)
    const result = message.result
    if (isObject(result) && result.isError === true) {
      if (answer.text.length > MAX_ERROR_TEXT) problems.push(`a refused tool call of ${answer.text.length} characters (at most ${MAX_ERROR_TEXT})`)
      const content = result.structuredContent
      if (!isObject(content) || !isObject(content.error) || typeof content.status !== 'number') problems.push('a refused tool call without {error, errors, status}')
      else {
        if (content.status >= 500) problems.push(`a tool call failed with status ${content.status} (${JSON.stringify(content.error)})`)
        else if (!(CODE_OF_STATUS[content.status] ?? []).includes(content.error.code as string)) problems.push(`tool error code ${JSON.stringify(content.error.code)} does not fit status ${content.status}`)
        if (DATABASE_FALLBACKS.includes(content.error.message as string)) problems.push(`a database error reached a tool result through the mapper's fallback: ${JSON.stringify(content.error.message)}`)
      }
    }
  }
}

/** Problems with an HTML page answer (or its redirect). */
function checkPage(answer: Answer, problems: string[], allowed: number[]): void {
  if (!allowed.includes(answer.status)) problems.push(`status ${answer.status} is not one of ${allowed.join(', ')}`)
  if (answer.status >= 300 && answer.status < 400) {
    const location = answer.headers.get('location')
    if (!location) problems.push('a redirect without Location')
    else if (!staysOnSite(location)) problems.push(`a redirect leaves the site: Location ${JSON.stringify(location.slice(0, 120))}`)
    return
  }
  const type = answer.headers.get('content-type') ?? ''
  if (type.startsWith('text/html')) {
    for (const markup of INJECTED_MARKUP) if (answer.text.includes(markup)) problems.push(`the page echoes ${markup} unescaped`)
    if (!answer.headers.get('content-security-policy')) problems.push('an HTML page without Content-Security-Policy')
  } else if (answer.status >= 400) problems.push(`an error page that is not HTML: ${type}`)
}

export interface Resolved {
  /** The operation the request reached (null: no route of the catalog matches). */
  op: Operation | null
  method: string
  pathname: string
}

/** Every problem with `answer` to a request that reached `resolved`. */
export function checkAnswer(resolved: Resolved, answer: Answer, requestId: string | undefined): string[] {
  const problems: string[] = []
  const { op, method, pathname } = resolved
  if (answer.status >= 500) problems.push(`server error ${answer.status}`)
  if (answer.status >= 400 && answer.text.length > MAX_ERROR_TEXT) problems.push(`an error answer of ${answer.text.length} characters (at most ${MAX_ERROR_TEXT})`)
  const responseId = answer.headers.get('x-request-id')
  if (!responseId || !REQUEST_ID.test(responseId)) problems.push(`X-Request-Id ${JSON.stringify(responseId)} is missing or not well-formed`)
  if (method === 'HEAD') return problems

  if (!op) {
    // No route: the 404 envelope, or 405 with Allow where the path has routes under other methods
    // (HEAD/OPTIONS of a known path may answer otherwise, but never 5xx).
    if (answer.status === 405) {
      if (!answer.headers.get('allow')) problems.push('a 405 without Allow')
    } else if (answer.status !== 404) problems.push(`an unknown route answered ${answer.status}`)
    checkEnvelope(answer, problems, requestId)
    return problems
  }
  switch (op.family) {
    case 'v1':
    case 'account-api': {
      // The project export's success streams NDJSON: the one v1 answer that is not an envelope.
      const streamed = answer.status < 300 && op.template === '/api/v1/projects/{projectId}/export' && (answer.headers.get('content-type') ?? '').startsWith('application/x-ndjson')
      if (!streamed) checkEnvelope(answer, problems, requestId)
      const documented = op.documented ?? new Set<number>()
      const listed = answer.status < 400 ? documented.has(answer.status) || (op.family === 'account-api' && [200, 201].includes(answer.status)) : documented.has(answer.status) || (op.family === 'account-api' && COMMON_ERROR_STATUSES.has(answer.status))
      if (op.template.includes('{unknown}')) {
        // A random segment can name a real path of another method (POST /api/v1/audit-logs): 405 listing the others.
        const allowed = answer.status === 405 && Boolean(answer.headers.get('allow')) && !answer.headers.get('allow')!.split(/,\s*/).includes(op.method)
        if (answer.status !== 404 && answer.status !== 401 && !allowed) problems.push(`an unknown v1 route answered ${answer.status}`)
      } else if (!listed) problems.push(`status ${answer.status} is not documented for ${op.method} ${op.template} (documented: ${[...documented].join(', ')})`)
      const data = isObject(answer.json) ? answer.json.data : undefined
      if (op.template.startsWith('/api/v1/webhooks') && answer.status < 300 && isObject(data) && typeof data.url === 'string' && REFUSED_TARGETS.has(data.url))
        problems.push(`a webhook accepted the non-public target ${data.url} (allowPrivateTargets is off)`)
      break
    }
    case 'display':
      checkDisplay(op, answer, problems)
      if (op.documented && !op.documented.has(answer.status)) problems.push(`status ${answer.status} is not documented for ${op.method} ${op.template} (documented: ${[...op.documented].join(', ')})`)
      break
    case 'mcp':
      if (answer.status === 401) checkEnvelope(answer, problems, requestId)
      else checkJsonRpc(answer, problems)
      break
    case 'account-page':
      // 409: the People page refusing a change (the last superadministrator, a new link for someone not invited).
      checkPage(answer, problems, [200, 201, 303, 400, 401, 403, 404, 409, 429])
      break
    case 'live-page':
      if (op.template.endsWith('/events') && answer.status >= 400) checkDisplay({ ...op, template: '/api/pages/{pageName}' }, answer, problems)
      else {
        // Views of a share link are rate-limited per link and address: 429 with Retry-After.
        const shared = op.template.startsWith('/s/')
        checkPage(answer, problems, shared ? [200, 303, 404, 429] : [200, 303, 404])
        if (shared && answer.status === 429 && !answer.headers.get('retry-after')) problems.push('429 without Retry-After')
      }
      break
    case 'other':
      if (op.template.includes('{unknown}')) {
        if (answer.status !== 404) problems.push(`an unknown route answered ${answer.status}`)
        checkEnvelope(answer, problems, requestId)
      } else if (answer.status !== 200) problems.push(`${op.template} answered ${answer.status}`)
      break
  }
  return problems
}

const templateParts = new WeakMap<Operation, string[]>()

/** The operation a method and path reach (templates match whole segments; a parameter is any non-empty segment). */
export function resolveOperation(ops: readonly Operation[], method: string, pathname: string): Operation | null {
  // Elysia ignores one trailing slash (`/teams/x/` is `/teams/x`).
  const segments = pathname.replace(/(.)\/$/, '$1').split('/')
  const matches = (op: Operation) => {
    let parts = templateParts.get(op)
    if (!parts) templateParts.set(op, (parts = op.template.split('/')))
    if (parts.length !== segments.length) return false
    return parts.every((part, index) => (part.startsWith('{') ? segments[index] !== '' : part === segments[index]))
  }
  // Literal templates first (`/pages/assets/live.css` before `/pages/{pageName}`).
  const candidates = ops.filter((op) => op.method === method && matches(op))
  if (!candidates.length) candidates.push(...ops.filter((op) => op.anyMethod && matches(op)))
  candidates.sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0))
  return candidates[0] ?? null
}

/** A logged error's fields, short: the SQL's start (enough to find the statement) and the stack's first frames. */
function shortFields({ sql, stack, ...rest }: Record<string, unknown>): Record<string, unknown> {
  const shown: Record<string, unknown> = { ...rest }
  if (typeof sql === 'string') shown.sql = sql.length > 300 ? `${sql.slice(0, 300)}…` : sql
  if (typeof stack === 'string') shown.stack = stack.split('\n').slice(0, 4).join(' | ')
  return shown
}

/**
 * A problem for each error line logged while a request ran: the service logs an error only for
 * what it did not expect (a bug, an outage, a database error it did not turn into an answer), so a
 * client's input, however hostile, must never cause one, even when its answer looks right.
 */
export function checkLogged(lines: readonly LoggedError[]): string[] {
  return lines.map(({ message, fields }) => `an unexpected error was logged: ${message} ${JSON.stringify(shortFields(fields))}`)
}
