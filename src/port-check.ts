/**
 * The port, tried before anything else starts: a taken one is refused within a second or so of
 * the start, before the plugins are loaded (the longest part of a start) and before the database
 * is opened, migrated or locked. The entries try it first and load the rest after; the port is
 * then let go, so one taken meanwhile is still refused when the server listens (main.ts).
 */
import { existsSync, readFileSync } from 'node:fs'
import { DEFAULT_CONFIG_FILE, loadConfig, type ServiceConfig } from './config'
import { StartupError } from './startup-error'

type ServerSettings = ServiceConfig['server']

/** How an entry tries its port: `probe` binds it as the entry's server will (server.reusePort as configured) and lets it go. */
export interface PortCheck {
  probe(server: ServerSettings): void | Promise<void>
  /** Whether the runtime can share a port (server.reusePort), for the refusal's hint. */
  sharesPorts: boolean
}

/**
 * The `server` settings as boot will read them (service.config.json as SERVICE_CONFIG names it,
 * then PORT), without the plugins; undefined when they cannot be read or are not valid: boot then
 * says why, in its own words.
 */
export function serverSettings(env: Record<string, string | undefined> = process.env): ServerSettings | undefined {
  try {
    const file = env.SERVICE_CONFIG === '' ? undefined : (env.SERVICE_CONFIG ?? DEFAULT_CONFIG_FILE)
    const raw: unknown = file && existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {}
    const server = (raw as { server?: unknown } | null)?.server
    return loadConfig([], { raw: { server }, env: { PORT: env.PORT } }).server
  } catch {
    return undefined
  }
}

/**
 * What to say when the server cannot listen: a taken port (EADDRINUSE, whichever runtime says
 * it) becomes one line naming the port and, where the runtime can share a port, the setting
 * that does; any other error is returned as it is.
 */
export function listenRefusal(error: unknown, server: ServerSettings, runtimeSharesPorts: boolean): unknown {
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

/**
 * Tries the configured port (port 0, any free port, needs no try): throws the refusal
 * `listenRefusal` words when it is taken. Any other failure to bind is left to the server's own
 * listen, which says it after boot as it always did.
 */
export async function tryPort({ probe, sharesPorts }: PortCheck, server = serverSettings()): Promise<void> {
  if (!server || server.port === 0) return
  try {
    await probe(server)
  } catch (error) {
    const refusal = listenRefusal(error, server, sharesPorts)
    if (refusal instanceof StartupError) throw refusal
  }
}
