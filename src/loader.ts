/** Which plugins run, in which order: unknown, missing and circular dependencies refused. */
import type { AnyPlugin } from './plugin'

/** A reason to refuse to start, printed as one line. */
export class StartupError extends Error {}

/**
 * Orders the `enabled` plugins so each comes after its dependencies (registry order breaks
 * ties); throws a StartupError naming the first problem.
 */
export function resolvePlugins(registry: readonly AnyPlugin[], enabled: ReadonlySet<string>): AnyPlugin[] {
  const byName = new Map<string, AnyPlugin>()
  for (const plugin of registry) {
    if (byName.has(plugin.name)) throw new StartupError(`plugin "${plugin.name}" is registered twice`)
    byName.set(plugin.name, plugin)
  }
  for (const name of enabled) if (!byName.has(name)) throw unknownPlugin(name, registry)
  for (const name of enabled) {
    for (const dependency of byName.get(name)!.dependencies ?? []) {
      if (!byName.has(dependency)) throw new StartupError(`plugin "${name}" depends on "${dependency}", which is not a known plugin`)
      if (!enabled.has(dependency)) throw new StartupError(`${name} needs ${dependency}, which is disabled`)
    }
  }

  const ordered: AnyPlugin[] = []
  const state = new Map<string, 'visiting' | 'done'>()
  const visit = (name: string, path: string[]) => {
    if (state.get(name) === 'done') return
    if (state.get(name) === 'visiting') {
      const cycle = [...path.slice(path.indexOf(name)), name]
      throw new StartupError(`plugin dependency cycle: ${cycle.join(' -> ')}`)
    }
    state.set(name, 'visiting')
    for (const dependency of byName.get(name)!.dependencies ?? []) visit(dependency, [...path, name])
    state.set(name, 'done')
    ordered.push(byName.get(name)!)
  }
  for (const plugin of registry) if (enabled.has(plugin.name)) visit(plugin.name, [])
  return ordered
}

/** The refusal for a name no plugin has. */
export function unknownPlugin(name: string, registry: readonly AnyPlugin[]): StartupError {
  return new StartupError(`unknown plugin "${name}" (known plugins: ${registry.map((plugin) => plugin.name).join(', ')})`)
}
