/** Request and response models of work items. */
import { t } from 'elysia'
import { CalendarDate, Integer, Timestamp, UuidString } from '../../src/http/models'
import { pageQuery } from '../../src/http/pagination'
import { withIsoTimestamps } from '../../src/sql'
import { WORK_ITEM_STATUSES } from './schema'

export const TITLE_MAX = 500
export const DESCRIPTION_MAX = 50_000

export const Status = t.Union(WORK_ITEM_STATUSES.map((status) => t.Literal(status)))
const Priority = Integer({ minimum: 0, maximum: 4, description: '0 none, 1 urgent, 2 high, 3 medium, 4 low.' })
const DueDate = t.Union([CalendarDate(), t.Null()])

export const WorkItem = t.Object(
  {
    id: UuidString(),
    projectId: UuidString(),
    number: t.Integer({ minimum: 1, description: 'Per-project sequence; never reused.' }),
    title: t.String(),
    description: t.Union([t.String(), t.Null()]),
    status: Status,
    priority: t.Integer({ minimum: 0, maximum: 4 }),
    assigneeId: t.Union([UuidString(), t.Null()]),
    dueDate: DueDate,
    position: t.Integer({ minimum: 0, description: 'Order within the project (content order).' }),
    createdBy: t.Union([UuidString(), t.Null()]),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'WorkItem' },
)

export const WorkItemInput = t.Object(
  {
    title: t.String({ minLength: 1, maxLength: TITLE_MAX }),
    description: t.Optional(t.Union([t.String({ maxLength: DESCRIPTION_MAX }), t.Null()])),
    status: t.Optional(Status),
    priority: t.Optional(Priority),
    assigneeId: t.Optional(t.Union([UuidString({ description: 'An active user of the organization.' }), t.Null()])),
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
    assigneeId: t.Optional(t.Union([UuidString(), t.Null()])),
    dueDate: t.Optional(DueDate),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const WorkItemQuery = t.Object({
  ...pageQuery(),
  status: t.Optional(Status),
  assigneeId: t.Optional(UuidString({ description: 'Only items assigned to this user.' })),
})

export type WorkItemInput = typeof WorkItemInput.static
export type WorkItemPatch = typeof WorkItemPatch.static
export type WorkItemQuery = typeof WorkItemQuery.static

export type WorkItemResource = typeof WorkItem.static

/** A work item's columns as the API shows them, for SQL-text reads (table alias `w`). */
export const WORK_ITEM_COLUMNS = `w.id, w.project_id as "projectId", w.number, w.title, w.description, w.status, w.priority,
  w.assignee_id as "assigneeId", w.due_date::text as "dueDate", w.position, w.created_by as "createdBy",
  w.created_at as "createdAt", w.updated_at as "updatedAt"`

export type WorkItemTextRow = Omit<WorkItemResource, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string }

export const fromWorkItemText = (row: WorkItemTextRow): WorkItemResource => withIsoTimestamps(row)
