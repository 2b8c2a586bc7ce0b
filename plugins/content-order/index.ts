/** The `content-order` plugin: read and replace the order of work items and entries. */
import { Elysia, t } from 'elysia'
import { Envelope, responses } from '../../src/http/envelope'
import { definePlugin } from '../../src/plugin'
import { EntriesRef } from '../entries/api'
import { ProjectAccessRef } from '../projects/api'
import { WorkItemsRef } from '../work-items/api'
import { ContentOrder, ContentOrderInput } from './model'
import { createContentOrder } from './service'
import { contentOrderTools } from './tools'

const tags = ['Content order']

export default definePlugin({
  name: 'content-order',
  description: 'The order of work items in a project and of entries in each work item.',
  dependencies: ['projects', 'work-items', 'entries'],
  tags: [{ name: 'Content order', description: 'Positions of work items and entries. Editors reorder in one transaction.' }],

  events: [{ name: 'content_order.updated', description: "A project's content order was changed; data: the project's content order as GET returns it." }],

  setup: ({ db, services, writes }) => ({
    contentOrder: createContentOrder({ db, writes, access: services.get(ProjectAccessRef), workItems: services.get(WorkItemsRef), entries: services.get(EntriesRef) }),
  }),
  tools: (_context, { contentOrder }) => contentOrderTools(contentOrder),
  routes: ({ http }, { contentOrder }) =>
    new Elysia({ name: 'content-order', prefix: '/api/v1/projects/:projectId/content-order' })
      .use(http.v1)
      .get('', ({ actor, params }) => contentOrder.get(actor, params.projectId), {
        scopes: ['work_items:read', 'entries:read'],
        params: t.Object({ projectId: t.String() }),
        response: responses(Envelope(ContentOrder)),
        detail: { tags, summary: 'The full order: work item ids, and entry ids per work item (viewer).' },
      })
      .put('', ({ actor, params, body }) => contentOrder.put(actor, params.projectId, body), {
        scopes: ['work_items:write', 'entries:write'],
        params: t.Object({ projectId: t.String() }),
        body: ContentOrderInput,
        response: responses(Envelope(ContentOrder)),
        detail: {
          tags,
          summary:
            'Reorder (editor). Each list gives the new order of the ids it names; they take the positions those ids held, the others stay. Any id outside the project is 400 naming it; all or nothing.',
        },
      }),
})
