/**
 * Node 20 entry: a small bridge from node:http to the service's web-standard fetch handler.
 * Built by `npm run build:node` (Bun bundles our TypeScript; packages stay in node_modules).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { pipeline, Readable } from 'node:stream'
import { registry } from '../plugins'
import { announce, boot, refuse, refuseToListen, stopOnSignals } from '../src/main'

const started = await boot(registry).catch(refuse)
const { service, config } = started

/**
 * The path and query of a request target: the URL is built on `localhost`, never on the Host
 * header, so routing follows the path whatever Host says (an absolute-form target keeps its path).
 */
function requestTarget(target: string | undefined): string {
  if (!target) return '/'
  if (target.startsWith('/')) return target
  try {
    const url = new URL(target)
    return `${url.pathname}${url.search}`
  } catch {
    return '/'
  }
}

/**
 * The web Request of `incoming`. Its `signal` aborts when the connection closes before the
 * response is complete (the client went away), as on Bun and Deno: a live stream ends with it.
 */
function toRequest(incoming: IncomingMessage, outgoing: ServerResponse): Request {
  const headers = new Headers()
  for (let i = 0; i < incoming.rawHeaders.length; i += 2) headers.append(incoming.rawHeaders[i]!, incoming.rawHeaders[i + 1]!)
  const hasBody = incoming.method !== 'GET' && incoming.method !== 'HEAD'
  const gone = new AbortController()
  outgoing.once('close', () => {
    if (!outgoing.writableFinished) gone.abort()
  })
  return new Request(`http://localhost${requestTarget(incoming.url)}`, {
    method: incoming.method,
    headers,
    signal: gone.signal,
    body: hasBody ? (Readable.toWeb(incoming) as unknown as ReadableStream) : undefined,
    // @ts-expect-error: Node's fetch needs this for a streamed request body
    duplex: 'half',
  })
}

async function respond(response: Response, outgoing: ServerResponse) {
  const headers: Record<string, string | string[]> = {}
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value
  })
  const cookies = response.headers.getSetCookie()
  if (cookies.length) headers['set-cookie'] = cookies
  outgoing.writeHead(response.status, headers)
  if (!response.body) return outgoing.end()
  // Not `pipe`: a response whose client went away must cancel its body (a live stream would
  // otherwise stay registered and queue events for nobody, holding one of its user's places).
  pipeline(Readable.fromWeb(response.body as any), outgoing, () => {})
}

const server = createServer(async (incoming, outgoing) => {
  try {
    await respond(await service.fetch(toRequest(incoming, outgoing), { ip: incoming.socket.remoteAddress }), outgoing)
  } catch {
    if (!outgoing.headersSent) outgoing.writeHead(500, { 'content-type': 'application/json' })
    outgoing.end()
  }
})
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
