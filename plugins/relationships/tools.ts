/** MCP tools of the relationships plugin: the same service functions as the REST routes. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { filterParameters } from '../../src/http/list-query'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import { RELATIONSHIP_LIST, RelationshipInput } from './model'
import type { RelationshipService } from './service'

export function relationshipTools(relationships: RelationshipService) {
  return [
    defineTool({
      name: 'list_relationships',
      description:
        'Relationships of a project, oldest first unless `sort` says otherwise; `workItemId` keeps those touching that work item (either end), `type=blocks,parent_of` those types. Continue with `cursor` from meta.nextCursor.',
      scopes: ['relationships:read'],
      readOnly: true,
      input: t.Object({ projectId: UuidString(), ...pageArguments(), ...cursorParameter(), ...filterParameters(RELATIONSHIP_LIST) }, { additionalProperties: false }),
      run: (actor, { projectId, ...query }) => relationships.list(actor, projectId, query, pageRequest(query)),
    }),
    defineTool({
      name: 'create_relationship',
      description: 'Link two work items of one project: blocks, relates_to, duplicates or parent_of (needs editor access).',
      scopes: ['relationships:write'],
      input: t.Object({ projectId: UuidString(), ...RelationshipInput.properties }, { additionalProperties: false }),
      run: (actor, { projectId, ...body }) => relationships.create(actor, projectId, body),
    }),
    defineTool({
      name: 'delete_relationship',
      description: 'Delete a relationship (needs editor access).',
      scopes: ['relationships:write'],
      destructive: true,
      input: t.Object({ projectId: UuidString(), relationshipId: UuidString() }, { additionalProperties: false }),
      run: (actor, input) => relationships.delete(actor, input.projectId, input.relationshipId),
    }),
  ]
}
