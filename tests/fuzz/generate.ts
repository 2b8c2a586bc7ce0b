/**
 * fast-check arbitraries from JSON Schema (the subset the OpenAPI document and the TypeBox models
 * use): valid values, values mutated into something the schema refuses, hostile strings, and raw
 * body recipes (text the JSON encoder cannot produce: duplicated keys, `1e400`, invalid UTF-8,
 * deep nesting, 2 MiB). Recipes stay small; `renderBody` turns them into bytes at request time,
 * so a counterexample prints short.
 */
import fc from 'fast-check'

export type JsonSchema = Record<string, any>
/** Real ids by field or parameter name (`userId`, `workItemId`, …). */
export type IdPools = Record<string, string[]>

const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
/** Items of an array field take their ids from this pool. */
const ITEM_HINTS: Record<string, string> = { workItems: 'workItemId', entries: 'entryId' }

/** Written in place of a number and replaced by the current display clock (`"__NOW__"` → 1763…). */
export const NOW = '__NOW__'

/** Strings every text field, path segment and query value should survive. */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  'NaN',
  'Infinity',
  '-Infinity',
  '1e400',
  '-1e400',
  '-0',
  '0',
  '-1',
  '1.5',
  '0x10',
  '9007199254740993',
  '99999999999999999999999999',
  'null',
  'undefined',
  'true',
  "'; drop table users; --",
  `${'a'.repeat(255)}@example.com`,
  `${'a'.repeat(6000)}@example.com`,
  "' or '1'='1",
  '"; select pg_sleep(10); --',
  '\\',
  '%',
  '%00',
  '%ZZ',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  '${7*7}{{7*7}}',
  'a\u0000b',
  '\u0000',
  '\ud800',
  '\udfff\ud800',
  '\u202e\u0645\u0631\u062d\u0628\u0627',
  '\ufeff',
  '😀👩‍👩‍👧‍👦',
  'Ａ\u0301',
  '\r\n\t',
  '__proto__',
  'constructor',
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '0191c3b4-0000-7000-8000-00000000000G',
  'wtk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa000000',
  'dpk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa000000',
  'wts_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa000000',
  '2024-02-30',
  '2024-13-01T00:00:00Z',
  '+275760-09-13T00:00:00.001Z',
  '-271821-04-20T00:00:00Z',
  '0000-00-00',
  // Dates no store holds or no calendar has: extended years, a day the month lacks, hour 24.
  '+010000-01-01T00:00:00Z',
  '+275760-09-13T00:00:00.000Z',
  '9999-12-31T23:59:59-05:00',
  '2030-02-30T00:00:00Z',
  '2030-01-01T24:00:00Z',
  '+010000-01-01',
]

/** Date-times a `date-time` field or parameter is sometimes given instead of a real one (each must be refused with 400). */
export const HOSTILE_DATE_TIMES: readonly string[] = [
  '+010000-01-01T00:00:00Z',
  '+275760-09-13T00:00:00.000Z',
  '+275760-09-13T00:00:00.001Z',
  '-271821-04-20T00:00:00Z',
  '-000001-01-01T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '9999-12-31T23:59:59-05:00',
  '0001-01-01T00:00:00+01:00',
  '2030-02-30T00:00:00Z',
  '2031-02-29T00:00:00Z',
  '2030-01-01T24:00:00Z',
  '2030-01-01T23:59:60Z',
  '2030-01-01T00:00:00+24:00',
  '2030-01-01T00:00:00',
  'Tue Jan 01 2030 00:00:00 GMT+0000',
  '2030-01-01T00:00:00Zjunk',
]
/** Calendar dates a `date` field is sometimes given instead of a real one. */
export const HOSTILE_CALENDAR_DATES: readonly string[] = ['0000-01-01', '+010000-01-01', '-000001-01-01', '10000-01-01', '2031-02-29', '2030-04-31', '2030-02-30', '2030-1-1']

/**
 * `next` after sign-in (a redirect must stay on the site): paths that resolve to another origin, and paths of the
 * site that must still be followed. A redirect's Location must stay on the site (oracle.ts).
 */
