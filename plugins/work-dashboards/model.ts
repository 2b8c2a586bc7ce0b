/** The API v1 shapes of a component's work source. */
import { t } from 'elysia'
import { Integer, Timestamp, UuidString } from '../../src/http/models'
import { MEASURES } from './measures'

export const MAX_RANGE_DAYS = 365

const Range = t.Object({ days: Integer({ minimum: 1, maximum: MAX_RANGE_DAYS, description: 'UTC days ending today (default 14).' }) }, { additionalProperties: false })

export const SourceInput = t.Object(
  {
    projectId: t.String({ description: 'The project whose work items it measures (you must be able to view it).' }),
    viewId: t.Optional(t.Union([t.String(), t.Null()], { description: 'A saved view of that project you can read: only its work items count. Absent or null: all of them.' })),
    measure: t.String({ description: `One of ${MEASURES.join(', ')}; it must fit the component's type (400 naming \`measure\`).` }),
    range: t.Optional(t.Union([Range, t.Null()], { description: 'Daily series and cycle time: the days they cover.' })),
  },
  { title: 'WorkSourceInput', additionalProperties: false },
)
export type SourceInput = typeof SourceInput.static

export const Source = t.Object(
  {
    componentId: UuidString(),
    pageId: UuidString(),
    projectId: UuidString(),
    viewId: t.Union([UuidString(), t.Null()]),
    measure: t.String(),
    range: t.Union([Range, t.Null()]),
    state: t.Union([t.Literal('active'), t.Literal('suspended')], { description: '`suspended`: its binder can no longer view the project or the view (or was deactivated); the component keeps its last data.' }),
    reason: t.Union([t.String(), t.Null()], { description: 'Why it is suspended: projectAccessLost, viewUnavailable or binderDeactivated.' }),
    boundBy: UuidString(),
    computedAt: t.Union([Timestamp(), t.Null()], { description: 'When the data was last written (null: not yet).' }),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'WorkSource' },
)
export type SourceView = typeof Source.static
