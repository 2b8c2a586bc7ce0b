/** The `search` plugin: one ranked search over a project's work items, entries and relationships. */
import { Elysia, t } from 'elysia'
import { Envelope, responses } from '../../src/http/envelope'
import { queryInteger } from '../../src/http/pagination'
import { definePlugin } from '../../src/plugin'
import { ProjectAccessRef } from '../projects/api'
import { Entry } from '../entries/api'
import { Relationship } from '../relationships/api'
import { WorkItem } from '../work-items/api'
import { createSearch, searchFilterParameters, searchOptions } from './service'
import { searchTools } from './tools'

const SearchResult = t.Object(
  { workItems: t.Array(WorkItem), entries: t.Array(Entry), relationships: t.Array(Relationship) },
  { title: 'SearchResult' },
)

export default definePlugin({
  name: 'search',
  description: 'Full-text search (with prefix and substring fallback) over a project.',
  dependencies: ['projects', 'work-items', 'entries', 'relationships'],
  // Reads the work_item_documents, entry_documents and relationship_links read models of its dependencies.
  tags: [{ name: 'Search', description: 'Needs all three read scopes and viewer access.' }],

  setup: ({ db, services }) => ({ search: createSearch({ db, access: services.get(ProjectAccessRef) }) }),
  tools: (_context, { search }) => searchTools(search),
  routes: ({ http }, { search }) => {
    return new Elysia({ name: 'search', prefix: '/api/v1/projects/:projectId/search' }).use(http.v1).get(
      '',
      ({ actor, params, query }) => search.search(actor, params.projectId, searchOptions(query, actor.userId)),
      {
        scopes: ['work_items:read', 'entries:read', 'relationships:read'],
        params: t.Object({ projectId: t.String() }),
        query: t.Object({
          q: t.String({ minLength: 1, maxLength: 200, description: 'Words to find; each matches as a prefix, and 3+ characters also as a substring of titles and bodies.' }),
          limit: t.Optional(queryInteger('limit', { minimum: 1, maximum: 100, default: 20, description: 'Results per kind, 1..100 (default 20).' })),
          ...searchFilterParameters(),
        }, { additionalProperties: true }),
        response: responses(Envelope(SearchResult)),
        detail: {
          tags: ['Search'],
          summary:
            'Work items (title and description), entries (body) and relationships (either end matches), each ranked by relevance; a title match ranks above a body match.',
        },
      },
    )
  },
})
