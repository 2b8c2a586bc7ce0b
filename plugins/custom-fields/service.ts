/**
 * Custom fields: definitions (organization-wide; administrators write, members read), enabled per
 * project by its owners. Deleting a definition removes its values; disabling it for a project
 * removes its values there. Values are written through the work-items extension (values.ts).
 */
import { sql } from 'drizzle-orm'
import { queryRows, queryText, type Database, type Executor, type Transaction } from '../../src/db'
import { checkIfMatch, created } from '../../src/http/answer'
import { ApiError, badRequest, conflict, forbidden, notFound, requireReference } from '../../src/http/errors'
import type { IdempotentRequest } from '../../src/http/idempotency'
import type { ListCache } from '../../src/http/list-cache'
import { listIdentity, parseListQuery, readCursor, type ListShape } from '../../src/http/list-query'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid, uuidv7 } from '../../src/ids'
import { isAdministrator, type Actor } from '../../src/services/identity'
import { isoFromText, selectListPage } from '../../src/sql'
import { organizationListPage } from '../../src/organization-lists'
import type { Writes } from '../../src/writes'
import { lineProblem, readAfter, type ExportSection, type ImportContext, type ImportSection, type ProjectAccessService } from '../projects/api'
import type { UserDirectory } from '../auth/api'
import { CustomFieldInput, type CustomFieldPatch, type CustomFieldResource } from './model'
import { projectCustomFields, type FieldOption, type FieldType } from './schema'

export const COLUMNS = 'd.id, d.key, d.name, d.type, d.options, d.required, d.created_at as "createdAt", d.updated_at as "updatedAt"'
type FieldTextRow = CustomFieldResource
export const fromText = (row: FieldTextRow): CustomFieldResource => ({ ...row, createdAt: isoFromText(row.createdAt), updatedAt: isoFromText(row.updatedAt) })

/** The custom fields enabled for a project, in its export (before the work items), by id, each as API v1 shows it. */
export const fieldExportSection: ExportSection = {
  type: 'custom_field',
  order: 20,
  scope: 'work_items:read',
  read: (tx, organizationId, projectId, after, limit) =>
    readAfter(
      () =>
        queryRows<FieldTextRow & { after: string }>(
          tx,
          sql`select ${sql.raw(COLUMNS)}, d.id::text as after from project_custom_fields pf
                join custom_fields d on d.id = pf.field_id and d.organization_id = pf.organization_id
               where pf.project_id = ${projectId} and pf.organization_id = ${organizationId} ${after === null ? sql`` : sql`and pf.field_id > ${after}::uuid`}
               order by pf.field_id limit ${limit}`,
        ),
      limit,
      ({ after: _, ...row }) => fromText(row),
    ),
}

const SELECTS: readonly FieldType[] = ['single_select', 'multi_select']

/** The organization's definitions by key. */
const FIELD_LIST: ListShape = {
  name: 'custom-fields',
  filters: {},
  sorts: { key: { column: 'd.key', cast: 'text' } },
  defaultOrder: ['key'],
  tiebreaker: { column: 'd.id', cast: 'uuid' },
}

/** A project's enabled definitions by key. */
const PROJECT_FIELD_LIST: ListShape = { ...FIELD_LIST, name: 'project-custom-fields' }
const PROJECT_FIELDS_FROM = 'project_custom_fields p join custom_fields d on d.id = p.field_id and d.organization_id = p.organization_id'

function requireAdministrator(actor: Actor) {
  if (!isAdministrator(actor)) throw forbidden('Only an administrator or superadministrator may change custom fields.')
}

type FoundField = CustomFieldResource & { updatedAtDate: Date }

/** The organization's definition, or undefined (also for an id that is no UUID). */
async function readField(executor: Executor, organizationId: string, fieldId: string, lock = false): Promise<FoundField | undefined> {
  const [row] = isUuid(fieldId)
    ? await queryText<FieldTextRow>(executor, `select ${COLUMNS} from custom_fields d where d.id = $1 and d.organization_id = $2${lock ? ' for update' : ''}`, [fieldId, organizationId])
    : []
  if (!row) return undefined
  const resource = fromText(row)
  return { ...resource, updatedAtDate: new Date(resource.updatedAt) }
}

