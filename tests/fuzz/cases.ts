/**
 * One fuzz case per run: an operation, its path parameters (real fixture ids or garbage), its
 * query, who it claims to be, its Content-Type, extra headers and a body recipe. `buildRequest`
 * turns a case into a concrete request against the world.
 */
import fc from 'fast-check'
import { csrfFor } from '../../plugins/account/web-security'
import { anyText, bodyRecipe, excerpt, HOSTILE_STRINGS, nested, pick, renderBody, validValue, type BodyRecipe, type IdPools, type JsonSchema } from './generate'
import type { Operation } from './routes'
import type { FuzzWorld } from './world'

export type ParamChoice = { real: number } | { garbage: string; raw: boolean }
export type QueryRecipe = { kind: 'values'; values: Record<string, unknown> } | { kind: 'raw'; text: string }
export type AuthChoice = 'valid' | 'owner' | 'viewer' | 'other-organization' | 'no-scope' | 'revoked' | 'wrong-kind' | 'none' | { malformed: number }

export interface Case {
  op: number
  /** Another method on the same path (mostly a route that does not exist). */
  method: string | null
  params: ParamChoice[]
  query: QueryRecipe
  auth: AuthChoice
  contentType: number
  body: BodyRecipe
  idempotencyKey: string | null
  ifMatch: string | null
  requestId: string | null
  accept: number
  /** The request URL's host (what the Host header makes it): routing must follow the path alone. */
  host: number
  /** An X-Forwarded-For header (the lanes trust one proxy hop), or none. */
  forwardedFor: string | null
}

export interface BuiltRequest {
  method: string
  path: string
  headers: Record<string, string>
  body: string | Uint8Array | undefined
  /** The request carried the world's valid display key in its body. */
  usedDisplayKey: boolean
  /** The request carried a valid credential of the kind the route wants. */
  validCredential: boolean
  /** The URL's host. */
  host: string
}

/** Content-Type values; -1 (no header) is index 0. */
export const CONTENT_TYPES: readonly (string | null)[] = [
  null,
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/x-www-form-urlencoded',
  'text/plain',
  'multipart/form-data; boundary=fuzz',
  'application/xml',
  'application/merge-patch+json',
  '',
  ';;;',
  'application/json; charset=latin1',
]
const JSON_TYPE = 1
const FORM_TYPE = 4
/** Hosts of the request URL: short ones moved the path Elysia routed by (`x` + `/aaaa/api/…`). */
export const HOSTS: readonly string[] = ['localhost', 'x', 'a:1', 'ab', 'abc', '127.0.0.1:1', 'h.example:65535']
/** Hostile X-Forwarded-For values: forged chains, garbage, and sizes no address has. */
const FORWARDED_FOR: readonly string[] = [
  '203.0.113.7',
  '192.0.2.1, 203.0.113.7',
  ' , ,, ',
  'unknown',
  "'; drop table sign_in_throttle; --",
  `${'9'.repeat(5000)}`,
  Array.from({ length: 500 }, (_, i) => `10.0.${i >> 8}.${i & 255}`).join(', '),
  '<script>alert(1)</script>, ::1',
  '%00, 203.0.113.9',
]
export const ACCEPTS: readonly (string | null)[] = ['application/json, text/event-stream', null, 'application/json', 'text/event-stream', 'text/html', '*/*']

/** Authorization values that are not a credential. */
const MALFORMED_AUTHORIZATION = [
  'Bearer',
  'Bearer ',
  'Bearer wtk_short',
  'Basic dXNlcjpwYXNz',
  'bearer wtk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa000000',
  'Bearer wtk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa000000',
  'Bearer dpk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa000000',
  'Bearer wts_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa000000',
  "Bearer '; drop table api_keys; --",
  'Bearer <script>alert(1)</script>',
  `Bearer ${'x'.repeat(8000)}`,
  'Bearer wtk_\u00e9\u00e9',
  'Bearer  wtk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa000000',
  'Bearer a b c',
  'Token abc',
]

const authChoice: fc.Arbitrary<AuthChoice> = fc.oneof(
  { arbitrary: fc.constant('valid' as const), weight: 60 },
  { arbitrary: fc.constant('owner' as const), weight: 10 },
  { arbitrary: fc.constant('viewer' as const), weight: 4 },
  { arbitrary: fc.constant('other-organization' as const), weight: 6 },
  { arbitrary: fc.constant('no-scope' as const), weight: 3 },
  { arbitrary: fc.constant('revoked' as const), weight: 2 },
  { arbitrary: fc.constant('wrong-kind' as const), weight: 3 },
  { arbitrary: fc.constant('none' as const), weight: 5 },
  { arbitrary: fc.nat().map((index) => ({ malformed: index % MALFORMED_AUTHORIZATION.length })), weight: 5 },
)

