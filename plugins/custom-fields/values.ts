/**
 * Work items' custom field values, through the work-items extension: `fields` on every work item,
 * validated against the definitions enabled for the item's project, and the `field.<key>` filters
 * and sorts of work-item lists.
 */
import { sql, type SQL } from 'drizzle-orm'
import { t, type TSchema } from 'elysia'
import { queryText, type Executor, type Transaction } from '../../src/db'
import { ApiError, type ErrorItem } from '../../src/http/errors'
import type { Filter, ListScope, SortKey } from '../../src/http/list-query'
import { isCalendarDate } from '../../src/http/models'
import { isUuid } from '../../src/ids'
import { ValidationFailure } from '../../src/validate'
import type { Actor } from '../../src/services/identity'
import type { UserDirectory } from '../auth/api'
import type { ExtendedItem, ExtensionChange } from '../work-items/api'
import { TEXT_MAX, URL_MAX } from './model'
import type { FieldOption, FieldType } from './schema'

interface Definition {
  id: string
  key: string
  name: string
  type: FieldType
  options: FieldOption[]
  required: boolean
}

/** A work item's values as `{key: value}`: the `fields` column of every work item read (`w`) in `organization`. */
export const fieldsColumn = (organization: SQL) => sql`coalesce((select json_object_agg(v.field_key, v.value order by v.field_key) from work_item_field_values v
    where v.work_item_id = w.id and v.organization_id = ${organization}), '{}'::json)`

const invalid = (key: string, message: string) => new ApiError(400, 'BAD_REQUEST', message, `fields.${key}`)

/** A value's typed columns (and its canonical shown form), or a 400 naming `fields.<key>`. */
async function typed(executor: Executor, users: UserDirectory, actor: Actor, field: Definition, value: unknown) {
  const columns = { value: value as unknown, numberValue: null as string | null, dateValue: null as string | null, textValue: null as string | null, userId: null as string | null, optionIds: null as string[] | null }
  const allowed = () => field.options.map((option) => `${option.id} (${option.name})`).join(', ')
  switch (field.type) {
    case 'text':
      if (typeof value !== 'string' || !value.length || value.length > TEXT_MAX) throw invalid(field.key, `A text of 1 to ${TEXT_MAX} characters.`)
      columns.textValue = value
      return columns
    case 'url': {
      let ok = false
      if (typeof value === 'string' && value.length <= URL_MAX) {
        try {
          ok = ['http:', 'https:'].includes(new URL(value).protocol)
        } catch {}
      }
      if (!ok) throw invalid(field.key, `An http or https URL of at most ${URL_MAX} characters.`)
      columns.textValue = value as string
      return columns
    }
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value) || Math.abs(value) >= 1e15) throw invalid(field.key, 'A number (JSON), less than 10^15 in magnitude.')
      columns.numberValue = String(value)
      return columns
    case 'date':
      if (typeof value !== 'string' || !isCalendarDate(value)) throw invalid(field.key, 'A date YYYY-MM-DD.')
      columns.dateValue = value
      return columns
    case 'user':
      if (typeof value !== 'string' || !isUuid(value)) throw invalid(field.key, 'A user id (UUID).')
      await users.requireActiveUser(executor, actor.organizationId, value, `fields.${field.key}`)
      columns.userId = columns.value = value.toLowerCase()
      return columns
    case 'single_select': {
      const option = typeof value === 'string' ? field.options.find((candidate) => candidate.id === value.toLowerCase()) : undefined
      if (!option) throw invalid(field.key, `An option id of this field; allowed: ${allowed()}.`)
      columns.value = option.id
      columns.optionIds = [option.id]
      return columns
    }
    case 'multi_select': {
      if (!Array.isArray(value)) throw invalid(field.key, `An array of option ids of this field; allowed: ${allowed()}.`)
      const ids: string[] = []
      for (const [index, entry] of value.entries()) {
        const option = typeof entry === 'string' ? field.options.find((candidate) => candidate.id === entry.toLowerCase()) : undefined
        if (!option) throw new ApiError(400, 'BAD_REQUEST', `An option id of this field; allowed: ${allowed()}.`, `fields.${field.key}[${index}]`)
        if (!ids.includes(option.id)) ids.push(option.id)
      }
      if (!ids.length) throw invalid(field.key, 'At least one option id (null clears the field).')
      columns.value = ids
      columns.optionIds = ids
      return columns
    }
  }
}

