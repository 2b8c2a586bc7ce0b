/**
 * One HTTP attempt of a delivery: a POST signed per Standard Webhooks (the `standardwebhooks`
 * package signs), through node:http(s) with the target's addresses checked on the connection
 * itself (targets.ts), no redirects followed (a 3xx is a failure), the whole attempt bounded by
 * the timeout, and at most 64 KiB of the answer read (2 KiB of it kept).
 */
import http from 'node:http'
import https from 'node:https'
import { isIP } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { hostOf, isPublicAddress, pinnedLookup, RefusedTarget } from '../../src/net/targets'

export const RESPONSE_READ_LIMIT = 64 * 1024
export const RESPONSE_KEPT = 2 * 1024
const USER_AGENT = 'worktrack-webhooks/1'

export interface Attempt {
  ok: boolean
  status: number | null
  durationMs: number
  error: string | null
  body: string | null
}

export interface OutgoingMessage {
  url: string
  /** The event id: `webhook-id`, the same on every attempt (receivers deduplicate by it). */
  id: string
  body: string
  /** Signing secrets: the current one, and the previous one during a rotation's overlap. */
  secrets: string[]
}

/** The `webhook-signature` value: one `v1,<signature>` per secret, space-separated. */
export function signatures(message: Pick<OutgoingMessage, 'id' | 'body' | 'secrets'>, at: Date): string {
  return message.secrets.map((secret) => new Webhook(secret).sign(message.id, at, message.body)).join(' ')
}

export interface SenderOptions {
  timeoutMs: number
  allowPrivateTargets: boolean
}

export interface Sender {
  /** Sends one attempt; never throws (every failure is an Attempt with `ok: false`). */
  send(message: OutgoingMessage): Promise<Attempt>
  close(): void
}

/** A sender with its own keep-alive connections (a connection is checked once, when it opens). */
export function createSender(options: SenderOptions): Sender {
  const agents = { http: new http.Agent({ keepAlive: true, maxSockets: 32 }), https: new https.Agent({ keepAlive: true, maxSockets: 32 }) }
  return {
    send: (message) => sendOnce(message, options, agents),
    close() {
      agents.http.destroy()
      agents.https.destroy()
    },
  }
}

function sendOnce(message: OutgoingMessage, options: SenderOptions, agents: { http: http.Agent; https: https.Agent }): Promise<Attempt> {
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  return new Promise<Attempt>((resolve) => {
    let settled = false
    // Declared before anything can fail: a refusal before the request exists finishes with no timer to clear.
    let timer: ReturnType<typeof setTimeout> | undefined
    const finish = (attempt: Omit<Attempt, 'durationMs'>) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve({ ...attempt, durationMs: elapsed() })
    }
    const fail = (error: string, status: number | null = null, body: string | null = null) => finish({ ok: false, status, error, body })

    let url: URL
    try {
      url = new URL(message.url)
    } catch {
      return fail('the URL is not valid')
    }
    const host = hostOf(url)
    // node:http skips the lookup for an IP literal: checked here instead.
    if (isIP(host) && !options.allowPrivateTargets && !isPublicAddress(host))
      return fail(new RefusedTarget(`${host} is a loopback, private, link-local or otherwise non-public address (webhooks.allowPrivateTargets is off)`).message)

    const now = new Date()
    const body = Buffer.from(message.body, 'utf8')
    const secure = url.protocol === 'https:'
    const request = (secure ? https : http).request(url, {
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      lookup: pinnedLookup(options.allowPrivateTargets) as never,
      headers: {
        'content-type': 'application/json',
        'content-length': String(body.length),
        'user-agent': USER_AGENT,
        'webhook-id': message.id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': signatures(message, now),
      },
    })
    timer = setTimeout(() => {
      fail(`no answer within ${options.timeoutMs / 1000} s`)
      request.destroy()
    }, options.timeoutMs)

    request.on('error', (error: NodeJS.ErrnoException) => fail(error instanceof RefusedTarget ? error.message : `${error.code ? `${error.code}: ` : ''}${error.message}`))
    request.on('response', (response) => {
      const status = response.statusCode ?? 0
      const chunks: Buffer[] = []
      let read = 0
      const done = () => {
        const text = Buffer.concat(chunks).subarray(0, RESPONSE_KEPT).toString('utf8')
        if (status >= 200 && status < 300) finish({ ok: true, status, error: null, body: text })
        else if (status >= 300 && status < 400) fail(`redirect (${status}${response.headers.location ? ` to ${String(response.headers.location).slice(0, 200)}` : ''}) not followed`, status, text)
        else fail(`answered ${status}`, status, text)
      }
      response.on('data', (chunk: Buffer) => {
        if (read < RESPONSE_KEPT) chunks.push(chunk)
        read += chunk.length
        // Enough read: the rest is not waited for (the status decides).
        if (read >= RESPONSE_READ_LIMIT) {
          done()
          response.destroy()
        }
      })
      response.on('end', done)
      response.on('error', () => done())
    })
    request.end(body)
  })
}
