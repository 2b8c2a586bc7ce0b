/**
 * Typed service references: a plugin provides an implementation under a ref at setup, others
 * look it up through the core, so no plugin imports another plugin's internals.
 */

/** A named, typed slot in the service registry. */
export class ServiceRef<T> {
  declare readonly type: T
  constructor(
    readonly id: string,
    /** The plugin expected to provide it, named in the error when it is missing. */
    readonly providedBy: string,
  ) {}
}

export const serviceRef = <T>(id: string, providedBy: string) => new ServiceRef<T>(id, providedBy)

export class ServiceRegistry {
  private readonly services = new Map<string, unknown>()

  /** Registers the implementation of `ref`; a second provider is a start-up error. */
  provide<T>(ref: ServiceRef<T>, implementation: T): void {
    if (this.services.has(ref.id)) throw new Error(`service "${ref.id}" is provided twice`)
    this.services.set(ref.id, implementation)
  }

  /** The implementation of `ref`; throws if its plugin is not enabled (a dependency is missing). */
  get<T>(ref: ServiceRef<T>): T {
    const service = this.services.get(ref.id)
    if (service === undefined)
      throw new Error(`service "${ref.id}" is not available: plugin "${ref.providedBy}" is not enabled`)
    return service as T
  }

  /** The implementation of `ref`, or undefined when its plugin is disabled. */
  find<T>(ref: ServiceRef<T>): T | undefined {
    return this.services.get(ref.id) as T | undefined
  }
}
