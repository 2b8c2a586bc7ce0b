/**
 * The catalog of operations to fuzz: every operation of the OpenAPI document, plus the routes it
 * hides (the display API, devices, live pages, account pages, MCP) described here by hand from
 * their models, each with its family (which decides the error shape) and its auth kind.
 */
import { ApiKeyInput } from '../../plugins/auth/model'
import { ComponentData } from '../../plugins/display/model'
import type { JsonSchema } from './generate'

export type Family =
  /** `/api/v1/…`: the v1 envelope. */
  | 'v1'
  /** `/account/api/…`: the v1 envelope, behind a mobile session token. */
  | 'account-api'
  /** `/account…` pages: HTML (or a redirect); unknown paths fall through to the envelope. */
  | 'account-page'
  /** `/api/component`, `/api/message`, `/api/devices`, `/api/pages/…`: `{message, detail, field?}`. */
  | 'display'
  /** `/pages…` and `/s/…`: HTML (live page, index, shared page) or the display shape (events). */
  | 'live-page'
  /** `/mcp`: JSON-RPC (a missing or bad key: the v1 envelope's 401). */
  | 'mcp'
  /** `/health`, `/ready`, `/docs…`, and anything unknown (404 envelope). */
  | 'other'

/** Who the request claims to be. */
export type AuthKind = 'key' | 'mobile-session' | 'web-session' | 'body-key' | 'none'

export interface QueryParameter {
  name: string
  schema: JsonSchema
  required: boolean
}

export interface Operation {
  method: string
  /** `/api/v1/teams/{teamId}` */
  template: string
  pathParams: string[]
  query: QueryParameter[]
  /** JSON Schema of the body, when the operation takes one. */
  body?: JsonSchema
  /** Statuses the OpenAPI document lists (undefined: not in the document). */
  documented?: Set<number>
  family: Family
  auth: AuthKind
  /** Removes what its path names: never sent with every id real. */
  destructive: boolean
  /** Ends the session it is sent with: sent with a fresh one, never the world's. */
  endsSession?: boolean
  /** The natural body type: JSON, or a form (account pages). */
  form?: boolean
  /** The route answers every method (`.all()`), so no method makes it unknown. */
  anyMethod?: boolean
}

/** The family of a path: it decides the shape of every answer. */
function familyOf(template: string): Family {
  if (template.startsWith('/api/v1/')) return 'v1'
  if (template.startsWith('/account/api/')) return 'account-api'
  if (template.startsWith('/account')) return 'account-page'
  if (/^\/api\/(component|message|devices|pages)(\/|$)/.test(template)) return 'display'
  if (template.startsWith('/pages/')) return 'live-page'
  if (template === '/mcp') return 'mcp'
  return 'other'
}

function authOf(template: string, family: Family): AuthKind {
  if (family === 'v1' || family === 'mcp') return 'key'
  if (template === '/account/api/sessions' || template === '/account/sign-in') return 'none'
  if (template === '/api/component' || template === '/api/message') return 'body-key'
  if (family === 'account-api' || family === 'display') return 'mobile-session'
  if (family === 'account-page' || family === 'live-page') return 'web-session'
  return 'none'
}

const paramsOf = (template: string) => [...template.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!)
const strip = (schema: unknown): JsonSchema => JSON.parse(JSON.stringify(schema))

/** Bodies of operations the document lists without one. */
const BODY_OVERRIDES: Record<string, JsonSchema> = {
  'POST /account/api/keys': strip(ApiKeyInput),
}

/** Every operation of the OpenAPI document. */
export function operationsFromOpenApi(document: any): Operation[] {
  const operations: Operation[] = []
  for (const [template, item] of Object.entries<any>(document.paths ?? {}))
    for (const [method, operation] of Object.entries<any>(item)) {
      if (!operation || typeof operation !== 'object' || !operation.responses) continue
      const upper = method.toUpperCase()
      const parameters: any[] = operation.parameters ?? []
      const family = familyOf(template)
      operations.push({
        method: upper,
        template,
        pathParams: paramsOf(template),
        query: parameters.filter((parameter) => parameter.in === 'query').map((parameter) => ({ name: parameter.name, schema: parameter.schema ?? {}, required: Boolean(parameter.required) })),
        body: operation.requestBody?.content?.['application/json']?.schema ?? BODY_OVERRIDES[`${upper} ${template}`],
        documented: new Set(Object.keys(operation.responses).map(Number)),
        family,
        auth: authOf(template, family),
        destructive: upper === 'DELETE',
        endsSession: `${upper} ${template}` === 'DELETE /account/api/sessions/current',
      })
    }
  return operations
}

