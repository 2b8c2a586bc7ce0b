/**
 * Exact cached list pages. A list read first runs its access check, which also reads the
 * versions of what the list can show (change_versions: advanced by the audit writer in the
 * transaction of every change, src/audit.ts); the page is then looked up under its key (the
 * list and its query) and that version. A hit costs no row read and no encoding; a client
 * holding the page's ETag gets 304 without even that. Each instance keeps its own cache, and
 * the versions live in the database, so a read after a committed write, on any instance, never
 * sees the old page.
 *
 * Why no stale page can be served: the version is read before the rows (an earlier statement,
 * or the same one). A page stored under version V was read at or after V was committed; a
 * reader that finds V is current needs no change committed after V, so that page is what it
 * would read itself (or newer, only while a write is committing: a read racing a write may see
 * either side).
 */
import { envelopeStream, envelopeText, listEtag, noneMatchHits, notModified, Page, PageText, STREAMED_BODY_BYTES, type PageMeta } from './answer'
import { requestIdOf } from './request-id'
import { LRUCache } from 'lru-cache'

/** A page in its encoded form: the `data` array as JSON text beside its meta; a long one also as UTF-8 bytes, sent as they are. */
export interface EncodedPage {
  data: string
  meta: PageMeta
  utf8?: Uint8Array
}

interface Entry extends EncodedPage {
  key: string
  version: string
  bytes: number
}

/** Counted for tests and the benchmarks. */
export interface ListCacheStats {
  hits: number
  misses: number
  notModified: number
  /** Misses answered by a load another request had started. */
  shared: number
  evictions: number
  bytes: number
  entries: number
}

const utf8 = new TextEncoder()

/** What a list's load gives: its items, or their JSON text as the database wrote it (src/sql.ts selectListPageText). */
export type LoadedPage = Page<unknown> | PageText

/** A loaded page's encoded form: the database's text as it is, or its items' JSON. */
function encode(loaded: LoadedPage): EncodedPage {
  return loaded instanceof PageText ? encodedPage(loaded.data, loaded.meta) : encodedPage(JSON.stringify(loaded.items), loaded.meta)
}

/** A page's encoded form: a long one (as `answerBody` counts) also as bytes, encoded once for every answer that sends it. */
function encodedPage(data: string, meta: PageMeta): EncodedPage {
  if (data.length * 3 < STREAMED_BODY_BYTES) return { data, meta }
  const encoded = utf8.encode(data)
  return encoded.byteLength < STREAMED_BODY_BYTES ? { data, meta } : { data, meta, utf8: encoded }
}

/**
 * A bounded LRU (by the bytes of the encoded pages) of list pages, per process: an `lru-cache`
 * keyed by the version and the list key, so concurrent misses of one page at one version share
 * one load (its `fetchMethod`), and a load at another version is its own. A list keeps one
 * stored page: storing a version drops the page of the version before.
 */
export class ListCache {
  /** Undefined when caching is off. */
  private readonly entries: LRUCache<string, Entry, () => Promise<LoadedPage>> | undefined
  /** The version of the page stored (or being stored) per list key. */
  private readonly versions = new Map<string, string>()
  readonly stats: ListCacheStats

  /**
   * `maxBytes` 0 turns caching off: every read loads and encodes its page (ETags and 304 still work).
   * `builtByDatabase`: the lists that can have the database write their pages' JSON do
   * (`server.listPagesBuiltBy`; src/sql.ts selectListPageText).
   */
  constructor(
    readonly maxBytes: number,
    readonly builtByDatabase = false,
  ) {
    const entries = (this.entries =
      maxBytes > 0
        ? new LRUCache<string, Entry, () => Promise<LoadedPage>>({
            maxSize: maxBytes,
            // A page over a quarter of the bound is answered but not kept.
            maxEntrySize: maxBytes / 4,
            sizeCalculation: (entry) => entry.bytes,
            fetchMethod: (id, _stale, { context }) => this.load(id, context),
            // A load whose entry went meanwhile (evicted, or a newer version stored) still answers its readers.
            ignoreFetchAbort: true,
            dispose: (entry, _id, reason) => {
              if (reason === 'evict') this.stats.evictions++
              if (reason !== 'set' && this.versions.get(entry.key) === entry.version) this.versions.delete(entry.key)
            },
          })
        : undefined)
    this.stats = {
      hits: 0,
      misses: 0,
      notModified: 0,
      shared: 0,
      evictions: 0,
      get bytes() {
        return entries?.calculatedSize ?? 0
      },
      get entries() {
        return entries?.size ?? 0
      },
    }
  }

