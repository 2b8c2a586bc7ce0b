/**
 * SVG fragments of components, cached per component version: a live page is assembled from them
 * instead of rendering every chart again per request, and a live update renders once per
 * instance. Fragments are kept as UTF-8 bytes, the form a page is sent in, so every view of a page
 * sends the same bytes without copying them. The cache is lru-cache bounded by bytes (least
 * recently used out first), one entry per component: a component's `version` rises with every
 * change of its data or settings, so a cached fragment is served only at its own version and a new
 * version replaces the old at once. A fragment being drawn for one request is awaited by the
 * others that need it (one data read and one drawing however many views arrive at once): the
 * cache never loads a value itself (its callers read components' data ten at a time and draw the
 * cells), so it keeps the drawings under way beside it rather than as lru-cache fetches. Given
 * the service's metrics, the cache reports its renders, hits, entries and bytes in `/metrics`.
 */
import { LRUCache } from 'lru-cache'
import type { Counter } from 'prom-client'
import type { Metrics } from '../../../src/metrics'
import type { FragmentCacheStats } from '../api'
import { renderComponent, type Data } from '../charts/render'
import { GRID_COLUMNS } from '../pages/layout'

/** What a fragment is drawn for: a component at a version, with its type and width. */
export interface Drawable {
  id: string
  version: number
  type: string
  width: number
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const keyOf = (component: { id: string; version: number }) => `${component.id}:${component.version}`

/** A component's cached fragment: the version it was drawn at, and its bytes. */
interface Entry {
  version: number
  fragment: Uint8Array
}

export class FragmentCache {
  /** By component id. A fragment larger than the whole cache is not kept (lru-cache's maxEntrySize is maxSize). */
  private readonly entries: LRUCache<string, Entry>
  /** Drawings under way, by component and version: other requests await them instead of drawing again. */
  private readonly drawing = new Map<string, Promise<unknown>>()
  private hits = 0
  private renders = 0
  /** The same two counts as exported in `/metrics`, when the cache was given the service's metrics. */
  private readonly exported?: { hits: Counter; renders: Counter }

  constructor(
    private readonly maxBytes: number,
    metrics?: Metrics,
  ) {
    // lru-cache needs a positive bound; one byte keeps nothing (no fragment is that small), as a bound of 0 would.
    this.entries = new LRUCache<string, Entry>({ maxSize: Math.max(1, maxBytes), sizeCalculation: (entry) => Math.max(1, entry.fragment.byteLength) })
    if (metrics) this.exported = this.exportTo(metrics)
  }

  /** Registers the cache's metrics: the two counts kept as they happen (an unlabelled counter adds in ~15 ns), the contents read at each scrape. */
  private exportTo(metrics: Metrics): { hits: Counter; renders: Counter } {
    metrics.gauge({ name: 'worktrack_display_fragment_cache_entries', help: "Components' SVG fragments held by the live pages' cache.", collect: (gauge) => gauge.set(this.entries.size) })
    metrics.gauge({ name: 'worktrack_display_fragment_cache_bytes', help: "Bytes (UTF-8) held by the live pages' fragment cache (display.fragmentCacheMegabytes bounds it).", collect: (gauge) => gauge.set(this.entries.calculatedSize) })
    return {
      hits: metrics.counter({ name: 'worktrack_display_fragment_hits_total', help: 'Live page fragments served from the cache (a component drawn at its current version before).' }),
      renders: metrics.counter({ name: 'worktrack_display_fragment_renders_total', help: 'Live page fragments rendered: components drawn because the cache did not hold their current version.' }),
    }
  }

  /**
   * The SVG of `component` at its version, rendered from `data` only when not cached. `data` must
   * be the component's data at that very version (read in the same statement as the version):
   * what is rendered here is cached under it.
   */
  svg(component: Drawable, data: () => Record<string, unknown> | null): string {
    return decoder.decode(this.fragment(component, data))
  }

  /** As `svg`, the UTF-8 bytes (shared: never to be written to). */
  fragment(component: Drawable, data: () => Record<string, unknown> | null): Uint8Array {
    const cached = this.cached(component)
    if (cached !== undefined) return cached
    // The width is part of the version: a layout change raises it too. The data as stored is of the
    // component's own type (POST /api/component stores no other), which is what Data says.
    const fragment = encoder.encode(renderComponent(component.type, data() as Data | null, { columns: Math.min(component.width, GRID_COLUMNS) }).value)
    this.renders++
    this.exported?.renders.inc()
    this.entries.set(component.id, { version: component.version, fragment })
    return fragment
  }

  /**
   * The cached bytes of this version, or undefined. A caller keeps what it got: a fragment can be
   * evicted by any other render a moment later, so "is it cached?" is never asked apart from "give it".
   */
  cached(component: { id: string; version: number }): Uint8Array | undefined {
    // Peeked first: another version's entry is left where it stands in the recency order.
    if (this.entries.peek(component.id)?.version !== component.version) return undefined
    this.hits++
    this.exported?.hits.inc()
    return this.entries.get(component.id)!.fragment
  }

  /** The drawing of this version another request has under way, if any. */
  underWay<T>(component: { id: string; version: number }): Promise<T> | undefined {
    return this.drawing.get(keyOf(component)) as Promise<T> | undefined
  }

  /** Makes `drawing` the one under way for this version until it settles; returns it. */
  drawUnderWay<T>(component: { id: string; version: number }, drawing: Promise<T>): Promise<T> {
    const key = keyOf(component)
    this.drawing.set(key, drawing)
    const done = () => {
      if (this.drawing.get(key) === drawing) this.drawing.delete(key)
    }
    drawing.then(done, done)
    return drawing
  }

  stats(): FragmentCacheStats {
    return { entries: this.entries.size, bytes: this.entries.calculatedSize, maxBytes: this.maxBytes, hits: this.hits, renders: this.renders }
  }
}
