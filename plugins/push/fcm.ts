/**
 * The FCM sender: firebase-admin's `sendEach`, 500 messages per call, each result classified for
 * the outbox. firebase-admin retries 503 and connection resets itself; the outbox owns the rest.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { cert, deleteApp, initializeApp, type App } from 'firebase-admin/app'
import { getMessaging, type Message, type Messaging } from 'firebase-admin/messaging'
import { readRetryAfter } from '../../src/outbox-runner'
import type { FcmOptions } from './api'

const FCM_BATCH = 500

export interface OutgoingPush {
  token: string
  /** What the device shows; null: a data-only message (the app acts on `data`, nothing is shown). */
  notification: { title: string; body: string } | null
  data: Record<string, string>
  /** `high` wakes the device at once; `normal` lets it wait. */
  priority: 'high' | 'normal'
  /** Seconds the push services keep it for an offline device; null: their default (4 weeks). */
  ttlSeconds: number | null
  collapseKey: string | null
}

/** What the outbox sends a batch through: one result per push, in order. */
export interface PushSender {
  send(pushes: OutgoingPush[]): Promise<PushResult[]>
  close(): Promise<void>
}

export type PushResult =
  | { outcome: 'sent' }
  | { outcome: 'prune'; error: string }
  /** `retryAfterSeconds`: the service's Retry-After as it said it (the outbox bounds it). */
  | { outcome: 'retry'; error: string; retryAfterSeconds?: number }
  | { outcome: 'fail'; error: string }

/** Tokens FCM says are gone or invalid: the device is deleted. */
const PRUNE = new Set(['messaging/registration-token-not-registered', 'messaging/invalid-registration-token'])
/** INVALID_ARGUMENT is also FCM's answer to a malformed message; only one about the token prunes. */
const INVALID_TOKEN = /token/i
/** 429, 500, 503 and network trouble: try again later. */
const RETRY = new Set([
  'messaging/message-rate-exceeded',
  'messaging/quota-exceeded',
  'messaging/device-message-rate-exceeded',
  'messaging/internal-error',
  'messaging/server-unavailable',
  'messaging/unknown-error',
  'app/network-error',
  'app/network-timeout',
])

/** Credentials from `credentialsFile` or GOOGLE_APPLICATION_CREDENTIALS; null when there are none. */
export function fcmOptionsFromDisk(credentialsFile: string | undefined): FcmOptions | null {
  const file = credentialsFile || process.env.GOOGLE_APPLICATION_CREDENTIALS
  if (!file) return null
  try {
    const account = JSON.parse(readFileSync(file, 'utf8'))
    return { credential: cert(account), projectId: account.project_id }
  } catch (error) {
    throw new Error(`push: cannot use the FCM credentials in ${file}: ${(error as Error).message.split('\n')[0]}`)
  }
}

let hooked = false
/**
 * firebase-admin builds each send's error without the response headers, so a 429's Retry-After
 * would be lost. This keeps it on the error (`retryAfter`) by wrapping the SDK's two response
 * builders; if a future SDK renames them, the outbox falls back to its own backoff.
 */
function keepRetryAfter() {
  if (hooked) return
  hooked = true
  const require = createRequire(import.meta.url)
  const messagingDir = join(dirname(require.resolve('firebase-admin')), 'messaging')
  const internal = require(join(messagingDir, 'messaging-api-request-internal.js'))
  const proto = internal.FirebaseMessagingRequestHandler?.prototype
  if (!proto?.buildSendResponse || !proto.buildSendResponseFromError) return
  const attach = (result: { error?: Record<string, unknown> }, headers: Record<string, unknown> | undefined) => {
    const value = headers?.['retry-after']
    if (result.error && value !== undefined) result.error.retryAfter = String(value)
    return result
  }
  const fromResponse = proto.buildSendResponse
  proto.buildSendResponse = function (response: { headers?: Record<string, unknown> }) {
    return attach(fromResponse.call(this, response), response?.headers)
  }
  const fromError = proto.buildSendResponseFromError
  proto.buildSendResponseFromError = function (error: { response?: { headers?: Record<string, unknown> } }) {
    return attach(fromError.call(this, error), error?.response?.headers)
  }
}