export const NEXT_PATHS: readonly string[] = [
  '//evil.example/phish',
  '/.//evil.example/phish',
  '/..//evil.example/phish',
  '/%2e//evil.example/phish',
  '/%2E%2E//evil.example/phish',
  '/a/..//evil.example/phish',
  '/.\\/evil.example/phish',
  '/\\evil.example/phish',
  '/%5cevil.example/phish',
  '/%2f%2fevil.example/phish',
  '/\t/evil.example/phish',
  '/.\n//evil.example/phish',
  ' //evil.example/phish',
  'https://evil.example/phish',
  'https:evil.example',
  'javascript:alert(1)',
  '/pages/ops?kiosk=1',
  '/pages/./ops',
  '/account/keys',
  '/pages/ops?back=//evil.example',
]

/**
 * Webhook targets (`url`) the lanes must refuse (allowPrivateTargets is off): private,
 * link-local and loopback addresses in IPv4 spellings and in every IPv6 form that carries one.
 * Accepting one is reported by the oracle.
 */
export const HOSTILE_TARGET_URLS: readonly string[] = [
  'http://[64:ff9b:1::a9fe:a9fe]/latest/meta-data/',
  'http://[64:ff9b:0:0:0:0:a9fe:a9fe]/',
  'http://[2002:a9fe:a9fe::1]/',
  'http://[2001:0:4136:e378:8000:63bf:5601:5601]/',
  'http://[::a9fe:a9fe]/',
  'http://[::ffff:0:a9fe:a9fe]/',
  'http://[0:0:0:0:0:ffff:a9fe:a9fe]/',
  'http://[::ffff:169.254.169.254]/',
  'http://[::1]/',
  'http://[fd00::1]/',
  'http://[fe80::1]/',
  'https://[3fff::1]/',
  'http://169.254.169.254/latest/meta-data/',
  'http://0x7f.1/',
  'http://2130706433/',
  'http://100.64.0.1/',
  'http://0.0.0.0/',
]
/** Public targets (address literals: no DNS; the lanes run no delivery workers, so nothing is sent). */
const PUBLIC_TARGET_URLS: readonly string[] = ['http://8.8.8.8/fuzz', 'https://[2606:4700::1111]/fuzz']

/**
 * Any code point, lone surrogates included. fast-check's own `unit: 'binary'` builds a reverse map
 * of all 1.1M code points per arbitrary (about 0.3 s each); a mapped integer needs none.
 */
const anyCodePoint = fc.integer({ min: 0, max: 0x10ffff }).map((code) => String.fromCodePoint(code))
/** Strings of any code points, up to `maxLength` of them. */
export const anyText = (minLength: number, maxLength: number) => fc.array(anyCodePoint, { minLength, maxLength }).map((units) => units.join(''))

/** A long string recipe: built at request time (`{ repeat: n }` → n characters). */
export interface LongString {
  readonly repeat: number
  readonly char: string
}

/** Values of every JSON type, and hostile numbers, to put where the schema wants something else. */
const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, -0.5, 2 ** 53 + 1, 1e308, -1e308, 5e-324, [], {}, [null], [1, 'a'], { $ne: null }, { '': '' }),
  fc.constantFrom(...HOSTILE_STRINGS),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  anyText(0, 12),
  fc.jsonValue({ maxDepth: 3 }),
)

const longString = fc.record({ repeat: fc.constantFrom(101, 201, 255, 256, 501, 1001, 4097, 10_001, 50_001, 100_001), char: fc.constantFrom('x', 'é', '😀', '\u0000', "'", '<') })

function poolFor(pools: IdPools, field: string | undefined): string[] | undefined {
  if (!field) return undefined
  return pools[field] ?? pools[ITEM_HINTS[field] ?? '']
}

/** A string matching a uuid pattern: a real id of the field's pool when there is one, else any uuid. */
function uuidFor(pools: IdPools, field: string | undefined): fc.Arbitrary<string> {
  const pool = poolFor(pools, field)
  return pool?.length ? fc.oneof({ arbitrary: fc.constantFrom(...pool), weight: 4 }, { arbitrary: fc.uuid(), weight: 1 }) : fc.uuid()
}

