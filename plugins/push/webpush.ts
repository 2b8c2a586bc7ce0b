/**
 * The Web Push sender: the `web-push` package encrypts (RFC 8291, aes128gcm), signs (VAPID,
 * RFC 8292) and posts (RFC 8030) each push; this module checks what it is given, sends a few at a
 * time through one keep-alive agent (which carries the caller's address guard), bounds each push in
 * time and classifies the push service's answer for the outbox.
 */
import { createHash, createPublicKey } from 'node:crypto'
import https from 'node:https'
import { isIP } from 'node:net'
import webPush from 'web-push'
import { readRetryAfter } from '../../src/outbox-runner'
import type { PushResult } from './fcm'

const CONCURRENCY = 16
const ENDPOINT_MAX = 2000
const TTL_MAX = 2_419_200
/** Base64url of this many bytes is 32 characters, RFC 8030's Topic limit. */
const TOPIC_BYTES = 24
/** A P-256 public key as SEC1 uncompressed: 0x04, then 32 bytes of x and 32 of y. */
const UNCOMPRESSED_POINT_BYTES = 65
const AUTH_SECRET_BYTES = 16

export interface WebPushSubscription {
  endpoint: string
  keys: { p256dh: string; auth: string }
}

/** The application server's VAPID identity: base64url keys as web-push uses them. */
export interface VapidKeys {
  publicKey: string
  privateKey: string
  /** `mailto:…` or `https://…`: whom the push service contacts about this sender. */
  subject: string
}

export interface WebPushOutgoing {
  subscription: WebPushSubscription
  /** Sent as JSON, encrypted for the subscription. */
  payload: Record<string, unknown>
  /** How long the push service keeps an undelivered push (0 … 2,419,200 s). */
  ttlSeconds: number
  urgency: 'high' | 'normal'
  /** A collapse key (any characters, up to 64): a newer push with the same key replaces an undelivered one. */
  topic?: string
}

export interface WebPushSenderOptions {
  timeoutMs: number
  /** Merged into the keep-alive agent: `lookup` (the address guard) and, in tests, `ca`. */
  agentOptions?: https.AgentOptions
}

/** A fresh VAPID key pair (base64url), as web-push generates it. */
export function generateVapidKeys(): { publicKey: string; privateKey: string } {
  return webPush.generateVAPIDKeys()
}

/** Null when `value` is a subscription a push can be sent to, else a short reason. */
export function validSubscription(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return 'the subscription is not an object'
  const { endpoint, keys } = value as Partial<Record<'endpoint' | 'keys', unknown>>
  if (typeof endpoint !== 'string') return 'the endpoint is missing'
  const endpointProblem = endpointReason(endpoint)
  if (endpointProblem) return endpointProblem
  if (typeof keys !== 'object' || keys === null) return 'the keys are missing'
  const { p256dh, auth } = keys as Partial<Record<'p256dh' | 'auth', unknown>>
  const point = base64url(p256dh)
  if (!point) return 'p256dh is not base64url'
  if (point.length !== UNCOMPRESSED_POINT_BYTES || point[0] !== 0x04) return 'p256dh is not an uncompressed P-256 public key (65 bytes starting with 0x04)'
  if (!onP256(point)) return 'p256dh is not a point on the P-256 curve'
  const secret = base64url(auth)
  if (!secret) return 'auth is not base64url'
  if (secret.length !== AUTH_SECRET_BYTES) return `auth is not ${AUTH_SECRET_BYTES} bytes`
  return null
}

function endpointReason(endpoint: string): string | null {
  if (endpoint.length > ENDPOINT_MAX) return `the endpoint is longer than ${ENDPOINT_MAX} characters`
  let url: URL
  try {
    url = new URL(endpoint)
  } catch {
    return 'the endpoint is not a URL'
  }
  if (url.protocol !== 'https:') return 'the endpoint is not an https URL'
  if (url.username || url.password) return 'the endpoint carries credentials'
  return null
}

/** The bytes of canonical unpadded base64url text (what PushSubscription.toJSON gives); null otherwise. */
function base64url(value: unknown): Buffer | null {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]+$/.test(value)) return null
  const bytes = Buffer.from(value, 'base64url')
  // Buffer ignores stray trailing bits; a key spelled two ways is not a key.
  return bytes.toString('base64url') === value ? bytes : null
}