const garbageSegment: fc.Arbitrary<ParamChoice> = fc.oneof(
  { arbitrary: fc.uuid().map((garbage) => ({ garbage, raw: false })), weight: 4 },
  { arbitrary: fc.constantFrom(...HOSTILE_STRINGS.filter(Boolean)).map((garbage) => ({ garbage, raw: false })), weight: 4 },
  { arbitrary: fc.constantFrom('%ZZ', '%', '%00', '%2F', '%2e%2e', '..', '.', '%C0%AF', '%FF', '%ED%A0%80', 'a%20b', '%u0041', ';', '*').map((garbage) => ({ garbage, raw: true })), weight: 2 },
  { arbitrary: anyText(1, 20).map((garbage) => ({ garbage, raw: false })), weight: 2 },
  { arbitrary: fc.constantFrom(300, 5000, 60_000).map((length) => ({ garbage: 'a'.repeat(length), raw: false })), weight: 1 },
)

/** A path parameter: mostly a real id (when the world has one), else garbage. */
function paramChoice(pool: string[] | undefined): fc.Arbitrary<ParamChoice> {
  if (!pool?.length) return garbageSegment
  return fc.oneof({ arbitrary: fc.nat().map((index) => ({ real: index % pool.length })), weight: 2 }, { arbitrary: garbageSegment, weight: 1 })
}

const hostileQueryValue = fc.oneof(fc.constantFrom<unknown>(...HOSTILE_STRINGS), fc.constantFrom<unknown>(['1', '2'], -1, 0, 101, 1.5, 1e21, -0), anyText(0, 8))

/** Names a plain object answers without holding them: a parameter or argument so named must be as unknown as any other. */
const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty']

const RAW_QUERIES = ['page=%ZZ', '=&&&=', 'page', 'page[]=1', 'size=1&size=2', 'page=1&page=x', 'q=%00', 'q=' + '%F0'.repeat(3), '%00=1', 'size=%2B1', 'page=%20', 'size=1e1', 'page=0x1', 'size=١', 'page=' + '9'.repeat(400), 'q&q&q', 'status=todo&status=done']

function queryRecipe(op: Operation, pools: IdPools): fc.Arbitrary<QueryRecipe> {
  const model: Record<string, fc.Arbitrary<unknown>> = {}
  for (const parameter of op.query) model[parameter.name] = validValue(parameter.schema, pools, parameter.name)
  const required = op.query.filter((parameter) => parameter.required).map((parameter) => parameter.name)
  const valid = fc.record(model, { requiredKeys: required })
  const names = [...op.query.map((parameter) => parameter.name), 'unknown', 'page', 'size', ...PROTOTYPE_NAMES]
  const mutated = fc.tuple(valid, fc.constantFrom(...names), hostileQueryValue).map(([values, name, value]) => ({ ...values, [name]: value }))
  return fc.oneof(
    { arbitrary: valid.map((values) => ({ kind: 'values' as const, values })), weight: op.query.length ? 5 : 1 },
    { arbitrary: mutated.map((values) => ({ kind: 'values' as const, values })), weight: op.query.length ? 5 : 1 },
    { arbitrary: fc.constantFrom(...RAW_QUERIES).map((text) => ({ kind: 'raw' as const, text })), weight: 1 },
  )
}

