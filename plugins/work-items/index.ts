/** The `work-items` plugin: work items of a project, numbered per project. */
import { Elysia } from 'elysia'
import { crudEvents } from '../../src/changes'
import { definePlugin } from '../../src/plugin'
import { UserDirectoryRef } from '../auth/api'
import { ProjectAccessRef, ProjectTransfersRef } from '../projects/api'
import { WorkItemsRef, type ViewObserver, type WorkItemExtension } from './api'
import { workItemRefRoutes } from './item-routes'
import { createWorkItemRefs, visibleWorkItem } from './keys'
import { workItemModels } from './model'
import { workItemRoutes } from './routes'
import { acrossRoutes } from './across-routes'
import { workItemCounters, workItemCounts, workItems, workItemViews } from './schema'
import { viewRoutes } from './view-routes'
import { BULK_MAX, createWorkItems, workItemsFace } from './service'
import { workItemTools } from './tools'

export default definePlugin({
  name: 'work-items',
  description: 'Work items of a project: viewers read, editors write; per-project numbers that never repeat.',
  dependencies: ['auth', 'projects'],
  tables: { workItems, workItemCounters, workItemCounts, workItemViews },
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
    // Properties other plugins add (labels, custom fields): registered in their setup, which runs
    // after this one and before any route or tool is built.
    const extensions: WorkItemExtension[] = []
    const viewObservers: ViewObserver[] = []
    const access = services.get(ProjectAccessRef)
    const workItems = createWorkItems({ db, lists, writes, extensions, viewObservers, access, users: services.get(UserDirectoryRef) })
    services.provide(WorkItemsRef, {
      ...workItemsFace,
      locate: visibleWorkItem(db, access),
      matching: workItems.matching,
      filterable: (name) => extensions.some((extension) => Boolean(extension.filters?.[name]) || extension.dynamic?.prefix === name),
      extend: (extension) => void extensions.push(extension),
      onViewChanged: (observer) => void viewObservers.push(observer),
    })
    // A work item by id or key (`ENG-123`), its project not named: keys.ts.
    const refs = createWorkItemRefs({ db, access, workItems, extensions })
    services.get(ProjectTransfersRef).exportSection(workItems.exportSection)
    services.get(ProjectTransfersRef).importSection(workItems.importSection)
    let models: ReturnType<typeof workItemModels> | undefined
    return { workItems, refs, models: () => (models ??= workItemModels(extensions, BULK_MAX)) }
  },
  routes: ({ http }, { workItems, refs, models }) =>
    new Elysia({ name: 'work-items-all' })
      .use(workItemRoutes(http.v1, workItems, models()))
      .use(workItemRefRoutes(http.v1, refs, models()))
      .use(acrossRoutes(http.v1, workItems, models()))
      .use(viewRoutes(http.v1, workItems.views)),
  tools: (_context, { workItems, refs, models }) => workItemTools(workItems, models(), refs),
})