function onP256(point: Buffer): boolean {
  try {
    const coordinate = (from: number) => point.subarray(from, from + 32).toString('base64url')
    createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: coordinate(1), y: coordinate(33) }, format: 'jwk' })
    return true
  } catch {
    return false
  }
}

/** RFC 8030's Topic is at most 32 URL-safe base64 characters: a collapse key is mapped to one, the same key to the same Topic. */
function topicOf(collapseKey: string): string {
  return createHash('sha256').update(collapseKey).digest().subarray(0, TOPIC_BYTES).toString('base64url')
}

/** Sends through web-push to each subscription's push service. */
export class WebPushSender {
  private readonly agent: https.Agent

  constructor(
    private readonly vapid: VapidKeys,
    private readonly options: WebPushSenderOptions,
  ) {
    if (!(options.timeoutMs > 0)) throw new Error('push: the Web Push timeout must be a positive number of milliseconds')
    // web-push checks the subject and both keys when it signs: signing once here fails at start-up, not at the first push.
    webPush.getVapidHeaders('https://push.example', vapid.subject, vapid.publicKey, vapid.privateKey, 'aes128gcm')
    this.agent = new https.Agent({ ...options.agentOptions, keepAlive: true })
  }

  /** One result per push, in order; never throws. */
  send(pushes: WebPushOutgoing[]): Promise<PushResult[]> {
    return mapConcurrently(pushes, CONCURRENCY, (push) => this.sendOne(push))
  }

  async close(): Promise<void> {
    this.agent.destroy()
  }

  private async sendOne(push: WebPushOutgoing): Promise<PushResult> {
    const problem = validSubscription(push.subscription) ?? ttlReason(push.ttlSeconds)
    if (problem) return { outcome: 'fail', error: problem }
    try {
      await this.checkLiteralAddress(new URL(push.subscription.endpoint).hostname)
      await withDeadline(
        webPush.sendNotification(push.subscription, JSON.stringify(push.payload), {
          vapidDetails: this.vapid,
          TTL: push.ttlSeconds,
          urgency: push.urgency,
          ...(push.topic === undefined ? {} : { topic: topicOf(push.topic) }),
          contentEncoding: 'aes128gcm',
          // A socket idle timeout (web-push destroys the request); withDeadline bounds a trickling answer.
          timeout: this.options.timeoutMs,
          agent: this.agent,
        }),
        this.options.timeoutMs,
      )
      return { outcome: 'sent' }
    } catch (error) {
      return classify(error)
    }
  }

  /**
   * node:https never calls `lookup` for an IP literal, so the address guard would not see an
   * endpoint like https://10.0.0.1/: it is asked here instead.
   */
  private checkLiteralAddress(hostname: string): Promise<void> {
    const host = hostname.replace(/^\[(.*)\]$/, '$1')
    const lookup = this.options.agentOptions?.lookup
    if (!lookup || !isIP(host)) return Promise.resolve()
    return new Promise((resolve, reject) => lookup(host, { all: true }, (error) => (error ? reject(error) : resolve())))
  }
}

function ttlReason(ttlSeconds: number): string | null {
  return Number.isInteger(ttlSeconds) && ttlSeconds >= 0 && ttlSeconds <= TTL_MAX ? null : `the TTL ${ttlSeconds} is not a whole number of seconds from 0 to ${TTL_MAX}`
}

/** Runs `task` on every item with at most `limit` running at once; results in the items' order. */
async function mapConcurrently<T, R>(items: T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await task(items[index]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no complete answer within ${ms / 1000} s`)), ms)
  })
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer))
}

/** The push service's answer as the outbox acts on it (RFC 8030 sections 5 and 6.2; RFC 8292 section 4). */
function classify(error: unknown): PushResult {
  if (!(error instanceof webPush.WebPushError)) {
    // The push was checked before sending: what else fails is the connection (refused, reset, timed out, TLS, guard).
    const message = error instanceof Error ? error.message : String(error)
    const code = (error as NodeJS.ErrnoException | undefined)?.code
    return { outcome: 'retry', error: code && !message.includes(code) ? `${code}: ${message}` : message }
  }
  const status = error.statusCode
  const detail = `the push service answered ${status}${error.body ? `: ${error.body.slice(0, 200)}` : ''}`
  if (status === 404 || status === 410) return { outcome: 'prune', error: detail }
  if (status === 429 || status >= 500) return { outcome: 'retry', error: detail, retryAfterSeconds: readRetryAfter(error.headers['retry-after']) }
  return { outcome: 'fail', error: detail }
}