/** The definition the path names; 404 when it is not the organization's. */
async function findField(executor: Executor, organizationId: string, fieldId: string, lock = false): Promise<FoundField> {
  const found = await readField(executor, organizationId, fieldId, lock)
  if (!found) throw notFound('No such custom field.')
  return found
}

const strip = ({ updatedAtDate: _, ...field }: FoundField): CustomFieldResource => field

/** The options of a select field after an input list: ids kept where named, new ones made; 400 naming the problem. */
function resolveOptions(type: FieldType, input: CustomFieldInput['options'], current: readonly FieldOption[] = []): FieldOption[] {
  if (!SELECTS.includes(type)) {
    if (input?.length) throw badRequest('Only select fields have options.', 'options')
    return []
  }
  if (!input?.length) throw badRequest('A select field needs at least one option.', 'options')
  const known = new Map(current.map((option) => [option.id, option]))
  const names = new Set<string>()
  return input.map((option, index) => {
    const name = option.name.trim()
    if (!name) throw badRequest('An option needs a name.', `options[${index}].name`)
    if (names.has(name.toLowerCase())) throw badRequest('Option names must be unique (case-insensitive).', `options[${index}].name`)
    names.add(name.toLowerCase())
    if (option.id !== undefined) requireReference(known.get(option.id.toLowerCase()), `options[${index}].id`, 'Not an option of this field; leave `id` out for a new option.')
    return { id: option.id?.toLowerCase() ?? uuidv7(), name, color: (option.color ?? known.get(option.id?.toLowerCase() ?? '')?.color ?? '#6b7280').toLowerCase() }
  })
}

/**
 * An import's custom fields (before its work items): each `custom_field` line's definition matched
 * by key in the organization (the same type, every option found by name), or created when the
 * importer is an administrator (else the line is refused), then enabled for the project. The new
 * ids under the file's ids, options under theirs (`custom_field_option`). A few statements for all.
 */
export const fieldImportSection: ImportSection = {
  type: 'custom_field',
  order: 20,
  scope: 'work_items:write',
  async write({ tx }, context) {
    const { organizationId } = context.actor
    const lines = context.lines('custom_field')
    if (!lines.length) return 0
    const planned: { line: number; oldId?: string; input: CustomFieldInput; oldOptions: { id?: string; name: string }[] }[] = []
    for (const { line, data } of lines) {
      const oldOptions = (Array.isArray(data.options) ? data.options : []).filter((option): option is { id?: string; name: string } => Boolean(option) && typeof option.name === 'string')
      const input = {
        key: data.key,
        name: data.name,
        type: data.type,
        ...(SELECTS.includes(data.type as FieldType) ? { options: oldOptions.map(({ name }) => ({ name: name.trim() })) } : {}),
        required: data.required === true,
      }
      const problem = lineProblem(CustomFieldInput, input)
      if (problem) context.refuse(line, `custom field: ${problem}`)
      else planned.push({ line, oldId: typeof data.id === 'string' ? data.id : undefined, input: input as CustomFieldInput, oldOptions })
    }
    const existing = new Map(
      (await queryText<FieldTextRow>(tx, `select ${COLUMNS} from custom_fields d where d.organization_id = $1 and d.key = any($2::text[])`, [organizationId, planned.map(({ input }) => input.key)])).map((row) => [
        row.key,
        row,
      ]),
    )
    const fieldIds = context.ids('custom_field')
    const optionIds = context.ids('custom_field_option')
    let created = 0
    for (const { line, oldId, input, oldOptions } of planned) {
      let field = existing.get(input.key)
      if (!field && !context.administrator) {
        context.refuse(line, `the custom field "${input.key}" is not in this organization; an administrator can import it`)
        continue
      }
      if (!field) {
        let options: FieldOption[]
        try {
          options = resolveOptions(input.type, input.options)
        } catch (error) {
          context.refuse(line, `custom field ${(error as ApiError).field ?? ''}: ${(error as Error).message}`)
          continue
        }
        ;[field] = await queryText<FieldTextRow>(
          tx,
          `insert into custom_fields as d (id, organization_id, key, name, type, options, required) values ($1, $2, $3, $4, $5, $6::jsonb, $7) returning ${COLUMNS}`,
          [uuidv7(), organizationId, input.key, input.name, input.type, JSON.stringify(options), input.required ?? false],
        )
        created++
      } else if (field.type !== input.type) {
        context.refuse(line, `the custom field "${input.key}" is a ${field.type} field in this organization, not ${input.type}`)
        continue
      }
      const byName = new Map((field!.options as FieldOption[]).map((option) => [option.name.toLowerCase(), option.id]))
      for (const option of oldOptions) {
        const id = byName.get(option.name.trim().toLowerCase())
        if (!id) context.refuse(line, `the option "${option.name.slice(0, 80)}" is not one of this organization's "${input.key}"; add it first`)
        else if (option.id) optionIds.set(option.id, id)
      }
      fieldIds.set(`key:${input.key}`, field!.id)
      if (oldId) fieldIds.set(oldId, field!.id)
    }
    const enabled = [...new Set([...fieldIds.entries()].filter(([key]) => key.startsWith('key:')).map(([, id]) => id))]
    if (enabled.length) await tx.insert(projectCustomFields).values(enabled.map((fieldId) => ({ projectId: context.projectId, fieldId, organizationId }))).onConflictDoNothing()
    return created
  },
}

