/** Request and response models of entries. */
import { t } from 'elysia'
import { Timestamp, UuidString } from '../../src/http/models'
import { withIsoTimestamps } from '../../src/sql'

export const BODY_MAX = 50_000

export const Kind = t.Union([t.Literal('comment'), t.Literal('note'), t.Literal('log')])

export const Entry = t.Object(
  {
    id: UuidString(),
    workItemId: UuidString(),
    kind: Kind,
    body: t.String(),
    authorId: t.Union([UuidString(), t.Null()]),
    position: t.Integer({ minimum: 0, description: 'Order within the work item (content order).' }),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Entry' },
)

export const EntryInput = t.Object(
  {
    body: t.String({ minLength: 1, maxLength: BODY_MAX }),
    kind: t.Optional(Kind),
  },
  { additionalProperties: false },
)

export const EntryPatch = t.Object(
  {
    body: t.Optional(t.String({ minLength: 1, maxLength: BODY_MAX })),
    kind: t.Optional(Kind),
  },
  { additionalProperties: false, minProperties: 1 },
)

export type EntryInput = typeof EntryInput.static
export type EntryPatch = typeof EntryPatch.static

export type EntryResource = typeof Entry.static

/** An entry's columns as the API shows them, for SQL-text reads (table alias `e`). */
export const ENTRY_COLUMNS = `e.id, e.work_item_id as "workItemId", e.kind, e.body, e.author_id as "authorId", e.position,
  e.created_at as "createdAt", e.updated_at as "updatedAt"`

export type EntryTextRow = Omit<EntryResource, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string }

export const fromEntryText = (row: EntryTextRow): EntryResource => withIsoTimestamps(row)
