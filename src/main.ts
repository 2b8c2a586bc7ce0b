/**
 * Boot, shared by every runtime entry: config → plugins → database and migrations → the
 * service's fetch handler. A reason not to start is printed as one line and exits non-zero. The
 * entries try their port before (src/port-check.ts), and load the plugins and this module after.
 */
import { createService, type Service } from './app'
import { loadConfig, type ServiceConfig } from './config'
import { listenRefusal } from './port-check'
import { refuse, StartupError } from './startup-error'
import type { AnyPlugin } from './plugin'
import { createLogger, type Logger } from './log'
import { runCommand } from './cli'
import { newControlToken, writeControl } from './control'
import { embeddedDirectory } from './db'

export interface Started {
  service: Service
  config: ServiceConfig
  log: Logger
  /** On the embedded database: its directory and the token of the CLI's door (src/control.ts). */
  control?: { dir: string; token: string }
}

/** Builds the service of the `registry` plugins from service.config.json and the environment (the entries pass the registry in). */
export async function boot(registry: readonly AnyPlugin[]): Promise<Started> {
  const config = loadConfig(registry)
  const log = createLogger()
  const dir = embeddedDirectory(config.database.url)
  const control = dir ? { dir, token: newControlToken() } : undefined
  // The CLI's commands, sent by `npm run cli` while this server holds the embedded database, run on it.
  const run = (argv: string[]) => runCommand(registry, argv, async () => ({ service, close: async () => {} }))
  const service: Service = await createService({ registry, config, log, ...(control ? { control: { token: control.token, run } } : {}) }).catch((error) => {
    throw unreachableDatabase(error, config.database.url) ?? error
  })
  return { service, config, log, control }
}

/** Error codes of a database that cannot be reached or entered (the network's, then PostgreSQL's). */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'CONNECT_TIMEOUT', '28P01', '28000', '3D000'])

/**
 * A start-up failure because the database cannot be reached, said as such: which setting named
 * it (DATABASE_URL), where it points (without its password) and the driver's reason. Anything
 * else is left to `refuse` as it is.
 */
export function unreachableDatabase(error: unknown, url: string | undefined): StartupError | undefined {
  const code = String((error as { code?: unknown })?.code ?? (error as { cause?: { code?: unknown } })?.cause?.code ?? '')
  if (!UNREACHABLE.has(code) || !url) return undefined
  let where = 'the database'
  try {
    const parsed = new URL(url)
    where = `${parsed.protocol}//${parsed.username ? `${decodeURIComponent(parsed.username)}@` : ''}${parsed.host}${parsed.pathname}`
  } catch {
    // not a URL: name the setting only
  }
  const reason = `${(error as Error)?.message ?? error}`.split('\n')[0]
  return new StartupError(`cannot reach the database at ${where} (DATABASE_URL): ${reason}; is PostgreSQL running there and does the database exist?`)
}

/**
 * Says the service is serving, once it listens (not before: a taken port is refused first): the
 * `listening on` line, then the log's `service ready` with the address, runtime, plugins and database.
 */
export function announce(started: Started, url: string, runtime: string): void {
  if (started.control) {
    const remove = writeControl(started.control.dir, url, started.control.token)
    started.service.core.onStop(remove)
    process.once('exit', remove)
  }
  process.stderr.write(`listening on ${url} (${runtime})\n`)
  started.log.info('service ready', {
    url,
    runtime,
    plugins: started.service.plugins.map((plugin) => plugin.name),
    database: started.service.core.database.location,
  })
}

/** Refuses start-up after the server could not listen: stops the booted service, then `refuse`s. */
export async function refuseToListen(started: Started, error: unknown, runtimeSharesPorts: boolean): Promise<never> {
  await started.service.stop().catch(() => {})
  refuse(listenRefusal(error, started.config.server, runtimeSharesPorts))
}

/**
 * Stops the service on SIGINT/SIGTERM, and when the process that started it goes away (`npm
 * start` killed: npm's shell does not pass the signal on, and the server would run on as an
 * orphan); closes `close` (the runtime's server) first, logs the stop and how long it took.
 */
export function stopOnSignals(started: Started, close: () => void | Promise<void>) {
  const { service, log } = started
  let stopping = false
  const stop = async (reason: string) => {
    if (stopping) return
    stopping = true
    const begun = performance.now()
    log.info('service stopping', { reason })
    // Bounded: open connections (a live stream) may keep the server's close waiting, and stop()
    // leaves a hung step behind after its budget (src/app.ts); past both, the process exits anyway.
    const cutOff = setTimeout(() => {
      log.error('service stop did not finish in 40 s; exiting', { reason })
      process.exit(1)
    }, 40_000)
    ;(cutOff as { unref?: () => void }).unref?.()
    let closeTimer: ReturnType<typeof setTimeout> | undefined
    const closed = await Promise.race([
      Promise.resolve()
        .then(close)
        .then(() => true),
      new Promise<false>((resolve) => (closeTimer = setTimeout(() => resolve(false), 10_000))),
    ]).catch(() => true)
    clearTimeout(closeTimer)
    if (!closed) log.warn('the server did not close its connections in 10 s; stopping the service anyway', { reason })
    await service.stop()
    log.info('service stopped', { reason, ms: Math.round(performance.now() - begun) })
    process.exit(0)
  }
  process.on('SIGINT', () => void stop('SIGINT'))
  process.on('SIGTERM', () => void stop('SIGTERM'))
  // Started by a process (not by init, as in a container): stop when it is gone.
  const parent = process.ppid
  if (parent > 1) {
    const watch = setInterval(() => {
      if (process.ppid !== parent) void stop(`its parent process (${parent}) exited`)
    }, 1000)
    ;(watch as { unref?: () => void }).unref?.()
  }
}
