/**
 * Node 20 entry: node:http over the service's web-standard fetch handler (src/http/node-server.ts).
 * Built by `npm run build:node` (Bun bundles our TypeScript; packages stay in node_modules).
 */
import { createServer } from 'node:http'
import { registry } from '../plugins'
import { nodeListener } from '../src/http/node-server'
import { announce, boot, refuse, refuseToListen, stopOnSignals } from '../src/main'

const started = await boot(registry).catch(refuse)
const { service, config } = started

const server = createServer(nodeListener((request, client) => service.fetch(request, client)))
// Node 20 cannot share a port (no SO_REUSEPORT before Node 22.12), so a taken port always refuses.
const refuseListening = (error: Error) => void refuseToListen(started, error, false)
server.once('error', refuseListening)
server.listen(config.server.port, config.server.host, () => {
  server.off('error', refuseListening)
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : config.server.port
  announce(started, `http://${config.server.host}:${port}`, `node ${process.version}`)
})
stopOnSignals(started, () => new Promise<void>((resolve) => server.close(() => resolve())))
