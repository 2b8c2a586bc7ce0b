/**
 * Custom fields: the organization's definitions, the projects that enable them, and work items'
 * values, one row per item and field with the value both as shown (`value`) and typed in the
 * column its filters and sorts use (the indexes below, each within a project and a field).
 */
import { sql } from 'drizzle-orm'
import { boolean, date, index, jsonb, numeric, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { rowId, tenantKey, tenantReference, timestamps } from '../../src/schema'
import { organizationReference } from '../auth/schema'
import { projectOfRow } from '../projects/schema'
import { workItemOfRow } from '../work-items/schema'

export const FIELD_TYPES = ['text', 'number', 'date', 'single_select', 'multi_select', 'user', 'url'] as const
export type FieldType = (typeof FIELD_TYPES)[number]

/** An option of a select field: its id never changes (a rename keeps it). */
export interface FieldOption {
  id: string
  name: string
  color: string
}

export const customFields = pgTable(
  'custom_fields',
  {
    id: rowId(),
    organizationId: organizationReference(),
    /** The property name in `fields`; never changes. */
    key: text().notNull(),
    name: text().notNull(),
    type: text({ enum: FIELD_TYPES }).notNull(),
    options: jsonb().$type<FieldOption[]>().notNull().default(sql`'[]'::jsonb`),
    required: boolean().notNull().default(false),
    ...timestamps,
  },
  (table) => [tenantKey('custom_fields', [table.id], table.organizationId), uniqueIndex('custom_fields_key_unique').on(table.organizationId, table.key)],
)

/** A field enabled for a project: its work items take (and show) values of it. */
export const projectCustomFields = pgTable(
  'project_custom_fields',
  {
    projectId: uuid().notNull(),
    fieldId: uuid().notNull(),
    organizationId: organizationReference(),
    createdAt: timestamps.createdAt,
  },
  (table) => [
    tenantKey('project_custom_fields', [table.projectId, table.fieldId], table.organizationId),
    projectOfRow('project_custom_fields_project_fk', table.projectId, table.organizationId),
    tenantReference('project_custom_fields_field_fk', [table.fieldId, table.organizationId], [customFields.id, customFields.organizationId]),
  ],
)

export const workItemFieldValues = pgTable(
  'work_item_field_values',
  {
    workItemId: uuid().notNull(),
    fieldId: uuid().notNull(),
    organizationId: organizationReference(),
    projectId: uuid().notNull(),
    /** The definition's key (keys never change): the property of `fields` without a join. */
    fieldKey: text().notNull(),
    /** The value as API v1 shows it. */
    value: jsonb().notNull(),
    numberValue: numeric(),
    dateValue: date({ mode: 'string' }),
    /** text and url values. */
    textValue: text(),
    userId: uuid(),
    /** single_select (one) and multi_select option ids. */
    optionIds: uuid().array(),
  },
  (table) => [
    tenantKey('work_item_field_values', [table.workItemId, table.fieldId], table.organizationId),
    workItemOfRow('work_item_field_values_work_item_fk', table.workItemId, table.organizationId),
    tenantReference('work_item_field_values_field_fk', [table.fieldId, table.organizationId], [customFields.id, customFields.organizationId]),
    index('work_item_field_values_number_idx').on(table.projectId, table.fieldId, table.numberValue, table.workItemId).where(sql`${table.numberValue} is not null`),
    index('work_item_field_values_date_idx').on(table.projectId, table.fieldId, table.dateValue, table.workItemId).where(sql`${table.dateValue} is not null`),
    index('work_item_field_values_text_idx').on(table.projectId, table.fieldId, table.textValue, table.workItemId).where(sql`${table.textValue} is not null`),
    index('work_item_field_values_user_idx').on(table.projectId, table.fieldId, table.userId, table.workItemId).where(sql`${table.userId} is not null`),
    index('work_item_field_values_options_idx').using('gin', table.optionIds),
    index('work_item_field_values_field_idx').on(table.fieldId, table.projectId),
  ],
)
