/**
 * `POST /api/component`, the hot path: the key is checked, the call counted against the daily
 * limit and the content replaced in ONE statement (a valid call) — the counter row's update is
 * the check, so concurrent calls on any number of instances never pass the limit, and each
 * call's `limitRemaining` is exact. Every call with a valid key counts except one refused 429.
 */
import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { queryText, type Database } from '../../src/db'
import { pointerToField } from '../../src/http/validation-items'
import { isUuid } from '../../src/ids'
import { limitExceeded, readOnly, unknownKey, usageOf, type DisplayError, type Outcome, type UsageRow } from './answers'
import { DISPLAY_CALL, DISPLAY_USAGE, displayKeyOf, refuseCounted } from './calls'
import { ComponentData, ComponentUpdate } from './model'
import { MAY_EDIT_PAGE, MAY_USE_PAGE } from './page-access'

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

/** Unix seconds; a value above 10^11 is milliseconds. */
const toSeconds = (timestamp: number) => (timestamp > 1e11 ? timestamp / 1000 : timestamp)

/** $1 key hash, $2 component id, $3 data (JSON text), $4 timestamp (seconds), $5 data type. Exported for the benchmarks. */
export const COMPONENT_UPDATE_SQL = `with ${DISPLAY_CALL},
  target as (
    select c.id, c.type, ${MAY_EDIT_PAGE} as editable from components c join pages p on p.id = c.page_id, account a
    where c.id = $2 and ${MAY_USE_PAGE}
  ),
  updated as (
    update components c set data = $3::jsonb, data_timestamp = $4, version = c.version + 1, updated_at = now()
    from target t, counted
    where c.id = t.id and t.editable and t.type = $5 and (c.data_timestamp is null or c.data_timestamp <= $4)
    returning c.id, c.page_id
  )
  select ${DISPLAY_USAGE}, (select type from target) as type, (select editable from target) as editable,
    (select id from updated) as "updatedId", (select page_id from updated) as "pageId"
  from account a`

/** Runs one component update: one statement for a valid call, one for a refused payload. */
export async function updateComponent(db: Database, body: unknown): Promise<Outcome<{ pageId: string; componentId: string }>> {
  const key = displayKeyOf(body)
  if ('ok' in key) return key
  const { keyHash } = key
  const problem = checkComponentBody(body)
  if (problem) return refuseCounted(db, keyHash, problem)
  const { componentId, timestamp, data } = body as { componentId: string; timestamp: number; data: { type: string } }
  const [row] = await queryText<UsageRow>(db, COMPONENT_UPDATE_SQL, [keyHash, isUuid(componentId) ? componentId : null, JSON.stringify(data), toSeconds(timestamp), data.type])
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