/** Valid values of `schema`; `field` is the property name (it picks id pools). */
export function validValue(schema: JsonSchema, pools: IdPools, field?: string, depth = 0): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum)
  const union = schema.anyOf ?? schema.oneOf
  if (Array.isArray(union)) {
    // A query integer is documented as "a string of format integer, or an integer": take the integer.
    const integer = union.find((member: JsonSchema) => member.type === 'integer')
    if (integer && union.some((member: JsonSchema) => member.format === 'integer')) return validValue({ ...integer, ...schema, anyOf: undefined, type: 'integer' }, pools, field, depth)
    return fc.oneof(...union.map((member: JsonSchema) => validValue(member, pools, field, depth)))
  }
  // `page` is bounded by page × size (below 10,000 rows), which its schema cannot say: pages up to
  // 99 are valid at any size; now and then a deep one, refused naming `page`.
  if (field === 'page' && schema.type === 'integer') return fc.oneof({ arbitrary: fc.integer({ min: 0, max: 99 }), weight: 8 }, { arbitrary: fc.integer({ min: 0, max: 10_000_000 }), weight: 1 })
  if (field === 'timestamp') return fc.oneof({ arbitrary: fc.constant(NOW), weight: 8 }, { arbitrary: fc.double({ min: 0, max: 1.7e9, noNaN: true }), weight: 1 })
  if (field === 'apiKey' && pools.apiKey) return fc.constantFrom(...pools.apiKey)
  if (field === 'next') return fc.constantFrom(...NEXT_PATHS)
  if (field === 'url')
    return fc.oneof(
      { arbitrary: fc.constantFrom(...HOSTILE_TARGET_URLS), weight: 2 },
      { arbitrary: fc.constantFrom(...PUBLIC_TARGET_URLS), weight: 1 },
      { arbitrary: stringValue(schema, pools, field), weight: 1 },
    )
  switch (schema.type) {
    case 'string':
      return stringValue(schema, pools, field)
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 })
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9, noNaN: true, noDefaultInfinity: true })
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array':
      return fc.array(validValue(schema.items ?? {}, pools, field, depth + 1), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 4, 4) })
    case 'object':
      return objectValue(schema, pools, field, depth)
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

function stringValue(schema: JsonSchema, pools: IdPools, field: string | undefined): fc.Arbitrary<string> {
  if (schema.pattern === UUID_PATTERN) return uuidFor(pools, field)
  const pool = poolFor(pools, field)
  if (pool?.length && !schema.pattern && !schema.format) return fc.constantFrom(...pool)
  if (schema.format === 'date-time')
    return fc.oneof(
      { arbitrary: fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true }).map((date) => date.toISOString()), weight: 6 },
      { arbitrary: fc.constantFrom(...HOSTILE_DATE_TIMES), weight: 1 },
    )
  if (schema.format === 'calendar-date' || schema.format === 'date')
    return fc.oneof(
      { arbitrary: fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2999-12-31T00:00:00Z'), noInvalidDate: true }).map((date) => date.toISOString().slice(0, 10)), weight: 6 },
      { arbitrary: fc.constantFrom(...HOSTILE_CALENDAR_DATES), weight: 1 },
    )
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern), { maxLength: 40 }).filter((text) => text.length <= (schema.maxLength ?? Infinity))
  const minLength = schema.minLength ?? 0
  const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? 30, 30))
  return fc.oneof(
    { arbitrary: fc.string({ minLength, maxLength }), weight: 6 },
    { arbitrary: unicodeText.filter((text) => [...text].length >= minLength && text.length <= (schema.maxLength ?? Infinity)), weight: 2 },
    { arbitrary: fc.constantFrom("'; drop table users; --", '<script>alert(1)</script>', 'O\'Brien & "Sons" <b>'), weight: 1 },
  ).filter((text) => text.trim().length >= Math.min(minLength, 1) || minLength === 0)
}

/** Text beyond ASCII: accents, combining marks, right-to-left, astral emoji, zero-width characters. */
const unicodeText = fc.oneof(
  anyText(1, 12),
  fc.constantFrom('Ünïcødé', '日本語のテキスト', 'שלום עולם', 'e\u0301', '😀👍🏽', 'zero\u200bwidth', 'Ａ\u0301\u0327', '\u2028\u2029'),
)