/**
 * The FCM message of one push, as FCM receives it (firebase-admin sends these fields unchanged):
 * the one place its shape is decided, for the FCM sender and the log sender alike.
 */
export function fcmMessage(push: OutgoingPush, now = Date.now()): Message {
  const shown = push.notification !== null
  // A data-only message is a background push to APNs, which takes those only at priority 5.
  const apnsHeaders: Record<string, string> = shown
    ? { 'apns-priority': push.priority === 'high' ? '10' : '5', 'apns-push-type': 'alert' }
    : { 'apns-priority': '5', 'apns-push-type': 'background' }
  const webpushHeaders: Record<string, string> = { Urgency: push.priority }
  if (push.ttlSeconds !== null) {
    // APNs: the time after which it gives up (0: deliver once, now or never).
    apnsHeaders['apns-expiration'] = push.ttlSeconds === 0 ? '0' : String(Math.floor(now / 1000) + push.ttlSeconds)
    webpushHeaders.TTL = String(push.ttlSeconds)
  }
  if (push.collapseKey !== null) apnsHeaders['apns-collapse-id'] = push.collapseKey
  return {
    token: push.token,
    ...(shown ? { notification: push.notification! } : {}),
    data: push.data,
    android: {
      priority: push.priority,
      ...(push.ttlSeconds === null ? {} : { ttl: push.ttlSeconds * 1000 }),
      ...(push.collapseKey === null ? {} : { collapseKey: push.collapseKey }),
    },
    apns: { headers: apnsHeaders, payload: { aps: shown ? { sound: 'default' } : { contentAvailable: true } } },
    webpush: { headers: webpushHeaders },
  }
}

let appCounter = 0

/** Sends through firebase-admin to FCM. */
export class FcmSender implements PushSender {
  private readonly app: App
  private readonly messaging: Messaging

  constructor(options: FcmOptions) {
    keepRetryAfter()
    this.app = initializeApp({ credential: options.credential, projectId: options.projectId }, `worktrack-push-${process.pid}-${++appCounter}`)
    this.messaging = getMessaging(this.app)
  }

  /** Sends the pushes, 500 per `sendEach`; one result per push, in order. */
  async send(pushes: OutgoingPush[]): Promise<PushResult[]> {
    const results: PushResult[] = []
    for (let i = 0; i < pushes.length; i += FCM_BATCH) {
      const batch = pushes.slice(i, i + FCM_BATCH)
      const messages = batch.map((push) => fcmMessage(push))
      try {
        const response = await this.messaging.sendEach(messages)
        for (const each of response.responses) results.push(classify(each))
      } catch (error) {
        // The whole call failed (e.g. no connection): every push of it is retried.
        const message = (error as Error).message
        for (let j = 0; j < batch.length; j++) results.push({ outcome: 'retry', error: message })
      }
    }
    return results
  }

  close(): Promise<void> {
    return deleteApp(this.app)
  }
}

function classify(response: { success: boolean; error?: { code?: string; message?: string; retryAfter?: unknown } }): PushResult {
  if (response.success) return { outcome: 'sent' }
  const code = response.error?.code ?? 'unknown'
  const error = `${code}: ${response.error?.message ?? ''}`.slice(0, 500)
  if (PRUNE.has(code) || (code === 'messaging/invalid-argument' && INVALID_TOKEN.test(response.error?.message ?? ''))) return { outcome: 'prune', error }
  if (RETRY.has(code)) return { outcome: 'retry', error, retryAfterSeconds: readRetryAfter(response.error?.retryAfter) }
  return { outcome: 'fail', error }
}