/**
 * Writes the `fields` a create or PATCH gave (`{key: value|null}`: named keys change, null clears,
 * others stay); a create also refuses a missing required field. 400 names `fields.<key>`.
 */
export function fieldWriter(users: UserDirectory) {
  const many = fieldsWriter(users)
  return async (tx: Transaction, actor: Actor, item: ExtendedItem, value: unknown, creating: boolean): Promise<ExtensionChange | undefined> => {
    const [outcome] = await many(tx, actor, [{ item, value }], creating)
    if (outcome instanceof ApiError) throw outcome
    return outcome
  }
}

type Columns = Awaited<ReturnType<typeof typed>>

/**
 * `fieldWriter` for a batch of work items (bulk create and PATCH, import): the definitions of each
 * project read once, the items' current values in one statement (a change), every value checked,
 * then one upsert and one delete for the whole batch. Each entry's outcome at its index: its
 * change, undefined (nothing changed), or the 400 naming every bad key of it.
 */
export function fieldsWriter(users: UserDirectory) {
  return async (tx: Transaction, actor: Actor, entries: readonly { item: ExtendedItem; value: unknown }[], creating: boolean): Promise<Array<ExtensionChange | undefined | ApiError>> => {
    const outcomes: Array<ExtensionChange | undefined | ApiError> = entries.map(() => undefined)
    const given = entries.flatMap((entry, index) => (entry.value === undefined && !creating ? [] : [{ index, ...entry }]))
    if (!given.length) return outcomes
    const definitionsOf = new Map<string, Definition[]>()
    for (const projectId of new Set(given.map((entry) => entry.item.projectId)))
      definitionsOf.set(
        projectId,
        await queryText<Definition>(
          tx,
          `select d.id, d.key, d.name, d.type, d.options, d.required from project_custom_fields p join custom_fields d on d.id = p.field_id and d.organization_id = p.organization_id
            where p.project_id = $1 and p.organization_id = $2`,
          [projectId, actor.organizationId],
        ),
      )
    const had = new Map<string, Map<string, unknown>>()
    const changing = given.filter((entry) => entry.value !== undefined)
    if (!creating && changing.length)
      for (const row of await queryText<{ itemId: string; fieldId: string; value: unknown }>(
        tx,
        'select work_item_id as "itemId", field_id as "fieldId", value from work_item_field_values where work_item_id = any($1::uuid[]) and organization_id = $2',
        [changing.map((entry) => entry.item.id), actor.organizationId],
      ))
        (had.get(row.itemId) ?? had.set(row.itemId, new Map()).get(row.itemId)!).set(row.fieldId, row.value)
    const upserts: { item: ExtendedItem; definition: Definition; columns: Columns }[] = []
    const cleared: string[] = []
    for (const { index, item, value } of given) {
      try {
        const change = await plan(tx, users, actor, definitionsOf.get(item.projectId)!, had.get(item.id) ?? new Map(), value, creating)
        if (!change) continue
        upserts.push(...change.upserts.map((upsert) => ({ item, ...upsert })))
        cleared.push(...change.cleared.map((fieldId) => `${item.id}:${fieldId}`))
        outcomes[index] = { previous: change.previous, next: change.next }
      } catch (error) {
        if (!(error instanceof ApiError)) throw error
        outcomes[index] = error
      }
    }
    if (outcomes.some((outcome) => outcome instanceof ApiError)) return outcomes
    if (cleared.length)
      await queryText(tx, "delete from work_item_field_values where organization_id = $1 and work_item_id = any($2::uuid[]) and (work_item_id::text || ':' || field_id::text) = any($3::text[])", [
        actor.organizationId,
        [...new Set(cleared.map((pair) => pair.slice(0, pair.indexOf(':'))))],
        cleared,
      ])
    if (upserts.length) {
      const width = 10
      await queryText(
        tx,
        `insert into work_item_field_values (work_item_id, field_id, organization_id, project_id, field_key, value, number_value, date_value, text_value, user_id, option_ids)
           values ${upserts
             .map((_, row) => {
               const at = (column: number) => `$${row * width + column + 2}`
               return `(${at(0)}::uuid, ${at(1)}::uuid, $1, ${at(2)}::uuid, ${at(3)}, ${at(4)}::jsonb, ${at(5)}::numeric, ${at(6)}::date, ${at(7)}, ${at(8)}::uuid, ${at(9)}::uuid[])`
             })
             .join(', ')}
         on conflict (work_item_id, field_id, organization_id) do update set value = excluded.value, number_value = excluded.number_value, date_value = excluded.date_value,
           text_value = excluded.text_value, user_id = excluded.user_id, option_ids = excluded.option_ids`,
        [
          actor.organizationId,
          ...upserts.flatMap(({ item, definition, columns }) => [
            item.id,
            definition.id,
            item.projectId,
            definition.key,
            JSON.stringify(columns.value),
            columns.numberValue,
            columns.dateValue,
            columns.textValue,
            columns.userId,
            columns.optionIds,
          ]),
        ],
      )
    }
    return outcomes
  }
}

