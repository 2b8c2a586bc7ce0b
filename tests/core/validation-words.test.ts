/**
 * Every validation message is in the service's own words: each request body schema of the OpenAPI
 * document is walked and refused in every way it can fail (missing, wrong type, too short or long,
 * off its pattern, format or list, out of range, unknown field), as are MCP tool inputs and
 * configuration; no answer repeats the validator's phrasing, and a secret setting's value never
 * appears in a configuration error.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Type } from '@sinclair/typebox'
import { loadConfig } from '../../src/config'
import { validate, ValidationFailure } from '../../src/validate'
import { registry } from '../../plugins'
import { startTestService, type TestService } from '../helpers/service'

/** The validator's own phrasing (TypeBox, Ajv), or a regular expression, which no message may carry. */
const RAW = /Expected|Unexpected property|greater or equal|less or equal|union value|required property|must match pattern|must NOT|\^|\$$|\{\d+(,\d*)?\}/

type Json = Record<string, any>

let api: TestService
let key: string
let document: Json
/** Path parameter → an existing resource of the fixture (any other: a well-formed unknown id). */
const ids: Record<string, string> = {}

beforeAll(async () => {
  api = await startTestService()
  const organization = await api.createOrganization()
  const admin = await api.createUser(organization, 'administrator')
  key = (await api.createKey(admin.id, api.service.core.scopes.map((scope) => scope.name))).secret
  const create = async (path: string, body: unknown) => (await api.request('POST', path, { key, body, unchecked: true })).body.data
  ids.projectId = (await create('/api/v1/projects', { name: 'Words' })).id
  ids.workItemId = (await create(`/api/v1/projects/${ids.projectId}/work-items`, { title: 'One' })).id
  ids.teamId = (await create('/api/v1/teams', { name: 'Words team' })).id
  ids.pageId = (await create('/api/v1/pages', { name: `words-${Date.now().toString(36)}` })).id
  ids.userId = admin.id
  document = (await api.request('GET', '/docs/json', { unchecked: true })).body
})
afterAll(() => api.stop())

const resolve = (schema: Json): Json => (schema?.$ref ? resolve(document.components.schemas[schema.$ref.split('/').pop()]) : schema)

/** Values of other JSON types than the schema accepts (a string where a number goes, …). */
function wrongTypes(schema: Json): unknown[] {
  const types = new Set<string>()
  const collect = (member: Json) => {
    member = resolve(member)
    if (member.anyOf || member.oneOf) for (const alternative of member.anyOf ?? member.oneOf) collect(alternative)
    else if ('const' in member || member.enum) types.add('string')
    else for (const type of [member.type].flat()) if (type) types.add(type === 'integer' ? 'number' : type)
  }
  collect(schema)
  const samples: Record<string, unknown> = { string: 'text', number: 12.5, boolean: true, array: [1], object: { a: 1 }, null: null }
  return Object.entries(samples).filter(([type]) => !types.has(type) && !(type === 'number' && types.has('integer'))).map(([, value]) => value)
}

/** Invalid values of one property, each named for the rule it breaks. */
function invalidValues(schema: Json): Array<[string, unknown]> {
  schema = resolve(schema)
  const cases: Array<[string, unknown]> = wrongTypes(schema).map((value) => [`a ${value === null ? 'null' : Array.isArray(value) ? 'list' : typeof value}`, value])
  const members = (schema.anyOf ?? [schema]).map(resolve)
  for (const member of members) {
    if (member.maxLength !== undefined) cases.push(['too long', 'a'.repeat(member.maxLength + 1)])
    if (member.minLength > 0) cases.push(['too short', ''])
    if (member.pattern) cases.push(['off its pattern', ' !'])
    if (member.format) cases.push([`not a ${member.format}`, 'not-valid \u0000'])
    if ('const' in member || member.enum) cases.push(['not one of the values', 'not-one-of-them'])
    if (member.minimum !== undefined) cases.push(['below its minimum', member.minimum - 1])
    if (member.maximum !== undefined) cases.push(['above its maximum', member.maximum + 1])
    if (member.maxItems !== undefined && member.maxItems < 2000) cases.push(['too many items', Array.from({ length: member.maxItems + 1 }, () => 'x')])
    if (member.minItems > 0) cases.push(['too few items', []])
    if (member.type === 'array' && member.items) for (const [rule, value] of invalidValues(member.items).slice(0, 3)) cases.push([`an item ${rule}`, [value]])
  }
  return cases
}

