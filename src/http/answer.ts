/**
 * The one HTTP answer module: what a handler returns (`Page`, `Answer`), the envelope written
 * around it, and the validators: one ETag format, one hash, 304s, If-Match, `Link`
 * and `Location`. The envelope hook (envelope.ts) and the list cache (list-cache.ts) both answer
 * through these functions; this module imports neither of them.
 */
import { createHash } from 'node:crypto'
import { t } from 'elysia'
import type { ErrorItem } from './errors'
import { preconditionFailed } from './errors'

export interface PageMeta {
  /** Absent on a page read by `cursor` (its index is not known without counting the rows before it). */
  page?: number
  size: number
  totalItems: number
  totalPages: number
  /** The cursor of the next page (null on the last), on lists that take cursors. */
  nextCursor?: string | null
  /** The inbox's unread threads (not done), whatever its filters (its route documents it). */
  unreadCount?: number
}

/** A handler returns a Page for a paginated list; the envelope puts its meta beside the data. */
export class Page<T> {
  constructor(
    readonly items: T[],
    readonly meta: PageMeta,
  ) {}
}

/**
 * A page whose items the database already wrote as JSON (`data`: the array's text), beside its
 * meta: the list cache keeps the text as it is, without decoding a row (src/sql.ts `selectListPageText`).
 */
export class PageText {
  constructor(
    readonly data: string,
    readonly meta: PageMeta,
  ) {}
}

/**
 * A resource already written as JSON (`data`) with its ETag (`answerEtag` of that text): what a
 * hot read keeps between requests (`GET /users/me`), so its answer writes only the envelope and
 * the request id around it (src/http/envelope.ts).
 */
export class EncodedResource {
  constructor(
    readonly data: string,
    readonly etag: string,
  ) {}

  /** `value` written once, with its ETag as an answer would compute it. */
  static of(value: unknown): EncodedResource {
    const data = JSON.stringify(value ?? null)
    return new EncodedResource(data, answerEtag(data, (value as { updatedAt?: unknown } | null)?.updatedAt))
  }
}

/**
 * A result with an explicit status (and `Location`): what a write that creates answers. The unit
 * of work (src/writes.ts) records it, status and Location included, for an idempotent replay.
 */
export class Answer<T = unknown> {
  constructor(
    readonly value: T,
    readonly status: number,
    /** Where the created resource lives, when not under the request's own path (see createdLocation). */
    readonly location?: string,
  ) {}
}

/** 201 Created with `value` (at `location`, or the request path + its id). */
export const created = <T>(value: T, location?: string) => new Answer(value, 201, location)

/** The value inside an answer (MCP tools and the CLI answer with the resource alone). */
export const valueOf = <T>(result: T | Answer<T>): T => (result instanceof Answer ? result.value : result)

// ---------------------------------------------------------------------------------------------
// The envelope: `{data, errors, meta}` written once, as text around already encoded JSON.

/** The `meta` of an answer: the request id, and a page's meta after it. */
function metaText(requestId: string, page?: PageMeta): string {
  const id = JSON.stringify(requestId)
  if (!page) return `{"requestId":${id}}`
  const at = page.page === undefined ? '' : `"page":${page.page},`
  const next = page.nextCursor === undefined ? '' : `,"nextCursor":${page.nextCursor === null ? 'null' : `"${page.nextCursor}"`}`
  const unread = page.unreadCount === undefined ? '' : `,"unreadCount":${page.unreadCount}`
  return `{"requestId":${id},${at}"size":${page.size},"totalItems":${page.totalItems},"totalPages":${page.totalPages}${next}${unread}}`
}

/** The envelope's text around `data`, JSON already (a cached page's rows are never re-encoded). */
export const envelopeText = (data: string, requestId: string, page?: PageMeta) => `{"data":${data},"errors":[],"meta":${metaText(requestId, page)}}`

/**
 * Bodies of at least this many bytes (UTF-8) are sent as a stream of one chunk (`answerBody`):
 * under the ~15 KB from which Bun.serve's uncorked writes cost (bench/RESULTS.md, "Answer bodies").
 */
export const STREAMED_BODY_BYTES = 12 * 1024

const bodyEncoder = new TextEncoder()