/**
 * What one item's `fields` (`{key: value|null}`: named keys change, null clears, others stay)
 * changes against its project's `definitions` and its current values `had` (by field id): the
 * rows to write and to clear, and the before/after of the keys that change; undefined when none
 * does. A create also refuses a missing required field. Throws the 400 naming `fields.<key>`.
 */
async function plan(tx: Transaction, users: UserDirectory, actor: Actor, definitions: readonly Definition[], had: ReadonlyMap<string, unknown>, value: unknown, creating: boolean) {
  if (value !== undefined && (value === null || typeof value !== 'object' || Array.isArray(value))) throw new ApiError(400, 'BAD_REQUEST', 'An object of values by custom field key.', 'fields')
  const given = (value ?? {}) as Record<string, unknown>
  const byKey = new Map(definitions.map((definition) => [definition.key, definition]))
  const unknown = Object.keys(given).filter((key) => !byKey.has(key))
  if (unknown.length)
    throw new ValidationFailure(
      unknown.slice(0, 20).map((key) => ({
        code: 'BAD_REQUEST',
        field: `fields.${key.slice(0, 64)}`,
        message: `No custom field with this key is enabled for the project${definitions.length ? `; enabled: ${definitions.map((d) => d.key).sort().join(', ')}` : ''}.`,
      })),
    )
  // A key is read from the body's own properties: a field keyed `constructor` is not given by Object.prototype.
  const givenValue = (key: string) => (Object.hasOwn(given, key) ? given[key] : undefined)
  const missing = definitions.filter((definition) => {
    const next = givenValue(definition.key)
    return definition.required && (next === null || (creating && next === undefined))
  })
  if (missing.length)
    throw new ValidationFailure(
      missing.map((definition) => ({
        code: 'BAD_REQUEST',
        field: `fields.${definition.key}`,
        message: creating ? "Required for this project's work items." : "Required for this project's work items: it cannot be cleared.",
      })),
    )
  // Every value is checked before any is written, so one answer names every bad key.
  const checked = new Map<string, Columns>()
  const problems: ErrorItem[] = []
  for (const [key, next] of Object.entries(given)) {
    if (next === null) continue
    try {
      checked.set(key, await typed(tx, users, actor, byKey.get(key)!, next))
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      problems.push(...error.toItems())
    }
  }
  if (problems.length) throw new ValidationFailure(problems)
  const previous: Record<string, unknown> = {}
  const after: Record<string, unknown> = {}
  const upserts: { definition: Definition; columns: Columns }[] = []
  const cleared: string[] = []
  for (const [key, next] of Object.entries(given)) {
    const definition = byKey.get(key)!
    const old = had.has(definition.id) ? had.get(definition.id) : null
    if (next === null) {
      if (old === null) continue
      cleared.push(definition.id)
      previous[key] = old
      after[key] = null
      continue
    }
    const columns = checked.get(key)!
    if (JSON.stringify(columns.value) === JSON.stringify(old)) continue
    upserts.push({ definition, columns })
    previous[key] = old
    after[key] = columns.value
  }
  if (!Object.keys(after).length) return undefined
  return { upserts, cleared, previous, next: after }
}

/** The organization's definitions, by key. */
const definitionsOf = (executor: Executor, organizationId: string) =>
  queryText<Definition>(executor, 'select id, key, name, type, options, required from custom_fields where organization_id = $1 order by key', [organizationId])

/**
 * `fields` as one organization's definitions constrain it (MCP tools list it to their caller):
 * each key with its type, options (ids, named) and whether it is required where enabled.
 */
