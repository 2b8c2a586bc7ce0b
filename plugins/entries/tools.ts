/** MCP tools of the entries plugin: the same service functions as the REST routes. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool, type PluginContext } from '../../src/plugin'
import { ProjectAccessRef } from '../projects/api'
import { EntryInput, EntryPatch } from './model'
import * as Entries from './service'

const target = { workItemId: UuidString(), entryId: UuidString() }

export function entryTools({ db, services }: PluginContext) {
  const access = services.get(ProjectAccessRef)
  return [
    defineTool({
      name: 'list_entries',
      description: "Entries (comments, notes, logs) of a work item in content order; checked through the work item's project.",
      scopes: ['entries:read'],
      readOnly: true,
      input: t.Object({ workItemId: UuidString(), ...pageArguments() }, { additionalProperties: false }),
      run: (actor, input) => Entries.listEntries(db, access, actor, input.workItemId, pageRequest(input)),
    }),
    defineTool({
      name: 'create_entry',
      description: 'Add an entry to a work item (needs editor access); `kind` defaults to comment.',
      scopes: ['entries:write'],
      input: t.Object({ workItemId: UuidString(), ...EntryInput.properties }, { additionalProperties: false }),
      run: async (actor, { workItemId, ...body }) => Entries.createEntry(db, access, actor, workItemId, body),
    }),
    defineTool({
      name: 'update_entry',
      description: 'Edit an entry (editor access, and its author or a project owner).',
      scopes: ['entries:write'],
      input: t.Object({ ...target, ...EntryPatch.properties }, { additionalProperties: false, minProperties: 3 }),
      run: async (actor, { workItemId, entryId, ...patch }) => Entries.serializeEntry(await Entries.updateEntry(db, access, actor, workItemId, entryId, patch)),
    }),
    defineTool({
      name: 'delete_entry',
      description: 'Delete an entry (editor access, and its author or a project owner).',
      scopes: ['entries:write'],
      destructive: true,
      input: t.Object(target, { additionalProperties: false }),
      run: (actor, input) => Entries.deleteEntry(db, access, actor, input.workItemId, input.entryId),
    }),
  ]
}
