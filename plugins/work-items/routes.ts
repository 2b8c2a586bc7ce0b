/** API v1 routes of work items over the bound work item service. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { ifMatchHeader } from '../../src/http/answer'
import { Deleted } from '../../src/http/models'
import { pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import { WorkItem, WorkItemInput, WorkItemPatch, WorkItemQuery } from './model'
import type { WorkItemService } from './service'

const tags = ['Work items']
const ItemParams = t.Object({ projectId: t.String(), workItemId: t.String() })
const IfMatch = ifMatchHeader('item')

export function workItemRoutes(v1: V1Kit, workItems: WorkItemService) {
    return new Elysia({ name: 'work-items', prefix: '/api/v1/projects/:projectId/work-items' })
      .use(v1)
      .get('', ({ actor, params, query }) => workItems.list(actor, params.projectId, query, pageRequest(query)), {
        scopes: ['work_items:read'],
        params: t.Object({ projectId: t.String() }),
        query: WorkItemQuery,
        response: responses(PageEnvelope(WorkItem)),
        detail: { tags, summary: 'Work items of a project in content order, filtered by status and assignee (viewer).' },
      })
      .post(
        '',
        ({ actor, params, body, idempotency }) => workItems.create(actor, params.projectId, body, idempotency),
        {
          scopes: ['work_items:write'],
          params: t.Object({ projectId: t.String() }),
          body: WorkItemInput,
          response: responses(Envelope(WorkItem), { status: 201, extra: [409, 422] }),
          detail: { tags, summary: 'Create a work item at the end of the order (editor). `assigneeId`: an active user of the organization.' },
        },
      )
      .get(
        '/:workItemId',
        ({ actor, params }) => workItems.get(actor, params.projectId, params.workItemId),
        { scopes: ['work_items:read'], params: ItemParams, response: responses(Envelope(WorkItem)), detail: { tags, summary: 'A work item (viewer).' } },
      )
      .patch(
        '/:workItemId',
        ({ actor, params, body, headers }) => workItems.update(actor, params.projectId, params.workItemId, body, headers['if-match']),
        {
          scopes: ['work_items:write'],
          params: ItemParams,
          headers: IfMatch,
          body: WorkItemPatch,
          response: responses(Envelope(WorkItem), { extra: [409] }),
          detail: { tags, summary: 'Update a work item (editor); positions change only through content order.' },
        },
      )
      .delete('/:workItemId', ({ actor, params, headers }) => workItems.delete(actor, params.projectId, params.workItemId, headers['if-match']), {
        scopes: ['work_items:write'],
        params: ItemParams,
        headers: IfMatch,
        response: responses(Envelope(Deleted), { extra: [409] }),
        detail: { tags, summary: 'Delete a work item with its entries and relationships (editor).' },
      })
}
