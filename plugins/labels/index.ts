/** The `labels` plugin: organization labels, attached to work items (`labels` on every work item, the `label` list filter). */
import { t } from 'elysia'
import { crudEvents } from '../../src/changes'
import { UuidString } from '../../src/http/models'
import { definePlugin } from '../../src/plugin'
import { ProjectTransfersRef } from '../projects/api'
import { WorkItemsRef } from '../work-items/api'
import { LabelRef } from './model'
import { labelRoutes } from './routes'
import { labels, workItemLabels } from './schema'
import { createLabels, importedLabels, labelExportSection, labelImportSection, labelsColumn, LABELS_PER_ITEM, labelFilterWithin, writeItemLabels, writeItemsLabels } from './service'
import { labelTools } from './tools'

export default definePlugin({
  name: 'labels',
  description: 'Labels of the organization (administrators manage them), on work items: shown, set by id, filtered by name.',
  dependencies: ['auth', 'projects', 'work-items'],
  tables: { labels, workItemLabels },
  readModels: { label_directory: 'Labels as others may read them: id, organization_id, name, color (dashboards name their buckets).' },
  scopes: [
    { name: 'labels:read', description: 'Read labels.' },
    { name: 'labels:write', description: 'Create, rename and delete labels (administrators).', administratorsOnly: true },
  ],
  tags: [{ name: 'Labels', description: "The organization's labels. Work items carry them (`labels`: ids on create and PATCH, which replace the set) and lists filter by them (`label=<name>`)." }],
  events: crudEvents('label', 'A label'),

  setup({ db, services, lists, writes }) {
    services.get(WorkItemsRef).extend({
      property: 'labels',
      schema: t.Array(LabelRef, { description: 'Its labels, by name.' }),
      input: t.Array(UuidString(), { maxItems: LABELS_PER_ITEM, description: `Label ids (at most ${LABELS_PER_ITEM}): the whole set, which replaces the current one.` }),
      column: labelsColumn,
      write: writeItemLabels,
      writeMany: writeItemsLabels,
      imported: importedLabels,
      filters: {
        label: { type: 'text', column: 'l.name', within: labelFilterWithin, description: 'Only items carrying any of these labels (exact names).' },
      },
    })
    services.get(ProjectTransfersRef).exportSection(labelExportSection)
    services.get(ProjectTransfersRef).importSection(labelImportSection)
    return { labels: createLabels({ db, lists, writes }) }
  },
  routes: ({ http }, { labels }) => labelRoutes(http.v1, labels),
  tools: (_context, { labels }) => labelTools(labels),
})