export async function describeFields(executor: Executor, organizationId: string): Promise<TSchema> {
  const properties: Record<string, TSchema> = {}
  for (const definition of await definitionsOf(executor, organizationId)) {
    const about = `${definition.name}${definition.required ? ' (required in projects that enable it)' : ''}. null clears it.`
    const choices = definition.options.map((option) => t.Literal(option.id, { title: option.name }))
    const schema: Record<FieldType, () => TSchema> = {
      text: () => t.String({ minLength: 1, maxLength: TEXT_MAX }),
      url: () => t.String({ format: 'uri', maxLength: URL_MAX }),
      number: () => t.Number(),
      date: () => t.String({ format: 'date' }),
      user: () => t.String({ format: 'uuid', description: 'A user id.' }),
      single_select: () => t.Union(choices),
      multi_select: () => t.Array(t.Union(choices), { minItems: 1 }),
    }
    const options = definition.options.length ? ` Options: ${definition.options.map((option) => `${option.id} (${option.name})`).join(', ')}.` : ''
    properties[definition.key] = t.Optional(t.Union([schema[definition.type](), t.Null()], { description: about + options }))
  }
  return t.Object(properties, { additionalProperties: false, description: "Custom field values by key (only fields enabled for the item's project)." })
}

/**
 * Text and url fields sort by their first this many characters (then by id): a cursor carries the
 * sort values of the page's last item and is at most 1024 characters (src/http/list-query.ts), so a
 * whole value (up to TEXT_MAX, URL_MAX) would make a next-page cursor the list then refuses.
 */
export const TEXT_SORT_PREFIX = 50

/** The value row of one field of the list's work item `w` in the organization (`fieldId` is a definition's id, a UUID read from the table). */
const valueOf = (organizationId: string, fieldId: string) => sql`v.work_item_id = w.id and v.organization_id = ${organizationId} and v.field_id = ${sql.raw(`'${fieldId}'`)}`

/** The `field.<key>` filters and sorts of the organization's definitions. */
export async function loadFieldFilters(executor: Executor, organizationId: string): Promise<{ filters: Record<string, Filter>; sorts: Record<string, SortKey> }> {
  const definitions = await definitionsOf(executor, organizationId)
  const filters: Record<string, Filter> = {}
  const sorts: Record<string, SortKey> = {}
  for (const definition of definitions) {
    if (!isUuid(definition.id)) continue
    // An uncorrelated `in` over the (project, field, value) index: the matching items are read once,
    // rather than probing every item of the project in the list's order.
    const within = (condition: SQL, { organization, project }: ListScope) =>
      sql`w.id in (select v.work_item_id from work_item_field_values v where v.organization_id = ${organization} and v.project_id = ${project} and v.field_id = ${sql.raw(`'${definition.id}'`)} and ${condition})`
    const sorted = (column: string, cast: SortKey['cast']) => ({ column: sql`(select ${sql.raw(column)} from work_item_field_values v where ${valueOf(organizationId, definition.id)})`, cast, nullable: true })
    const description = `Custom field ${definition.name} (${definition.type}).`
    const name = `field.${definition.key}`
    switch (definition.type) {
      case 'number':
        filters[name] = { type: 'number', column: 'v.number_value', within, description }
        sorts[name] = sorted('v.number_value', 'numeric')
        break
      case 'date':
        filters[name] = { type: 'date', column: 'v.date_value', within, description }
        sorts[name] = sorted('v.date_value', 'date')
        break
      case 'text':
      case 'url':
        filters[name] = { type: 'text', column: 'v.text_value', within, description }
        // By a prefix: the next page's cursor carries the last item's sort value, and a cursor is
        // at most MAX_CURSOR_LENGTH characters (values are up to TEXT_MAX and URL_MAX).
        sorts[name] = sorted(`left(v.text_value, ${TEXT_SORT_PREFIX})`, 'text')
        break
      case 'user':
        filters[name] = { type: 'uuid', me: true, column: 'v.user_id', within, description }
        break
      default:
        filters[name] = {
          type: 'options',
          values: definition.options.map((option) => option.id),
          aliases: Object.fromEntries(definition.options.map((option) => [option.name, option.id])),
          column: 'v.option_ids',
          within,
          description,
        }
    }
  }
  return { filters, sorts }
}
