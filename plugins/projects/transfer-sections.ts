/**
 * What the export and the import share: the sections the plugins register (ordered, each type
 * once, the scopes they need) and a bound on how many run at once per instance.
 */
import { busy } from '../../src/http/errors'

/** The registered sections of one direction (export or import), lowest `order` first. */
export function sectionList<S extends { type: string; order: number; scope: string }>(direction: 'export' | 'import', baseScope: string, initial: S[] = []) {
  const sections = [...initial]
  const ordered = (): S[] => [...sections].sort((a, b) => a.order - b.order)
  return {
    register(section: S) {
      if (sections.some((other) => other.type === section.type)) throw new Error(`an ${direction} section of type "${section.type}" is already registered`)
      sections.push(section)
    },
    ordered,
    /** `baseScope` and every section's (read once routes are built, after every setup). */
    scopes: (): string[] => [...new Set([baseScope, ...sections.map((section) => section.scope)])],
    /** The sections' line types, in the order they are written. */
    types: (): string[] => ordered().map((section) => section.type),
  }
}

/** At most `atOnce` at a time: `take` gives a place (its release) or throws 503 with Retry-After. */
export function places(atOnce: number, direction: 'export' | 'import') {
  let taken = 0
  return {
    take(): () => void {
      if (taken >= atOnce) throw busy(`Every ${direction} of this instance is running; retry shortly.`, 5)
      taken++
      let released = false
      return () => {
        if (released) return
        released = true
        taken--
      }
    },
  }
}