/**
 * The body of an answer written after an `await` (anything that read the database): `text`
 * itself when short; when long, a Response whose body is `text` as one chunk of a stream, with
 * `status` (the route's set headers are merged into it, as into a string's). Bun.serve corks the
 * socket only while a request's handler runs synchronously, so a later answer leaves in one
 * send() per fragment (status line, each header's name, `: `, value, CRLF: oven-sh/bun#41341);
 * with a string body of ~15 KB or more after those, loopback costs ~120 µs of kernel time per
 * answer (8,000 answers/s on one core), where a stream body is written corked, with its headers:
 * ~6–13 µs, 50,000–80,000 answers/s. The answer is then chunked (no Content-Length).
 */
export function answerBody(text: string, status: unknown = 200): string | Response {
  // A character is 1 to 3 bytes of UTF-8: only text that may be long is measured.
  if (text.length * 3 < STREAMED_BODY_BYTES || Buffer.byteLength(text) < STREAMED_BODY_BYTES) return text
  return new Response(chunks(bodyEncoder.encode(text)), { status: typeof status === 'number' ? status : 200 })
}

/** A stream of the given chunks, enqueued at once: Bun.serve writes them corked, with the headers (see answerBody). */
function chunks(...parts: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const part of parts) controller.enqueue(part)
      controller.close()
    },
  })
}

/**
 * The envelope around a long page's `data` already encoded (a cached list page's bytes, shared by
 * every answer that sends them): a stream of three chunks, as `answerBody` would send the text.
 */
export function envelopeStream(data: Uint8Array, requestId: string, page?: PageMeta): Response {
  return new Response(chunks(bodyEncoder.encode('{"data":'), data, bodyEncoder.encode(`,"errors":[],"meta":${metaText(requestId, page)}}`)))
}

/** A Response built whole elsewhere (the MCP SDK's), its long body sent as `answerBody` sends one. */
export async function answerResponse(response: Response): Promise<Response> {
  if (!response.body || !/json/.test(response.headers.get('content-type') ?? '')) return response
  const body = answerBody(await response.text(), response.status)
  if (typeof body === 'string') return new Response(body, response)
  const headers = new Headers(response.headers)
  headers.delete('content-length')
  return new Response(body.body, { status: response.status, statusText: response.statusText, headers })
}

/** The envelope as an object (the account API, which answers through Elysia's own encoding). */
export function envelope(value: unknown, requestId: string) {
  if (value instanceof Page) return { data: value.items, errors: [], meta: { requestId, ...value.meta } }
  return { data: (value instanceof Answer ? value.value : value) ?? null, errors: [], meta: { requestId } }
}

/** The error envelope. */
export function errorEnvelope(errors: ErrorItem[], requestId: string) {
  return { data: null, errors, meta: { requestId } }
}

// ---------------------------------------------------------------------------------------------
// ETags: one format, `W/"<version>.<digest>"`, and one hash.
//
// Weak, since the bytes around the data (the request id) differ per answer. The version is what
// If-Match compares, without a dot: a resource's `updatedAt` in milliseconds (base 36), a list
// page's list version prefixed `l`, `-` for an answer without one. The digest tells apart what the version
// does not: a resource's body (a work item's position, which content order changes without
// touching the item), or a list page's key (its list, query and page).

const bunHash = (globalThis as { Bun?: { hash(text: string): number | bigint } }).Bun?.hash

/**
 * A 64-bit digest of `text`: Bun's native wyhash (about 0.1 µs for a resource, where creating a
 * SHA-1 object alone cost a /users/me answer 3 µs), or SHA-1 on the other runtimes. Instances of
 * one deployment run one runtime, so they agree on every ETag.
 */
export function digestOf(text: string): string {
  if (bunHash) return bunHash(text).toString(36)
  return createHash('sha1').update(text).digest('base64url').slice(0, 16)
}

/** The version part of a resource's ETag: its `updatedAt` in milliseconds, base 36. */
const resourceVersion = (updatedAt: Date | string) => new Date(updatedAt).getTime().toString(36)

/** The ETag of `version` (see above) and a digest of `digested`. */
export const etagOf = (version: string, digested: string) => `W/"${version}.${digestOf(digested)}"`

/** The ETag of an answer's encoded data, led by the resource's `updatedAt` when it has one. */
export const answerEtag = (encoded: string, updatedAt?: unknown) => etagOf(typeof updatedAt === 'string' ? resourceVersion(updatedAt) : '-', encoded)

/** The ETag of a cached list page: its list version (dots made underscores: the version ends at the first dot) and its key. */
export const listEtag = (listVersion: string, key: string) => etagOf(`l${listVersion.replaceAll('.', '_')}`, key)

