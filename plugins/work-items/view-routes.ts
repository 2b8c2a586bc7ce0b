/** API v1 routes of a project's saved views (views.ts). */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { filterParameters } from '../../src/http/list-query'
import { Deleted, Timestamp, UuidString } from '../../src/http/models'
import { cursorParameter, pageQuery, pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import { MAX_VIEW_FILTERS, VIEW_LIST, type Views } from './views'

const tags = ['Work items']
const ProjectParams = t.Object({ projectId: t.String() })
const ViewParams = t.Object({ projectId: t.String(), viewId: t.String() })

const FilterValue = t.Union([t.String({ maxLength: 2000 }), t.Array(t.String({ maxLength: 2000 }), { minItems: 1, maxItems: 20 })])
const Filters = t.Record(t.String({ minLength: 1, maxLength: 64 }), FilterValue, {
  maxProperties: MAX_VIEW_FILTERS,
  description: `The work-item list's filters, as its query parameters: \`{"status": "todo,in_progress", "assigneeId": "me", "label": ["bug", "ui"], "field.severity": "high"}\` (strings; a repeated parameter as an array); at most ${MAX_VIEW_FILTERS}. Checked as the list checks them: a bad one is 400 naming \`filters.<parameter>\`. \`me\` is whoever reads the view.`,
})
const Sort = t.Union([t.String({ maxLength: 200 }), t.Null()], { description: "The list's `sort` (e.g. `priority,-updatedAt`); null: the list's default." })
const Name = t.String({ minLength: 1, maxLength: 100 })

export const View = t.Object(
  {
    id: UuidString(),
    projectId: UuidString(),
    name: Name,
    filters: Filters,
    sort: Sort,
    shared: t.Boolean({ description: "Readable by every viewer of the project (else only by its creator); changed by its creator or a project owner." }),
    createdBy: UuidString(),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'WorkItemView' },
)
const ViewInput = t.Object(
  { name: Name, filters: Filters, sort: t.Optional(Sort), shared: t.Optional(t.Boolean({ description: 'Default false; true needs editor access.' })) },
  { additionalProperties: false, title: 'WorkItemViewInput' },
)
const ViewPatch = t.Object(
  { name: t.Optional(Name), filters: t.Optional(Filters), sort: t.Optional(Sort), shared: t.Optional(t.Boolean()) },
  { additionalProperties: false, minProperties: 1, title: 'WorkItemViewPatch' },
)
const ViewQuery = t.Object({ ...pageQuery(), ...cursorParameter(), ...filterParameters(VIEW_LIST) }, { additionalProperties: true })

export function viewRoutes(v1: V1Kit, views: Views) {
  return new Elysia({ name: 'work-item-views', prefix: '/api/v1/projects/:projectId/views' })
    .use(v1)
    .get('', ({ actor, params, query }) => views.list(actor, params.projectId, query as Record<string, unknown>, pageRequest(query)), {
      scopes: ['work_items:read'],
      params: ProjectParams,
      query: ViewQuery,
      response: responses(PageEnvelope(View)),
      detail: { tags, summary: "Your private views of the project and its shared ones, by name (viewer). Apply one with `GET …/work-items?view=<id>`." },
    })
    .post('', ({ actor, params, body, idempotency }) => views.create(actor, params.projectId, body, idempotency), {
      scopes: ['work_items:write'],
      params: ProjectParams,
      body: ViewInput,
      response: responses(Envelope(View), { status: 201 }),
      detail: { tags, summary: 'Save a view of the work-item list: private (any viewer) or shared (editor).' },
    })
    .get('/:viewId', ({ actor, params }) => views.get(actor, params.projectId, params.viewId), {
      scopes: ['work_items:read'],
      params: ViewParams,
      response: responses(Envelope(View)),
      detail: { tags, summary: "A view: yours, or a shared one of the project (another user's private view is 404)." },
    })
    .patch('/:viewId', ({ actor, params, body }) => views.update(actor, params.projectId, params.viewId, body), {
      scopes: ['work_items:write'],
      params: ViewParams,
      body: ViewPatch,
      response: responses(Envelope(View)),
      detail: { tags, summary: 'Change a view (its creator, or a project owner for a shared one); `filters` replaces them.' },
    })
    .delete('/:viewId', ({ actor, params }) => views.remove(actor, params.projectId, params.viewId), {
      scopes: ['work_items:write'],
      params: ViewParams,
      response: responses(Envelope(Deleted)),
      detail: { tags, summary: 'Delete a view (its creator, or a project owner for a shared one).' },
    })
}
