/** MCP tools of the custom-fields plugin: the same service functions as the REST routes. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import type { CustomFieldService } from './service'

export function customFieldTools(fields: CustomFieldService) {
  return [
    defineTool({
      name: 'list_custom_fields',
      description: "The organization's custom field definitions (key, type, options with ids): what a work item's `fields` take and `field.<key>` filters.",
      scopes: ['custom_fields:read'],
      readOnly: true,
      input: t.Object({ ...pageArguments(), ...cursorParameter() }, { additionalProperties: false }),
      run: (actor, input) => fields.list(actor, pageRequest(input)),
    }),
    defineTool({
      name: 'list_project_custom_fields',
      description: "The custom fields enabled for a project: the keys its work items' `fields` take.",
      scopes: ['custom_fields:read'],
      readOnly: true,
      input: t.Object({ projectId: UuidString(), ...pageArguments(), ...cursorParameter() }, { additionalProperties: false }),
      run: (actor, { projectId, ...input }) => fields.projectFields(actor, projectId, pageRequest(input)),
    }),
  ]
}
