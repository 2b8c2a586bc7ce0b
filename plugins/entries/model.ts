/** Request and response models of entries. */
import { sql } from 'drizzle-orm'
import { t } from 'elysia'
import { filterParameters, type ListShape } from '../../src/http/list-query'
import { Timestamp, UuidString } from '../../src/http/models'
import { cursorParameter, pageQuery } from '../../src/http/pagination'
import { ENTRY_KINDS } from './schema'
import { isoOf } from '../../src/sql'

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

/** The filters and sorts of a work item's entries, served by the indexes of schema.ts. */
export const ENTRY_LIST: ListShape = {
  name: 'entries',
  filters: {
    kind: { type: 'enum', values: ENTRY_KINDS, column: 'e.kind', description: 'Only entries of these kinds.' },
    authorId: { type: 'uuid', me: true, column: 'e.author_id', description: 'Only entries written by this user (`me`: you).' },
    createdAt: { type: 'timestamp', column: 'e.created_at', description: 'Creation time.' },
    updatedAt: { type: 'timestamp', column: 'e.updated_at', description: 'Last change.' },
  },
  sorts: {
    position: { column: 'e.position', cast: 'int' },
    createdAt: { column: 'e.created_at', cast: 'timestamptz' },
    updatedAt: { column: 'e.updated_at', cast: 'timestamptz' },
  },
  defaultOrder: ['position', 'createdAt'],
  tiebreaker: { column: 'e.id', cast: 'uuid' },
}

// Other keys reach the service, which refuses them naming the allowed ones.
export const EntryQuery = t.Object({ ...pageQuery(), ...cursorParameter(), ...filterParameters(ENTRY_LIST) }, { additionalProperties: true })

export type EntryInput = typeof EntryInput.static
export type EntryPatch = typeof EntryPatch.static

export type EntryResource = typeof Entry.static

/** An entry's columns as the API shows them, timestamps as text (table alias `e`). */
export const ENTRY_COLUMNS = sql.raw(`e.id, e.work_item_id as "workItemId", e.kind, e.body, e.author_id as "authorId", e.position,
  e.created_at as "createdAt", e.updated_at as "updatedAt"`)

export type EntryTextRow = Omit<EntryResource, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string }

/**
 * An entry as the API shows it, from its row as Drizzle reads it or as ENTRY_COLUMNS read it
 * (timestamps as text): the one mapping of an entry.
 */
export const toEntry = (row: Omit<EntryResource, 'createdAt' | 'updatedAt'> & { createdAt: Date | string; updatedAt: Date | string }): EntryResource => ({
  id: row.id,
  workItemId: row.workItemId,
  kind: row.kind,
  body: row.body,
  authorId: row.authorId,
  position: row.position,
  createdAt: isoOf(row.createdAt),
  updatedAt: isoOf(row.updatedAt),
})
