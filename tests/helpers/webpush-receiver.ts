/**
 * A local Web Push service (HTTPS on loopback, certificate from a throwaway openssl CA). It hands
 * out browser-like subscriptions and, for every push, does what a browser's push service and the
 * browser together do: checks the VAPID token (RFC 8292), decrypts the aes128gcm body with the
 * subscription's private key (RFC 8291, RFC 8188), records the push, and answers as the test chose
 * (201 by default). Everything is checked here with node:crypto, not with web-push, so a sender
 * bug is not mirrored by the receiver.
 */
import { execFileSync } from 'node:child_process'
import { createDecipheriv, createECDH, createPublicKey, hkdfSync, randomBytes, randomUUID, verify, type ECDH } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import https from 'node:https'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { WebPushSubscription } from '../../plugins/push/webpush'

/** RFC 8292, section 2: a VAPID token must not expire more than 24 hours ahead. */
const VAPID_MAX_LIFETIME_SECONDS = 24 * 60 * 60
const SALT_BYTES = 16
const TAG_BYTES = 16
const LAST_RECORD_DELIMITER = 0x02
const POLL_MS = 5

export interface ReceivedPush {
  subscriptionId: string
  headers: { ttl: number; urgency: string | undefined; topic: string | undefined }
  /** The decrypted body, parsed as JSON. */
  payload: unknown
  /** The VAPID token's `sub`. */
  vapidSubject: string
  /** The `k` of the Authorization header: the sender's VAPID public key, which the token verified against. */
  vapidPublicKey: string
  /** The status the receiver answered. */
  status: number
}

/** A push refused before it was recorded (unknown subscription, bad token, undecryptable body). */
export interface RefusedPush {
  subscriptionId: string
  status: number
  reason: string
}

export interface PushAnswer {
  status: number
  headers?: Record<string, string>
}

export interface ReceiverSubscription extends WebPushSubscription {
  /** The last segment of the endpoint: `subscriptionId` of its pushes. */
  id: string
}

/** The browser's side of a subscription: what it decrypts with. */
export interface SubscriptionSecrets {
  ecdh: ECDH
  auth: Buffer
}

export interface WebPushReceiver {
  port: number
  /** `https://127.0.0.1:<port>`: the VAPID audience of its endpoints. */
  origin: string
  /** The CA that signed its certificate, for the sender's `agentOptions.ca`. */
  ca: Buffer
  /** A new subscription with fresh keys, as a browser's PushManager.subscribe gives one. */
  subscribe(): ReceiverSubscription
  /** The private half of a subscription made here. */
  secretsOf(subscription: ReceiverSubscription): SubscriptionSecrets
  /** How this subscription's following pushes are answered (after they are checked and recorded). */
  answer(subscription: ReceiverSubscription, answer: PushAnswer): void
  /** How pushes without their own answer are answered (201 unless changed). */
  answerByDefault(answer: PushAnswer): void
  /** Recorded pushes in arrival order, optionally only those matching `predicate`. */
  received(predicate?: (push: ReceivedPush) => boolean): ReceivedPush[]
  refused: RefusedPush[]
  /** Waits until `n` pushes (matching `predicate`) are recorded; throws after `deadlineMs`. */
  waitFor(n: number, deadlineMs: number, predicate?: (push: ReceivedPush) => boolean): Promise<ReceivedPush[]>
  close(): Promise<void>
}

/** A throwaway CA and a certificate for 127.0.0.1 signed by it (EC keys: quick enough to make per receiver). */
function certificates(): { key: Buffer; cert: Buffer; ca: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'webpush-receiver-tls-'))
  try {
    const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
    const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes']
    run('req', '-x509', ...ecKey, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=worktrack web push test CA')
    run('req', ...ecKey, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1')
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n')
    run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'san.ext')
    return { key: readFileSync(join(dir, 'server.key')), cert: readFileSync(join(dir, 'server.pem')), ca: readFileSync(join(dir, 'ca.pem')) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A P-256 public key object from its 65-byte uncompressed form. */
function p256PublicKey(point: Buffer) {
  return createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33, 65).toString('base64url') },
    format: 'jwk',
  })
}

