/**
 * Labels: organization-wide, read by every member, written by administrators (404 before 403);
 * attached to work items through the work-items plugin's extension (`labels` on every work item).
 */
import { sql, type SQL } from 'drizzle-orm'
import { changedFields } from '../../src/audit'
import { queryRows, queryText, type Database, type Executor, type Transaction } from '../../src/db'
import { checkIfMatch, created } from '../../src/http/answer'
import { ApiError, conflict, forbidden, notFound, requireReferences } from '../../src/http/errors'
import type { IdempotentRequest } from '../../src/http/idempotency'
import type { ListCache } from '../../src/http/list-cache'
import type { ListScope, ListShape } from '../../src/http/list-query'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid, uuidv7 } from '../../src/ids'
import { isAdministrator, type Actor } from '../../src/services/identity'
import { organizationListPage } from '../../src/organization-lists'
import { isoFromText } from '../../src/sql'
import type { Writes } from '../../src/writes'
import { lineProblem, readAfter, type ExportSection, type ImportContext, type ImportSection } from '../projects/api'
import type { ExtensionChange, ExtendedItem } from '../work-items/api'
import { LabelInput, type LabelPatch, type LabelResource } from './model'
import { labels } from './schema'

/** At most this many labels on one work item. */
export const LABELS_PER_ITEM = 50

const COLUMNS = 'l.id, l.name, l.color, l.created_at as "createdAt", l.updated_at as "updatedAt"'
type LabelTextRow = LabelResource
const fromText = (row: LabelTextRow): LabelResource => ({ ...row, createdAt: isoFromText(row.createdAt), updatedAt: isoFromText(row.updatedAt) })

/** A label as an import names it (a `label` line, or one a work item carries): `{id?, name, color?}`. */
const namedLabels = (value: unknown): { id?: string; name?: unknown; color?: unknown }[] =>
  Array.isArray(value) ? value.filter((label): label is { id?: string; name?: unknown; color?: unknown } => Boolean(label) && typeof label === 'object') : []

/**
 * An import's labels (before its work items): every name its `label` lines and its work items
 * name, matched in the organization ignoring case; a missing one is created when the importer is
 * an administrator, else the line naming it is refused. The new ids under the file's ids and under
 * `name:<lower-case name>`. One read and one insert for all of them.
 */
export const labelImportSection: ImportSection = {
  type: 'label',
  order: 10,
  scope: 'work_items:write',
  async write({ tx }, context) {
    const wanted = new Map<string, { line: number; name: string; color?: string; ids: Set<string> }>()
    const want = (line: number, label: { id?: string; name?: unknown; color?: unknown }) => {
      const input = { name: typeof label.name === 'string' ? label.name.trim() : label.name, ...(label.color !== undefined ? { color: label.color } : {}) }
      const problem = lineProblem(LabelInput, input)
      if (problem) return context.refuse(line, `label: ${problem}`)
      const name = input.name as string
      const entry = wanted.get(name.toLowerCase()) ?? wanted.set(name.toLowerCase(), { line, name, color: input.color as string | undefined, ids: new Set() }).get(name.toLowerCase())!
      if (typeof label.id === 'string') entry.ids.add(label.id)
    }
    for (const { line, data } of context.lines('label')) want(line, data)
    for (const { line, data } of context.lines('work_item')) for (const label of namedLabels(data.labels)) want(line, label)
    if (!wanted.size) return 0
    const { organizationId } = context.actor
    const found = new Map(
      (await queryText<{ id: string; key: string }>(tx, 'select id, lower(name) as key from labels where organization_id = $1 and lower(name) = any($2::text[])', [organizationId, [...wanted.keys()]])).map(
        (row) => [row.key, row.id],
      ),
    )
    const missing = [...wanted.entries()].filter(([key]) => !found.has(key))
    if (missing.length && !context.administrator)
      for (const [, { line, name }] of missing) context.refuse(line, `the label "${name.slice(0, 80)}" is not in this organization; an administrator can import it`)
    else if (missing.length) {
      // One multi-row insert, every row naming the organization: Citus routes it to its one shard.
      const made = (
        await tx
          .insert(labels)
          .values(missing.map(([, label]) => ({ organizationId, name: label.name, color: (label.color ?? '#6b7280').toLowerCase() })))
          .onConflictDoNothing()
          .returning({ id: labels.id, name: labels.name })
      ).map((row) => ({ id: row.id, key: row.name.toLowerCase() }))
      for (const row of made) found.set(row.key, row.id)
    }
    const ids = context.ids('label')
    for (const [key, { ids: old }] of wanted) {
      const id = found.get(key)
      if (!id) continue
      ids.set(`name:${key}`, id)
      for (const oldId of old) ids.set(oldId, id)
    }
    return context.administrator ? missing.length : 0
  },
}

