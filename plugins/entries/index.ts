/** The `entries` plugin: comments, notes and logs on work items. */
import { crudEvents } from '../../src/changes'
import { definePlugin } from '../../src/plugin'
import { ProjectAccessRef, ProjectTransfersRef } from '../projects/api'
import { WorkItemsRef } from '../work-items/api'
import { EntriesRef } from './api'
import { entryRoutes } from './routes'
import { entries, entryCounts } from './schema'
import { createEntries, entriesFace, entryExportSection, entryImportSection } from './service'
import { UserDirectoryRef } from '../auth/api'
import { entryTools } from './tools'

export default definePlugin({
  name: 'entries',
  description: "Entries of work items, access-checked through the work item's project.",
  dependencies: ['auth', 'projects', 'work-items'],
  tables: { entries, entryCounts },
  readModels: { entry_documents: 'Every entry column the API shows, plus project_id and search_vector (search, summaries, content order).' },
  scopes: [
    { name: 'entries:read', description: 'Read entries.' },
    { name: 'entries:write', description: 'Create entries; edit or delete your own (or any, as a project owner).' },
  ],
  tags: [{ name: 'Entries', description: "Checked through the work item's project: viewer reads, editor writes; only the author or an owner edits or deletes." }],

  events: crudEvents('entry', 'An entry'),

  setup({ db, services, lists, writes }) {
    services.provide(EntriesRef, entriesFace)
    services.get(ProjectTransfersRef).exportSection(entryExportSection)
    services.get(ProjectTransfersRef).importSection(entryImportSection(services.get(UserDirectoryRef)))
    return { entries: createEntries({ db, lists, writes, access: services.get(ProjectAccessRef), workItems: services.get(WorkItemsRef) }) }
  },
  routes: ({ http }, { entries }) => entryRoutes(http.v1, entries),
  tools: (_context, { entries }) => entryTools(entries),
})
