/** Request and response models of work items. */
import { sql, type SQL } from 'drizzle-orm'
import { t } from 'elysia'
import type { TObject } from '@sinclair/typebox'
import { CalendarDate, Integer, Timestamp, UserRef, UuidString } from '../../src/http/models'
import { filterParameters, type ListShape } from '../../src/http/list-query'
import { cursorParameter, pageQuery } from '../../src/http/pagination'
import { withIsoTimestamps, type ListJson } from '../../src/sql'
import type { WorkItemExtension } from './api'
import { WORK_ITEM_STATUSES } from './schema'

export const TITLE_MAX = 500
export const DESCRIPTION_MAX = 50_000

export const Status = t.Union(WORK_ITEM_STATUSES.map((status) => t.Literal(status)))
const Priority = Integer({ minimum: 0, maximum: 4, enum: [0, 1, 2, 3, 4], description: '0 none, 1 urgent, 2 high, 3 medium, 4 low.' })
const DueDate = t.Union([CalendarDate(), t.Null()])

export const WorkItem = t.Object(
  {
    id: UuidString(),
    projectId: UuidString(),
    number: t.Integer({ minimum: 1, description: 'Per-project sequence; never reused.' }),
    key: t.String({ description: "`<project key>-<number>` (`ENG-123`), what people say: with the project's current key (an old one keeps resolving)." }),
    title: t.String(),
    description: t.Union([t.String(), t.Null()]),
    status: Status,
    priority: Priority,
    assigneeId: t.Union([UuidString(), t.Null()]),
    dueDate: DueDate,
    position: t.Integer({ minimum: 0, description: 'Order within the project (content order).' }),
    createdBy: t.Union([UuidString(), t.Null()]),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'WorkItem' },
)

/** Who a body assigns: an active user of the organization (`me`: the caller), or null for nobody. */
const Assignee = t.Union([UserRef, t.Null()], { description: 'An active user of the organization, `me` (you), or null (unassigned).' })

export const WorkItemInput = t.Object(
  {
    title: t.String({ minLength: 1, maxLength: TITLE_MAX }),
    description: t.Optional(t.Union([t.String({ maxLength: DESCRIPTION_MAX }), t.Null()])),
    status: t.Optional(Status),
    priority: t.Optional(Priority),
    assigneeId: t.Optional(Assignee),
    dueDate: t.Optional(DueDate),
  },
  { additionalProperties: false },
)

export const WorkItemPatch = t.Object(
  {
    title: t.Optional(t.String({ minLength: 1, maxLength: TITLE_MAX })),
    description: t.Optional(t.Union([t.String({ maxLength: DESCRIPTION_MAX }), t.Null()])),
    status: t.Optional(Status),
    priority: t.Optional(Priority),
    assigneeId: t.Optional(Assignee),
    dueDate: t.Optional(DueDate),
  },
  { additionalProperties: false, minProperties: 1 },
)

/** A work item's priority as urgency, the order of `sort=priority`: 1 urgent → 0, … 4 low → 3, 0 no priority → 4. */
const URGENCY = '((w.priority + 4) % 5)'

/** The filters and sorts of the work-item list, served by the indexes of schema.ts. */
export const WORK_ITEM_LIST: ListShape = {
  name: 'work-items',
  filters: {
    status: { type: 'enum', values: WORK_ITEM_STATUSES, column: 'w.status', description: 'Only items in these statuses.' },
    assigneeId: { type: 'uuid', none: true, me: true, column: 'w.assignee_id', description: 'Only items assigned to this user (`me`: you; `none`: unassigned).' },
    priority: { type: 'integer', minimum: 0, maximum: 4, column: 'w.priority', description: 'Priority (0 none, 1 urgent … 4 low).' },
    createdAt: { type: 'timestamp', column: 'w.created_at', description: 'Creation time.' },
    updatedAt: { type: 'timestamp', column: 'w.updated_at', description: 'Last change.' },
    dueDate: { type: 'date', none: true, column: 'w.due_date', description: 'Due date (`none`: no due date).' },
  },
  sorts: {
    position: { column: 'w.position', cast: 'int' },
    number: { column: 'w.number', cast: 'int' },
    createdAt: { column: 'w.created_at', cast: 'timestamptz' },
    updatedAt: { column: 'w.updated_at', cast: 'timestamptz' },
    // Urgency (1 urgent … 4 low, then 0 no priority): the expression of work_items_project_urgency_idx (schema.ts).
    priority: { column: URGENCY, cast: 'int' },
    dueDate: { column: 'w.due_date', cast: 'date', nullable: true },
  },
  defaultOrder: ['position', 'createdAt'],
  tiebreaker: { column: 'w.id', cast: 'uuid' },
  sortDescription: '`priority` is urgency: urgent (1) first, then high, medium, low, and no priority (0) last; `-priority` the reverse.',
}

/** At most this many projects in the cross-project list's `projectId` filter. */
export const ACROSS_PROJECTS_MAX = 20

/**
 * The filters and sorts of work items across the projects a caller can view (`GET
 * /api/v1/work-items`): the project list's, and `projectId` (any of up to ACROSS_PROJECTS_MAX);
 * the most recently changed first by default (positions are per project).
 */
export const WORK_ITEM_ACROSS_LIST: ListShape = {
  ...WORK_ITEM_LIST,
  name: 'work-items-across',
  filters: {
    projectId: {
      type: 'uuid',
      many: ACROSS_PROJECTS_MAX,
      column: 'w.project_id',
      description: 'Only items of these projects; a project you cannot view (or that does not exist) matches nothing.',
    },
    ...WORK_ITEM_LIST.filters,
  },
  defaultOrder: ['-updatedAt'],
}