/**
 * A work item's field values in an import, as a create takes them: select values by their new
 * option ids, user values by the organization's active users (by id, email or username; anyone
 * else left out and noted); other values as given (the field writer checks each).
 */
export function fieldsImported(users: UserDirectory) {
  return async (tx: Transaction, context: ImportContext, entries: readonly { line: number; value: unknown }[]): Promise<unknown[]> => {
    const objects = entries.map(({ value }) => (value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined))
    const keys = [...new Set(objects.flatMap((value) => Object.keys(value ?? {})))]
    if (!keys.length) return entries.map(() => undefined)
    const types = new Map(
      (await queryText<{ key: string; type: FieldType }>(tx, 'select key, type from custom_fields where organization_id = $1 and key = any($2::text[])', [context.actor.organizationId, keys])).map((row) => [row.key, row.type]),
    )
    const userRefs = objects.flatMap((value) => Object.entries(value ?? {}).filter(([key, item]) => types.get(key) === 'user' && typeof item === 'string').map(([, item]) => item as string))
    const people = await users.activeUsersNamed(tx, context.actor.organizationId, userRefs)
    const options = context.ids('custom_field_option')
    return objects.map((value, index) => {
      if (!value) return undefined
      const out: Record<string, unknown> = {}
      for (const [key, item] of Object.entries(value)) {
        const type = types.get(key)
        if (type === 'single_select' && typeof item === 'string') out[key] = options.get(item) ?? item
        else if (type === 'multi_select' && Array.isArray(item)) out[key] = item.map((id) => (typeof id === 'string' ? (options.get(id) ?? id) : id))
        else if (type === 'user' && typeof item === 'string') {
          const id = people.get(item)
          if (id) out[key] = id
          else context.note(entries[index]!.line, `fields.${key}: ${item.slice(0, 80)} is not an active user of this organization: left empty`)
        } else out[key] = item
      }
      return out
    })
  }
}

export interface CustomFieldDeps {
  db: Database
  lists: ListCache
  writes: Writes
  access: ProjectAccessService
}

