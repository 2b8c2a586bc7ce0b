/**
 * Names the document's schemas, so a generated client has a `WorkItem` type rather than the same
 * object spelled out in every operation: each request body and each resource a success answer
 * carries is written once under `components.schemas` and referenced. A schema with a TypeBox
 * `title` is named by it (a title naming different schemas: the one most operations use); any
 * other is named from its operation (`createWorkItem`'s body is `WorkItemCreate`, its PATCH
 * body `WorkItemPatch`). Unions of constants become `enum`s, the form every generator reads.
 */
import { pascal, singular } from './operation-ids'

type Json = Record<string, any>

/** The keywords whose values are data, not schemas: never walked for titles or unions. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'example', 'examples'])
const COMPONENT_NAME = /^[A-Za-z0-9._-]+$/
/** `verb + Resource`, and a door's qualifier after it (`getWorkItemByKey` reads a `WorkItem`). */
const RESOURCE_VERBS = /^(list|get|create|update|replace)([A-Z]\w*?)(?:By[A-Z]\w*)?$/

const refTo = (name: string) => ({ $ref: `#/components/schemas/${name}` })
const isObject = (node: unknown): node is Json => typeof node === 'object' && node !== null && !Array.isArray(node)
/** A schema worth a name: an object or a union, not a reference, a scalar or `null`. */
const isNameable = (schema: unknown): schema is Json =>
  isObject(schema) && !schema.$ref && (schema.type === 'object' || Array.isArray(schema.anyOf) || Array.isArray(schema.oneOf) || Array.isArray(schema.allOf))
const isTitled = (node: Json) => typeof node.title === 'string' && COMPONENT_NAME.test(node.title) && isNameable(node)
/** The v1 envelope (`{data, errors, meta}`), whose `data` is what is named. */
export const isEnvelope = (schema: unknown) => isObject(schema) && isObject(schema.properties?.data) && isObject(schema.properties?.errors)

/** `components.schemas` being filled: a name is given to one schema only. */
export class SchemaNames {
  constructor(readonly schemas: Json) {}

  /** A reference to `schema` under the first of `candidates` free for it (or holding it already), else a numbered one. */
  refer(candidates: readonly string[], schema: Json): Json {
    const text = JSON.stringify(schema)
    const last = candidates.at(-1)!
    for (const name of [...candidates, ...Array.from({ length: 98 }, (_, index) => `${last}${index + 2}`)]) {
      const existing = this.schemas[name]
      if (existing && JSON.stringify(existing) !== text) continue
      this.schemas[name] ??= schema
      return refTo(name)
    }
    return schema
  }
}

/** Walks `node`'s schemas, leaving the data keywords alone. */
function mapSchemas(node: unknown, visit: (node: Json) => Json): unknown {
  if (Array.isArray(node)) return node.map((item) => mapSchemas(item, visit))
  if (!isObject(node)) return node
  const result: Json = {}
  for (const [key, value] of Object.entries(node)) result[key] = DATA_KEYWORDS.has(key) ? value : mapSchemas(value, visit)
  return visit(result)
}

/** `anyOf` of constants of one type (TypeBox's union of literals) as `{type, enum}`. */
function asEnum(schema: Json): Json {
  const branches = schema.anyOf
  if (!Array.isArray(branches) || branches.length < 2) return schema
  const type = branches[0]?.type
  const plain = (branch: Json) => isObject(branch) && 'const' in branch && branch.type === type && Object.keys(branch).every((key) => key === 'const' || key === 'type')
  if (!['string', 'number', 'integer'].includes(type) || !branches.every(plain)) return schema
  const { anyOf: _, ...outer } = schema
  const values = branches.map((branch: Json) => branch.const)
  return { ...outer, type: type === 'number' && values.every(Number.isInteger) ? 'integer' : type, enum: values }
}

/** The JSON schemas of an operation that describe a resource: its request body and its success answers. */
function* schemaSlots(operation: Json): Generator<{ get: () => unknown; set: (schema: Json) => void }> {
  const body = operation.requestBody?.content?.['application/json']
  if (body?.schema) yield { get: () => body.schema, set: (schema) => (body.schema = schema) }
  for (const [status, response] of Object.entries<Json>(operation.responses ?? {})) {
    const json = response?.content?.['application/json']
    if (status.startsWith('2') && json?.schema) yield { get: () => json.schema, set: (schema) => (json.schema = schema) }
  }
}

const eachOperation = function* (paths: Json): Generator<[string, Json]> {
  for (const operations of Object.values<Json>(paths)) for (const [method, operation] of Object.entries<Json>(operations)) yield [method, operation]
}

/** Every union of constants in the operations' schemas (bodies, answers, parameters) as an `enum`. */
export function enumerate(paths: Json): void {
  for (const [, operation] of eachOperation(paths)) {
    const body = operation.requestBody?.content?.['application/json']
    if (body?.schema) body.schema = mapSchemas(body.schema, asEnum)
    for (const response of Object.values<Json>(operation.responses ?? {}))
      for (const media of Object.values<Json>(response?.content ?? {})) if (media.schema) media.schema = mapSchemas(media.schema, asEnum)
    for (const parameter of operation.parameters ?? []) if (parameter.schema) parameter.schema = mapSchemas(parameter.schema, asEnum)
  }
}