/**
 * The work item models with the properties extensions add (api.ts WorkItemExtension: labels,
 * custom fields), built once every plugin is set up: what routes validate and document, and
 * what tools take. Without extensions they are the models above.
 */
export function workItemModels(extensions: readonly WorkItemExtension[], bulkMax: number) {
  const extend = (model: TObject, pick: 'schema' | 'input', title?: string) =>
    extensions.length
      ? t.Object({ ...model.properties, ...Object.fromEntries(extensions.map((extension) => [extension.property, pick === 'input' ? t.Optional(extension.input) : extension[pick]])) }, {
          ...(title ? { title } : {}),
          ...(model.additionalProperties === false ? { additionalProperties: false } : {}),
          ...(model.minProperties ? { minProperties: model.minProperties } : {}),
        })
      : model
  const item = extend(WorkItem, 'schema', 'WorkItem')
  const input = extend(WorkItemInput, 'input')
  const patch = extend(WorkItemPatch, 'input')
  const bulkPatch = t.Object(
    {
      id: UuidString({ description: 'The work item to change.' }),
      ifMatch: t.Optional(t.String({ maxLength: 200, description: "The work item's ETag as read (If-Match for this item): 412 for the whole request if it changed since." })),
      ...patch.properties,
    },
    { additionalProperties: false, minProperties: 2 },
  )
  const filters = Object.assign({}, WORK_ITEM_LIST.filters, ...extensions.map((extension) => extension.filters ?? {}))
  const dynamic = extensions.flatMap((extension) => (extension.dynamic ? [`\`${extension.dynamic.prefix}<key>\`: ${extension.dynamic.description}`] : []))
  const queryOf = (shape: ListShape, extra = {}) =>
    t.Object({ ...pageQuery(), ...cursorParameter(), ...filterParameters({ ...shape, filters: { ...shape.filters, ...filters } }), ...extra }, {
      additionalProperties: true,
      ...(dynamic.length ? { description: dynamic.join(' ') } : {}),
    })
  const query = queryOf(WORK_ITEM_LIST, {
    view: t.Optional(
      t.String({
        description:
          "A saved view's id (`GET /api/v1/projects/{projectId}/views`): its filters and sort apply, the other parameters are ANDed on top and `sort` given here wins. One you cannot read in this project is 400 naming `view`.",
      }),
    ),
  })
  return {
    item,
    query,
    /** The query of the list across projects (`GET /api/v1/work-items`): the same filters, and `projectId`. */
    acrossQuery: queryOf(WORK_ITEM_ACROSS_LIST),
    /** The MCP list tool's filter arguments (dynamic keys such as `field.<key>` are taken too). */
    filterArguments: filterParameters({ ...WORK_ITEM_LIST, filters }),
    input,
    patch,
    bulkCreate: t.Object({ items: t.Array(input, { minItems: 1, maxItems: bulkMax, description: `1 to ${bulkMax} work items, created in this order.` }) }, { additionalProperties: false }),
    bulkUpdate: t.Object({ items: t.Array(bulkPatch, { minItems: 1, maxItems: bulkMax, description: `1 to ${bulkMax} changes, each naming its work item once.` }) }, { additionalProperties: false }),
    bulkResult: t.Array(item, { description: 'Every work item of the request, in its order, after the change.' }),
  }
}

export type WorkItemModels = ReturnType<typeof workItemModels>

export const WorkItemQuery = t.Object({ ...pageQuery(), ...cursorParameter(), ...filterParameters(WORK_ITEM_LIST) }, { additionalProperties: true })

export type WorkItemInput = typeof WorkItemInput.static
export type WorkItemPatch = typeof WorkItemPatch.static
/** A list request's filters and sort, as query parameters or MCP arguments (unknown keys are refused when parsed). */
export type WorkItemQuery = Record<string, unknown>

export type WorkItemResource = typeof WorkItem.static

/**
 * A work item's columns as the API shows them, timestamps as text (table alias `w`, of work_items
 * or the work_item_documents read model), in a statement of the `organization` (a bound value or
 * placeholder): the key's project is looked up in that organization, not `w.organization_id`, so
 * Citus sees one organization throughout and keeps the statement on its shard.
 */
export const workItemColumns = (organization: SQL): SQL => sql`w.id, w.project_id as "projectId", w.number,
  (select pd.key from project_directory pd where pd.id = w.project_id and pd.organization_id = ${organization}) || '-' || w.number as key,
  w.title, w.description, w.status, w.priority, w.assignee_id as "assigneeId", w.due_date::text as "dueDate", w.position, w.created_by as "createdBy",
  w.created_at as "createdAt", w.updated_at as "updatedAt"`

/**
 * workItemColumns' names in their order, and its timestamps: what the database writes as a work
 * item's JSON (src/sql.ts selectListPageText), the extensions' properties after them.
 */
export const workItemJson = (extensionProperties: readonly string[]): ListJson => ({
  properties: ['id', 'projectId', 'number', 'key', 'title', 'description', 'status', 'priority', 'assigneeId', 'dueDate', 'position', 'createdBy', 'createdAt', 'updatedAt', ...extensionProperties],
  timestamps: ['createdAt', 'updatedAt'],
})

export type WorkItemTextRow = Omit<WorkItemResource, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string }

/** A work item read through workItemColumns (and its extensions' columns) as the API shows it, in place: the one mapping of a work item. */
export const fromWorkItemText = (row: WorkItemTextRow): WorkItemResource => withIsoTimestamps(row)