/** A work item's labels in an import, by their new ids (the label section wrote or found each). */
export async function importedLabels(_tx: Transaction, context: ImportContext, entries: readonly { line: number; value: unknown }[]): Promise<unknown[]> {
  const ids = context.ids('label')
  return entries.map(({ value }) => {
    if (value === undefined || value === null) return undefined
    const mapped = namedLabels(value)
      .map((label) => (typeof label.id === 'string' ? ids.get(label.id) : undefined) ?? (typeof label.name === 'string' ? ids.get(`name:${label.name.trim().toLowerCase()}`) : undefined))
      .filter((id): id is string => id !== undefined)
    return [...new Set(mapped)]
  })
}

/** The labels a project's work items carry, in its export (before the work items), by id, each as API v1 shows it. */
export const labelExportSection: ExportSection = {
  type: 'label',
  order: 10,
  scope: 'work_items:read',
  read: (tx, organizationId, projectId, after, limit) =>
    readAfter(
      () =>
        queryRows<LabelTextRow & { after: string }>(
          tx,
          sql`select ${sql.raw(COLUMNS)}, l.id::text as after from labels l
               where l.organization_id = ${organizationId} ${after === null ? sql`` : sql`and l.id > ${after}::uuid`}
                 and exists (select 1 from work_item_labels wl where wl.label_id = l.id and wl.project_id = ${projectId} and wl.organization_id = ${organizationId})
               order by l.id limit ${limit}`,
        ),
      limit,
      ({ after: _, ...row }) => fromText(row),
    ),
}

/** The organization's labels ($1) by name. */
const LABEL_LIST: ListShape = {
  name: 'labels',
  filters: {},
  sorts: { name: { column: 'l.name', cast: 'text' } },
  defaultOrder: ['name'],
  tiebreaker: { column: 'l.id', cast: 'uuid' },
}

/** A work item's labels as JSON `[{id, name, color}]` by name: the `labels` column of every work item read (`w`) in `organization`. */
export const labelsColumn = (organization: SQL) => sql`coalesce((select json_agg(json_build_object('id', l.id, 'name', l.name, 'color', l.color) order by l.name, l.id)
    from work_item_labels wl join labels l on l.id = wl.label_id and l.organization_id = ${organization}
    where wl.work_item_id = w.id and wl.organization_id = ${organization}), '[]'::json)`

/**
 * The `label` filter of work-item lists: items carrying any of the named labels (exact names). An
 * uncorrelated `in`: the planner reads the matching items from `work_item_labels_label_idx` once,
 * rather than probing every item of the project in the list's order.
 */
export const labelFilterWithin = (condition: SQL, { organization, project }: ListScope) =>
  sql`w.id in (select wl.work_item_id from work_item_labels wl join labels l on l.id = wl.label_id and l.organization_id = ${organization}
    where wl.organization_id = ${organization} and wl.project_id = ${project} and ${condition})`

function requireAdministrator(actor: Actor) {
  if (!isAdministrator(actor)) throw forbidden('Only an administrator or superadministrator may change labels.')
}

type Found = LabelResource & { updatedAtDate: Date }

async function findLabel(executor: Executor, actor: Actor, labelId: string, lock = false): Promise<Found> {
  const [row] = isUuid(labelId)
    ? await queryText<LabelTextRow>(executor, `select ${COLUMNS} from labels l where l.id = $1 and l.organization_id = $2${lock ? ' for update' : ''}`, [labelId, actor.organizationId])
    : []
  if (!row) throw notFound('No such label.')
  const label = fromText(row)
  return { ...label, updatedAtDate: new Date(label.updatedAt) }
}

