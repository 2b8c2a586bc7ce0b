/**
 * The service over node:http (the Node entry): a small bridge from node:http's request and
 * response to the service's web-standard fetch handler. A response whose body streams
 * (server-sent events, the live page's HTML) is piped as it comes; any other body was built whole
 * (a long API answer is a stream of one chunk, src/http/answer.ts `answerBody`) and is read and
 * sent with `end`, in one write with its headers and a Content-Length.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { pipeline, Readable } from 'node:stream'

/** The service's fetch handler. */
export type FetchHandler = (request: Request, client: { ip?: string }) => Promise<Response>

/**
 * The path and query of a request target: the URL is built on `localhost`, never on the Host
 * header, so routing follows the path whatever Host says (an absolute-form target keeps its path).
 */
export function requestTarget(target: string | undefined): string {
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
 * response is complete (the client went away), as on Bun.serve and Deno: a live stream ends with it.
 */
function toRequest(incoming: IncomingMessage, outgoing: ServerResponse): Request {
  const headers = new Headers()
  const raw = incoming.rawHeaders
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!)
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

/** Bodies that stream as they are produced: everything else was built whole. */
const STREAMED = /^(text\/(event-stream|html)|application\/x-ndjson)/

async function respond(response: Response, outgoing: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {}
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value
  })
  const cookies = response.headers.getSetCookie()
  if (cookies.length) headers['set-cookie'] = cookies
  if (!response.body) {
    outgoing.writeHead(response.status, headers)
    outgoing.end()
    return
  }
  if (!STREAMED.test(response.headers.get('content-type') ?? '')) {
    const body = new Uint8Array(await response.arrayBuffer())
    headers['content-length'] = String(body.byteLength)
    outgoing.writeHead(response.status, headers)
    outgoing.end(body)
    return
  }
  outgoing.writeHead(response.status, headers)
  // Not `pipe`: a response whose client went away must cancel its body (a live stream would
  // otherwise stay registered and queue events for nobody, holding one of its user's places).
  pipeline(Readable.fromWeb(response.body as never), outgoing, () => {})
}

/** node:http's request listener for `fetch`: a failure before the answer is a bare 500. */
export function nodeListener(fetch: FetchHandler) {
  return async (incoming: IncomingMessage, outgoing: ServerResponse) => {
    try {
      await respond(await fetch(toRequest(incoming, outgoing), { ip: incoming.socket.remoteAddress }), outgoing)
    } catch {
      if (!outgoing.headersSent) outgoing.writeHead(500, { 'content-type': 'application/json' })
      outgoing.end()
    }
  }
}
