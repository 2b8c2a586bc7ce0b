/** Deno 2 entry: Deno.serve over the service's fetch handler. Built by `npm run build:deno`. */
import { registry } from '../plugins'
import { boot, refuse, stopOnSignals } from '../src/main'

declare const Deno: {
  serve(
    options: { port: number; hostname: string; onListen?: (address: { port: number }) => void },
    handler: (request: Request, info: { remoteAddr: { hostname: string } }) => Promise<Response>,
  ): { shutdown(): Promise<void> }
  version: { deno: string }
}

const { service, config } = await boot(registry).catch(refuse)
const server = Deno.serve(
  {
    port: config.server.port,
    hostname: config.server.host,
    onListen: ({ port }) => process.stderr.write(`listening on http://${config.server.host}:${port} (deno ${Deno.version.deno})\n`),
  },
  (request, info) => service.fetch(request, { ip: info.remoteAddr.hostname }),
)
stopOnSignals(service, () => server.shutdown())