/** Every JSON request body of the document: method, path (parameters filled) and schema. */
function bodies(): Array<{ method: string; path: string; schema: Json }> {
  const found = []
  for (const [template, operations] of Object.entries<Json>(document.paths)) {
    for (const [method, operation] of Object.entries<Json>(operations)) {
      const schema = operation?.requestBody?.content?.['application/json']?.schema
      if (!schema || !template.startsWith('/api/v1/')) continue
      const path = template.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? '01a20000-0000-7000-8000-00000000000f')
      found.push({ method: method.toUpperCase(), path, schema: resolve(schema) })
    }
  }
  return found
}

describe('REST v1 request bodies', () => {
  test('every failure kind of every body schema is 400 in the service words', async () => {
    const problems: string[] = []
    let requests = 0
    for (const { method, path, schema } of bodies()) {
      if (schema.type !== 'object' || !schema.properties) continue
      const cases: Array<[string, unknown]> = [['an empty body', {}]]
      if (schema.additionalProperties === false) cases.push(['an unknown field', { notAField: 1 }])
      for (const [property, propertySchema] of Object.entries<Json>(schema.properties))
        for (const [rule, value] of invalidValues(propertySchema)) cases.push([`${property} ${rule}`, { [property]: value }])
      for (const [rule, body] of cases) {
        const response = await api.request(method, path, { key, body, unchecked: true })
        requests++
        const where = `${method} ${path} with ${rule}`
        // An empty body is valid where nothing is required (a PATCH of optional fields may still refuse it).
        if (response.status < 400 && rule === 'an empty body') continue
        if (response.status !== 400) {
          problems.push(`${where}: ${response.status} ${response.text.slice(0, 200)}`)
          continue
        }
        for (const item of response.body.errors) if (RAW.test(item.message)) problems.push(`${where}: ${item.message}`)
        // A missing required field says so, never what format it would have had.
        if (rule === 'an empty body')
          for (const required of schema.required ?? []) {
            const item = response.body.errors.find((error: Json) => error.field === required)
            if (item && item.message !== `Missing field "${required}": it is required.`) problems.push(`${where}: ${item.message}`)
          }
      }
    }
    expect(requests).toBeGreaterThan(200)
    expect(problems).toEqual([])
  }, 120_000)

  test('a relationship without its source is refused as missing, not as a malformed UUID', async () => {
    const response = await api.request('POST', `/api/v1/projects/${ids.projectId}/relationships`, { key, body: { targetWorkItemId: ids.workItemId, type: 'blocks' } })
    expect(response.status).toBe(400)
    expect(response.body.errors).toEqual([{ code: 'BAD_REQUEST', field: 'sourceWorkItemId', message: 'Missing field "sourceWorkItemId": it is required.' }])
  })

  test('messages say what is allowed', async () => {
    const errorsOf = async (path: string, body: unknown) => (await api.request('POST', path, { key, body })).body.errors.map((error: Json) => error.message)
    expect(await errorsOf('/api/v1/teams', { name: '' })).toEqual(['Invalid field "name": must not be empty.'])
    expect(await errorsOf('/api/v1/teams', { name: 5 })).toEqual(['Invalid field "name": must be a string of 1 to 200 characters.'])
    expect(await errorsOf(`/api/v1/projects/${ids.projectId}/relationships`, { sourceWorkItemId: 'x', targetWorkItemId: ids.workItemId, type: 'nope' })).toEqual([
      expect.stringMatching(/^Invalid field "sourceWorkItemId": must be a UUID \(e\.g\. [0-9a-f-]{36}\)\.$/),
      'Invalid field "type": must be one of "blocks", "relates_to", "duplicates", "parent_of".',
    ])
  })
})

