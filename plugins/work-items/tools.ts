/**
 * MCP tools of the work-items plugin: the same service functions as the REST routes. A caller's
 * listing describes its own organization's custom fields (keys, types, options) in `fields` and
 * in the list tool's `field.<key>` filters.
 */
import { t, type TSchema } from 'elysia'
import { UuidString } from '../../src/http/models'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import type { Actor } from '../../src/services/identity'
import type { WorkItemModels } from './model'
import { BULK_MAX, type BulkPatch, type WorkItemService } from './service'

const target = { projectId: UuidString(), workItemId: UuidString() }

/** Each tool's arguments under one set of work item models. */
const inputs = (models: WorkItemModels) => ({
  // Custom-field filters (`field.<key>`) are the organization's own: taken besides the listed arguments.
  list: t.Object({ projectId: UuidString(), ...pageArguments(), ...cursorParameter(), ...models.filterArguments }, { additionalProperties: t.String({ maxLength: 2000 }) }),
  create: t.Object({ projectId: UuidString(), ...models.input.properties }, { additionalProperties: false }),
  update: t.Object({ ...target, ...models.patch.properties }, { additionalProperties: false, minProperties: 3 }),
  bulkCreate: t.Object({ projectId: UuidString(), ...models.bulkCreate.properties }, { additionalProperties: false }),
  bulkUpdate: t.Object({ projectId: UuidString(), ...models.bulkUpdate.properties }, { additionalProperties: false }),
})

export function workItemTools(workItems: WorkItemService, models: WorkItemModels) {
  const general = inputs(models)
  /** The arguments of tool `name` as the caller's organization sees them (one read per listing). */
  const described = (name: keyof ReturnType<typeof inputs>) => async (actor: Actor, memo: Map<string, Promise<unknown>>): Promise<TSchema> => {
    const key = `work-items ${actor.organizationId}`
    if (!memo.has(key)) memo.set(key, workItems.modelsFor(actor.organizationId).then(inputs))
    return ((await memo.get(key)) as ReturnType<typeof inputs>)[name]
  }
  return [
    defineTool({
      name: 'list_work_items',
      description:
        'Work items of a project, in content order unless `sort` says otherwise, filtered as the REST list is (`status=todo,in_progress`, `priority=gte:2`, `assigneeId=none`, `label`, `field.<key>`, …). Continue with `cursor` from meta.nextCursor.',
      scopes: ['work_items:read'],
      readOnly: true,
      input: general.list,
      describe: described('list'),
      run: (actor, { projectId, ...query }) => workItems.list(actor, projectId as string, query, pageRequest(query)),
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
      input: general.create,
      describe: described('create'),
      run: (actor, { projectId, ...body }) => workItems.create(actor, projectId as string, body as never),
    }),
    defineTool({
      name: 'update_work_item',
      description: 'Change fields of a work item (needs editor access); only the named fields change (`fields` merges: named keys change, null clears one).',
      scopes: ['work_items:write'],
      input: general.update,
      describe: described('update'),
      run: (actor, { projectId, workItemId, ...patch }) => workItems.update(actor, projectId as string, workItemId as string, patch as never),
    }),
    defineTool({
      name: 'bulk_create_work_items',
      description: `Create up to ${BULK_MAX} work items in one transaction (needs editor access): all or none; the result lists them in order, and a refusal names each failing item (\`items[3].title\`).`,
      scopes: ['work_items:write'],
      input: general.bulkCreate,
      describe: described('bulkCreate'),
      run: (actor, { projectId, items }) => workItems.bulkCreate(actor, projectId as string, items as never),
    }),
    defineTool({
      name: 'bulk_update_work_items',
      description: `Change up to ${BULK_MAX} work items in one transaction (needs editor access): each item names its \`id\`, optionally its \`ifMatch\` ETag, and only the fields to change (others stay). All or none.`,
      scopes: ['work_items:write'],
      input: general.bulkUpdate,
      describe: described('bulkUpdate'),
      run: (actor, { projectId, items }) => workItems.bulkUpdate(actor, projectId as string, items as BulkPatch[]),
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
