/**
 * Node 20 entry: node:http over the service's web-standard fetch handler (src/http/node-server.ts).
 * Built by `npm run build:node` (Bun bundles our TypeScript; packages stay in node_modules).
 */
import { createServer } from 'node:http'
import { createServer as createTcpServer } from 'node:net'
import { tryPort } from '../src/port-check'
import { refuse } from '../src/startup-error'

// A taken port is refused first (bound as the server will, and let go): before the plugins load
// and the database is opened and migrated. Node 20 cannot share a port (no SO_REUSEPORT before
// Node 22.12), so a taken port always refuses.
await tryPort({
  sharesPorts: false,
  probe: ({ port, host }) =>
    new Promise<void>((resolve, reject) => {
      const tried = createTcpServer()
      tried.once('error', reject)
      tried.listen(port, host, () => tried.close(() => resolve()))
    }),
}).catch(refuse)
const { registry } = await import('../plugins')
const { nodeListener } = await import('../src/http/node-server')
const { announce, boot, refuseToListen, stopOnSignals } = await import('../src/main')

const started = await boot(registry).catch(refuse)
const { service, config } = started

const server = createServer(nodeListener((request, client) => service.fetch(request, client)))
const refuseListening = (error: Error) => void refuseToListen(started, error, false)
server.once('error', refuseListening)
server.listen(config.server.port, config.server.host, () => {
  server.off('error', refuseListening)
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : config.server.port
  announce(started, `http://${config.server.host}:${port}`, `node ${process.version}`)
})
stopOnSignals(started, () => new Promise<void>((resolve) => server.close(() => resolve())))
