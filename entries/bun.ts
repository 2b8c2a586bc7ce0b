/** Bun entry (the primary runtime): `bun entries/bun.ts`. */
import { registry } from '../plugins'
import { boot, refuse, stopOnSignals } from '../src/main'

const started = await boot(registry).catch(refuse)
const { service, config } = started
const server = Bun.serve({
  port: config.server.port,
  hostname: config.server.host,
  // Bodies are read with the 1 MiB limit by the service itself, which answers 400 in the
  // envelope; this only stops absurd uploads before they are read at all.
  maxRequestBodySize: 64 * 1024 * 1024,
  // Several processes may share the port (one per core, all stateless).
  reusePort: true,
  fetch: (request, server) => service.fetch(request, { ip: server.requestIP(request)?.address }),
})
process.stderr.write(`listening on http://${server.hostname}:${server.port} (bun ${Bun.version})\n`)
stopOnSignals(service, () => server.stop())