/**
 * Checks an `Authorization: vapid t=<JWT>, k=<key>` header (RFC 8292, section 3): an ES256 token signed by
 * `k`, for `audience`, not expired and at most 24 hours ahead, with a subject. Throws naming the fault.
 */
export function verifyVapid(authorization: string | undefined, audience: string, nowMs = Date.now()): { subject: string; publicKey: string } {
  const scheme = /^vapid\s+(.*)$/i.exec(authorization ?? '')
  if (!scheme) throw new Error('no vapid Authorization header')
  const params = new Map(scheme[1]!.split(',').map((part) => part.trim().split('=', 2) as [string, string]))
  const token = params.get('t')
  const key = params.get('k')
  if (!token || !key) throw new Error('the vapid header lacks t or k')
  const [header, claims, signature] = token.split('.')
  if (!header || !claims || !signature) throw new Error('the token is not a JWT')
  const point = Buffer.from(key, 'base64url')
  if (point.length !== 65 || point[0] !== 0x04) throw new Error('k is not an uncompressed P-256 key')
  if (JSON.parse(Buffer.from(header, 'base64url').toString()).alg !== 'ES256') throw new Error('the token is not ES256')
  const signed = verify('sha256', Buffer.from(`${header}.${claims}`), { key: p256PublicKey(point), dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'))
  if (!signed) throw new Error('the token signature does not verify against k')
  const { aud, exp, sub } = JSON.parse(Buffer.from(claims, 'base64url').toString())
  if (aud !== audience) throw new Error(`the token is for ${aud}, not ${audience}`)
  const now = nowMs / 1000
  if (typeof exp !== 'number' || exp <= now) throw new Error('the token has expired')
  if (exp > now + VAPID_MAX_LIFETIME_SECONDS) throw new Error('the token expires more than 24 hours ahead')
  if (typeof sub !== 'string' || !sub) throw new Error('the token has no subject')
  return { subject: sub, publicKey: key }
}

/**
 * Decrypts an aes128gcm push body (RFC 8188 framing, RFC 8291 keys): header salt(16) rs(4)
 * idlen(1) keyid (the sender's ephemeral public key), then one record. Throws on any fault.
 */
export function decryptAes128gcm(body: Buffer, secrets: SubscriptionSecrets): Buffer {
  const keyIdAt = SALT_BYTES + 5
  if (body.length < keyIdAt) throw new Error('the body is shorter than the aes128gcm header')
  const salt = body.subarray(0, SALT_BYTES)
  const recordSize = body.readUInt32BE(SALT_BYTES)
  const senderKey = body.subarray(keyIdAt, keyIdAt + body[SALT_BYTES + 4]!)
  const record = body.subarray(keyIdAt + senderKey.length)
  if (senderKey.length !== 65) throw new Error('the keyid is not a 65-byte P-256 public key')
  // RFC 8291, section 4: a push message is a single record.
  if (record.length > recordSize) throw new Error('the body holds more than one record')
  if (record.length <= TAG_BYTES) throw new Error('the record is too short')

  // RFC 8291, section 3.4: the input keying material mixes the ECDH secret with the auth secret and both public keys.
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), secrets.ecdh.getPublicKey(), senderKey])
  const ikm = Buffer.from(hkdfSync('sha256', secrets.ecdh.computeSecret(senderKey), secrets.auth, keyInfo, 32))
  // RFC 8188, sections 2.2 and 2.3: content key and nonce from the salt (a single record: sequence number 0).
  const key = Buffer.from(hkdfSync('sha256', ikm, salt, 'Content-Encoding: aes128gcm\0', 16))
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, 'Content-Encoding: nonce\0', 12))

  const decipher = createDecipheriv('aes-128-gcm', key, nonce)
  decipher.setAuthTag(record.subarray(-TAG_BYTES))
  const padded = Buffer.concat([decipher.update(record.subarray(0, -TAG_BYTES)), decipher.final()])
  let end = padded.length - 1
  while (end >= 0 && padded[end] === 0) end--
  if (padded[end] !== LAST_RECORD_DELIMITER) throw new Error('the record does not end with the last-record delimiter 0x02')
  return padded.subarray(0, end)
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => resolve(Buffer.concat(chunks)))
    request.on('error', reject)
  })
}

