/**
 * `POST /api/component`, the hot path: the key is checked, the call charged to the daily limit
 * and the content replaced in one statement, together with the other calls waiting at that moment
 * (groups.ts) — the counter row's update is the check, so concurrent calls on any number of
 * instances never pass the limit, and each call's `limitRemaining` is exact. Every call with a
 * valid key is charged except one refused 429.
 */
import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { displayProblems, invalidRequest, type DisplayError, type Outcome, type Refusal } from '../../../src/http/display-api'
import { isUuid } from '../../../src/ids'
import type { ComponentChange } from '../api'
import { ComponentData, ComponentUpdate } from '../model'
import { limitExceeded, readOnly, unknownKey, usageOf } from './answers'
import { displayKeyOf, refuseCharged } from './calls'
import type { CallGroups } from './groups'

const checkUpdate = TypeCompiler.Compile(ComponentUpdate)
const checkData = new Map<string, TypeCheck<TSchema>>(Object.entries(ComponentData).map(([type, schema]) => [type, TypeCompiler.Compile(schema as TSchema)]))
const TYPES = Object.keys(ComponentData)
const fieldsOf = (type: string) => Object.keys((ComponentData as Record<string, { properties: object }>)[type]!.properties)

type ComponentBody = { componentId: string; timestamp: number; data: { type: string } }

interface BodyCheck {
  /** Every problem found (at most 20), empty when the body is valid. */
  problems: DisplayError[]
  /** The other component types whose data this `data` is (with their `type`), when it fails its own. */
  shapedAs: string[]
}

/**
 * Every problem of a body: its envelope's and its data's against `data.type`'s table. Numbers
 * are finite (JSON can spell 1e400): TypeBox refuses NaN and infinities.
 */
function checkComponentBody(body: object): BodyCheck {
  // Check is the compiled fast path; Errors (slow) only runs to name what failed.
  const seen = new Set<string>()
  const problems = checkUpdate.Check(body) ? [] : displayProblems(checkUpdate.Errors(body), '', seen)
  const data = (body as { data?: unknown }).data
  if (typeof data !== 'object' || data === null || Array.isArray(data) || typeof (data as { type?: unknown }).type !== 'string') return { problems, shapedAs: [] }
  const type = (data as { type: string }).type
  const check = checkData.get(type)
  if (!check) {
    if (!seen.has('data.type')) problems.push({ message: 'invalidRequest', detail: `data.type must be one of ${TYPES.join(', ')}.`, field: 'data.type' })
    return { problems, shapedAs: [] }
  }
  if (check.Check(data)) return { problems, shapedAs: [] }
  problems.push(...displayProblems(check.Errors(data), '/data', seen))
  const shapedAs = TYPES.filter((other) => other !== type && checkData.get(other)!.Check({ ...(data as object), type: other }))
  return { problems, shapedAs }
}

/**
 * Whether data of `declared` type that is valid data of the `shapedAs` types is another type's
 * data for a component of type `actual`: it is labelled other than the component, or it holds
 * fields the component's type has none of. Data that only lacks fields of its own type (a bar
 * chart without `xNumber` reads as a pie chart) is an invalid request, not a mismatch.
 */
function mismatched(actual: string, declared: string, shapedAs: readonly string[], data: object): boolean {
  if (!shapedAs.length) return false
  if (declared !== actual) return true
  const own = new Set(fieldsOf(actual))
  return Object.keys(data).some((field) => !own.has(field))
}

const typeMismatch = (actual: string, declared: string, shapedAs: readonly string[]): DisplayError => ({
  message: 'componentTypeMismatch',
  detail: shapedAs.includes(actual)
    ? `The component is a ${actual}; data.type is ${declared}, but the data is a ${actual}'s: send data.type ${actual}.`
    : `The component is a ${actual}; the data is a ${shapedAs[0]}'s${declared === shapedAs[0] ? '' : ` (data.type says ${declared})`}.`,
  field: 'data.type',
})

/**
 * A charged refusal of a body whose data is another type's: the call runs as an update that can
 * never apply (its type is none), which charges it and reads the component's type in the same one
 * statement; another type's data is `componentTypeMismatch`, anything else the body's problems.
 */
async function refuseShaped(groups: CallGroups, keyHash: string, body: ComponentBody, check: BodyCheck): Promise<Refusal> {
  const { componentId, timestamp, data } = body
  const row = await groups.run({ keyHash, update: { componentId: isUuid(componentId) ? componentId : null, data: '{}', timestamp: toSeconds(timestamp), type: '' } })
  if (!row) return unknownKey()
  const usage = usageOf(row)
  if (!usage.charged) return limitExceeded(usage)
  const error = row.type && mismatched(row.type, data.type, check.shapedAs, data) ? typeMismatch(row.type, data.type, check.shapedAs) : invalidRequest(check.problems)
  return { ok: false, status: 400, usage, error }
}

