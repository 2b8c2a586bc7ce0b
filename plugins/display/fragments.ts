/**
 * SVG fragments of components, cached per component version: a live page is assembled from them
 * instead of rendering every chart again per request, and a live update renders once per
 * instance. Fragments are kept as UTF-8 bytes, the form a page is sent in, so every view of a page
 * sends the same bytes without copying them. The cache is bounded by bytes (least recently used
 * out first); a component's `version` rises with every change of its data or settings, so a
 * cached fragment is never stale. A fragment being drawn for one request is awaited by the others
 * that need it (one data read and one drawing however many views arrive at once).
 */
import type { FragmentCacheStats } from './api'
import { GRID_COLUMNS } from './layout'
import { renderComponent } from './render'

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

export class FragmentCache {
  private readonly entries = new Map<string, Uint8Array>()
  /** The cached key of each component: a new version replaces the old one at once. */
  private readonly keys = new Map<string, string>()
  /** Drawings under way, by key: other requests await them instead of drawing again. */
  private readonly drawing = new Map<string, Promise<unknown>>()
  private bytes = 0
  private hits = 0
  private renders = 0

  constructor(private readonly maxBytes: number) {}

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
    // The width is part of the version: a layout change raises it too.
    const fragment = encoder.encode(renderComponent(component.type, data() as never, { columns: Math.min(component.width, GRID_COLUMNS) }).value)
    this.renders++
    this.store(component.id, keyOf(component), fragment)
    return fragment
  }

  /**
   * The cached bytes of this version, or undefined. A caller keeps what it got: a fragment can be
   * evicted by any other render a moment later, so "is it cached?" is never asked apart from "give it".
   */
  cached(component: { id: string; version: number }): Uint8Array | undefined {
    const key = keyOf(component)
    const cached = this.entries.get(key)
    if (cached === undefined) return undefined
    this.hits++
    this.entries.delete(key)
    this.entries.set(key, cached)
    return cached
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
    return { entries: this.entries.size, bytes: this.bytes, maxBytes: this.maxBytes, hits: this.hits, renders: this.renders }
  }

  private store(id: string, key: string, fragment: Uint8Array) {
    const previous = this.keys.get(id)
    if (previous !== undefined) this.remove(id, previous)
    const size = fragment.byteLength
    if (size > this.maxBytes) return
    this.entries.set(key, fragment)
    this.keys.set(id, key)
    this.bytes += size
    for (const oldest of this.entries.keys()) {
      if (this.bytes <= this.maxBytes) break
      this.remove(oldest.slice(0, oldest.lastIndexOf(':')), oldest)
    }
  }

  private remove(id: string, key: string) {
    const value = this.entries.get(key)
    if (value === undefined) return
    this.entries.delete(key)
    if (this.keys.get(id) === key) this.keys.delete(id)
    this.bytes -= value.byteLength
  }
}
