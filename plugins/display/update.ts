/**
 * `POST /api/component`, the hot path: the key is checked, the call counted against the daily
 * limit and the content replaced in one statement, together with the other calls waiting at that
 * moment (call-groups.ts) — the counter row's update is the check, so concurrent calls on any
 * number of instances never pass the limit, and each call's `limitRemaining` is exact. Every call
 * with a valid key counts except one refused 429.
 */
import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { queryText, type Database } from '../../src/db'
import { pointerToField } from '../../src/http/validation-items'
import { isUuid } from '../../src/ids'
import { limitExceeded, readOnly, unknownKey, usageOf, type DisplayError, type Outcome } from './answers'
import type { CallGroups } from './call-groups'
import { displayKeyOf, refuseCounted } from './calls'
import { ComponentData, ComponentUpdate } from './model'
import { utf8Length } from './summary'

/** The per-call statement, for the benchmarks' pgbench ceiling. */
export { COMPONENT_UPDATE_SQL } from './call-groups'

export const DISPLAY_CHANNEL = 'display_updates'

/**
 * Tells live viewers on every instance which components changed: collected for a few
 * milliseconds and sent as one NOTIFY after the updates committed. (A NOTIFY inside each update
 * cost 35–45 % of the update throughput: PostgreSQL serialises notifying commits.)
 */
export class ChangeNotifier {
  private pending = new Map<string, { pageId: string; componentId: string }>()
  private timer: ReturnType<typeof setTimeout> | undefined

  constructor(
    private readonly db: Database,
    private readonly onError: (error: Error) => void,
    private readonly delayMs = 25,
  ) {}

  changed(pageId: string, componentId: string): void {
    this.pending.set(componentId, { pageId, componentId })
    this.timer ??= setTimeout(() => void this.flush(), this.delayMs)
  }

  async flush(): Promise<void> {
    this.timer = undefined
    const changes = [...this.pending.values()]
    this.pending = new Map()
    // NOTIFY payloads stop at 8000 bytes: about 90 changes of 88 bytes each.
    for (let i = 0; i < changes.length; i += 80)
      await queryText(this.db, 'select pg_notify($1, $2)', [DISPLAY_CHANNEL, JSON.stringify(changes.slice(i, i + 80))]).catch(this.onError)
  }

  stop(): Promise<void> {
    clearTimeout(this.timer)
    return this.flush()
  }
}

const checkUpdate = TypeCompiler.Compile(ComponentUpdate)
const checkData = new Map<string, TypeCheck<TSchema>>(Object.entries(ComponentData).map(([type, schema]) => [type, TypeCompiler.Compile(schema as TSchema)]))

/** The first problem of a body, or null. Numbers must be finite (JSON can spell 1e400). */
function checkComponentBody(body: unknown): DisplayError | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { message: 'invalidRequest', detail: 'The body must be a JSON object.' }
  const problem = (path: string, detail: string): DisplayError => ({ message: 'invalidRequest', detail, field: pointerToField(path) || undefined })
  // Check is the compiled fast path; Errors (slow) only runs to name what failed.
  const first = checkUpdate.Check(body) ? undefined : checkUpdate.Errors(body).First()
  if (first) return problem(first.path, first.message === 'Unexpected property' ? 'Unknown field.' : `${first.message}.`)
  const { data, timestamp } = body as { data: { type: string }; timestamp: number }
  if (!Number.isFinite(timestamp)) return problem('/timestamp', 'Expected a finite number.')
  const check = checkData.get(data.type)
  if (!check) return problem('/data/type', `Expected one of ${Object.keys(ComponentData).join(', ')}.`)
  const error = check.Check(data) ? undefined : check.Errors(data).First()
  if (error) return problem(`/data${error.path}`, error.message === 'Unexpected property' ? 'Unknown field.' : `${error.message}.`)
  const infinite = (data as { points?: Array<{ y: number }> }).points?.findIndex((point) => !Number.isFinite(point.y)) ?? -1
  if (infinite >= 0) return problem(`/data/points/${infinite}/y`, 'Expected a finite number.')
  return null
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
  if (typeof value === 'string') return utf8Length(JSON.stringify(value))
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
 * Runs one component update (grouped with the calls waiting beside it): counted, checked and
 * applied, or refused. Data taking more than `maxDataBytes` as stored is refused (400 naming
 * `data`): a live page reads every component's data to draw it.
 */
export async function updateComponent(groups: CallGroups, body: unknown, maxDataBytes = DEFAULT_MAX_DATA_BYTES): Promise<Outcome<{ pageId: string; componentId: string }>> {
  const key = displayKeyOf(body)
  if ('ok' in key) return key
  const { keyHash } = key
  const problem = checkComponentBody(body)
  if (problem) return refuseCounted(groups, keyHash, problem)
  const { componentId, timestamp, data } = body as { componentId: string; timestamp: number; data: { type: string } }
  const stored = storedLength(data)
  if (stored > maxDataBytes)
    return refuseCounted(groups, keyHash, {
      message: 'invalidRequest',
      detail: `The data takes ${stored.toLocaleString('en')} bytes as stored (numbers written out in full); a component holds at most ${maxDataBytes.toLocaleString('en')}: send shorter labels or texts, or fewer points.`,
      field: 'data',
    })
  const row = await groups.run({ keyHash, update: { componentId: isUuid(componentId) ? componentId : null, data: JSON.stringify(data), timestamp: toSeconds(timestamp), type: data.type } })
  if (!row) return unknownKey()
  const usage = usageOf(row)
  if (!usage.counted) return limitExceeded(usage)
  if (!row.type) return { ok: false, status: 404, usage, error: { message: 'componentNotFound', detail: 'No such component on a page you can use.', field: 'componentId' } }
  if (!row.editable) return readOnly(usage)
  if (row.type !== data.type)
    return { ok: false, status: 400, usage, error: { message: 'componentTypeMismatch', detail: `The component is a ${row.type}; data.type is ${data.type}.`, field: 'data.type' } }
  if (!row.updatedId)
    return { ok: false, status: 409, usage, error: { message: 'staleUpdate', detail: 'The component holds newer data (a later timestamp); this update was not applied.', field: 'timestamp' } }
  return { ok: true, usage, pageId: row.pageId!, componentId: row.updatedId }
}