export async function startWebPushReceiver(): Promise<WebPushReceiver> {
  const { key, cert, ca } = certificates()
  const secrets = new Map<string, SubscriptionSecrets>()
  const answers = new Map<string, PushAnswer>()
  let defaultAnswer: PushAnswer = { status: 201 }
  const received: ReceivedPush[] = []
  const refused: RefusedPush[] = []
  let origin = ''

  const reply = (response: ServerResponse, { status, headers }: PushAnswer, body = '') => {
    response.writeHead(status, headers)
    response.end(body)
  }

  /** Checks and decrypts one push; answers with the refusal, or records it and answers as chosen. */
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const body = await readBody(request)
    const subscriptionId = /^\/push\/([\w-]+)$/.exec(request.url ?? '')?.[1] ?? ''
    const refuse = (status: number, reason: string) => {
      refused.push({ subscriptionId, status, reason })
      reply(response, { status }, reason)
    }
    const subscription = secrets.get(subscriptionId)
    if (request.method !== 'POST' || !subscription) return refuse(404, 'no such subscription')
    let vapid: { subject: string; publicKey: string }
    try {
      vapid = verifyVapid(request.headers.authorization, origin)
    } catch (error) {
      return refuse(401, (error as Error).message)
    }
    const ttl = String(request.headers.ttl ?? '')
    if (!/^\d+$/.test(ttl)) return refuse(400, 'the TTL header is missing or not a number')
    if (request.headers['content-encoding'] !== 'aes128gcm') return refuse(415, 'the body is not aes128gcm')
    let payload: unknown
    try {
      payload = JSON.parse(decryptAes128gcm(body, subscription).toString('utf8'))
    } catch (error) {
      return refuse(400, `cannot decrypt: ${(error as Error).message}`)
    }
    const answer = answers.get(subscriptionId) ?? defaultAnswer
    received.push({
      subscriptionId,
      headers: { ttl: Number(ttl), urgency: request.headers.urgency as string | undefined, topic: request.headers.topic as string | undefined },
      payload,
      vapidSubject: vapid.subject,
      vapidPublicKey: vapid.publicKey,
      status: answer.status,
    })
    reply(response, { status: answer.status, headers: { location: `${origin}/message/${randomUUID()}`, ...answer.headers } })
  }

  const server = https.createServer({ key, cert }, (request, response) => {
    handle(request, response).catch((error) => reply(response, { status: 500 }, String(error)))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const port = (server.address() as { port: number }).port
  origin = `https://127.0.0.1:${port}`

  const matching = (predicate?: (push: ReceivedPush) => boolean) => (predicate ? received.filter(predicate) : [...received])
  return {
    port,
    origin,
    ca,
    subscribe() {
      const ecdh = createECDH('prime256v1')
      ecdh.generateKeys()
      const auth = randomBytes(16)
      const id = randomUUID()
      secrets.set(id, { ecdh, auth })
      return { id, endpoint: `${origin}/push/${id}`, keys: { p256dh: ecdh.getPublicKey('base64url'), auth: auth.toString('base64url') } }
    },
    secretsOf(subscription) {
      const found = secrets.get(subscription.id)
      if (!found) throw new Error(`no subscription ${subscription.id} on this receiver`)
      return found
    },
    answer(subscription, answer) {
      answers.set(subscription.id, answer)
    },
    answerByDefault(answer) {
      defaultAnswer = answer
    },
    received: matching,
    refused,
    async waitFor(n, deadlineMs, predicate) {
      const deadline = Date.now() + deadlineMs
      while (matching(predicate).length < n) {
        if (Date.now() > deadline) throw new Error(`waited ${deadlineMs} ms for ${n} pushes, received ${matching(predicate).length}`)
        await new Promise((resolve) => setTimeout(resolve, POLL_MS))
      }
      return matching(predicate)
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      // The sender's keep-alive connections would hold close() open.
      server.closeAllConnections()
      await closed
    },
  }
}