function objectValue(schema: JsonSchema, pools: IdPools, field: string | undefined, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties: Record<string, JsonSchema> = schema.properties ?? {}
  const required: string[] = schema.required ?? []
  const model: Record<string, fc.Arbitrary<unknown>> = {}
  for (const [name, property] of Object.entries(properties)) model[name] = validValue(property, pools, name, depth + 1)
  let record: fc.Arbitrary<Record<string, unknown>> = fc.record(model, { requiredKeys: required })
  const patterned = schema.patternProperties ? Object.values(schema.patternProperties)[0] as JsonSchema : undefined
  if (patterned) {
    // e.g. content order's `entries`: {"<workItemId>": [entry ids]}
    const keys = uuidFor(pools, 'workItemId')
    record = fc.dictionary(keys, validValue(patterned, pools, field, depth + 1), { maxKeys: 2 })
  }
  const minimum = schema.minProperties ?? 0
  if (minimum > 0) {
    const names = Object.keys(properties)
    if (names.length)
      return record.chain((value) =>
        Object.keys(value).length >= minimum ? fc.constant(value) : fc.constantFrom(...names).chain((name) => model[name]!.map((extra) => ({ ...value, [name]: extra }))),
      )
  }
  return record
}

// ---- mutations ---------------------------------------------------------------------------------

/** One way to break a valid value; `at` picks the location among the value's nodes. */
export type Mutation =
  | { kind: 'replace'; at: number; with: unknown }
  | { kind: 'long'; at: number; with: LongString }
  | { kind: 'drop'; at: number }
  | { kind: 'unknown-field'; at: number; name: string; value: unknown }
  | { kind: 'nest'; at: number; depth: number }
  | { kind: 'root'; with: unknown }

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), with: wrongValue }), weight: 8 },
  { arbitrary: fc.record({ kind: fc.constant('long' as const), at: fc.nat(), with: longString }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }), weight: 2 },
  {
    arbitrary: fc.record({
      kind: fc.constant('unknown-field' as const),
      at: fc.nat(),
      name: fc.constantFrom('extra', '__proto__', 'constructor', 'prototype', '$where', 'id', 'organizationId', 'createdBy', 'role', ''),
      value: wrongValue,
    }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('nest' as const), at: fc.nat(), depth: fc.constantFrom(50, 1000, 5000) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('root' as const), with: wrongValue }), weight: 1 },
)

/** Every location in a JSON value: the parent container and the key (root: parent null). */
function locations(value: unknown): Array<{ parent: any; key: string | number | null }> {
  const found: Array<{ parent: any; key: string | number | null }> = [{ parent: null, key: null }]
  const walk = (node: unknown) => {
    if (Array.isArray(node))
      node.forEach((item, index) => {
        found.push({ parent: node, key: index })
        walk(item)
      })
    else if (node && typeof node === 'object')
      for (const [key, item] of Object.entries(node)) {
        found.push({ parent: node, key })
        walk(item)
      }
  }
  walk(value)
  return found
}

/** A nested value `depth` levels deep (arrays and objects alternate). */
export function nested(depth: number): unknown {
  let value: unknown = 1
  for (let level = 0; level < depth; level++) value = level % 2 ? [value] : { a: value }
  return value
}

/** Applies a mutation to a copy of `value`. Long strings stay recipes until `materialize`. */
export function applyMutation(value: unknown, change: Mutation): unknown {
  if (change.kind === 'root') return change.with
  const copy = structuredClone(value)
  const all = locations(copy)
  const target = all[change.at % all.length]!
  const set = (replacement: unknown) => {
    if (target.parent === null) return replacement
    target.parent[target.key as any] = replacement
    return copy
  }
  switch (change.kind) {
    case 'replace':
      return set(change.with)
    case 'long':
      return set({ [LONG]: change.with })
    case 'nest':
      return set(nested(change.depth))
    case 'drop':
      if (target.parent === null) return undefined
      if (Array.isArray(target.parent)) target.parent.splice(target.key as number, 1)
      else delete target.parent[target.key as string]
      return copy
    case 'unknown-field': {
      const holder = target.parent === null ? copy : target.parent[target.key as any]
      if (holder && typeof holder === 'object' && !Array.isArray(holder)) {
        Object.defineProperty(holder, change.name, { value: change.value, enumerable: true, configurable: true, writable: true })
        return copy
      }
      return set({ [change.name || 'extra']: change.value })
    }
  }
}