async function requireUniqueName(executor: Executor, actor: Actor, name: string, exceptId: string | null = null) {
  const [existing] = await queryText<{ id: string }>(executor, 'select id from labels where organization_id = $1 and lower(name) = lower($2) and ($3::uuid is null or id <> $3::uuid)', [
    actor.organizationId,
    name,
    exceptId,
  ])
  if (existing) throw conflict('A label with this name already exists.', existing.id, 'name')
}

const strip = ({ updatedAtDate: _, ...label }: Found): LabelResource => label
const ref = (label: { id: string; name: string; color: string }) => ({ id: label.id, name: label.name, color: label.color })

export interface LabelDeps {
  db: Database
  lists: ListCache
  writes: Writes
}

export function createLabels({ db, lists, writes }: LabelDeps) {
  return {
    /** The organization's labels by name, by page or cursor (a cached page of the organization's version answers without reading rows). */
    list(actor: Actor, request: PageRequest) {
      return organizationListPage(db, actor.organizationId, { shape: LABEL_LIST, from: 'labels l', columns: COLUMNS, toItem: fromText }, request, lists)
    },

    async get(actor: Actor, labelId: string) {
      return strip(await findLabel(db, actor, labelId))
    },

    create(actor: Actor, input: LabelInput, request?: IdempotentRequest) {
      requireAdministrator(actor)
      return writes.change(actor, 'organization', async ({ tx, audit, emit }) => {
        await requireUniqueName(tx, actor, input.name)
        const [row] = await queryText<LabelTextRow>(
          tx,
          `insert into labels as l (id, organization_id, name, color) values ($1, $2, $3, lower($4)) on conflict do nothing returning ${COLUMNS}`,
          [uuidv7(), actor.organizationId, input.name, input.color ?? '#6b7280'],
        )
        // A concurrent create of the same name committed between the check and the insert.
        if (!row) await requireUniqueName(tx, actor, input.name)
        const label = fromText(row!)
        await audit({ action: 'label.created', resourceType: 'label', resourceId: label.id, changes: { after: { name: label.name, color: label.color } } })
        await emit({ type: 'label.created', projectId: null, data: label })
        return created(label)
      }, request)
    },

    update(actor: Actor, labelId: string, patch: LabelPatch, ifMatch?: string) {
      return writes.change(actor, 'organization', async ({ tx, audit, emit }) => {
        const current = await findLabel(tx, actor, labelId, true)
        requireAdministrator(actor)
        checkIfMatch(ifMatch, current.updatedAtDate)
        const next = { name: patch.name ?? current.name, color: (patch.color ?? current.color).toLowerCase() }
        const changes = changedFields(current, next)
        if (!changes) return strip(current)
        const { before = {}, after = {} } = changes
        if (after.name !== undefined) await requireUniqueName(tx, actor, next.name, current.id)
        const [row] = await queryText<LabelTextRow>(
          tx,
          `update labels l set name = $3, color = $4, updated_at = greatest(now(), $5::timestamptz) where l.id = $1 and l.organization_id = $2 returning ${COLUMNS}`,
          [current.id, actor.organizationId, next.name, next.color, new Date(current.updatedAtDate.getTime() + 1).toISOString()],
        )
        const label = fromText(row!)
        await audit({ action: 'label.updated', resourceType: 'label', resourceId: label.id, changes: { before, after } })
        await emit({ type: 'label.updated', projectId: null, data: label, previous: before })
        return label
      })
    },

    /** Deletes the label; the work items that carried it stay (without it). */
    delete(actor: Actor, labelId: string, ifMatch?: string) {
      return writes.change(actor, 'organization', async ({ tx, audit, emit }) => {
        const current = await findLabel(tx, actor, labelId, true)
        requireAdministrator(actor)
        checkIfMatch(ifMatch, current.updatedAtDate)
        await queryText(tx, 'delete from labels where id = $1 and organization_id = $2', [current.id, actor.organizationId])
        await audit({ action: 'label.deleted', resourceType: 'label', resourceId: current.id, changes: { before: { name: current.name, color: current.color } } })
        await emit({ type: 'label.deleted', projectId: null, data: strip(current) })
        return { id: current.id }
      })
    },
  }
}

export type LabelService = ReturnType<typeof createLabels>

/**
 * Sets a work item's labels to `value` (label ids: the whole set) in the change's transaction.
 * An id that is not a label of the organization is 400 naming `labels[i]`.
 */
