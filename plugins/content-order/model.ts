/** The content order document: work item ids in order, and entry ids in order per work item. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'

export const MAX_IDS = 10_000

export const ContentOrder = t.Object(
  {
    workItems: t.Array(UuidString(), { description: 'Work item ids in order.' }),
    entries: t.Record(t.String(), t.Array(UuidString()), { description: 'For each work item id: its entry ids in order.' }),
  },
  { title: 'ContentOrder' },
)

export const ContentOrderInput = t.Object(
  {
    workItems: t.Optional(
      t.Array(UuidString(), {
        maxItems: MAX_IDS,
        description: 'The new order of the work items named; the others keep their places (the named ones fill the positions they held).',
      }),
    ),
    entries: t.Optional(
      t.Record(t.String({ maxLength: 36 }), t.Array(UuidString(), { maxItems: MAX_IDS }), {
        maxProperties: 1000,
        description: 'Per work item id: the new order of the entries named.',
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
)

export type ContentOrderInput = typeof ContentOrderInput.static
