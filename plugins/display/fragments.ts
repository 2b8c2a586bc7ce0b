/**
 * SVG fragments of components, cached per component version: a live page is assembled from them
 * instead of rendering every chart again per request, and a live update renders once per
 * instance. The cache is bounded by bytes (least recently used out first); a component's
 * `version` rises with every change of its data or settings, so a cached fragment is never stale.
 */
import type { FragmentCacheStats } from './api'
import { GRID_COLUMNS } from './layout'
import { renderComponent } from './render'

export class FragmentCache {
  private readonly entries = new Map<string, string>()
  /** The cached key of each component: a new version replaces the old one at once. */
  private readonly keys = new Map<string, string>()
  private bytes = 0
  private hits = 0
  private renders = 0

  constructor(private readonly maxBytes: number) {}

  /**
   * The SVG of `component` at its version, rendered from `data` only when not cached. `data` must
   * be the component's data at that very version (read in the same statement as the version):
   * what is rendered here is cached under it.
   */
  svg(component: { id: string; version: number; type: string; width: number }, data: () => Record<string, unknown> | null): string {
    const cached = this.cached(component)
    if (cached !== undefined) return cached
    // The width is part of the version: a layout change raises it too.
    const fragment = renderComponent(component.type, data() as never, { columns: Math.min(component.width, GRID_COLUMNS) }).value
    this.renders++
    this.store(component.id, `${component.id}:${component.version}`, fragment)
    return fragment
  }

  /**
   * The cached SVG of this version, or undefined. A caller keeps what it got: a fragment can be
   * evicted by any other render a moment later, so "is it cached?" is never asked apart from "give it".
   */
  cached(component: { id: string; version: number }): string | undefined {
    const key = `${component.id}:${component.version}`
    const cached = this.entries.get(key)
    if (cached === undefined) return undefined
    this.hits++
    this.entries.delete(key)
    this.entries.set(key, cached)
    return cached
  }

  stats(): FragmentCacheStats {
    return { entries: this.entries.size, bytes: this.bytes, maxBytes: this.maxBytes, hits: this.hits, renders: this.renders }
  }

  private store(id: string, key: string, fragment: string) {
    const previous = this.keys.get(id)
    if (previous !== undefined) this.remove(id, previous)
    const size = fragment.length * 2
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
    this.bytes -= value.length * 2
  }
}