export async function writeItemLabels(tx: Transaction, actor: Actor, item: ExtendedItem, value: unknown, creating: boolean): Promise<ExtensionChange | undefined> {
  const [outcome] = await writeItemsLabels(tx, actor, [{ item, value }], creating)
  if (outcome instanceof ApiError) throw outcome
  return outcome
}

type Label = { id: string; name: string; color: string }

/**
 * `writeItemLabels` for a batch of work items (bulk create and PATCH, import), in at most four
 * statements whatever its size: the labels named, shared-locked; the items' current labels (a
 * change); the links removed; the links added. Each entry's outcome at its index: its change,
 * undefined (nothing changed), or the 400 naming its unknown ids.
 */
export async function writeItemsLabels(
  tx: Transaction,
  actor: Actor,
  entries: readonly { item: ExtendedItem; value: unknown }[],
  creating: boolean,
): Promise<Array<ExtensionChange | undefined | ApiError>> {
  const outcomes: Array<ExtensionChange | undefined | ApiError> = entries.map(() => undefined)
  const given = entries.flatMap((entry, index) => (entry.value === undefined || entry.value === null ? [] : [{ index, item: entry.item, ids: (entry.value as string[]).map((id) => id.toLowerCase()) }]))
  if (!given.length) return outcomes
  const named = [...new Set(given.flatMap((entry) => entry.ids))].filter(isUuid)
  const known = named.length
    ? // Shared-locked: a label deleted meanwhile waits for this change (or is gone: 400), never a broken foreign key.
      await queryText<Label>(tx, 'select id, name, color from labels where organization_id = $1 and id = any($2::uuid[]) order by name, id for key share', [actor.organizationId, named])
    : []
  const found = new Set(known.map((label) => label.id))
  const current = new Map<string, Label[]>()
  if (!creating)
    for (const row of await queryText<Label & { itemId: string }>(
      tx,
      `select wl.work_item_id as "itemId", l.id, l.name, l.color from work_item_labels wl join labels l on l.id = wl.label_id and l.organization_id = wl.organization_id
        where wl.work_item_id = any($1::uuid[]) and wl.organization_id = $2 order by l.name, l.id`,
      [given.map((entry) => entry.item.id), actor.organizationId],
    ))
      current.set(row.itemId, [...(current.get(row.itemId) ?? []), { id: row.id, name: row.name, color: row.color }])
  const removed: string[] = []
  const added: { item: ExtendedItem; label: string }[] = []
  for (const { index, item, ids } of given) {
    try {
      requireReferences(ids, found, (at) => `labels[${at}]`, 'No label with this id in your organization.')
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      outcomes[index] = error
      continue
    }
    const wanted = new Set(ids)
    const next = known.filter((label) => wanted.has(label.id))
    const had = current.get(item.id) ?? []
    const hadIds = new Set(had.map((label) => label.id))
    if (hadIds.size === wanted.size && [...wanted].every((id) => hadIds.has(id))) continue
    for (const id of hadIds) if (!wanted.has(id)) removed.push(`${item.id}:${id}`)
    for (const id of wanted) if (!hadIds.has(id)) added.push({ item, label: id })
    // Later entries naming the same item see this one's labels (a batch names each item once; kept exact anyway).
    current.set(item.id, next)
    outcomes[index] = { previous: had.map(ref), next: next.map(ref) }
  }
  if (outcomes.some((outcome) => outcome instanceof ApiError)) return outcomes
  if (removed.length)
    await queryText(tx, "delete from work_item_labels where organization_id = $1 and work_item_id = any($2::uuid[]) and (work_item_id::text || ':' || label_id::text) = any($3::text[])", [
      actor.organizationId,
      [...new Set(removed.map((pair) => pair.slice(0, pair.indexOf(':'))))],
      removed,
    ])
  // Rows of VALUES (an INSERT … SELECT would go through the Citus coordinator).
  if (added.length)
    await queryText(
      tx,
      `insert into work_item_labels (work_item_id, label_id, organization_id, project_id) values ${added.map((_, index) => `($${index * 3 + 2}::uuid, $${index * 3 + 3}::uuid, $1, $${index * 3 + 4}::uuid)`).join(', ')}`,
      [actor.organizationId, ...added.flatMap(({ item, label }) => [item.id, label, item.projectId])],
    )
  return outcomes
}