const LONG = '__long__'

/** Replaces long-string recipes by their strings (at request time). */
export function materialize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(materialize)
  if (value && typeof value === 'object') {
    const recipe = (value as Record<string, unknown>)[LONG] as LongString | undefined
    if (recipe && Object.keys(value).length === 1) return recipe.char.repeat(recipe.repeat)
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) Object.defineProperty(out, key, { value: materialize(item), enumerable: true, configurable: true, writable: true })
    return out
  }
  return value
}

// ---- raw bodies --------------------------------------------------------------------------------

/** What is sent as the body; `json` values are valid or mutated, the others are raw recipes. */
export type BodyRecipe =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown }
  | { kind: 'text'; text: string }
  /** The JSON of `value` with a second copy of one key (first or last wins: both must be safe). */
  | { kind: 'duplicate-key'; value: unknown; at: number; with: unknown; before: boolean }
  /** The JSON of `value` with one node replaced by raw number text (`1e400`, `-0`, …). */
  | { kind: 'raw-number'; value: unknown; at: number; literal: string }
  /** The JSON of `value` with bytes that are not UTF-8 inside a string (or anywhere). */
  | { kind: 'bad-utf8'; value: unknown; at: number; bytes: number[] }
  /** `{"<field>": "xxx…"}` of `bytes` bytes (2 MiB is over the 1 MiB limit). */
  | { kind: 'huge'; field: string; bytes: number }
  /** `[[[…]]]` or `{"a":{"a":…}}` `depth` levels deep, as the root or as one field. */
  | { kind: 'deep'; depth: number; objects: boolean; field: string | null }

const RAW_NUMBERS = ['1e400', '-1e400', '-0', '-0.0', '1E+999', '0.0000000000000000000000000001', '123456789012345678901234567890', '1.7976931348623157e309', '4.9e-325', '00', '01', '+1', '.5', '1.', 'NaN', 'Infinity', '-Infinity', '0x1F']
const BAD_UTF8: number[][] = [[0xff], [0xfe, 0xff], [0xc3, 0x28], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80], [0xf0, 0x9f, 0x98], [0x00]]
const BAD_TEXTS = [
  '{',
  '}',
  '[',
  '{"a":1,}',
  "{'a':1}",
  '{"a":1}}',
  '{"a":1} garbage',
  '{"a":undefined}',
  '{"a":NaN}',
  '/* comment */ {}',
  '\ufeff{}',
  '"just a string"',
  'null',
  'true',
  '0',
  '[]',
  '[{}]',
  '{}',
  '{"__proto__":{"admin":true}}',
  '{"constructor":{"prototype":{"admin":true}}}',
  ' ',
  '\n\n',
  'name=x&title=y',
  '<xml/>',
  '{"a":"\\ud800"}',
  '{"a":"\\u0000"}',
  '{"a":"\\x41"}',
  '{"a":"\u0001"}',
  '{"a":1e400}',
]

const binaryText = anyText(0, 40)

/** A raw or JSON body recipe around a base value of the route's schema. */
export function bodyRecipe(base: fc.Arbitrary<unknown>): fc.Arbitrary<BodyRecipe> {
  return fc.oneof(
    { arbitrary: base.map((value) => ({ kind: 'json' as const, value })), weight: 20 },
    { arbitrary: fc.tuple(base, mutation).map(([value, change]) => ({ kind: 'json' as const, value: applyMutation(value, change) })), weight: 45 },
    { arbitrary: fc.record({ kind: fc.constant('duplicate-key' as const), value: base, at: fc.nat(), with: wrongValue, before: fc.boolean() }), weight: 4 },
    { arbitrary: fc.record({ kind: fc.constant('raw-number' as const), value: base, at: fc.nat(), literal: fc.constantFrom(...RAW_NUMBERS) }), weight: 4 },
    { arbitrary: fc.record({ kind: fc.constant('bad-utf8' as const), value: base, at: fc.nat(), bytes: fc.constantFrom(...BAD_UTF8) }), weight: 4 },
    { arbitrary: fc.record({ kind: fc.constant('text' as const), text: fc.constantFrom(...BAD_TEXTS) }), weight: 5 },
    { arbitrary: fc.record({ kind: fc.constant('text' as const), text: binaryText }), weight: 2 },
    { arbitrary: fc.constant({ kind: 'none' as const }), weight: 3 },
    { arbitrary: fc.record({ kind: fc.constant('huge' as const), field: fc.constantFrom('name', 'title', 'body', 'message', 'x'), bytes: fc.constantFrom(2 * 1024 * 1024, 1024 * 1024 + 1, 1024 * 1024 - 64) }), weight: 1 },
    { arbitrary: fc.record({ kind: fc.constant('deep' as const), depth: fc.constantFrom(5000, 20_000, 100_000), objects: fc.boolean(), field: fc.constantFrom(null, 'name', 'data', 'arguments') }), weight: 1 },
  )
}

