/** Optimistic concurrency: a weak ETag from `updatedAt`, and the If-Match check (409 when stale). */
import { t } from 'elysia'
import { conflict } from './errors'

/** The ETag of a resource last changed at `updatedAt` (a Date, or its ISO text in an API shape). */
export const etagOf = (updatedAt: Date | string) => `W/"${new Date(updatedAt).getTime().toString(36)}"`

/** The optional `If-Match` request header of an update or delete of a `noun` ("team", "item"…). */
export const ifMatchHeader = (noun: string) =>
  t.Object({ 'if-match': t.Optional(t.String({ description: `ETag from a previous read; 409 if the ${noun} changed since.` })) })

/** Throws 409 CONFLICT when `ifMatch` is given and names none of the current ETag (or `*`). */
export function checkIfMatch(ifMatch: string | undefined, updatedAt: Date): void {
  if (ifMatch === undefined || ifMatch.trim() === '*') return
  const current = etagOf(updatedAt)
  const strip = (tag: string) => tag.trim().replace(/^W\//, '')
  const matches = ifMatch.split(',').some((tag) => strip(tag) === strip(current))
  if (!matches) throw conflict('The resource changed since it was read (If-Match does not match its ETag).')
}
