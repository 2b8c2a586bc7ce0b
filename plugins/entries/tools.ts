/** MCP tools of the entries plugin: the same service functions as the REST routes. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { filterParameters } from '../../src/http/list-query'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import { ENTRY_LIST, EntryInput, EntryPatch } from './model'
import type { EntryService } from './service'

const target = { workItemId: UuidString(), entryId: UuidString() }

export function entryTools(entries: EntryService) {
  return [
    defineTool({
      name: 'list_entries',
      description:
        "Entries (comments, notes, logs) of a work item in content order unless `sort` says otherwise, filtered as the REST list is (`kind=comment,note`, `authorId` (`me`: yours), dates); checked through the work item's project. Continue with `cursor` from meta.nextCursor.",
      scopes: ['entries:read'],
      readOnly: true,
      input: t.Object({ workItemId: UuidString(), ...pageArguments(), ...cursorParameter(), ...filterParameters(ENTRY_LIST) }, { additionalProperties: false }),
      run: (actor, { workItemId, ...query }) => entries.list(actor, workItemId, query, pageRequest(query)),
    }),
    defineTool({
      name: 'create_entry',
      description: 'Add an entry to a work item (needs editor access); `kind` defaults to comment.',
      scopes: ['entries:write'],
      input: t.Object({ workItemId: UuidString(), ...EntryInput.properties }, { additionalProperties: false }),
      run: (actor, { workItemId, ...body }) => entries.create(actor, workItemId, body),
    }),
    defineTool({
      name: 'update_entry',
      description: 'Edit an entry (editor access, and its author or a project owner).',
      scopes: ['entries:write'],
      input: t.Object({ ...target, ...EntryPatch.properties }, { additionalProperties: false, minProperties: 3 }),
      run: (actor, { workItemId, entryId, ...patch }) => entries.update(actor, workItemId, entryId, patch),
    }),
    defineTool({
      name: 'delete_entry',
      description: 'Delete an entry (editor access, and its author or a project owner).',
      scopes: ['entries:write'],
      destructive: true,
      input: t.Object(target, { additionalProperties: false }),
      run: (actor, input) => entries.delete(actor, input.workItemId, input.entryId),
    }),
  ]
}
