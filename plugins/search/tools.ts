/** MCP tools of the search plugin: project search and the project summary. */
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { defineTool } from '../../src/plugin'
import { searchFilterParameters, searchOptions, type SearchService } from './service'

export function searchTools(search: SearchService) {
  return [
    defineTool({
      name: 'search_project',
      description:
        'Search a project: work items (title, description), entries (body) and relationships (either end), each ranked by relevance; `status` and `assigneeId` filter work items as list_work_items does.',
      scopes: ['work_items:read', 'entries:read', 'relationships:read'],
      readOnly: true,
      input: t.Object(
        {
          projectId: UuidString(),
          q: t.String({ minLength: 1, maxLength: 200 }),
          limit: t.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Results per kind (default 20).' })),
          ...searchFilterParameters(),
        },
        { additionalProperties: false },
      ),
      run: (actor, { projectId, ...input }) => search.search(actor, projectId, searchOptions(input, actor.userId)),
    }),
    defineTool({
      name: 'project_summary',
      description: 'A project at a glance: work items by status, entry and relationship counts, and the ten most recently updated work items.',
      scopes: ['work_items:read', 'entries:read', 'relationships:read'],
      readOnly: true,
      input: t.Object({ projectId: UuidString() }, { additionalProperties: false }),
      run: (actor, input) => search.summary(actor, input.projectId),
    }),
  ]
}
