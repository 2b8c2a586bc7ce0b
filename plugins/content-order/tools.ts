/** MCP tool of the content-order plugin: the same service function as `PUT …/content-order`. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { defineTool, type PluginContext } from '../../src/plugin'
import { ProjectAccessRef } from '../projects/api'
import { ContentOrderInput } from './model'
import { putContentOrder } from './service'

export function contentOrderTools({ db, services }: PluginContext) {
  const access = services.get(ProjectAccessRef)
  return [
    defineTool({
      name: 'reorder_content',
      description:
        'Reorder work items and/or the entries of work items (needs editor access). Each list gives the new order of the ids it names; they take the positions those ids held.',
      scopes: ['work_items:write', 'entries:write'],
      input: t.Object({ projectId: UuidString(), ...ContentOrderInput.properties }, { additionalProperties: false, minProperties: 2 }),
      run: (actor, { projectId, ...order }) => putContentOrder(db, access, actor, projectId, order),
    }),
  ]
}