export function createCustomFields({ db, lists, writes, access }: CustomFieldDeps) {
  return {
    /** The organization's definitions by key, by page or cursor. */
    list(actor: Actor, request: PageRequest) {
      return organizationListPage(db, actor.organizationId, { shape: FIELD_LIST, from: 'custom_fields d', columns: COLUMNS, toItem: fromText }, request, lists)
    },

    async get(actor: Actor, fieldId: string) {
      return strip(await findField(db, actor.organizationId, fieldId))
    },

    create(actor: Actor, input: CustomFieldInput, request?: IdempotentRequest) {
      requireAdministrator(actor)
      const options = resolveOptions(input.type, input.options)
      return writes.change(actor, 'organization', async ({ tx, audit, emit }) => {
        const [row] = await queryText<FieldTextRow>(
          tx,
          `insert into custom_fields as d (id, organization_id, key, name, type, options, required) values ($1, $2, $3, $4, $5, $6::jsonb, $7)
             on conflict do nothing returning ${COLUMNS}`,
          [uuidv7(), actor.organizationId, input.key, input.name, input.type, JSON.stringify(options), input.required ?? false],
        )
        if (!row) {
          const [existing] = await queryText<{ id: string }>(tx, 'select id from custom_fields where organization_id = $1 and key = $2', [actor.organizationId, input.key])
          throw conflict('A custom field with this key already exists.', existing?.id, 'key')
        }
        const field = fromText(row)
        await audit({ action: 'custom_field.created', resourceType: 'custom_field', resourceId: field.id, changes: { after: { key: field.key, name: field.name, type: field.type, options, required: field.required } } })
        await emit({ type: 'custom_field.created', projectId: null, data: field })
        return created(field)
      }, request)
    },

    /** Renames, changes options (ids kept; removed options leave every value) or `required`; the key and type never change. */
    update(actor: Actor, fieldId: string, patch: CustomFieldPatch, ifMatch?: string) {
      return writes.change(actor, 'organization', async ({ tx, audit, emit }) => {
        const current = await findField(tx, actor.organizationId, fieldId, true)
        requireAdministrator(actor)
        checkIfMatch(ifMatch, current.updatedAtDate)
        const next = {
          name: patch.name ?? current.name,
          options: patch.options === undefined ? current.options : resolveOptions(current.type, patch.options, current.options),
          required: patch.required ?? current.required,
        }
        const before: Record<string, unknown> = {}
        const after: Record<string, unknown> = {}
        for (const key of ['name', 'options', 'required'] as const)
          if (JSON.stringify(next[key]) !== JSON.stringify(current[key])) {
            before[key] = current[key]
            after[key] = next[key]
          }
        if (!Object.keys(after).length) return strip(current)
        const [row] = await queryText<FieldTextRow>(
          tx,
          `update custom_fields d set name = $3, options = $4::jsonb, required = $5, updated_at = greatest(now(), $6::timestamptz) where d.id = $1 and d.organization_id = $2 returning ${COLUMNS}`,
          [current.id, actor.organizationId, next.name, JSON.stringify(next.options), next.required, new Date(current.updatedAtDate.getTime() + 1).toISOString()],
        )
        const kept = new Set(next.options.map((option) => option.id))
        const removed = current.options.filter((option) => !kept.has(option.id)).map((option) => option.id)
        if (removed.length) await removeOptions(tx, actor.organizationId, current.id, removed)
        const field = fromText(row!)
        await audit({ action: 'custom_field.updated', resourceType: 'custom_field', resourceId: field.id, changes: { before, after } })
        await emit({ type: 'custom_field.updated', projectId: null, data: field, previous: before })
        return field
      })
    },

    /** Deletes the definition with every value of it (its project enablements go too). */
    delete(actor: Actor, fieldId: string, ifMatch?: string) {
      return writes.change(actor, 'organization', async ({ tx, audit, emit }) => {
        const current = await findField(tx, actor.organizationId, fieldId, true)
        requireAdministrator(actor)
        checkIfMatch(ifMatch, current.updatedAtDate)
        await queryText(tx, 'delete from custom_fields where id = $1 and organization_id = $2', [current.id, actor.organizationId])
        await audit({ action: 'custom_field.deleted', resourceType: 'custom_field', resourceId: current.id, changes: { before: { key: current.key, name: current.name, type: current.type } } })
        await emit({ type: 'custom_field.deleted', projectId: null, data: strip(current) })
        return { id: current.id }
      })
    },

    /** The fields enabled for a project (viewer), by key. */
    async projectFields(actor: Actor, projectId: string, request: PageRequest) {
      const query = parseListQuery(PROJECT_FIELD_LIST, {})
      const ofProject = sql`p.project_id = ${projectId} and p.organization_id = ${actor.organizationId}`
      const identity = listIdentity(PROJECT_FIELD_LIST, `${actor.organizationId} ${projectId}`, query)
      const after = readCursor(request, identity, query.order)
      const { version } = await access.listAccess(actor, projectId)
      return lists.page(`project-custom-fields ${projectId} ${request.cursor ?? request.page} ${request.size}`, version, () =>
        selectListPage<FieldTextRow, CustomFieldResource>(
          db,
          {
            columns: COLUMNS,
            from: PROJECT_FIELDS_FROM,
            conditions: [ofProject],
            order: query.order,
            total: sql`select count(*) from project_custom_fields p where ${ofProject}`,
            identity,
            after,
          },
          request,
          fromText,
        ),
      )
    },

    /** Enables a field for a project (owner); enabling it again changes nothing. */
    enable(actor: Actor, projectId: string, fieldId: string) {
      return writes.change(actor, 'project', async ({ tx, audit, emit }) => {
        await access.requireProjectAccess(actor, projectId, 'owner', tx)
        const field = requireReference(await readField(tx, actor.organizationId, fieldId), 'fieldId', 'No custom field with this id in your organization.')
        const [added] = await queryText<{ fieldId: string }>(
          tx,
          'insert into project_custom_fields (project_id, field_id, organization_id) values ($1, $2, $3) on conflict do nothing returning field_id as "fieldId"',
          [projectId, field.id, actor.organizationId],
        )
        if (added) {
          await audit({ action: 'project.custom_field_enabled', resourceType: 'project', resourceId: projectId, projectId, changes: { after: { fieldId: field.id, key: field.key } } })
          await emit({ type: 'project_custom_field.created', projectId, data: { projectId, fieldId: field.id, key: field.key } })
        }
        return created(strip(field))
      })
    },

    /** Disables a field for a project (owner): its values on the project's work items are removed. */
    disable(actor: Actor, projectId: string, fieldId: string) {
      return writes.change(actor, 'project', async ({ tx, audit, emit }) => {
        await access.requireProjectAccess(actor, projectId, 'owner', tx)
        const [removed] = isUuid(fieldId)
          ? await queryText<{ fieldId: string; key: string }>(
              tx,
              `delete from project_custom_fields p using custom_fields d where p.project_id = $1 and p.field_id = $2 and p.organization_id = $3
                and d.id = p.field_id and d.organization_id = p.organization_id returning p.field_id as "fieldId", d.key`,
              [projectId, fieldId, actor.organizationId],
            )
          : []
        if (!removed) throw notFound('This custom field is not enabled for the project.')
        await queryText(tx, 'delete from work_item_field_values where project_id = $1 and field_id = $2 and organization_id = $3', [projectId, removed.fieldId, actor.organizationId])
        await audit({ action: 'project.custom_field_disabled', resourceType: 'project', resourceId: projectId, projectId, changes: { before: { fieldId: removed.fieldId } } })
        await emit({ type: 'project_custom_field.deleted', projectId, data: { projectId, fieldId: removed.fieldId, key: removed.key } })
        return { id: removed.fieldId }
      })
    },
  }
}