/** `If-None-Match` names `etag` (a list of tags, weak comparison, or `*`). */
export function noneMatchHits(header: string | null, etag: string): boolean {
  if (!header) return false
  if (header.trim() === '*') return true
  const opaque = etag.replace(/^W\//, '')
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === opaque)
}

/** 304 Not Modified for `etag` (no body; the ETag repeated, as RFC 9110 asks). */
export const notModified = (etag: string, headers: Record<string, unknown> = {}) =>
  new Response(null, { status: 304, headers: { ...(headers as Record<string, string>), etag } })

/** The optional `If-Match` request header of an update or delete of a `noun` ("team", "item"…). */
export const ifMatchHeader = (noun: string) =>
  t.Object({ 'if-match': t.Optional(t.String({ description: `ETag from a previous read; 412 if the ${noun} changed since.` })) })

/**
 * Optimistic concurrency: throws 412 PRECONDITION_FAILED (RFC 9110) when `ifMatch` is given and
 * names none of the current version's ETags (or `*`). Only the version before the dot is
 * compared, so a tag read before a change of something the resource only shows still matches.
 */
export function checkIfMatch(ifMatch: string | undefined, updatedAt: Date): void {
  if (ifMatch === undefined || ifMatch.trim() === '*') return
  const current = resourceVersion(updatedAt)
  const version = (tag: string) => tag.trim().replace(/^W\//, '').replace(/^"|"$/g, '').split('.', 1)[0]
  if (!ifMatch.split(',').some((tag) => version(tag) === current)) throw preconditionFailed('The resource changed since it was read (If-Match does not match its ETag).')
}

// ---------------------------------------------------------------------------------------------
// Link and Location.

/**
 * An offset page may start at most this many rows in: the database reads and drops every row
 * before the page, so a deep offset costs what it skips (seconds at 1M rows). Cursors reach
 * every row for what a first page costs.
 */
export const MAX_OFFSET_ROWS = 10_000

/** Whether a page's offset is within the bound: the one test, for requests and for the links that point at pages. */
export const offsetAllowed = (page: number, size: number) => page * size < MAX_OFFSET_ROWS

/**
 * RFC 8288 `Link` of a page: `first` always, `last` when its offset is allowed, `prev` on a page
 * read by number after the first, `next` where there is one. Each target is the request's own
 * path and query with only `page` (or `cursor`) replaced, as a relative reference (the service
 * cannot know the host a client reached it by behind a proxy). On a list that takes cursors,
 * `next` is always by cursor (`meta.nextCursor`), from the first page on: a client following
 * `next` walks the list by cursor, each page costing what the first does, never reaching the
 * offset bound, and skipping or repeating no row when rows are added or removed before it. A
 * page read by cursor has no `prev` (its index is not known).
 */
export function pageLinks(url: string, meta: Pick<PageMeta, 'page' | 'size' | 'totalPages' | 'nextCursor'>): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const target = new URL(url)
  const path = start < 0 ? '/' : url.slice(start).split('?', 1)[0]!
  const link = (rel: string, page?: number, cursor?: string) => {
    target.searchParams.delete(cursor === undefined ? 'cursor' : 'page')
    if (cursor !== undefined) target.searchParams.set('cursor', cursor)
    else target.searchParams.set('page', String(page))
    return `<${path}?${target.searchParams}>; rel="${rel}"`
  }
  const last = Math.max(meta.totalPages - 1, 0)
  // A page number whose offset is refused is no link: past it there is no `last`.
  const numbered = (page: number) => offsetAllowed(page, meta.size)
  const links = [link('first', 0)]
  if (meta.page !== undefined && meta.page > 0) links.push(link('prev', Math.min(meta.page - 1, last)))
  // A list that takes cursors says whether a next page exists (null on the last page); one that
  // takes none (no `nextCursor`) goes on by page number while that is allowed.
  if (meta.nextCursor) links.push(link('next', undefined, meta.nextCursor))
  else if (meta.nextCursor === undefined && meta.page !== undefined && meta.page < last && numbered(meta.page + 1)) links.push(link('next', meta.page + 1))
  if (numbered(last)) links.push(link('last', last))
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

/** The Location a 201 answer of a POST to `path` carries: the answer's own, or its resource's under `path`. */
export const locationOf = (answer: Answer, path: string) => answer.location ?? (answer.status === 201 ? createdLocation(path, answer.value) : undefined)
