/** The `relationships` plugin: typed links between work items of one project. */
import { crudEvents } from '../../src/changes'
import { definePlugin } from '../../src/plugin'
import { ProjectAccessRef, ProjectTransfersRef } from '../projects/api'
import { WorkItemsRef } from '../work-items/api'
import { relationshipRoutes } from './routes'
import { relationshipCounts, relationships } from './schema'
import { createRelationships, relationshipCountsObserver, relationshipExportSection, relationshipImportSection } from './service'
import { relationshipTools } from './tools'

export default definePlugin({
  name: 'relationships',
  description: 'Typed links (blocks, relates_to, duplicates, parent_of) between work items of one project.',
  dependencies: ['auth', 'projects', 'work-items'],
  tables: { relationships, relationshipCounts },
  readModels: {
    relationship_links: 'Every relationship column the API shows (search matches relationships through their ends).',
    relationship_type_counts: 'How many relationships each project has per type, maintained with every change (the project summary).',
  },
  scopes: [
    { name: 'relationships:read', description: 'Read relationships.' },
    { name: 'relationships:write', description: 'Create, change and delete relationships (editors).' },
  ],
  tags: [{ name: 'Relationships', description: 'Both ends in the project, no self links, no duplicates. Viewer reads, editor writes.' }],

  events: crudEvents('relationship', 'A relationship'),

  setup({ db, services, lists, writes, changes, onStop }) {
    onStop(changes.observe(relationshipCountsObserver))
    services.get(ProjectTransfersRef).exportSection(relationshipExportSection)
    services.get(ProjectTransfersRef).importSection(relationshipImportSection)
    return { relationships: createRelationships({ db, lists, writes, access: services.get(ProjectAccessRef), workItems: services.get(WorkItemsRef) }) }
  },
  routes: ({ http }, { relationships }) => relationshipRoutes(http.v1, relationships),
  tools: (_context, { relationships }) => relationshipTools(relationships),
})
