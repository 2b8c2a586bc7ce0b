/** The `work-items` plugin: work items of a project, numbered per project. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { etagOf, ifMatchHeader } from '../../src/http/etag'
import { Deleted } from '../../src/http/models'
import { pageRequest } from '../../src/http/pagination'
import { definePlugin } from '../../src/plugin'
import { ProjectAccessRef } from '../projects/api'
import { UserDirectoryRef } from '../auth/api'
import { WorkItem, WorkItemInput, WorkItemPatch, WorkItemQuery } from './model'
import { workItemCounters, workItems } from './schema'
import * as WorkItems from './service'
import { workItemTools } from './tools'

const tags = ['Work items']
const ItemParams = t.Object({ projectId: t.String(), workItemId: t.String() })
const IfMatch = ifMatchHeader('item')

export default definePlugin({
  name: 'work-items',
  description: 'Work items of a project: viewers read, editors write; per-project numbers that never repeat.',
  dependencies: ['auth', 'projects'],
  tables: { workItems, workItemCounters },
  scopes: [
    { name: 'work_items:read', description: 'Read work items.' },
    { name: 'work_items:write', description: 'Create, update and delete work items (editors).' },
  ],
  tags: [{ name: 'Work items', description: 'Ordered by position (content order), then creation. Viewer reads, editor writes.' }],
  tools: workItemTools,

  routes: ({ db, http, services }) => {
    const access = services.get(ProjectAccessRef)
    const directory = services.get(UserDirectoryRef)
    return new Elysia({ name: 'work-items', prefix: '/api/v1/projects/:projectId/work-items' })
      .use(http.v1)
      .get('', ({ actor, params, query }) => WorkItems.listWorkItems(db, access, actor, params.projectId, query, pageRequest(query)), {
        scopes: ['work_items:read'],
        params: t.Object({ projectId: t.String() }),
        query: WorkItemQuery,
        response: responses(PageEnvelope(WorkItem)),
        detail: { tags, summary: 'Work items of a project in content order, filtered by status and assignee (viewer).' },
      })
      .post(
        '',
        async ({ actor, params, body, set }) => {
          set.status = 201
          const item = await WorkItems.createWorkItem(db, access, directory, actor, params.projectId, body)
          set.headers.etag = etagOf(item.updatedAt)
          return item
        },
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
        async ({ actor, params, set }) => {
          const row = await WorkItems.getWorkItem(db, access, actor, params.projectId, params.workItemId)
          set.headers.etag = etagOf(row.updatedAt)
          return WorkItems.serializeWorkItem(row)
        },
        { scopes: ['work_items:read'], params: ItemParams, response: responses(Envelope(WorkItem)), detail: { tags, summary: 'A work item (viewer).' } },
      )
      .patch(
        '/:workItemId',
        async ({ actor, params, body, headers, set }) => {
          const row = await WorkItems.updateWorkItem(db, access, directory, actor, params.projectId, params.workItemId, body, headers['if-match'])
          set.headers.etag = etagOf(row.updatedAt)
          return WorkItems.serializeWorkItem(row)
        },
        {
          scopes: ['work_items:write'],
          params: ItemParams,
          headers: IfMatch,
          body: WorkItemPatch,
          response: responses(Envelope(WorkItem), { extra: [409] }),
          detail: { tags, summary: 'Update a work item (editor); positions change only through content order.' },
        },
      )
      .delete('/:workItemId', ({ actor, params, headers }) => WorkItems.deleteWorkItem(db, access, actor, params.projectId, params.workItemId, headers['if-match']), {
        scopes: ['work_items:write'],
        params: ItemParams,
        headers: IfMatch,
        response: responses(Envelope(Deleted), { extra: [409] }),
        detail: { tags, summary: 'Delete a work item with its entries and relationships (editor).' },
      })
  },
})