const encoder = new TextEncoder()
const MARK = '\u0007FUZZ\u0007'

/** JSON text of `value` in which the node at `at` is written as `MARK` (for raw splicing). */
function withMark(value: unknown, at: number): { text: string; marked: boolean } {
  const copy = materialize(value)
  const all = locations(copy)
  const target = all[at % all.length]!
  if (target.parent === null) return { text: JSON.stringify(MARK), marked: true }
  target.parent[target.key as any] = MARK
  return { text: JSON.stringify(copy) ?? 'null', marked: true }
}

/** The bytes (or text) of a body recipe; `now` replaces the `NOW` placeholder. */
export function renderBody(recipe: BodyRecipe, now: () => number): string | Uint8Array | undefined {
  const clock = (text: string) => text.replaceAll(JSON.stringify(NOW), () => String(now()))
  switch (recipe.kind) {
    case 'none':
      return undefined
    case 'json': {
      const text = JSON.stringify(materialize(recipe.value))
      return text === undefined ? '' : clock(text)
    }
    case 'text':
      return recipe.text
    case 'duplicate-key': {
      const value = materialize(recipe.value)
      const text = clock(JSON.stringify(value) ?? 'null')
      if (!value || typeof value !== 'object' || Array.isArray(value) || !Object.keys(value).length) return `{"a":1,"a":${JSON.stringify(recipe.with) ?? 'null'}}`
      const keys = Object.keys(value)
      const key = keys[recipe.at % keys.length]!
      const extra = `${JSON.stringify(key)}:${JSON.stringify(recipe.with) ?? 'null'}`
      return recipe.before ? `{${extra},${text.slice(1)}` : `${text.slice(0, -1)},${extra}}`
    }
    case 'raw-number': {
      const { text } = withMark(recipe.value, recipe.at)
      return clock(text).replace(JSON.stringify(MARK), recipe.literal)
    }
    case 'bad-utf8': {
      const { text } = withMark(recipe.value, recipe.at)
      const [left, right] = clock(text).split(JSON.stringify(MARK)) as [string, string]
      const inside = [...encoder.encode(`${left}"a`), ...recipe.bytes, ...encoder.encode(`b"${right ?? ''}`)]
      return new Uint8Array(inside)
    }
    case 'huge': {
      const prefix = `{${JSON.stringify(recipe.field)}:"`
      return prefix + 'x'.repeat(Math.max(0, recipe.bytes - prefix.length - 2)) + '"}'
    }
    case 'deep': {
      const open = recipe.objects ? '{"a":' : '['
      const close = recipe.objects ? '}' : ']'
      const core = open.repeat(recipe.depth) + '1' + close.repeat(recipe.depth)
      return recipe.field ? `{${JSON.stringify(recipe.field)}:${core}}` : core
    }
  }
}

/** A short, printable excerpt of a body for failure messages. */
export function excerpt(body: string | Uint8Array | undefined, limit = 300): string {
  if (body === undefined) return '(none)'
  const text = typeof body === 'string' ? body : `bytes(${body.byteLength}) ${new TextDecoder('utf-8', { fatal: false }).decode(body.slice(0, limit))}`
  const printable = JSON.stringify(text.length > limit ? `${text.slice(0, limit)}…` : text)
  return `${printable}${text.length > limit ? ` (${typeof body === 'string' ? body.length : body.byteLength} in all)` : ''}`
}

/** Picks one of `values` deterministically by an index (for recipes that hold a number). */
export const pick = <T>(values: readonly T[], index: number): T => values[Math.abs(index) % values.length]!

export { UUID_PATTERN }
