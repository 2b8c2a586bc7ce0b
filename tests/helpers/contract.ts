/**
 * The response contract: every answer a test receives through `api.request()` is checked against
 * the OpenAPI document the service serves at `/docs/json`, so the document and the code cannot
 * drift apart. The operation is found by method and path template, the response by status (then
 * `NXX`, then `default`); a JSON body is validated against its schema with Ajv, a text body's
 * content type (and its schema, if any) is checked, required headers must be present. An
 * undocumented status of a documented operation is a failure; a path the document does not
 * describe must be on the allow-list below or answer 404 in the error envelope.
 */
import { FormatRegistry } from '@sinclair/typebox'
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import { ErrorEnvelope } from '../../src/http/envelope'
import '../../src/http/models' // registers the service's own formats (calendar-date) with TypeBox

/** Paths left out of the document on purpose: their answers are not checked. Keep it short. */
const UNDOCUMENTED: readonly { pattern: RegExp; reason: string }[] = [
  { pattern: /^\/docs(?:\/|$)/, reason: 'Swagger UI, its static assets and the document itself' },
  { pattern: /^\/mcp$/, reason: 'JSON-RPC over MCP Streamable HTTP: its contract is the MCP specification (tests/plugins/mcp.test.ts)' },
  { pattern: /^\/account(?:$|\/(?!api(?:\/|$)))/, reason: 'the server-rendered account pages and their form posts (their JSON twin /account/api is documented)' },
  { pattern: /^\/push\//, reason: "the live page's Notify me: its script, service worker and the subscription its button posts with the page's cookie (the JSON twin, POST /api/devices with platform webpush, is documented)" },
  { pattern: /^\/pages\//, reason: 'live dashboards: the HTML page, its server-sent events and its CSS/JS (the JSON twin /api/pages/{pageName} is documented)' },
]

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const
/** Keywords of an OpenAPI document (and OpenAPI-only annotations in schemas) Ajv must not reject. */
const OPENAPI_KEYWORDS = ['openapi', 'info', 'jsonSchemaDialect', 'servers', 'paths', 'webhooks', 'components', 'security', 'tags', 'externalDocs', 'example', 'xml', 'discriminator']
const DOCUMENT_ID = 'openapi'

type Json = Record<string, any>

export interface ObservedResponse {
  status: number
  headers: Headers
  text: string
}

interface Operation {
  method: string
  template: string
  segments: (string | null)[] // null: a path parameter
  literals: number
  responses: Json
}

export class ContractViolation extends Error {
  override name = 'ContractViolation'
}

/** JSON pointer segment, percent-encoded for use in a `$ref` fragment. */
const pointer = (...parts: string[]) => parts.map((part) => encodeURIComponent(part.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')

const mediaOf = (headers: Headers) => (headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
const isJsonMedia = (media: string) => media === 'application/json' || media.endsWith('+json')
function parseJson(text: string, media: string, fail: (problem: string) => never): unknown {
  if (!isJsonMedia(media)) fail(`expected JSON, got content type "${media}"`)
  try {
    return JSON.parse(text)
  } catch {
    return fail('the body is not valid JSON')
  }
}
const clip = (text: string, length = 600) => (text.length > length ? `${text.slice(0, length)}…` : text)

function newAjv(): Ajv2020 {
  // strictSchema stays on (an unknown keyword or format in the document fails loudly); the type
  // and tuple lints only warn about style the generator cannot change. The document itself is
  // validated by tests/plugins/docs.test.ts, so schemas are not checked against the meta-schema
  // here (compiling it would cost a quarter second per document).
  const ajv = new Ajv2020({ strictTypes: false, strictTuples: false, strictRequired: false, validateSchema: false })
  addFormats(ajv)
  ajv.addVocabulary(OPENAPI_KEYWORDS)
  // Formats Elysia and the service register with TypeBox (calendar-date, numeric, …), checked the same way.
  for (const [name, check] of FormatRegistry.Entries()) if (!ajv.formats[name]) ajv.addFormat(name, { type: 'string', validate: check })
  return ajv
}

/** One OpenAPI document, compiled lazily: each response schema once, on first use. */
export class Contract {
  private readonly ajv = newAjv()
  private readonly operations: Operation[] = []
  private readonly validators = new Map<string, ValidateFunction>()
  private unknownRoute?: ValidateFunction

  constructor(private readonly document: Json) {
    this.ajv.addSchema(document, DOCUMENT_ID)
    for (const [template, item] of Object.entries<Json>(document.paths ?? {})) {
      const segments = template.split('/').map((segment) => (/^\{[^}]+\}$/.test(segment) ? null : segment))
      for (const method of METHODS) {
        const operation = item[method]
        if (!operation) continue
        this.operations.push({ method, template, segments, literals: segments.filter((segment) => segment !== null).length, responses: operation.responses ?? {} })
      }
    }
    // A literal segment wins over a parameter (`/sessions/current` before `/sessions/{id}`).
    this.operations.sort((a, b) => b.literals - a.literals)
  }

  /** Throws a ContractViolation naming method, path, status and the problem. */
  check(method: string, url: string, response: ObservedResponse): void {
    const path = url.split(/[?#]/)[0]!.replace(/(.)\/+$/, '$1')
    if (UNDOCUMENTED.some((entry) => entry.pattern.test(path))) return
    const fail = (problem: string): never => {
      throw new ContractViolation(`Response contract: ${method} ${url} → ${response.status}: ${problem}\n  body: ${clip(response.text) || '(empty)'}`)
    }
    const media = mediaOf(response.headers)
    const lower = method.toLowerCase()
    const operation = this.find(lower, path) ?? (lower === 'head' ? this.find('get', path) : undefined)
    if (!operation) {
      // Not in the document: an unknown route (or a disabled plugin's), 404 in the error envelope;
      // a documented path under another method, 405 with `Allow` naming the documented ones.
      const served = METHODS.filter((other) => this.find(other, path)).map((other) => other.toUpperCase())
      if (served.length) {
        if (response.status !== 405) fail(`${path} is documented for ${served.join(', ')} only: another method must answer 405`)
        const allow = (response.headers.get('allow') ?? '').split(', ')
        const unlisted = served.filter((other) => !allow.includes(other))
        if (unlisted.length) fail(`the 405's Allow (${response.headers.get('allow')}) leaves out ${unlisted.join(', ')}`)
      } else if (response.status === 405) {
        // A route the document hides (pages, the account area's forms) under another method.
        if (!response.headers.get('allow')) fail('a 405 must say in Allow which methods the path serves')
      } else if (response.status !== 404) fail('this route is not in the OpenAPI document (an unknown route must answer 404)')
      this.unknownRoute ??= this.ajv.compile(ErrorEnvelope)
      if (!this.unknownRoute(parseJson(response.text, media, fail))) fail(`an unknown route must answer the error envelope: ${this.ajv.errorsText(this.unknownRoute.errors, { dataVar: 'body' })}`)
      return
    }
    const at = `${operation.method.toUpperCase()} ${operation.template}`
    const status = String(response.status)
    const key = status in operation.responses ? status : `${status[0]}XX` in operation.responses ? `${status[0]}XX` : 'default'
    const documented = operation.responses[key] && this.responseAt(operation, key).response
    if (!documented) fail(`status ${status} is not documented for ${at} (documented: ${Object.keys(operation.responses).join(', ')})`)

    for (const [name, header] of Object.entries<Json>(documented.headers ?? {}))
      if (header.required && !response.headers.has(name)) fail(`${at} ${key} documents the required header ${name}, which is missing`)

    const content: Json = documented.content ?? {}
    if (lower === 'head') return
    if (Object.keys(content).length === 0) {
      if (response.text !== '') fail(`${at} ${key} documents no body, but one came`)
      return
    }
    const mediaKey = media in content ? media : `${media.split('/')[0]}/*` in content ? `${media.split('/')[0]}/*` : '*/*' in content ? '*/*' : undefined
    if (!mediaKey) fail(`${at} ${key} documents ${Object.keys(content).join(', ')}, not "${media || 'no content type'}"`)
    const schema = content[mediaKey!].schema
    if (!schema) return
    const validate = this.validator(operation, key, mediaKey!)
    const value = isJsonMedia(media) ? parseJson(response.text, media, fail) : response.text
    if (!validate(value)) fail(`does not match ${at} ${key} ${mediaKey}: ${this.ajv.errorsText(validate.errors, { dataVar: 'body' })}`)
  }

  private find(method: string, path: string): Operation | undefined {
    const segments = path.split('/')
    return this.operations.find(
      (operation) =>
        operation.method === method &&
        operation.segments.length === segments.length &&
        operation.segments.every((segment, index) => (segment === null ? segments[index] !== '' : segment === segments[index])),
    )
  }

  /** A response, or the one its `$ref` names (`#/components/responses/…`), and its JSON pointer. */
  private responseAt(operation: Operation, status: string): { response: Json; at: string } {
    const response = operation.responses[status]
    if (typeof response?.$ref !== 'string') return { response, at: pointer('paths', operation.template, operation.method, 'responses', status) }
    const at = response.$ref.replace(/^#\//, '')
    const target = at.split('/').reduce((node: Json | undefined, part: string) => node?.[decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~')], this.document)
    return { response: target, at }
  }

  private validator(operation: Operation, status: string, media: string): ValidateFunction {
    const id = `${operation.method} ${operation.template} ${status} ${media}`
    let validate = this.validators.get(id)
    if (!validate) {
      const ref = `${DOCUMENT_ID}#/${this.responseAt(operation, status).at}/${pointer('content', media, 'schema')}`
      validate = this.ajv.compile({ $ref: ref })
      this.validators.set(id, validate)
    }
    return validate
  }
}

/** Contracts by registry and set of mounted plugins: the document depends on nothing else. */
const contracts = new WeakMap<object, Map<string, Promise<Contract>>>()

/**
 * The contract of a service mounting `plugins` from `registry`, loading its document with `load`
 * the first time this set of plugins is seen.
 */
export function contractFor(registry: object, plugins: readonly string[], load: () => Promise<Json>): Promise<Contract> {
  let byPlugins = contracts.get(registry)
  if (!byPlugins) contracts.set(registry, (byPlugins = new Map()))
  const key = [...plugins].sort().join(',')
  let contract = byPlugins.get(key)
  if (!contract) {
    contract = load().then((document) => new Contract(document))
    byPlugins.set(key, contract)
    contract.catch(() => byPlugins.delete(key))
  }
  return contract
}

/** Reads `/docs/json` from a service's own handler (not through the checked request helper). */
export async function fetchDocument(fetch: (request: Request) => Promise<Response>): Promise<Json> {
  const response = await fetch(new Request('http://localhost/docs/json'))
  if (response.status !== 200) throw new Error(`GET /docs/json answered ${response.status}`)
  return (await response.json()) as Json
}
