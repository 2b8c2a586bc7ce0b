/**
 * A real webhook receiver on a loopback port: records every request (method, path, headers, body,
 * arrival time) and answers as the test scripts it, per request: a status (500 then 200…), a
 * stall (no answer until released or the sender hangs up), a redirect, a huge or endless body, or
 * a promise (an answer the test gives later, while it inspects the state in between).
 * Receivers deduplicate by `webhook-id`, so the helper counts arrivals per id.
 */
import { Webhook } from 'standardwebhooks'

export interface Received {
  /** Arrival order over the whole receiver (0-based). */
  index: number
  method: string
  path: string
  headers: Record<string, string>
  body: string
  /** The parsed body (undefined when it is not JSON). */
  json: any
  /** `webhook-id`. */
  id: string
  /** Which arrival of this `webhook-id` at this path it is (1 = first). */
  nth: number
  /** Date.now() at arrival. */
  at: number
  /** Set when the sender hung up before the answer was complete (a stall it gave up on, a body it stopped reading). */
  abortedAt?: number
  /** The status the receiver answered (once it answered). */
  answered?: number
  /** The receiver held this request ('stall') before answering or being hung up on. */
  stalled?: boolean
}

export type Answer =
  | number
  | 'stall'
  | {
      status: number
      body?: string
      headers?: Record<string, string>
      /** Stream this many bytes of body ('endless': until the sender hangs up). */
      bodyBytes?: number | 'endless'
    }

export type Responder = (request: Received) => Answer | Promise<Answer>

export interface WebhookReceiver {
  url: string
  port: number
  /** `url` + path (a distinct path per webhook lets several share one receiver). */
  urlFor(path: string): string
  received: Received[]
  /** Changes how the following requests are answered (default: 200 `ok`). */
  respond(responder: Responder): void
  /** Answers every stalled request with `answer` (they answer nothing otherwise, until the sender hangs up). */
  releaseStalled(answer?: Answer): void
  /** The first arrival of each `webhook-id`, in arrival order (optionally of one path). */
  unique(path?: string): Received[]
  /** Every arrival at `path`, repeats included, in arrival order. */
  at(path: string): Received[]
  /** Arrivals per `webhook-id`. */
  countsById(): Map<string, number>
  /** Arrivals beyond the first of each `webhook-id`. */
  duplicates(): number
  /** Bytes of endless/huge bodies written before the sender hung up (per request index). */
  bodyBytesWritten: Map<number, number>
  close(): Promise<void>
}

/** Verifies a request's Standard Webhooks signature with `secret`; returns the parsed payload (throws on a bad signature). */
export function verifySignature(secret: string, request: Pick<Received, 'body' | 'headers'>): any {
  return new Webhook(secret).verify(request.body, {
    'webhook-id': request.headers['webhook-id'] ?? '',
    'webhook-timestamp': request.headers['webhook-timestamp'] ?? '',
    'webhook-signature': request.headers['webhook-signature'] ?? '',
  })
}

const CHUNK = new TextEncoder().encode('x'.repeat(16 * 1024))

export async function startWebhookReceiver(initial: Responder = () => 200): Promise<WebhookReceiver> {
  let responder = initial
  const received: Received[] = []
  const counts = new Map<string, number>()
  /** Arrivals by path and webhook-id, for `nth`. */
  const arrivals = new Map<string, number>()
  const stalled = new Set<(answer: Answer) => void>()
  const bodyBytesWritten = new Map<number, number>()

  const build = (entry: Received, answer: Exclude<Answer, 'stall'>): Response => {
    const spec = typeof answer === 'number' ? { status: answer } : answer
    entry.answered = spec.status
    const headers = new Headers(spec.headers ?? {})
    if (spec.bodyBytes === undefined) return new Response(spec.body ?? (spec.status < 300 ? 'ok' : spec.status >= 400 ? 'failed' : ''), { status: spec.status, headers })
    const limit = spec.bodyBytes
    let written = 0
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (limit !== 'endless' && written >= limit) return controller.close()
        const chunk = limit === 'endless' ? CHUNK : CHUNK.subarray(0, Math.min(CHUNK.length, limit - written))
        written += chunk.length
        bodyBytesWritten.set(entry.index, written)
        controller.enqueue(chunk)
      },
      cancel() {
        entry.abortedAt ??= Date.now()
      },
    })
    return new Response(stream, { status: spec.status, headers })
  }

  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    idleTimeout: 0,
    async fetch(request) {
      const body = await request.text()
      const headers: Record<string, string> = {}
      request.headers.forEach((value, name) => (headers[name] = value))
      const id = headers['webhook-id'] ?? ''
      counts.set(id, (counts.get(id) ?? 0) + 1)
      // `nth` counts per path: one event sent to two webhooks (two paths) carries one webhook-id.
      const atPath = `${new URL(request.url).pathname} ${id}`
      const nth = (arrivals.get(atPath) ?? 0) + 1
      arrivals.set(atPath, nth)
      let json: any
      try {
        json = JSON.parse(body)
      } catch {
        json = undefined
      }
      const entry: Received = { index: received.length, method: request.method, path: new URL(request.url).pathname, headers, body, json, id, nth, at: Date.now() }
      received.push(entry)
      request.signal.addEventListener('abort', () => (entry.abortedAt ??= Date.now()))
      let answer = await responder(entry)
      if (answer === 'stall') {
        entry.stalled = true
        answer = await new Promise<Answer>((resolve) => {
          const release = (value: Answer) => {
            stalled.delete(release)
            resolve(value)
          }
          stalled.add(release)
          request.signal.addEventListener('abort', () => release(499))
        })
        if (answer === 'stall') answer = 503
      }
      return build(entry, answer)
    },
  })

  const url = `http://127.0.0.1:${server.port}`
  return {
    url,
    port: server.port!,
    urlFor: (path) => `${url}${path.startsWith('/') ? path : `/${path}`}`,
    received,
    respond(next) {
      responder = next
    },
    releaseStalled(answer = 200) {
      for (const release of [...stalled]) release(answer)
    },
    unique(path) {
      return received.filter((entry) => entry.nth === 1 && (path === undefined || entry.path === path))
    },
    at: (path) => received.filter((entry) => entry.path === path),
    countsById: () => new Map(counts),
    duplicates: () => [...counts.values()].reduce((sum, n) => sum + n - 1, 0),
    bodyBytesWritten,
    async close() {
      for (const release of [...stalled]) release(503)
      await server.stop(true)
    },
  }
}
