/** Request and response models of labels. */
import { t } from 'elysia'
import { Timestamp, UuidString } from '../../src/http/models'

export const NAME_MAX = 100
const Color = t.String({ pattern: '^#[0-9a-fA-F]{6}$', description: '`#` and 6 hex digits, e.g. `#d73a4a`.' })

export const Label = t.Object({ id: UuidString(), name: t.String(), color: t.String(), createdAt: Timestamp(), updatedAt: Timestamp() }, { title: 'Label' })

/** A label as a work item shows it. */
export const LabelRef = t.Object({ id: UuidString(), name: t.String(), color: t.String() }, { title: 'LabelRef' })

export const LabelInput = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: NAME_MAX, description: `1..${NAME_MAX} characters, unique in the organization (case-insensitive).` }),
    color: t.Optional({ ...Color, default: '#6b7280' }),
  },
  { additionalProperties: false },
)

export const LabelPatch = t.Object({ name: t.Optional(t.String({ minLength: 1, maxLength: NAME_MAX })), color: t.Optional(Color) }, { additionalProperties: false, minProperties: 1 })

export type LabelInput = typeof LabelInput.static
export type LabelPatch = typeof LabelPatch.static
export type LabelResource = typeof Label.static
