/** API v1 routes of work items over the bound work item service. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { ifMatchHeader } from '../../src/http/answer'
import { Deleted } from '../../src/http/models'
import { pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import type { WorkItemModels } from './model'
import { BULK_MAX, type BulkPatch, type WorkItemService } from './service'

const tags = ['Work items']
const ProjectParams = t.Object({ projectId: t.String() })
const ItemParams = t.Object({ projectId: t.String(), workItemId: t.String() })
const IfMatch = ifMatchHeader('item')

export function workItemRoutes(v1: V1Kit, workItems: WorkItemService, models: WorkItemModels) {
  return new Elysia({ name: 'work-items', prefix: '/api/v1/projects/:projectId/work-items' })
    .use(v1)
    .get('', ({ actor, params, query }) => workItems.list(actor, params.projectId, query, pageRequest(query)), {
      scopes: ['work_items:read'],
      params: ProjectParams,
      query: models.query,
      response: responses(PageEnvelope(models.item)),
      detail: { tags, summary: 'Work items of a project in content order (or `sort`), filtered (viewer).' },
    })
    .post('', ({ actor, params, body, idempotency }) => workItems.create(actor, params.projectId, body as never, idempotency), {
      scopes: ['work_items:write'],
      params: ProjectParams,
      body: models.input,
      response: responses(Envelope(models.item), { status: 201, extra: [409, 422] }),
      detail: { tags, summary: 'Create a work item at the end of the order (editor). `assigneeId`: an active user of the organization.' },
    })
    .post('/bulk', ({ actor, params, body, idempotency }) => workItems.bulkCreate(actor, params.projectId, body.items as never, idempotency), {
      scopes: ['work_items:write'],
      params: ProjectParams,
      body: models.bulkCreate,
      response: responses(Envelope(models.bulkResult), { extra: [409, 422] }),
      detail: {
        tags,
        summary: `Create up to ${BULK_MAX} work items in one transaction, all or none (editor).`,
        description:
          'Answers 200 with every created item in the order given. When any item is refused, nothing is written and the answer lists each failing item by its index (`items[3].title`). Audited and evented per item; `Idempotency-Key` replays the answer.',
      },
    })
    .patch('/bulk', ({ actor, params, body, idempotency }) => workItems.bulkUpdate(actor, params.projectId, body.items as BulkPatch[], idempotency), {
      scopes: ['work_items:write'],
      params: ProjectParams,
      body: models.bulkUpdate,
      response: responses(Envelope(models.bulkResult), { extra: [409, 422] }),
      detail: {
        tags,
        summary: `Change up to ${BULK_MAX} work items in one transaction, all or none (editor).`,
        description:
          'Each item names its work item (`id`), optionally its ETag as read (`ifMatch`), and the changes a PATCH of it takes. Answers 200 with every item after the change, in order; when any item is refused (an `id` or other reference that is unknown or outside this project: 400, stale `ifMatch`: 412, invalid: 400), nothing is written and the answer lists each failing item by its index. Audited and evented per item; `Idempotency-Key` replays the answer.',
      },
    })
    .get('/:workItemId', ({ actor, params }) => workItems.get(actor, params.projectId, params.workItemId), {
      scopes: ['work_items:read'],
      params: ItemParams,
      response: responses(Envelope(models.item)),
      detail: { tags, summary: 'A work item (viewer).' },
    })
    .patch('/:workItemId', ({ actor, params, body, headers }) => workItems.update(actor, params.projectId, params.workItemId, body as never, headers['if-match']), {
      scopes: ['work_items:write'],
      params: ItemParams,
      headers: IfMatch,
      body: models.patch,
      response: responses(Envelope(models.item), { extra: [409] }),
      detail: { tags, summary: 'Update a work item (editor); positions change only through content order.' },
    })
    .delete('/:workItemId', ({ actor, params, headers }) => workItems.delete(actor, params.projectId, params.workItemId, headers['if-match']), {
      scopes: ['work_items:write'],
      params: ItemParams,
      headers: IfMatch,
      response: responses(Envelope(Deleted), { extra: [409] }),
      detail: { tags, summary: 'Delete a work item with its entries and relationships (editor).' },
    })
}
