/** MCP tools of the work-items plugin: the same service functions as the REST routes. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import type { WorkItemModels } from './model'
import { BULK_MAX, type BulkPatch, type WorkItemService } from './service'

const target = { projectId: UuidString(), workItemId: UuidString() }

export function workItemTools(workItems: WorkItemService, models: WorkItemModels) {
  return [
    defineTool({
      name: 'list_work_items',
      description:
        'Work items of a project, in content order unless `sort` says otherwise, filtered as the REST list is (`status=todo,in_progress`, `priority=gte:2`, `assigneeId=none`, `label`, `field.<key>`, …). Continue with `cursor` from meta.nextCursor.',
      scopes: ['work_items:read'],
      readOnly: true,
      // Custom-field filters (`field.<key>`) are the organization's own: taken besides the listed arguments.
      input: t.Object({ projectId: UuidString(), ...pageArguments(), ...cursorParameter(), ...models.filterArguments }, { additionalProperties: t.String({ maxLength: 2000 }) }),
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
      input: t.Object({ projectId: UuidString(), ...models.input.properties }, { additionalProperties: false }),
      run: (actor, { projectId, ...body }) => workItems.create(actor, projectId, body as never),
    }),
    defineTool({
      name: 'update_work_item',
      description: 'Change fields of a work item (needs editor access); only the named fields change.',
      scopes: ['work_items:write'],
      input: t.Object({ ...target, ...models.patch.properties }, { additionalProperties: false, minProperties: 3 }),
      run: (actor, { projectId, workItemId, ...patch }) => workItems.update(actor, projectId, workItemId, patch as never),
    }),
    defineTool({
      name: 'bulk_create_work_items',
      description: `Create up to ${BULK_MAX} work items in one transaction (needs editor access): all or none; the result lists them in order, and a refusal names each failing item (\`items[3].title\`).`,
      scopes: ['work_items:write'],
      input: t.Object({ projectId: UuidString(), ...models.bulkCreate.properties }, { additionalProperties: false }),
      run: (actor, { projectId, items }) => workItems.bulkCreate(actor, projectId, items as never),
    }),
    defineTool({
      name: 'bulk_update_work_items',
      description: `Change up to ${BULK_MAX} work items in one transaction (needs editor access): each item names its \`id\`, optionally its \`ifMatch\` ETag, and only the fields to change (others stay). All or none.`,
      scopes: ['work_items:write'],
      input: t.Object({ projectId: UuidString(), ...models.bulkUpdate.properties }, { additionalProperties: false }),
      run: (actor, { projectId, items }) => workItems.bulkUpdate(actor, projectId, items as BulkPatch[]),
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