const string = (extra: JsonSchema = {}) => ({ type: 'string', ...extra })
const object = (properties: Record<string, JsonSchema>, required = Object.keys(properties)) => ({ type: 'object', properties, required, additionalProperties: false })

/** The routes the document hides, from their models and docs/. */
export function hiddenOperations(): Operation[] {
  const hidden = (operation: Omit<Operation, 'pathParams' | 'query' | 'destructive'> & Partial<Pick<Operation, 'query' | 'destructive'>>): Operation => ({
    pathParams: paramsOf(operation.template),
    query: [],
    destructive: operation.method === 'DELETE',
    ...operation,
  })
  const componentData = { anyOf: Object.values(ComponentData).map(strip) }
  return [
    hidden({
      method: 'POST',
      template: '/api/component',
      family: 'display',
      auth: 'body-key',
      body: object({ componentId: string(), apiKey: string(), timestamp: { type: 'number', minimum: 0 }, data: componentData }),
    }),
    hidden({
      method: 'POST',
      template: '/api/message',
      family: 'display',
      auth: 'body-key',
      body: object({ apiKey: string(), pageName: string(), message: string({ minLength: 1, maxLength: 4000 }) }),
    }),
    hidden({
      method: 'POST',
      template: '/api/devices',
      family: 'display',
      auth: 'mobile-session',
      body: object({ token: string({ pattern: '^[\\x21-\\x7e]{1,64}$' }), platform: { anyOf: [{ const: 'android' }, { const: 'ios' }, { const: 'web' }] } }),
    }),
    hidden({ method: 'DELETE', template: '/api/devices/{token}', family: 'display', auth: 'mobile-session' }),
    hidden({ method: 'GET', template: '/api/pages/{pageName}', family: 'display', auth: 'mobile-session' }),
    hidden({ method: 'GET', template: '/pages/{pageName}', family: 'live-page', auth: 'web-session' }),
    hidden({ method: 'GET', template: '/pages/{pageName}/events', family: 'live-page', auth: 'web-session' }),
    hidden({ method: 'GET', template: '/pages/assets/live.css', family: 'live-page', auth: 'none' }),
    hidden({ method: 'GET', template: '/pages/assets/live.js', family: 'live-page', auth: 'none' }),
    hidden({ method: 'GET', template: '/pages', family: 'live-page', auth: 'web-session' }),
    hidden({ method: 'GET', template: '/s/{token}', family: 'live-page', auth: 'none' }),
    hidden({ method: 'GET', template: '/s/{token}/events', family: 'live-page', auth: 'none' }),
    hidden({ method: 'POST', template: '/mcp', family: 'mcp', auth: 'key' }),
    hidden({ method: 'GET', template: '/mcp', family: 'mcp', auth: 'key', anyMethod: true }),
    hidden({ method: 'DELETE', template: '/mcp', family: 'mcp', auth: 'key', destructive: false, anyMethod: true }),
    hidden({ method: 'GET', template: '/account', family: 'account-page', auth: 'web-session' }),
    hidden({ method: 'GET', template: '/account/sign-in', family: 'account-page', auth: 'web-session', query: [{ name: 'next', schema: string(), required: false }] }),
    hidden({
      method: 'POST',
      template: '/account/sign-in',
      family: 'account-page',
      auth: 'none',
      form: true,
      body: object({ csrf: string(), email: string(), password: string(), next: string() }, ['csrf', 'email', 'password']),
    }),
    hidden({ method: 'POST', template: '/account/sign-out', family: 'account-page', auth: 'web-session', form: true, body: object({ csrf: string() }), endsSession: true }),
    hidden({ method: 'GET', template: '/account/keys', family: 'account-page', auth: 'web-session' }),
    hidden({
      method: 'POST',
      template: '/account/keys',
      family: 'account-page',
      auth: 'web-session',
      form: true,
      body: object({ csrf: string(), name: string({ minLength: 1, maxLength: 100 }), scopes: { type: 'array', items: string() }, expires: string({ format: 'calendar-date' }) }, ['csrf', 'name']),
    }),
    hidden({ method: 'POST', template: '/account/keys/{keyId}/revoke', family: 'account-page', auth: 'web-session', form: true, body: object({ csrf: string() }), destructive: true }),
    hidden({ method: 'GET', template: '/account/display', family: 'account-page', auth: 'web-session' }),
    hidden({ method: 'POST', template: '/account/display/rotate', family: 'account-page', auth: 'web-session', form: true, body: object({ csrf: string() }) }),
    hidden({ method: 'GET', template: '/account/assets/account.css', family: 'account-page', auth: 'none' }),
    hidden({
      method: 'GET',
      template: '/account/people',
      family: 'account-page',
      auth: 'web-session',
      query: [{ name: 'status', schema: { anyOf: [{ const: 'active' }, { const: 'deactivated' }, { const: 'invited' }] }, required: false }, { name: 'q', schema: string({ maxLength: 100 }), required: false }, { name: 'cursor', schema: string(), required: false }],
    }),
    hidden({
      method: 'POST',
      template: '/account/people',
      family: 'account-page',
      auth: 'web-session',
      form: true,
      body: object({ csrf: string(), email: string({ format: 'email' }), username: string(), displayName: string(), role: { anyOf: [{ const: 'member' }, { const: 'administrator' }] } }, ['csrf', 'email']),
    }),
    // Deactivating or demoting the world's users would change every later answer: never with a real id.
    hidden({
      method: 'POST',
      template: '/account/people/{userId}',
      family: 'account-page',
      auth: 'web-session',
      form: true,
      body: object({ csrf: string(), role: string(), status: string(), list: string(), q: string() }, ['csrf']),
      destructive: true,
    }),
    hidden({ method: 'POST', template: '/account/people/{userId}/invite', family: 'account-page', auth: 'web-session', form: true, body: object({ csrf: string(), list: string(), q: string() }, ['csrf']) }),
    hidden({ method: 'GET', template: '/account/invite/{token}', family: 'account-page', auth: 'none' }),
    hidden({ method: 'POST', template: '/account/invite/{token}', family: 'account-page', auth: 'none', form: true, body: object({ csrf: string(), password: string({ minLength: 8 }), confirm: string({ minLength: 8 }) }) }),
    // The same for the API's twin (the document lists it, with its body: only marked here).
    hidden({ method: 'PATCH', template: '/api/v1/users/{userId}', family: 'v1', auth: 'key', destructive: true }),
    hidden({ method: 'GET', template: '/docs', family: 'other', auth: 'none' }),
    hidden({ method: 'GET', template: '/docs/json', family: 'other', auth: 'none' }),
    // The landing page and the favicon (a path such as /%2e%2e or /pages/%2e%2e normalises to /).
    hidden({ method: 'GET', template: '/', family: 'other', auth: 'none' }),
    hidden({ method: 'GET', template: '/favicon.ico', family: 'other', auth: 'none' }),
    hidden({ method: 'GET', template: '/{unknown}', family: 'other', auth: 'key' }),
    hidden({ method: 'POST', template: '/api/v1/{unknown}', family: 'v1', auth: 'key', body: { type: 'object' } }),
    hidden({ method: 'GET', template: '/api/v1/teams/{teamId}/{unknown}', family: 'v1', auth: 'key' }),
  ]
}

/**
 * Every operation to fuzz: the document's, and the hidden ones it lacks. A hidden route the
 * document does list keeps the hand-written body (it knows the fixture pools) and gains the
 * document's statuses.
 */
export function catalog(document: any): Operation[] {
  const documented = operationsFromOpenApi(document)
  const byKey = new Map(documented.map((op) => [`${op.method} ${op.template}`, op]))
  const extra: Operation[] = []
  for (const op of hiddenOperations()) {
    const twin = byKey.get(`${op.method} ${op.template}`)
    if (twin) Object.assign(twin, { ...op, documented: twin.documented, query: twin.query.length ? twin.query : op.query })
    else extra.push(op)
  }
  return [...documented, ...extra]
}
