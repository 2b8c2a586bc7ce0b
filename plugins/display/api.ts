/** The display plugin's public face: what other plugins and tests may use. */
import { serviceRef } from '../../src/services/registry'

export interface FragmentCacheStats {
  entries: number
  /** Approximate bytes held (UTF-16). */
  bytes: number
  maxBytes: number
  hits: number
  /** Fragments rendered since start (cache misses). */
  renders: number
}

/** The live pages' SVG fragment cache, for operators (metrics) and tests. */
export const FragmentCacheRef = serviceRef<{ stats(): FragmentCacheStats }>('display.fragments', 'display')
