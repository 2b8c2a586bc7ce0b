/** API v1 routes of one work item named by itself: its id or its key (`ENG-123`), without its project in the path. */
import { Elysia, t } from 'elysia'
import { Envelope, responses } from '../../src/http/envelope'
import { ifMatchHeader } from '../../src/http/answer'
import { Deleted } from '../../src/http/models'
import type { V1Kit } from '../../src/http/v1'
import type { WorkItemRefs } from './keys'
import type { WorkItemModels } from './model'

const tags = ['Work items']
// Named as the entries' routes under the same path name it (one router node).
const RefParams = t.Object({
  workItemId: t.String({ description: 'The work item id, or its key: `ENG-123` (any case; an old project key too).' }),
})
const IfMatch = ifMatchHeader('item')
const ONE_404 = 'An unknown id or key, one of another organization, and one in a project you cannot see are all 404.'

export function workItemRefRoutes(v1: V1Kit, refs: WorkItemRefs, models: WorkItemModels) {
  return new Elysia({ name: 'work-item-refs', prefix: '/api/v1/work-items' })
    .use(v1)
    .get('/:workItemId', ({ actor, params }) => refs.get(actor, params.workItemId), {
      scopes: ['work_items:read'],
      params: RefParams,
      response: responses(Envelope(models.item)),
      detail: { tags, summary: 'A work item by id or key (viewer).', description: ONE_404 },
    })
    .patch('/:workItemId', ({ actor, params, body, headers }) => refs.update(actor, params.workItemId, body as never, headers['if-match']), {
      scopes: ['work_items:write'],
      params: RefParams,
      headers: IfMatch,
      body: models.patch,
      response: responses(Envelope(models.item), { extra: [409] }),
      detail: { tags, summary: 'Update a work item by id or key (editor), as its project-scoped PATCH does.', description: ONE_404 },
    })
    .delete('/:workItemId', ({ actor, params, headers }) => refs.delete(actor, params.workItemId, headers['if-match']), {
      scopes: ['work_items:write'],
      params: RefParams,
      headers: IfMatch,
      response: responses(Envelope(Deleted), { extra: [409] }),
      detail: { tags, summary: 'Delete a work item by id or key with its entries and relationships (editor).', description: ONE_404 },
    })
}
