/**
 * What a client generated from the served OpenAPI document is made of: every request body and
 * every resource an answer carries is a named schema under `components.schemas`, referenced (a
 * `WorkItem` type, not the same object spelled out per operation); unions of constants are
 * `enum`s; each API v1 operation's security names the scopes its route enforces (asked of the
 * routes themselves); and the document stays small enough to load and generate from.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ApiKeyInput } from '../../plugins/auth/model'
import { WORK_ITEM_STATUSES } from '../../plugins/work-items/api'
import { startTestService, type TestService } from '../helpers/service'

type Json = Record<string, any>

/**
 * Raised from 400 KB with the work sources' three operations (~8 KB): an operation with its
 * envelopes and references takes 2–3 KB, so the bound still catches a schema spelled out per
 * operation (tens of KB) while the API grows.
 */
const MAX_DOCUMENT_CHARACTERS = 420_000
const SCHEMA_REF = /^#\/components\/schemas\/([A-Za-z0-9._-]+)$/
const UNKNOWN_ID = '01a20000-0000-7000-8000-00000000000f'

let api: TestService
let document: Json
let ownerId: string
const operations: { method: string; path: string; operation: Json }[] = []

beforeAll(async () => {
  api = await startTestService()
  document = (await api.request('GET', '/docs/json')).body
  for (const [path, methods] of Object.entries<Json>(document.paths))
    for (const [method, operation] of Object.entries<Json>(methods)) operations.push({ method, path, operation })
  ownerId = (await api.createUser(await api.createOrganization(), 'superadministrator')).id
})
afterAll(() => api.stop())

const at = ({ method, path }: { method: string; path: string }) => `${method.toUpperCase()} ${path}`
const byId = (operationId: string) => operations.find(({ operation }) => operation.operationId === operationId)!.operation
const schemaNamed = (name: string) => document.components.schemas[name]
/** The name a `{$ref}` to components.schemas names, or undefined. */
const nameOf = (schema: Json | undefined) => (typeof schema?.$ref === 'string' ? SCHEMA_REF.exec(schema.$ref)?.[1] : undefined)
const jsonSchema = (holder: Json | undefined) => holder?.content?.['application/json']?.schema
/** The success answers with a JSON body of an operation. */
const successes = (operation: Json) => Object.entries<Json>(operation.responses).filter(([status, response]) => status.startsWith('2') && jsonSchema(response))
const isEnvelope = (schema: Json) => Boolean(schema.properties?.data && schema.properties?.errors)
/** The named schema `data` holds: itself, a page's items, or the non-null branch of a union. */
const dataName = (data: Json): string | undefined =>
  nameOf(data) ?? (data.type === 'array' ? nameOf(data.items) : nameOf((data.anyOf ?? []).find((branch: Json) => branch.type !== 'null')))
const refersToSchema = (schema: Json) => /"\$ref":"#\/components\/schemas\//.test(JSON.stringify(schema))

/** Every `{…}` in `node` (the document), each with its JSON path. */
function* objects(node: unknown, where = '#'): Generator<[Json, string]> {
  if (Array.isArray(node)) for (const [index, item] of node.entries()) yield* objects(item, `${where}/${index}`)
  else if (node && typeof node === 'object') {
    yield [node as Json, where]
    for (const [key, value] of Object.entries(node)) yield* objects(value, `${where}/${key}`)
  }
}

test(`the document stays under ${MAX_DOCUMENT_CHARACTERS / 1000} KB`, () => {
  expect(JSON.stringify(document).length).toBeLessThanOrEqual(MAX_DOCUMENT_CHARACTERS)
})

test('every $ref resolves', () => {
  const dangling: string[] = []
  for (const [node, where] of objects(document)) {
    if (typeof node.$ref !== 'string') continue
    const target = node.$ref.split('/').slice(1).reduce((current: any, key: string) => current?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], document)
    if (target === undefined) dangling.push(`${where}: ${node.$ref}`)
  }
  expect(dangling).toEqual([])
})

