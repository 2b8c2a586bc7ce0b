/** MCP tools of the work-items plugin: the same service functions as the REST routes. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool, type PluginContext } from '../../src/plugin'
import { ProjectAccessRef } from '../projects/api'
import { UserDirectoryRef } from '../auth/api'
import { Status, WorkItemInput, WorkItemPatch } from './model'
import * as WorkItems from './service'

const target = { projectId: UuidString(), workItemId: UuidString() }

export function workItemTools({ db, services }: PluginContext) {
  const access = services.get(ProjectAccessRef)
  const directory = services.get(UserDirectoryRef)
  return [
    defineTool({
      name: 'list_work_items',
      description: 'Work items of a project in content order, optionally filtered by status or assignee.',
      scopes: ['work_items:read'],
      readOnly: true,
      input: t.Object(
        { projectId: UuidString(), ...pageArguments(), status: t.Optional(Status), assigneeId: t.Optional(UuidString()) },
        { additionalProperties: false },
      ),
      run: (actor, input) => WorkItems.listWorkItems(db, access, actor, input.projectId, input, pageRequest(input)),
    }),
    defineTool({
      name: 'get_work_item',
      description: 'One work item.',
      scopes: ['work_items:read'],
      readOnly: true,
      input: t.Object(target, { additionalProperties: false }),
      run: async (actor, input) => WorkItems.serializeWorkItem(await WorkItems.getWorkItem(db, access, actor, input.projectId, input.workItemId)),
    }),
    defineTool({
      name: 'create_work_item',
      description: 'Create a work item at the end of the project (needs editor access). Only `title` is required.',
      scopes: ['work_items:write'],
      input: t.Object({ projectId: UuidString(), ...WorkItemInput.properties }, { additionalProperties: false }),
      run: async (actor, { projectId, ...body }) => WorkItems.createWorkItem(db, access, directory, actor, projectId, body),
    }),
    defineTool({
      name: 'update_work_item',
      description: 'Change fields of a work item (needs editor access).',
      scopes: ['work_items:write'],
      input: t.Object({ ...target, ...WorkItemPatch.properties }, { additionalProperties: false, minProperties: 3 }),
      run: async (actor, { projectId, workItemId, ...patch }) =>
        WorkItems.serializeWorkItem(await WorkItems.updateWorkItem(db, access, directory, actor, projectId, workItemId, patch)),
    }),
    defineTool({
      name: 'delete_work_item',
      description: 'Delete a work item with its entries and relationships (needs editor access).',
      scopes: ['work_items:write'],
      destructive: true,
      input: t.Object(target, { additionalProperties: false }),
      run: (actor, input) => WorkItems.deleteWorkItem(db, access, actor, input.projectId, input.workItemId),
    }),
  ]
}
