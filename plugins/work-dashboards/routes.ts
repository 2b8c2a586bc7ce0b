/** API v1 routes of a component's work source: `/api/v1/pages/{pageId}/components/{componentId}/source`. */
import { Elysia, t } from 'elysia'
import { Envelope, responses } from '../../src/http/envelope'
import { Deleted } from '../../src/http/models'
import type { V1Kit } from '../../src/http/v1'
import { Source, SourceInput } from './model'
import type { WorkSources } from './sources'

const tags = ['Work dashboards']
const ComponentParams = t.Object({ pageId: t.String(), componentId: t.String() })

export function sourceRoutes(v1: V1Kit, sources: WorkSources) {
  return new Elysia({ name: 'work-dashboards', prefix: '/api/v1/pages/:pageId/components/:componentId/source' })
    .use(v1)
    .get('', ({ actor, params }) => sources.get(actor, params.pageId, params.componentId), {
      scopes: ['dashboards:read'],
      params: ComponentParams,
      response: responses(Envelope(Source)),
      detail: {
        tags,
        operationId: 'getComponentSource',
        summary: "The component's work source (anyone who sees the page); `state: suspended` once its binder can no longer view the project or the view. 404 when it has none.",
      },
    })
    .put('', ({ actor, params, body }) => sources.put(actor, params.pageId, params.componentId, body), {
      scopes: ['dashboards:write', 'work_items:read'],
      params: ComponentParams,
      body: SourceInput,
      response: responses(Envelope(Source)),
      detail: {
        tags,
        operationId: 'putComponentSource',
        summary:
          "Feed the component from a project's work items (the page's editors, who can view the project): count (boxes), byStatus, byPriority, byAssignee, byLabel, byField:<key> (pie or bar), createdPerDay, completedPerDay (bar or line), openOverTime (line), cycleTimeDays (boxes). Its data follows every change within 2 s; display calls to it are then 409 componentBound.",
      },
    })
    .delete('', ({ actor, params }) => sources.remove(actor, params.pageId, params.componentId), {
      scopes: ['dashboards:write'],
      params: ComponentParams,
      response: responses(Envelope(Deleted)),
      detail: { tags, operationId: 'deleteComponentSource', summary: 'Unbind the component (the page\'s editors): it keeps its last data, and display calls feed it again.' },
    })
}
