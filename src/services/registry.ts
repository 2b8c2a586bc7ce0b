/**
 * Typed service references. A plugin provides an implementation under one of its own refs (in
 * its `api.ts`, its public face); another plugin looks it up through its context, which hands out
 * only the refs of plugins it declared as dependencies (or optional dependencies, through
 * `find`): an undeclared lookup is a start-up error naming the missing declaration.
 */
import { StartupError } from '../startup-error'

/** A named, typed slot in the service registry. */
export class ServiceRef<T> {
  declare readonly type: T
  constructor(
    readonly id: string,
    /** The plugin that provides it. */
    readonly providedBy: string,
  ) {}
}

export const serviceRef = <T>(id: string, providedBy: string) => new ServiceRef<T>(id, providedBy)

/** Every provided service of one running service (the core's, embedders' and tests' view). */
export class ServiceRegistry {
  private readonly services = new Map<string, unknown>()

  /** Registers the implementation of `ref`; a second provider is a start-up error. */
  provide<T>(ref: ServiceRef<T>, implementation: T): void {
    if (this.services.has(ref.id)) throw new StartupError(`service "${ref.id}" is provided twice`)
    this.services.set(ref.id, implementation)
  }

  /** The implementation of `ref`; throws if its plugin is not enabled. */
  get<T>(ref: ServiceRef<T>): T {
    const service = this.services.get(ref.id)
    if (service === undefined) throw new StartupError(`service "${ref.id}" is not available: plugin "${ref.providedBy}" is not enabled`)
    return service as T
  }

  /** The implementation of `ref`, or undefined when its plugin is disabled. */
  find<T>(ref: ServiceRef<T>): T | undefined {
    return this.services.get(ref.id) as T | undefined
  }

  /** The view one plugin gets: only its own refs to provide, only its declared dependencies' to use. */
  scopedTo(plugin: { name: string; dependencies?: readonly string[]; optionalDependencies?: readonly string[] }): PluginServices {
    return new PluginServices(this, plugin.name, new Set(plugin.dependencies ?? []), new Set(plugin.optionalDependencies ?? []))
  }
}

/** What a plugin's context holds as `services` (see ServiceRegistry.scopedTo). */
export class PluginServices {
  constructor(
    private readonly registry: ServiceRegistry,
    private readonly plugin: string,
    private readonly dependencies: ReadonlySet<string>,
    private readonly optional: ReadonlySet<string>,
  ) {}

  provide<T>(ref: ServiceRef<T>, implementation: T): void {
    if (ref.providedBy !== this.plugin) throw new StartupError(`plugin "${this.plugin}" provides "${ref.id}", a ref of plugin "${ref.providedBy}"`)
    this.registry.provide(ref, implementation)
  }

  /** A required service: its plugin must be a declared dependency (or this plugin). */
  get<T>(ref: ServiceRef<T>): T {
    if (ref.providedBy !== this.plugin && !this.dependencies.has(ref.providedBy))
      throw new StartupError(`plugin "${this.plugin}" uses "${ref.id}" of plugin "${ref.providedBy}", which is not among its dependencies`)
    return this.registry.get(ref)
  }

  /** An optional service: undefined when its plugin is disabled; it must be a declared (optional) dependency. */
  find<T>(ref: ServiceRef<T>): T | undefined {
    if (ref.providedBy !== this.plugin && !this.dependencies.has(ref.providedBy) && !this.optional.has(ref.providedBy))
      throw new StartupError(`plugin "${this.plugin}" looks for "${ref.id}" of plugin "${ref.providedBy}", which is not among its dependencies or optionalDependencies`)
    return this.registry.find(ref)
  }
}
