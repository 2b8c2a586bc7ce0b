/** MCP tool of the content-order plugin: the same bound service as `PUT …/content-order`. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { defineTool } from '../../src/plugin'
import { ContentOrderInput } from './model'
import type { ContentOrderService } from './service'

export function contentOrderTools(contentOrder: ContentOrderService) {
  return [
    defineTool({
      name: 'reorder_content',
      description:
        'Reorder work items and/or the entries of work items (needs editor access). Each list gives the new order of the ids it names; they take the positions those ids held.',
      scopes: ['work_items:write', 'entries:write'],
      input: t.Object({ projectId: UuidString(), ...ContentOrderInput.properties }, { additionalProperties: false, minProperties: 2 }),
      run: (actor, { projectId, ...order }) => contentOrder.put(actor, projectId, order),
    }),
  ]
}
