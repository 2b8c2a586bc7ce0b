/** Deno 2 entry: Deno.serve over the service's fetch handler. Built by `npm run build:deno`. */
import { tryPort } from '../src/port-check'
import { refuse } from '../src/startup-error'

declare const Deno: {
  serve(
    options: { port: number; hostname: string; onListen?: (address: { port: number }) => void },
    handler: (request: Request, info: { remoteAddr: { hostname: string } }) => Promise<Response>,
  ): { shutdown(): Promise<void> }
  listen(options: { port: number; hostname: string }): { close(): void }
  version: { deno: string }
}

// A taken port is refused first (bound and let go): before the plugins load and the database is
// opened and migrated.
await tryPort({ sharesPorts: false, probe: ({ port, host }) => Deno.listen({ port, hostname: host }).close() }).catch(refuse)
const { registry } = await import('../plugins')
const { announce, boot, refuseToListen, stopOnSignals } = await import('../src/main')

const started = await boot(registry).catch(refuse)
const { service, config } = started

function listen() {
  return Deno.serve(
    {
      port: config.server.port,
      hostname: config.server.host,
      onListen: ({ port }) => announce(started, `http://${config.server.host}:${port}`, `deno ${Deno.version.deno}`),
    },
    (request, info) => service.fetch(request, { ip: info.remoteAddr.hostname }),
  )
}

// Deno shares a port only under --unstable-net (`reusePort`), so here a taken port always refuses.
let server: ReturnType<typeof listen>
try {
  server = listen()
} catch (error) {
  server = await refuseToListen(started, error, false)
}
stopOnSignals(started, () => server.shutdown())
