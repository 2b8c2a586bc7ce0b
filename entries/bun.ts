/** Bun entry (the primary runtime): `bun entries/bun.ts`. */
import type { ServiceConfig } from '../src/config'
import { tryPort } from '../src/port-check'
import { refuse } from '../src/startup-error'

/** Bun.serve's options of the configured address: the server's, and its port's try before anything loads. */
const address = (server: ServiceConfig['server']) => ({
  port: server.port,
  hostname: server.host,
  // Off by default, so a second instance on a taken port refuses to start instead of silently
  // sharing it; on, several processes (one per core, all stateless) share the port.
  reusePort: server.reusePort,
})

// A taken port is refused first: before the plugins load and the database is opened and migrated.
await tryPort({
  sharesPorts: true,
  probe: async (server) => {
    await Bun.serve({ ...address(server), fetch: () => new Response(null, { status: 503 }) }).stop(true)
  },
}).catch(refuse)
const { registry } = await import('../plugins')
const { announce, boot, refuseToListen, stopOnSignals } = await import('../src/main')

const started = await boot(registry).catch(refuse)
const { service, config } = started

function listen() {
  return Bun.serve({
    ...address(config.server),
    // Bodies are read with the 1 MiB limit by the service itself, which answers 400 in the
    // envelope; this only stops absurd uploads before they are read at all.
    maxRequestBodySize: 64 * 1024 * 1024,
    // `idleTimeout` stays Bun's default (10 s): live streams send a ping every 5 s
    // (plugins/display/live/client.ts HEARTBEAT_MS), so only a connection gone silent is cut.
    // The peer is asked for only when an answer needs it (src/http/client.ts).
    fetch: (request, server) => service.fetch(request, { ip: () => server.requestIP(request)?.address }),
  })
}

let server: ReturnType<typeof listen>
try {
  server = listen()
} catch (error) {
  server = await refuseToListen(started, error, true)
}
announce(started, `http://${server.hostname}:${server.port}`, `bun ${Bun.version}`)
stopOnSignals(started, () => server.stop())