  /**
   * The page of list `key` at `version`, loaded by `load` when not cached. Nothing runs until
   * the answer needs the rows: a matching If-None-Match needs only the ETag.
   */
  page<T>(key: string, version: string, load: () => Promise<Page<T> | PageText>): CachedPage {
    return new CachedPage(this, key, version, load as () => Promise<LoadedPage>)
  }

  /**
   * The page of `key` at `version`: cached, being loaded by another request (which it then
   * shares: after a write, the readers waiting for the new page read its rows once), or loaded.
   */
  fetch(key: string, version: string, load: () => Promise<LoadedPage>): Promise<EncodedPage> | EncodedPage {
    if (!this.entries) {
      this.stats.misses++
      return load().then(encode)
    }
    const id = entryId(key, version)
    const cached = this.entries.get(id)
    if (cached) {
      this.stats.hits++
      return cached
    }
    const status: LRUCache.Status<string, Entry> = {}
    const page = this.entries.fetch(id, { context: load, status }) as Promise<Entry>
    if (status.fetch === 'inflight') this.stats.shared++
    return page
  }

  /** The cached page of `key` if it was stored at `version` (and marks it recently used). */
  lookup(key: string, version: string): EncodedPage | undefined {
    const entry = this.entries?.get(entryId(key, version))
    if (entry) this.stats.hits++
    return entry
  }

  /** Reads and encodes the page of entry `id` (the cache's fetchMethod); the page of the list's previous version goes. */
  private async load(id: string, load: () => Promise<LoadedPage>): Promise<Entry> {
    this.stats.misses++
    const loaded = await load()
    const page = encode(loaded)
    const split = id.indexOf(' ')
    const version = id.slice(0, split)
    const key = id.slice(split + 1)
    // What the entry holds: its JSON text (counted as UTF-8 bytes, an upper bound of what a
    // string of it takes in memory for ASCII), its key and a fixed overhead for the objects.
    const bytes = Buffer.byteLength(page.data) + (page.utf8?.byteLength ?? 0) + id.length * 2 + 256
    // Stored only if its entry is still there (a remaining time of 0 means gone) and small enough.
    if (this.entries && bytes <= this.entries.maxEntrySize && this.entries.getRemainingTTL(id) > 0) {
      const previous = this.versions.get(key)
      if (previous !== undefined && previous !== version) this.entries.delete(entryId(key, previous))
      this.versions.set(key, version)
    }
    return { ...page, key, version, bytes }
  }
}

/** The cache's key of list `key` at `version` (a version has no space: it comes first). */
const entryId = (key: string, version: string) => `${version} ${key}`

/** A list answer not yet read: its ETag now, its rows only when needed. */
export class CachedPage {
  readonly etag: string

  constructor(
    private readonly cache: ListCache,
    private readonly key: string,
    private readonly version: string,
    private readonly load: () => Promise<LoadedPage>,
  ) {
    this.etag = listEtag(version, key)
  }

  /** The encoded page: from the cache, from a load under way, or loaded, encoded and stored. */
  async encoded(): Promise<EncodedPage> {
    return this.cache.fetch(this.key, this.version, this.load)
  }

  /** The page as objects (the MCP tools' answer). */
  async page(): Promise<Page<unknown>> {
    const { data, meta } = await this.encoded()
    return new Page(JSON.parse(data) as unknown[], meta)
  }

  /**
   * The v1 answer: 304 when `ifNoneMatch` names the ETag, else the envelope's text, written around
   * the cached JSON text (no re-encoding of the rows), with its headers (the ETag, and the page's
   * `Link` when asked) put in `set`: Elysia answers text with the set headers as they are. A long
   * page is sent as a stream of its stored bytes between the envelope's two ends (`envelopeStream`).
   */
  async response(ifNoneMatch: string | null, set: { headers: Record<string, unknown> }, links?: (meta: PageMeta) => string): Promise<Response | string> {
    if (noneMatchHits(ifNoneMatch, this.etag)) {
      this.cache.stats.notModified++
      return notModified(this.etag)
    }
    const { data, meta, utf8 } = await this.encoded()
    set.headers['content-type'] = 'application/json'
    set.headers.etag = this.etag
    if (links) set.headers.link = links(meta)
    return utf8 ? envelopeStream(utf8, requestIdOf(set), meta) : envelopeText(data, requestIdOf(set), meta)
  }
}