/** MCP JSON-RPC messages: tool calls with valid or broken arguments, and protocol edge cases. */
export function mcpBodies(tools: Array<{ name: string; inputSchema: JsonSchema }>, pools: IdPools): fc.Arbitrary<unknown> {
  const id = fc.oneof(fc.nat(), fc.constantFrom<unknown>('a', null, 1.5, { a: 1 }, [1], -1, 'x'.repeat(300)))
  const calls = tools.map((tool) => {
    // A delete tool never gets the id of what it deletes from the world.
    const target = tool.name.startsWith('delete_') ? `${tool.name.slice('delete_'.length).replace(/_(\w)/g, (_, c: string) => c.toUpperCase())}Id` : null
    const toolPools = target ? Object.fromEntries(Object.entries(pools).filter(([name]) => name !== target)) : pools
    return validValue(tool.inputSchema, toolPools).map((args) => ({ name: tool.name, arguments: args }))
  })
  const call = fc.oneof(...calls)
  // A computed key: `__proto__` becomes an own argument, as JSON.parse makes it.
  const oddlyNamed = fc.tuple(call, fc.constantFrom(...PROTOTYPE_NAMES), hostileQueryValue).map(([sent, name, value]) => ({ ...sent, arguments: { ...(sent.arguments as object), [name]: value } }))
  const message = (method: fc.Arbitrary<string>, params: fc.Arbitrary<unknown>) => fc.record({ jsonrpc: fc.constant('2.0'), id, method, params }, { requiredKeys: ['jsonrpc', 'method'] })
  return fc.oneof(
    { arbitrary: message(fc.constant('tools/call'), call), weight: 12 },
    { arbitrary: message(fc.constant('tools/call'), oddlyNamed), weight: 2 },
    { arbitrary: message(fc.constant('tools/list'), fc.constantFrom<unknown>({}, undefined, { cursor: 'x' })), weight: 2 },
    {
      arbitrary: message(fc.constant('initialize'), fc.constantFrom<unknown>({ protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } }, { protocolVersion: 'nope' }, {})),
      weight: 1,
    },
    { arbitrary: message(fc.constantFrom('ping', 'resources/list', 'prompts/list', 'nope', '', 'tools/call', 'notifications/initialized', '__proto__'), fc.constantFrom<unknown>({}, [], null, 'x', { name: 'nope' }, { name: 'list_projects', arguments: 'x' }, { name: 'list_projects', arguments: nested(200) })), weight: 2 },
    { arbitrary: fc.array(message(fc.constant('tools/call'), call), { minLength: 1, maxLength: 3 }), weight: 1 },
    { arbitrary: fc.constantFrom<unknown>({ jsonrpc: '1.0', id: 1, method: 'ping' }, { id: 1, method: 'ping' }, { jsonrpc: '2.0' }, [], [1], 'ping', 7), weight: 1 },
  )
}

