/** The `custom-fields` plugin: typed custom fields on work items (`fields`), defined per organization, enabled per project. */
import { crudEvents } from '../../src/changes'
import { definePlugin } from '../../src/plugin'
import { UserDirectoryRef } from '../auth/api'
import { ProjectAccessRef, ProjectTransfersRef } from '../projects/api'
import { WorkItemsRef } from '../work-items/api'
import { CustomFieldsRef, customFieldsFace } from './api'
import { FieldValues } from './model'
import { customFieldRoutes } from './routes'
import { customFields, projectCustomFields, workItemFieldValues } from './schema'
import { createCustomFields, fieldExportSection, fieldImportSection, fieldsImported } from './service'
import { customFieldTools } from './tools'
import { describeFields, fieldWriter, fieldsColumn, fieldsWriter, loadFieldFilters } from './values'

export default definePlugin({
  name: 'custom-fields',
  description: 'Custom fields of the organization (text, number, date, selects, user, url), enabled per project, on work items as `fields`: validated, filtered and sorted.',
  dependencies: ['auth', 'projects', 'work-items'],
  tables: { customFields, projectCustomFields, workItemFieldValues },
  scopes: [
    { name: 'custom_fields:read', description: 'Read custom field definitions and which projects enable them.' },
    { name: 'custom_fields:write', description: 'Define custom fields (administrators) and enable them for projects (owners).' },
  ],
  tags: [
    {
      name: 'Custom fields',
      description:
        "Typed fields of the organization's work items. Administrators define them; a project's owners enable them; work items take values in `fields` (`{key: value}`), and lists filter (`field.<key>=…`) and sort (`sort=field.<key>`) by them.",
    },
  ],
  events: [
    ...crudEvents('custom_field', 'A custom field definition'),
    { name: 'project_custom_field.created', description: 'A custom field was enabled for a project; data: `{projectId, fieldId, key}`.' },
    { name: 'project_custom_field.deleted', description: "A custom field was disabled for a project, its values taken from the project's work items; data: `{projectId, fieldId, key}`." },
  ],

  setup({ db, services, lists, writes }) {
    services.provide(CustomFieldsRef, customFieldsFace)
    services.get(ProjectTransfersRef).exportSection(fieldExportSection)
    services.get(ProjectTransfersRef).importSection(fieldImportSection)
    services.get(WorkItemsRef).extend({
      property: 'fields',
      schema: FieldValues,
      input: FieldValues,
      column: fieldsColumn,
      write: fieldWriter(services.get(UserDirectoryRef)),
      writeMany: fieldsWriter(services.get(UserDirectoryRef)),
      imported: fieldsImported(services.get(UserDirectoryRef)),
      describe: describeFields,
      dynamic: {
        prefix: 'field.',
        description: 'filter by a custom field of the organization (number and date fields take the operators of `priority`; selects take option ids or names), and `sort=field.<key>` (number and date fields; text and url fields by their first 50 characters).',
        load: loadFieldFilters,
      },
    })
    return { fields: createCustomFields({ db, lists, writes, access: services.get(ProjectAccessRef) }) }
  },
  routes: ({ http }, { fields }) => customFieldRoutes(http.v1, fields),
  tools: (_context, { fields }) => customFieldTools(fields),
})
