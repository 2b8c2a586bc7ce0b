/** Request and response models of custom fields. */
import { t } from 'elysia'
import { Timestamp, UuidString } from '../../src/http/models'
import { FIELD_TYPES } from './schema'

export const NAME_MAX = 100
export const OPTIONS_MAX = 100
/** Text values are at most this long (they are indexed for filters). */
export const TEXT_MAX = 1000
export const URL_MAX = 2000

const Color = t.String({ pattern: '^#[0-9a-fA-F]{6}$', description: '`#` and 6 hex digits.' })
const FieldType = t.Union(FIELD_TYPES.map((type) => t.Literal(type)), { description: FIELD_TYPES.join(', ') })

export const FieldOption = t.Object({ id: UuidString(), name: t.String(), color: t.String() }, { title: 'CustomFieldOption' })

export const CustomField = t.Object(
  {
    id: UuidString(),
    key: t.String({ description: 'The property name in a work item\'s `fields`; never changes.' }),
    name: t.String(),
    type: FieldType,
    options: t.Array(FieldOption, { description: 'The choices of a select field (empty for other types); ids never change.' }),
    required: t.Boolean({ description: 'Work items of projects that enable it must have a value.' }),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'CustomField' },
)

const OptionInput = t.Object(
  {
    id: t.Optional(UuidString({ description: "An existing option's id: keeps it (a rename). Without one, a new option." })),
    name: t.String({ minLength: 1, maxLength: NAME_MAX }),
    color: t.Optional({ ...Color, default: '#6b7280' }),
  },
  { additionalProperties: false },
)

export const CustomFieldInput = t.Object(
  {
    key: t.String({ pattern: '^[a-z][a-z0-9_]{0,39}$', description: 'Lower-case letters, digits and `_`, starting with a letter, at most 40: unique in the organization.' }),
    name: t.String({ minLength: 1, maxLength: NAME_MAX }),
    type: FieldType,
    options: t.Optional(t.Array(OptionInput, { maxItems: OPTIONS_MAX, description: `The choices of a select field (1 to ${OPTIONS_MAX}, names unique).` })),
    required: t.Optional(t.Boolean({ default: false })),
  },
  { additionalProperties: false },
)

export const CustomFieldPatch = t.Object(
  {
    name: t.Optional(t.String({ minLength: 1, maxLength: NAME_MAX })),
    options: t.Optional(
      t.Array(OptionInput, {
        maxItems: OPTIONS_MAX,
        description: "The whole list: options named by id keep their id (renamed or recolored), those without one are new, those left out are removed from every work item's value.",
      }),
    ),
    required: t.Optional(t.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const ProjectFieldInput = t.Object({ fieldId: UuidString() }, { additionalProperties: false })

/** A work item's `fields`: values by key, each constrained by its definition. */
export const FieldValues = t.Record(t.String(), t.Unknown(), {
  description:
    "Custom field values by key: text and url (strings), number, date (YYYY-MM-DD), single_select (an option id), multi_select (option ids), user (a user id). Only fields enabled for the item's project; in a PATCH the named keys change, `null` clears one, others stay.",
})

export type CustomFieldInput = typeof CustomFieldInput.static
export type CustomFieldPatch = typeof CustomFieldPatch.static
export type CustomFieldResource = typeof CustomField.static
