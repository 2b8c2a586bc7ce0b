/** Bun entry (the primary runtime): `bun entries/bun.ts`. */
import { registry } from '../plugins'
import { announce, boot, refuse, refuseToListen, stopOnSignals } from '../src/main'

const started = await boot(registry).catch(refuse)
const { service, config } = started

function listen() {
  return Bun.serve({
    port: config.server.port,
    hostname: config.server.host,
    // Bodies are read with the 1 MiB limit by the service itself, which answers 400 in the
    // envelope; this only stops absurd uploads before they are read at all.
    maxRequestBodySize: 64 * 1024 * 1024,
    // Off by default, so a second instance on a taken port refuses to start instead of silently
    // sharing it; on, several processes (one per core, all stateless) share the port.
    reusePort: config.server.reusePort,
    // `idleTimeout` stays Bun's default (10 s): live streams send a ping every 5 s
    // (plugins/display/live/client.ts HEARTBEAT_MS), so only a connection gone silent is cut.
    fetch: (request, server) => service.fetch(request, { ip: server.requestIP(request)?.address }),
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