/** The default of `display.maxComponentDataKilobytes`, in bytes. */
export const DEFAULT_MAX_DATA_BYTES = 128 * 1024

/** UTF-8 bytes of a number as PostgreSQL's jsonb stores and returns it: written out in full (1e300 is 301 digits). */
function storedNumberLength(n: number): number {
  const text = String(Math.abs(n))
  const sign = n < 0 ? 1 : 0
  const e = text.indexOf('e')
  if (e < 0) return sign + text.length
  const digits = text.slice(0, e).replace('.', '').length
  const exponent = Number(text.slice(e + 1))
  if (exponent >= digits - 1) return sign + exponent + 1
  if (exponent >= 0) return sign + digits + 1
  return sign + 2 + (-exponent - 1) + digits
}

/**
 * UTF-8 bytes of a JSON value as stored and read back (jsonb's text: `", "` and `": "` between
 * members, strings escaped as JSON, numbers in full): what a live page reads to draw it.
 */
export function storedLength(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(JSON.stringify(value))
  if (typeof value === 'number') return storedNumberLength(value)
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + storedLength(item), 2 + Math.max(0, value.length - 1) * 2)
  if (value && typeof value === 'object') {
    const entries = Object.entries(value)
    return entries.reduce((sum, [key, item]) => sum + storedLength(key) + 2 + storedLength(item), 2 + Math.max(0, entries.length - 1) * 2)
  }
  return String(value).length
}

/** Unix seconds; a value above 10^11 is milliseconds. */
const toSeconds = (timestamp: number) => (timestamp > 1e11 ? timestamp / 1000 : timestamp)

/**
 * Runs one component update (grouped with the calls waiting beside it): charged, checked and
 * applied, or refused. Data taking more than `maxDataBytes` as stored is refused (400 naming
 * `data`): a live page reads every component's data to draw it.
 */
export async function updateComponent(groups: CallGroups, body: unknown, maxDataBytes = DEFAULT_MAX_DATA_BYTES): Promise<Outcome<ComponentChange>> {
  const key = displayKeyOf(body)
  if ('ok' in key) return key
  const { keyHash } = key
  const check = checkComponentBody(body as object)
  if (check.shapedAs.length && check.problems.every((problem) => problem.field?.startsWith('data.'))) return refuseShaped(groups, keyHash, body as ComponentBody, check)
  if (check.problems.length) return refuseCharged(groups, keyHash, invalidRequest(check.problems))
  const { componentId, timestamp, data } = body as ComponentBody
  const stored = storedLength(data)
  if (stored > maxDataBytes)
    return refuseCharged(groups, keyHash, {
      message: 'invalidRequest',
      detail: `The data takes ${stored.toLocaleString('en')} bytes as stored (numbers written out in full); a component holds at most ${maxDataBytes.toLocaleString('en')}: send shorter labels or texts, or fewer points.`,
      field: 'data',
    })
  const row = await groups.run({ keyHash, update: { componentId: isUuid(componentId) ? componentId : null, data: JSON.stringify(data), timestamp: toSeconds(timestamp), type: data.type } })
  if (!row) return unknownKey()
  const usage = usageOf(row)
  if (!usage.charged) return limitExceeded(usage)
  if (!row.type) return { ok: false, status: 404, usage, error: { message: 'componentNotFound', detail: 'No such component on a page you can use.', field: 'componentId' } }
  if (!row.editable) return readOnly(usage)
  if (row.bound)
    return {
      ok: false,
      status: 409,
      usage,
      error: { message: 'componentBound', detail: 'The component is fed by a work source (PUT /api/v1/pages/{pageId}/components/{componentId}/source); delete the source to feed it through the display API again.', field: 'componentId' },
    }
  if (row.type !== data.type)
    return { ok: false, status: 400, usage, error: { message: 'componentTypeMismatch', detail: `The component is a ${row.type}; data.type is ${data.type}.`, field: 'data.type' } }
  if (!row.updatedId)
    return { ok: false, status: 409, usage, error: { message: 'staleUpdate', detail: 'The component holds newer data (a later timestamp); this update was not applied.', field: 'timestamp' } }
  // The key's organization is held by now (the statement was addressed to it): no round trip.
  const organizationId = (await groups.keys.of(keyHash))!
  return { ok: true, usage, organizationId, pageId: row.pageId!, componentId: row.updatedId }
}