/** Every case of one operation. */
export function caseOf(opIndex: number, op: Operation, pools: IdPools, mcp: fc.Arbitrary<unknown> | null): fc.Arbitrary<Case> {
  const base = op.template === '/mcp' && op.method === 'POST' && mcp ? mcp : op.body ? validValue(op.body, pools) : fc.constant<unknown>({})
  const takesBody = op.method !== 'GET'
  const natural = op.form ? FORM_TYPE : JSON_TYPE
  return fc.record({
    op: fc.constant(opIndex),
    method: fc.oneof({ arbitrary: fc.constant(null), weight: 30 }, { arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND', 'M-SEARCH'), weight: 1 }),
    params: fc.tuple(...op.pathParams.map((name) => paramChoice(name === 'pageName' ? pools.pageName : pools[name]))),
    query: queryRecipe(op, pools),
    auth: authChoice,
    contentType: fc.oneof({ arbitrary: fc.constant(natural), weight: 12 }, { arbitrary: fc.nat({ max: CONTENT_TYPES.length - 1 }), weight: 3 }),
    body: takesBody ? (op.body || op.template === '/mcp' ? bodyRecipe(base) : fc.oneof({ arbitrary: fc.constant({ kind: 'none' as const }), weight: 6 }, { arbitrary: bodyRecipe(base), weight: 1 })) : fc.constant({ kind: 'none' as const }),
    idempotencyKey: op.method === 'POST' ? fc.oneof({ arbitrary: fc.constant(null), weight: 12 }, { arbitrary: fc.constantFrom('fuzz-fixed', 'fuzz-other', '', ' ', 'é', 'k'.repeat(256), 'a b'), weight: 2 }, { arbitrary: fc.uuid(), weight: 2 }) : fc.constant(null),
    ifMatch: op.method === 'PATCH' || op.method === 'DELETE' ? fc.oneof({ arbitrary: fc.constant(null), weight: 8 }, { arbitrary: fc.constantFrom('*', '"abc"', 'W/"abc"', '"', '', 'x'.repeat(500), '"0000000000000000"'), weight: 1 }) : fc.constant(null),
    requestId: fc.oneof({ arbitrary: fc.constant(null), weight: 10 }, { arbitrary: fc.constantFrom('fuzz-request-id-1', 'short', '<script>', 'x'.repeat(200), 'a b c d e f g h', '../../../../'), weight: 1 }),
    accept: op.template === '/mcp' ? fc.oneof({ arbitrary: fc.constant(0), weight: 8 }, { arbitrary: fc.nat({ max: ACCEPTS.length - 1 }), weight: 1 }) : fc.constant(1),
    host: fc.oneof({ arbitrary: fc.constant(0), weight: 12 }, { arbitrary: fc.nat({ max: HOSTS.length - 1 }), weight: 1 }),
    forwardedFor: fc.oneof({ arbitrary: fc.constant(null), weight: 10 }, { arbitrary: fc.constantFrom(...FORWARDED_FOR), weight: 1 }),
  })
}

export interface BuildContext {
  world: FuzzWorld
  ops: Operation[]
  /** The display clock: a strictly increasing Unix time in seconds. */
  now(): number
  /** A fresh session of `kind`, for routes that end the session they are sent with. */
  disposableSession(kind: 'mobile' | 'web'): Promise<string>
}

const FORM_CSRF_TOKEN = 'fuzz-sign-in-form-token-0123456789'

/** encodeURIComponent, except that a lone surrogate becomes its (invalid) 3-byte UTF-8 form instead of throwing. */
export function encodePathSegment(text: string): string {
  if (!/[\ud800-\udfff]/.test(text)) return encodeURIComponent(text)
  return text.replace(/[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]|[^]/g, (unit) => {
    if (unit.length === 2 || unit.charCodeAt(0) < 0xd800 || unit.charCodeAt(0) > 0xdfff) return encodeURIComponent(unit)
    const code = unit.charCodeAt(0)
    return [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join('')
  })
}

function encodeSegment(choice: ParamChoice, pool: string[] | undefined): { text: string; real: boolean } {
  if ('real' in choice) return { text: encodePathSegment(pick(pool!, choice.real)), real: true }
  return { text: choice.raw ? choice.garbage : encodePathSegment(choice.garbage), real: false }
}

function renderQuery(recipe: QueryRecipe): string {
  if (recipe.kind === 'raw') return `?${recipe.text}`
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(recipe.values)) {
    if (value === undefined) continue
    if (Array.isArray(value)) for (const item of value) search.append(name, String(item))
    else search.append(name, typeof value === 'object' ? JSON.stringify(value) : String(value))
  }
  const text = search.toString()
  return text ? `?${text}` : ''
}

/** The form encoding of a JSON body value (account pages): arrays repeat their field. */
function formBody(value: unknown): string {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return JSON.stringify(value) ?? ''
  const search = new URLSearchParams()
  for (const [name, item] of Object.entries(value)) {
    if (Array.isArray(item)) for (const entry of item) search.append(name, typeof entry === 'string' ? entry : JSON.stringify(entry))
    else search.append(name, typeof item === 'string' ? item : JSON.stringify(item) ?? '')
  }
  return search.toString()
}

/** Builds the concrete request of a case. */
export async function buildRequest(fuzzCase: Case, context: BuildContext): Promise<BuiltRequest> {
  const op = context.ops[fuzzCase.op]!
  const { world } = context
  const pools: IdPools = { ...world.ids, pageName: world.pageNames }
  const segments = op.pathParams.map((name, index) => encodeSegment(fuzzCase.params[index]!, name === 'pageName' ? pools.pageName : pools[name]))
  // Destructive operations never name only real things: the last parameter becomes garbage.
  if (op.destructive && segments.length && segments.every((segment) => segment.real)) segments[segments.length - 1] = { text: '00000000-0000-7000-8000-000000000000', real: false }
  let index = 0
  let path = op.template.replace(/\{\w+\}/g, () => segments[index++]!.text)
  path += renderQuery(fuzzCase.query)
  const method = fuzzCase.method ?? op.method
  const headers: Record<string, string> = {}
  let validCredential = false
  let webToken = world.webSession

  // Who the request claims to be.
  const auth = fuzzCase.auth
  const bearer = (token: string) => (headers.authorization = `Bearer ${token}`)
  if (typeof auth === 'object') headers.authorization = MALFORMED_AUTHORIZATION[auth.malformed]!
  else if (op.auth === 'key' || op.auth === 'none' || op.auth === 'body-key') {
    const keys = world.keys
    const chosen = { valid: keys.superadministrator, owner: keys.owner, viewer: keys.viewer, 'other-organization': keys.otherOrganization, 'no-scope': keys.noScope, revoked: keys.revoked, 'wrong-kind': world.mobileSession, none: null }[auth]
    if (chosen && (op.auth === 'key' || auth !== 'valid')) bearer(chosen)
    validCredential = op.auth === 'key' && ['valid', 'owner', 'viewer', 'other-organization', 'no-scope'].includes(auth)
  } else if (op.auth === 'mobile-session') {
    if (auth === 'valid' || auth === 'owner' || auth === 'viewer') {
      bearer(op.endsSession ? await context.disposableSession('mobile') : world.mobileSession)
      validCredential = true
    } else if (auth === 'wrong-kind') bearer(world.webSession)
    else if (auth !== 'none') bearer(world.keys.superadministrator)
  } else if (op.auth === 'web-session') {
    if (auth === 'valid' || auth === 'owner' || auth === 'viewer') {
      webToken = op.endsSession ? await context.disposableSession('web') : world.webSession
      headers.cookie = `wt_session=${encodeURIComponent(webToken)}`
      validCredential = true
    } else if (auth === 'wrong-kind') headers.cookie = `wt_session=${encodeURIComponent(world.mobileSession)}`
    else if (auth === 'revoked') headers.cookie = 'wt_session=%ZZ; wt_session=x'
    else if (auth !== 'none') headers.cookie = `wt_session=${encodeURIComponent(world.keys.superadministrator)}`
  }
  // The sign-in form's double-submit cookie.
  if (op.template === '/account/sign-in' && method === 'POST' && auth !== 'none') headers.cookie = `${headers.cookie ? `${headers.cookie}; ` : ''}wt_signin=${FORM_CSRF_TOKEN}`

  const contentType = CONTENT_TYPES[fuzzCase.contentType]
  if (contentType !== null && contentType !== undefined) headers['content-type'] = contentType
  if (fuzzCase.idempotencyKey !== null) headers['idempotency-key'] = fuzzCase.idempotencyKey
  if (fuzzCase.ifMatch !== null) headers['if-match'] = fuzzCase.ifMatch
  if (fuzzCase.requestId !== null) headers['x-request-id'] = fuzzCase.requestId
  const accept = ACCEPTS[fuzzCase.accept]
  if (accept) headers.accept = accept
  if (fuzzCase.forwardedFor !== null) headers['x-forwarded-for'] = fuzzCase.forwardedFor

  let body: string | Uint8Array | undefined
  if (method !== 'GET' && method !== 'HEAD') {
    const recipe = withFormSecrets(fuzzCase.body, op, op.template === '/account/sign-in' ? FORM_CSRF_TOKEN : csrfFor(webToken))
    body = op.form && fuzzCase.contentType === FORM_TYPE && recipe.kind === 'json' ? formBody(recipe.value) : renderBody(recipe, context.now)
    if (typeof body === 'string') body = body.replace(/__PAGE_NAME_(\d+)__/g, (_, index: string) => JSON.stringify(world.pageNames[Number(index)] ?? '').slice(1, -1))
  }
  const usedDisplayKey = typeof body === 'string' ? body.includes(world.displayKey) : body instanceof Uint8Array ? new TextDecoder().decode(body).includes(world.displayKey) : false
  return { method, path, headers, body, usedDisplayKey, validCredential, host: HOSTS[fuzzCase.host] ?? 'localhost' }
}

/** Puts the real CSRF token (and sign-in form token) where a form's `csrf` field holds the placeholder. */
function withFormSecrets(recipe: BodyRecipe, op: Operation, csrf: string): BodyRecipe {
  if (!op.form || recipe.kind !== 'json' || !recipe.value || typeof recipe.value !== 'object' || Array.isArray(recipe.value)) return recipe
  const value = { ...(recipe.value as Record<string, unknown>) }
  if (value.csrf === CSRF_PLACEHOLDER) value.csrf = csrf
  return { kind: 'json', value }
}

export const CSRF_PLACEHOLDER = '__CSRF__'
/** Stands for the current name of the world's page `index` in a body. */
export const pageNamePlaceholder = (index: number) => `__PAGE_NAME_${index}__`

/** A short reproducer of a built request. */
export function describeRequest(request: BuiltRequest): string {
  const headers = Object.entries(request.headers)
    .map(([name, value]) => `${name}: ${value.length > 120 ? `${value.slice(0, 120)}… (${value.length})` : value}`)
    .join('\n    ')
  return `${request.method} ${request.host === 'localhost' ? '' : `(Host: ${request.host}) `}${request.path.length > 300 ? `${request.path.slice(0, 300)}… (${request.path.length})` : request.path}\n    ${headers}\n  body: ${excerpt(request.body)}`
}
