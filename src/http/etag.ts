/**
 * Optimistic concurrency: `If-Match` against a resource's version. A resource's ETag (made by the
 * v1 kit, conventions.ts) is `W/"<updatedAt>.<digest of its body>"`; If-Match compares the
 * version before the dot, so a tag read before a change of something the resource only shows
 * (a work item's position) still matches, and a tag read before a change of the resource does not.
 */
import { t } from 'elysia'
import { conflict } from './errors'

/** The version part of a resource's ETag: its `updatedAt` in milliseconds, base 36. */
const versionOf = (updatedAt: Date) => updatedAt.getTime().toString(36)

/** The optional `If-Match` request header of an update or delete of a `noun` ("team", "item"…). */
export const ifMatchHeader = (noun: string) =>
  t.Object({ 'if-match': t.Optional(t.String({ description: `ETag from a previous read; 409 if the ${noun} changed since.` })) })

/** Throws 409 CONFLICT when `ifMatch` is given and names none of the current version's ETags (or `*`). */
export function checkIfMatch(ifMatch: string | undefined, updatedAt: Date): void {
  if (ifMatch === undefined || ifMatch.trim() === '*') return
  const current = versionOf(updatedAt)
  const version = (tag: string) => tag.trim().replace(/^W\//, '').replace(/^"|"$/g, '').split('.', 1)[0]
  if (!ifMatch.split(',').some((tag) => version(tag) === current)) throw conflict('The resource changed since it was read (If-Match does not match its ETag).')
}