describe('named schemas', () => {
  test('every JSON request body is one (an import streams NDJSON or CSV text)', () => {
    const inline = operations.filter(({ operation }) => jsonSchema(operation.requestBody) && !schemaNamed(nameOf(jsonSchema(operation.requestBody)) ?? ''))
    expect(inline.map(at)).toEqual([])
    expect(operations.filter(({ operation }) => operation.requestBody).length).toBeGreaterThan(30)
  })

  test('every success answer carries one: the envelope’s `data`, or somewhere in a body of its own', () => {
    const inline: string[] = []
    for (const operation of operations)
      for (const [status, response] of successes(operation.operation)) {
        const schema = jsonSchema(response)
        const named = isEnvelope(schema) ? Boolean(schemaNamed(dataName(schema.properties.data) ?? '')) : refersToSchema(schema)
        if (!named) inline.push(`${at(operation)} ${status}`)
      }
    expect(inline).toEqual([])
  })

  test('the resources and bodies of work tracking have the names a client expects', () => {
    for (const name of ['WorkItem', 'WorkItemCreate', 'WorkItemPatch', 'Entry', 'EntryCreate', 'Project', 'ProjectCreate', 'Team', 'Error']) expect(schemaNamed(name), name).toBeObject()
    expect(nameOf(jsonSchema(byId('createWorkItem').requestBody))).toBe('WorkItemCreate')
    expect(nameOf(jsonSchema(byId('updateWorkItem').requestBody))).toBe('WorkItemPatch')
    expect(dataName(jsonSchema(byId('createWorkItem').responses['201']).properties.data)).toBe('WorkItem')
    expect(dataName(jsonSchema(byId('listWorkItems').responses['200']).properties.data)).toBe('WorkItem')
    expect(dataName(jsonSchema(byId('getEntry').responses['200']).properties.data)).toBe('Entry')
    expect(Object.keys(schemaNamed('WorkItem').properties)).toEqual(expect.arrayContaining(['id', 'title', 'status', 'priority']))
    expect(schemaNamed('WorkItemCreate').required).toEqual(['title'])
    // The error envelope and its items, which every error answer references.
    expect(schemaNamed('Error').required).toEqual(['data', 'errors', 'meta'])
    expect(schemaNamed('Error').properties.errors.items).toEqual({ $ref: '#/components/schemas/ErrorItem' })
    const notFound = document.components.responses.NotFound
    expect(jsonSchema(notFound)).toEqual({ $ref: '#/components/schemas/Error' })
    expect(byId('getWorkItem').responses['404']).toEqual({ $ref: '#/components/responses/NotFound' })
  })
})

describe('enums', () => {
  test('no union of constants is left: each is an `enum`', () => {
    const unions = [...objects(document)].filter(([node]) => Array.isArray(node.anyOf) && node.anyOf.length > 1 && node.anyOf.every((branch: Json) => 'const' in branch))
    expect(unions.map(([, where]) => where)).toEqual([])
  })

  test('a work item’s status and priority are enums', () => {
    const { status, priority } = schemaNamed('WorkItem').properties
    expect(status).toMatchObject({ type: 'string', enum: [...WORK_ITEM_STATUSES] })
    expect(priority).toMatchObject({ type: 'integer', enum: [0, 1, 2, 3, 4], description: '0 none, 1 urgent, 2 high, 3 medium, 4 low.' })
    expect(schemaNamed('WorkItemPatch').properties.priority.enum).toEqual([0, 1, 2, 3, 4])
  })
})

test('POST /account/api/keys documents its body: what the key service validates', () => {
  const body = byId('createApiKey').requestBody
  expect(body.required).toBe(true)
  const described = schemaNamed(nameOf(jsonSchema(body))!)
  // The service's own model, the descriptions and the name aside.
  const bare = (schema: unknown) => JSON.parse(JSON.stringify(schema), (key, value) => (key === 'description' || key === 'title' ? undefined : value))
  expect(bare(described)).toEqual(bare(ApiKeyInput))
})

describe('security', () => {
  const keys = new Map<string, string>()
  /** A key of the superadministrator holding exactly `scopes`. */
  const keyWith = async (scopes: readonly string[]) => {
    const name = [...scopes].sort().join(' ')
    if (!keys.has(name)) keys.set(name, (await api.createKey(ownerId, [...scopes])).secret)
    return keys.get(name)!
  }
  /** The scopes a 403 INSUFFICIENT_SCOPE names as missing (its WWW-Authenticate), or undefined for another answer. */
  const missingScopes = (response: { status: number; headers: Headers; body: any }) => {
    if (response.status !== 403 || response.body?.errors?.[0]?.code !== 'INSUFFICIENT_SCOPE') return undefined
    return (/scope="([^"]*)"/.exec(response.headers.get('www-authenticate') ?? '')?.[1] ?? '').split(' ').filter(Boolean).sort()
  }

  test('every API v1 operation names exactly the scopes its route enforces', async () => {
    const v1 = operations.filter(({ path }) => path.startsWith('/api/v1/'))
    expect(v1.length).toBeGreaterThan(50)
    const documented = (operation: Json): string[] => [...(operation.security.find((entry: Json) => 'bearerAuth' in entry)?.bearerAuth ?? ['(no bearerAuth)'])].sort()
    const noScopes = await keyWith([])
    for (const { operation } of v1) await keyWith(documented(operation))
    expect(v1.filter(({ operation }) => documented(operation).length > 0).length).toBeGreaterThan(50)
    const problems = await Promise.all(
      v1.map(async ({ method, path, operation }) => {
        const scopes = documented(operation)
        // Scopes are checked before the input and before anything is looked up: ids that exist are not needed.
        const url = path.replace(/\{\w+\}/g, UNKNOWN_ID)
        const body = operation.requestBody ? {} : undefined
        const without = missingScopes(await api.request(method.toUpperCase(), url, { key: noScopes, body }))
        const withThem = missingScopes(await api.request(method.toUpperCase(), url, { key: await keyWith(scopes), body }))
        if (JSON.stringify(without ?? []) !== JSON.stringify(scopes)) return `${at({ method, path })}: documents [${scopes}], a key without scopes lacks [${without ?? []}]`
        if (withThem) return `${at({ method, path })}: a key holding [${scopes}] still lacks [${withThem}]`
        return undefined
      }),
    )
    expect(problems.filter(Boolean)).toEqual([])
  }, 120_000)
})
