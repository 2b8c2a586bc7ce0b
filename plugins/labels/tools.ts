/** MCP tools of the labels plugin: the same service functions as the REST routes. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import { LabelInput, LabelPatch } from './model'
import type { LabelService } from './service'

export function labelTools(labels: LabelService) {
  return [
    defineTool({
      name: 'list_labels',
      description: "The organization's labels by name (ids to put in a work item's `labels`, names for the `label` filter).",
      scopes: ['labels:read'],
      readOnly: true,
      input: t.Object({ ...pageArguments(), ...cursorParameter() }, { additionalProperties: false }),
      run: (actor, input) => labels.list(actor, pageRequest(input)),
    }),
    defineTool({
      name: 'create_label',
      description: 'Create a label (administrators).',
      scopes: ['labels:write'],
      input: LabelInput,
      run: (actor, input) => labels.create(actor, input),
    }),
    defineTool({
      name: 'update_label',
      description: 'Rename or recolor a label (administrators).',
      scopes: ['labels:write'],
      input: t.Object({ labelId: UuidString(), ...LabelPatch.properties }, { additionalProperties: false, minProperties: 2 }),
      run: (actor, { labelId, ...patch }) => labels.update(actor, labelId, patch),
    }),
    defineTool({
      name: 'delete_label',
      description: 'Delete a label (administrators); the work items that carried it stay, without it.',
      scopes: ['labels:write'],
      destructive: true,
      input: t.Object({ labelId: UuidString() }, { additionalProperties: false }),
      run: (actor, input) => labels.delete(actor, input.labelId),
    }),
  ]
}
