/** Which plugins run, in which order: unknown, missing and circular dependencies refused. */
import type { AnyPlugin } from './plugin'
import { StartupError } from './startup-error'

/**
 * Orders the `enabled` plugins so each comes after its dependencies and its enabled optional
 * dependencies (registry order breaks ties); throws a StartupError naming the first problem.
 */
export function resolvePlugins(registry: readonly AnyPlugin[], enabled: ReadonlySet<string>): AnyPlugin[] {
  const byName = new Map<string, AnyPlugin>()
  for (const plugin of registry) {
    if (byName.has(plugin.name)) throw new StartupError(`plugin "${plugin.name}" is registered twice`)
    byName.set(plugin.name, plugin)
  }
  for (const name of enabled) if (!byName.has(name)) throw unknownPlugin(name, registry)
  for (const name of enabled) {
    for (const optional of byName.get(name)!.optionalDependencies ?? [])
      if (!byName.has(optional)) throw new StartupError(`plugin "${name}" optionally depends on "${optional}", which is not a known plugin`)
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
    const plugin = byName.get(name)!
    // An enabled optional dependency is set up first too, so its services are there to be found.
    const before = [...(plugin.dependencies ?? []), ...(plugin.optionalDependencies ?? []).filter((optional) => enabled.has(optional))]
    for (const dependency of before) visit(dependency, [...path, name])
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
