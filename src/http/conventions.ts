/**
 * The HTTP conventions of API v1 (SPEC §10) that every answer follows, applied once by the v1
 * kit rather than by each route: `ETag` and 304 on every GET, `Link` on every list, `Location`
 * on every 201, and the JSON-only request body.
 */
import { createHash } from 'node:crypto'
import type { PageMeta } from './envelope'
import { badRequest } from './errors'
import { noneMatchHits } from './list-cache'

/**
 * The ETag of an answer's encoded `data` (and page meta): weak, since the bytes around it (the
 * request id) differ per answer. A resource carrying `updatedAt` leads with it, the version
 * `If-Match` compares (etag.ts); the digest behind it changes with anything else the body shows
 * (a work item's position, which content order changes without touching the item).
 */
export function answerEtag(encoded: string, updatedAt?: unknown): string {
  const digest = digestOf(encoded)
  const version = typeof updatedAt === 'string' ? `${new Date(updatedAt).getTime().toString(36)}.` : ''
  return `W/"${version}${digest}"`
}

const bunHash = (globalThis as { Bun?: { hash(text: string): number | bigint } }).Bun?.hash

/**
 * A 64-bit digest of `text`: Bun's native wyhash (about 0.1 µs for a resource, where creating a
 * SHA-1 object alone cost a /users/me answer 3 µs), or SHA-1 on the other runtimes. Instances of
 * one deployment run one runtime, so they agree on every ETag.
 */
function digestOf(text: string): string {
  if (bunHash) return bunHash(text).toString(36)
  return createHash('sha1').update(text).digest('base64url').slice(0, 16)
}

/** 304 Not Modified for `etag` (no body; the ETag repeated, as RFC 9110 asks). */
export const notModified = (etag: string, headers: Record<string, unknown>) =>
  new Response(null, { status: 304, headers: { ...(headers as Record<string, string>), etag } })

export { noneMatchHits }

/**
 * RFC 8288 `Link` of a page: first and last always, prev and next where they exist. Each target
 * is the request's own path and query with only `page` replaced, as a relative reference (the
 * service cannot know the host a client reached it by behind a proxy).
 */
export function pageLinks(url: string, meta: Pick<PageMeta, 'page' | 'totalPages'>): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const target = new URL(url)
  const path = start < 0 ? '/' : url.slice(start).split('?', 1)[0]!
  const at = (page: number, rel: string) => {
    target.searchParams.set('page', String(page))
    return `<${path}?${target.searchParams}>; rel="${rel}"`
  }
  const last = Math.max(meta.totalPages - 1, 0)
  const links = [at(0, 'first')]
  if (meta.page > 0) links.push(at(Math.min(meta.page - 1, last), 'prev'))
  if (meta.page < last) links.push(at(meta.page + 1, 'next'))
  links.push(at(last, 'last'))
  return links.join(', ')
}

/** The fields that name a created resource under its collection, in the order they are looked for. */
const IDENTIFYING = ['id', 'userId', 'teamId', 'principalId'] as const

/**
 * The `Location` of a resource created by a POST to `path` (its collection): the collection's
 * path and the resource's identifier (a member is addressed by its user, a team link by its team).
 */
export function createdLocation(path: string, data: unknown): string | undefined {
  if (!data || typeof data !== 'object') return undefined
  for (const field of IDENTIFYING) {
    const value = (data as Record<string, unknown>)[field]
    if (typeof value === 'string') return `${path.replace(/\/+$/, '')}/${encodeURIComponent(value)}`
  }
  return undefined
}

const JSON_BODY = /^application\/(?:[\w.+-]+\+)?json$/i

/**
 * A v1 request that sends a body must say it is JSON: a form (curl's `-d` default) or text
 * would otherwise reach the route as something else and fail with a misleading field error.
 * A body without any Content-Type is read as JSON, as before.
 */
export function throwIfNotJson(request: Request, body: unknown): void {
  if (body === null || body === undefined) return
  const type = request.headers.get('content-type')
  if (type === null) return
  const media = type.split(';', 1)[0]!.trim()
  if (media !== '' && !JSON_BODY.test(media)) throw badRequest('Content-Type must be application/json')
}