/** Hoists titled schemas: per title, the variant the most places use (the first of equals). */
function nameTitled(paths: Json, names: SchemaNames): void {
  const variants = new Map<string, Map<string, number>>()
  const count = (node: Json) => {
    if (isTitled(node)) {
      const byText = variants.get(node.title) ?? new Map<string, number>()
      const text = JSON.stringify(node)
      byText.set(text, (byText.get(text) ?? 0) + 1)
      variants.set(node.title, byText)
    }
    return node
  }
  for (const [, operation] of eachOperation(paths)) for (const slot of schemaSlots(operation)) mapSchemas(slot.get(), count)
  const chosen = new Map<string, string>()
  for (const [title, byText] of variants) chosen.set(title, [...byText].reduce((best, entry) => (entry[1] > best[1] ? entry : best))[0])

  // Post-order: a schema's titled parts are named before it, but it is recognised by its text as generated.
  const hoist = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(hoist)
    if (!isObject(node)) return node
    const named = isTitled(node) && chosen.get(node.title) === JSON.stringify(node)
    const result: Json = {}
    for (const [key, value] of Object.entries(node)) result[key] = DATA_KEYWORDS.has(key) ? value : hoist(value)
    return named ? names.refer([node.title], result) : result
  }
  for (const [, operation] of eachOperation(paths)) for (const slot of schemaSlots(operation)) slot.set(hoist(slot.get()) as Json)
}

/** `[verb, Resource]` of a derived operation id (`listWorkItems` → `['list', 'WorkItem']`). */
function resourceOf(operationId: string): [string, string] | undefined {
  const match = RESOURCE_VERBS.exec(operationId)
  if (!match) return undefined
  return [match[1]!, match[1] === 'list' ? singular(match[2]!) : match[2]!]
}

/** Names for a request body: `WorkItemCreate`, `WorkItemPatch`, `…Replace`, else `AddTeamMemberRequest`. */
function bodyNames(method: string, operationId: string): string[] {
  const [verb, resource] = resourceOf(operationId) ?? []
  const suffix = { post: verb === 'create' ? 'Create' : undefined, patch: 'Patch', put: 'Replace' }[method]
  const request = `${pascal(operationId)}Request`
  return resource && suffix ? [`${resource}${suffix}`, request] : [request]
}

/** Names for what an answer carries: the resource of a read or a write (`WorkItem`), else `RotateDisplayKeyResult`. */
function answerNames(operationId: string, enveloped: boolean): string[] {
  const [verb, resource] = resourceOf(operationId) ?? []
  const result = `${pascal(operationId)}Result`
  return resource && (enveloped || verb === 'get' || verb === 'list') ? [resource, result] : [result]
}

/** The schema a page, or a union with `null`, holds: what is worth naming in `data`. */
function dataSlot(holder: Json, key: string): { get: () => unknown; set: (schema: Json) => void } {
  const data = holder[key]
  if (data?.type === 'array' && data.items) return dataSlot(data, 'items')
  const branches: Json[] | undefined = data?.anyOf
  const real = branches?.filter((branch) => branch.type !== 'null')
  if (branches && real?.length === 1) return { get: () => real[0], set: (schema) => (branches[branches.indexOf(real[0]!)] = schema) }
  return { get: () => holder[key], set: (schema) => (holder[key] = schema) }
}

const refersToNamed = (schema: unknown): boolean => JSON.stringify(schema).includes('"$ref":"#/components/schemas/')

/**
 * Names the request body and the resource of every operation (see the top of this file); the
 * envelope's error items are `ErrorItem`, as in `errorSchema`.
 */
export function nameSchemas(paths: Json, names: SchemaNames, errorSchema: string): void {
  enumerate(paths)
  nameTitled(paths, names)
  const errorItem = names.schemas[errorSchema]?.properties?.errors?.items
  const errorItemText = JSON.stringify(errorItem)
  if (errorItem) names.schemas[errorSchema].properties.errors.items = names.refer(['ErrorItem'], errorItem)
  for (const [method, operation] of eachOperation(paths)) {
    const id: string | undefined = operation.operationId
    const body = operation.requestBody?.content?.['application/json']
    if (id && isNameable(body?.schema)) body.schema = names.refer(bodyNames(method, id), body.schema)
    for (const [status, response] of Object.entries<Json>(operation.responses ?? {})) {
      const json = response?.content?.['application/json']
      if (!status.startsWith('2') || !isObject(json?.schema)) continue
      if (isEnvelope(json.schema)) {
        const errors = json.schema.properties.errors
        if (JSON.stringify(errors.items) === errorItemText) errors.items = names.refer(['ErrorItem'], errors.items)
        const data = dataSlot(json.schema.properties, 'data')
        const schema = data.get()
        if (id && isNameable(schema)) data.set(names.refer(answerNames(id, true), schema))
      } else if (id && isNameable(json.schema) && !refersToNamed(json.schema)) json.schema = names.refer(answerNames(id, false), json.schema)
    }
  }
}
