/**
 * Boot, shared by every runtime entry: config → plugins → database and migrations → the
 * service's fetch handler. A reason not to start is printed as one line and exits non-zero.
 */
import { createService, type Service } from './app'
import { loadConfig, type ServiceConfig } from './config'
import { StartupError } from './startup-error'
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

/**
 * What to say when the server cannot listen: a taken port (EADDRINUSE, whichever runtime says
 * it) becomes one line naming the port and, where the runtime can share a port, the setting
 * that does; any other error is returned as it is.
 */
export function listenRefusal(error: unknown, server: ServiceConfig['server'], runtimeSharesPorts: boolean): unknown {
  const code = (error as { code?: unknown })?.code
  if (code !== 'EADDRINUSE' && (error as Error)?.name !== 'AddrInUse') return error
  const taken = `port ${server.port} on ${server.host} is already in use`
  const hint = !runtimeSharesPorts
    ? 'another instance, or another program?'
    : server.reusePort
      ? 'by a process that does not share it'
      : 'another instance? set server.reusePort to share it'
  return new StartupError(`${taken} (${hint})`)
}

/** Refuses start-up after the server could not listen: stops the booted service, then `refuse`s. */
export async function refuseToListen(started: Started, error: unknown, runtimeSharesPorts: boolean): Promise<never> {
  await started.service.stop().catch(() => {})
  refuse(listenRefusal(error, started.config.server, runtimeSharesPorts))
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