describe('MCP tool inputs', () => {
  test('every tool refuses a wrong input in the service words', () => {
    const problems: string[] = []
    for (const tool of api.service.core.tools) {
      const properties = Object.entries<Json>((tool.input as Json).properties ?? {})
      const inputs: unknown[] = [{}, { notAField: 1 }, ...properties.flatMap(([name, schema]) => invalidValues(JSON.parse(JSON.stringify(schema))).map(([, value]) => ({ [name]: value })))]
      for (const input of inputs) {
        try {
          validate(tool.input, structuredClone(input))
        } catch (error) {
          if (!(error instanceof ValidationFailure)) throw error
          for (const item of error.items) if (RAW.test(item.message)) problems.push(`${tool.name} ${JSON.stringify(input).slice(0, 80)}: ${item.message}`)
        }
      }
    }
    expect(api.service.core.tools.length).toBeGreaterThan(5)
    expect(problems).toEqual([])
  })
})

describe('configuration', () => {
  const configError = (raw: Record<string, unknown>) => {
    try {
      loadConfig(registry, { raw, env: {} })
    } catch (error) {
      return (error as Error).message
    }
    throw new Error(`accepted ${JSON.stringify(raw)}`)
  }

  test.each([
    [{ server: { accessLog: 'yes' } }, 'config server.accessLog: must be true or false (got "yes")'],
    [{ server: { port: 70000 } }, 'config server.port: must be an integer from 0 to 65535 (got 70000)'],
    [{ server: { trustProxy: 'all' } }, 'config server.trustProxy: must be true or false or an integer from 0 to 16 (got "all")'],
    [{ server: { cors: { origins: ['example.com'] } } }, 'config server.cors.origins[0]: must be in the form: scheme://host[:port], e.g. https://example.com (got "example.com")'],
    [{ server: { cors: 'everywhere' } }, 'config server.cors: must be an object (got "everywhere")'],
    [{ database: { maxConnections: 0 } }, 'config database.maxConnections: must be an integer from 1 to 1000 (got 0)'],
    [{ plugins: { enabled: 'auth' } }, 'config plugins.enabled: must be a list (got "auth")'],
  ])('%j is refused in words', (raw, message) => {
    expect(configError(raw)).toBe(message)
  })

  test('a secret setting is never repeated, whatever is wrong with it', () => {
    for (const metricsToken of ['short-secret-42', 12345678, ['secret-in-a-list-0001']]) {
      const message = configError({ server: { metricsToken } })
      expect(message).toStartWith('config server.metricsToken: must be ')
      expect(message).toEndWith('(value not shown: a secret setting)')
      expect(message).not.toContain(String(metricsToken))
      expect(message).not.toMatch(RAW)
    }
  })

  test('every plugin setting refused in words', () => {
    const problems: string[] = []
    for (const plugin of registry) {
      for (const [name, schema] of Object.entries<Json>((plugin.config as Json | undefined)?.properties ?? {})) {
        for (const [rule, value] of invalidValues(JSON.parse(JSON.stringify(schema)))) {
          let message: string
          try {
            loadConfig(registry, { raw: { [plugin.name]: { [name]: value } }, env: {} })
            continue
          } catch (error) {
            message = (error as Error).message
          }
          if (RAW.test(message.replace(/\(got .*\)$/, ''))) problems.push(`${plugin.name}.${name} ${rule}: ${message}`)
        }
      }
    }
    expect(problems).toEqual([])
  })

  test('the validator outside routes speaks the same words', () => {
    const schema = Type.Object({ size: Type.Integer({ minimum: 1 }), tags: Type.Array(Type.String(), { maxItems: 1 }) }, { additionalProperties: false })
    let failure: ValidationFailure | undefined
    try {
      validate(schema, { size: 0, tags: ['a', 'b'], other: true })
    } catch (error) {
      failure = error as ValidationFailure
    }
    expect(failure!.items.map((item) => item.message).sort()).toEqual(['Invalid field "size": must be an integer of at least 1.', 'Invalid field "tags": must have at most 1 item.', 'Unknown field "other".'].sort())
  })
})
