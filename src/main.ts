/**
 * Boot, shared by every runtime entry: config → plugins → database and migrations → the
 * service's fetch handler. A reason not to start is printed as one line and exits non-zero.
 */
import { createService, type Service } from './app'
import { loadConfig, type ServiceConfig } from './config'
import { StartupError } from './loader'
import type { AnyPlugin } from './plugin'
import { createLogger } from './log'

export interface Started {
  service: Service
  config: ServiceConfig
}

/** Builds the service of the `registry` plugins from service.config.json and the environment (the entries pass the registry in). */
export async function boot(registry: readonly AnyPlugin[]): Promise<Started> {
  const config = loadConfig(registry)
  const log = createLogger()
  const service = await createService({ registry, config, log })
  log.info('service ready', {
    plugins: service.plugins.map((plugin) => plugin.name),
    database: service.core.database.location,
  })
  return { service, config }
}

/** Prints a start-up refusal in one line and exits 1; rethrows nothing. */
export function refuse(error: unknown): never {
  const message = error instanceof StartupError ? error.message : `${(error as Error)?.message ?? error}`
  process.stderr.write(`startup refused: ${message.split('\n')[0]}\n`)
  process.exit(1)
}

/** Stops the service on SIGINT/SIGTERM, then calls `close` (the runtime's server). */
export function stopOnSignals(service: Service, close: () => void | Promise<void>) {
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await close()
    await service.stop()
    process.exit(0)
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}
