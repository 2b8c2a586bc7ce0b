/** The `work-items` plugin: work items of a project, numbered per project. */
import { crudEvents } from '../../src/changes'
import { definePlugin } from '../../src/plugin'
import { UserDirectoryRef } from '../auth/api'
import { ProjectAccessRef } from '../projects/api'
import { WorkItemsRef } from './api'
import { workItemRoutes } from './routes'
import { workItemCounters, workItemCounts, workItems } from './schema'
import { createWorkItems, workItemsFace } from './service'
import { workItemTools } from './tools'

export default definePlugin({
  name: 'work-items',
  description: 'Work items of a project: viewers read, editors write; per-project numbers that never repeat.',
  dependencies: ['auth', 'projects'],
  tables: { workItems, workItemCounters, workItemCounts },
  readModels: {
    work_item_documents: 'Every work item column the API shows, plus search_vector (search, summaries, content order).',
    work_item_status_counts: 'How many work items each project has per status, maintained with every change (the project summary).',
  },
  scopes: [
    { name: 'work_items:read', description: 'Read work items.' },
    { name: 'work_items:write', description: 'Create, update and delete work items (editors).' },
  ],
  tags: [{ name: 'Work items', description: 'Ordered by position (content order), then creation. Viewer reads, editor writes.' }],

  events: crudEvents('work_item', 'A work item'),

  setup({ db, services, lists, writes }) {
    services.provide(WorkItemsRef, workItemsFace)
    return { workItems: createWorkItems({ db, lists, writes, access: services.get(ProjectAccessRef), users: services.get(UserDirectoryRef) }) }
  },
  routes: ({ http }, { workItems }) => workItemRoutes(http.v1, workItems),
  tools: (_context, { workItems }) => workItemTools(workItems),
})
