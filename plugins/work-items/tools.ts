/** MCP tools of the work-items plugin: the same service functions as the REST routes. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { filterParameters } from '../../src/http/list-query'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import { WORK_ITEM_LIST, WorkItemInput, WorkItemPatch } from './model'
import type { WorkItemService } from './service'

const target = { projectId: UuidString(), workItemId: UuidString() }

export function workItemTools(workItems: WorkItemService) {
  return [
    defineTool({
      name: 'list_work_items',
      description:
        'Work items of a project, in content order unless `sort` says otherwise, filtered as the REST list is (`status=todo,in_progress`, `priority=gte:2`, `assigneeId=none`, …). Continue with `cursor` from meta.nextCursor.',
      scopes: ['work_items:read'],
      readOnly: true,
      input: t.Object({ projectId: UuidString(), ...pageArguments(), ...cursorParameter(), ...filterParameters(WORK_ITEM_LIST) }, { additionalProperties: false }),
      run: (actor, { projectId, ...query }) => workItems.list(actor, projectId, query, pageRequest(query)),
    }),
    defineTool({
      name: 'get_work_item',
      description: 'One work item.',
      scopes: ['work_items:read'],
      readOnly: true,
      input: t.Object(target, { additionalProperties: false }),
      run: (actor, input) => workItems.get(actor, input.projectId, input.workItemId),
    }),
    defineTool({
      name: 'create_work_item',
      description: 'Create a work item at the end of the project (needs editor access). Only `title` is required.',
      scopes: ['work_items:write'],
      input: t.Object({ projectId: UuidString(), ...WorkItemInput.properties }, { additionalProperties: false }),
      run: (actor, { projectId, ...body }) => workItems.create(actor, projectId, body),
    }),
    defineTool({
      name: 'update_work_item',
      description: 'Change fields of a work item (needs editor access).',
      scopes: ['work_items:write'],
      input: t.Object({ ...target, ...WorkItemPatch.properties }, { additionalProperties: false, minProperties: 3 }),
      run: (actor, { projectId, workItemId, ...patch }) => workItems.update(actor, projectId, workItemId, patch),
    }),
    defineTool({
      name: 'delete_work_item',
      description: 'Delete a work item with its entries and relationships (needs editor access).',
      scopes: ['work_items:write'],
      destructive: true,
      input: t.Object(target, { additionalProperties: false }),
      run: (actor, input) => workItems.delete(actor, input.projectId, input.workItemId),
    }),
  ]
}
