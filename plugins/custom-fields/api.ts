/**
 * The `custom-fields` plugin's public face: what other plugins may ask of an organization's
 * fields without reading its tables (dashboards group work items by a select field's options).
 */
import type { Executor } from '../../src/db'
import { queryText } from '../../src/db'
import { serviceRef } from '../../src/services/registry'

/** A select field's options in their order: the value stored (`id`) and the name shown. */
export interface SelectField {
  key: string
  multiple: boolean
  options: { id: string; name: string }[]
}

export interface CustomFieldsFace {
  /** The organization's single- or multi-select field with this key, or undefined (none, or of another type). */
  selectField(executor: Executor, organizationId: string, key: string): Promise<SelectField | undefined>
}

export const CustomFieldsRef = serviceRef<CustomFieldsFace>('custom-fields.face', 'custom-fields')

export const customFieldsFace: CustomFieldsFace = {
  async selectField(executor, organizationId, key) {
    const [row] = await queryText<{ key: string; type: string; options: { id: string; name: string }[] }>(
      executor,
      `select key, type, options from custom_fields where organization_id = $1 and key = $2 and type in ('single_select', 'multi_select')`,
      [organizationId, key],
    )
    return row && { key: row.key, multiple: row.type === 'multi_select', options: (row.options ?? []).map(({ id, name }) => ({ id, name })) }
  },
}

/** The SQL column a work item's field values are read by (the extension's `column`), for statements run elsewhere (the export benchmark's ceiling). */
export { fieldsColumn } from './values'