/** Takes removed options out of every value of the field: a single select loses its value, a multi select the option. */
async function removeOptions(executor: Executor, organizationId: string, fieldId: string, removed: readonly string[]) {
  // Read, then written value by value: Citus runs no STABLE function (to_jsonb) over columns in an
  // UPDATE; an administrator's change of options is rare, and each statement names the organization.
  const gone = new Set(removed)
  const holding = await queryText<{ workItemId: string; optionIds: string[]; type: FieldType }>(
    executor,
    `select v.work_item_id as "workItemId", v.option_ids as "optionIds" from work_item_field_values v
      where v.organization_id = $1 and v.field_id = $2 and v.option_ids && $3::uuid[]`,
    [organizationId, fieldId, removed],
  )
  const emptied: string[] = []
  for (const row of holding) {
    const kept = row.optionIds.filter((id) => !gone.has(id))
    if (!kept.length) emptied.push(row.workItemId)
    else
      await queryText(executor, 'update work_item_field_values set option_ids = $4::uuid[], value = $5::jsonb where work_item_id = $3 and field_id = $2 and organization_id = $1', [
        organizationId,
        fieldId,
        row.workItemId,
        kept,
        JSON.stringify(kept),
      ])
  }
  if (emptied.length)
    await queryText(executor, 'delete from work_item_field_values where organization_id = $1 and field_id = $2 and work_item_id = any($3::uuid[])', [organizationId, fieldId, emptied])
}

export type CustomFieldService = ReturnType<typeof createCustomFields>
