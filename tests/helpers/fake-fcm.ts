/**
 * A local fake of the FCM HTTP v1 API (HTTP/2 over TLS on loopback) that records every send, and
 * the redirect that points firebase-admin's own `http2.connect` at it (see `redirectFcm` below):
 * the real SDK code path — building messages, sendEach, its retries and error mapping — runs
 * unchanged; only the TCP connection goes to 127.0.0.1 instead of fcm.googleapis.com.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import http2 from 'node:http2'
import { join } from 'node:path'
import tls from 'node:tls'
import { FcmOptionsRef, type FcmOptions } from '../../plugins/push/api'
import type { ServiceRegistry } from '../../src/services/registry'

export const FAKE_PROJECT = 'demo-project'

export interface RecordedSend {
  token: string
  message: {
    token: string
    notification?: { title?: string; body?: string }
    data?: Record<string, string>
    /** As FCM's v1 API takes it: `ttl` as a duration string (`"3600s"`), `collapse_key`. */
    android?: { priority?: string; ttl?: string; collapse_key?: string }
    apns?: { headers?: Record<string, string>; payload?: unknown }
    webpush?: { headers?: Record<string, string> }
  }
  authorization: string | undefined
  path: string
  receivedAt: number
  /** The HTTP status answered (0 while the request is stalled). */
  status: number
}

export interface FakeAnswer {
  status: number
  body?: unknown
  headers?: Record<string, string>
}

/**
 * How the fake answers one send: an answer, `'stall'` (never answers: a request in flight when a
 * process dies), or undefined for 200. `attempt` counts this token's requests, from 1.
 */
export type Responder = (token: string, attempt: number) => FakeAnswer | 'stall' | undefined

const fcmError = (status: number, canonical: string, message: string, errorCode?: string): FakeAnswer => ({
  status,
  body: {
    error: {
      code: status,
      message,
      status: canonical,
      ...(errorCode ? { details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }] } : {}),
    },
  },
})

/** FCM's documented error answers. */
export const FCM_ERRORS = {
  unregistered: () => fcmError(404, 'NOT_FOUND', 'Requested entity was not found.', 'UNREGISTERED'),
  invalidToken: () => fcmError(400, 'INVALID_ARGUMENT', 'The registration token is not a valid FCM registration token', 'INVALID_ARGUMENT'),
  senderMismatch: () => fcmError(403, 'PERMISSION_DENIED', 'SenderId mismatch', 'SENDER_ID_MISMATCH'),
  unavailable: (): FakeAnswer => fcmError(503, 'UNAVAILABLE', 'The service is currently unavailable.', 'UNAVAILABLE'),
  internal: (): FakeAnswer => fcmError(500, 'INTERNAL', 'Internal error encountered.', 'INTERNAL'),
  /** 429 with `Retry-After` as given: seconds, or any text a broken or hostile server might send. */
  quota: (retryAfter: number | string): FakeAnswer => ({
    ...fcmError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded for quota metric.', 'QUOTA_EXCEEDED'),
    headers: { 'retry-after': String(retryAfter) },
  }),
}

/** A throwaway CA and a server certificate for fcm.googleapis.com, localhost and 127.0.0.1, made with openssl once per checkout. */
export function certificates(): { key: Buffer; cert: Buffer; ca: Buffer } {
  const dir = 'node_modules/.cache/worktrack/fake-fcm-tls'
  if (!existsSync(join(dir, 'server.pem'))) {
    const work = `${dir}.${process.pid}.tmp`
    rmSync(work, { recursive: true, force: true })
    mkdirSync(work, { recursive: true })
    const run = (...args: string[]) => execFileSync('openssl', args, { cwd: work, stdio: 'pipe' })
    run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '3650', '-subj', '/CN=worktrack test CA')
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=fcm.googleapis.com')
    writeFileSync(join(work, 'san.ext'), 'subjectAltName=DNS:fcm.googleapis.com,DNS:localhost,IP:127.0.0.1\n')
    run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '3650', '-extfile', 'san.ext')
    try {
      renameSync(work, dir)
    } catch {
      rmSync(work, { recursive: true, force: true }) // another file made it first
    }
  }
  return { key: readFileSync(join(dir, 'server.key')), cert: readFileSync(join(dir, 'server.pem')), ca: readFileSync(join(dir, 'ca.pem')) }
}

/** FCM options whose credential needs no OAuth round trip (the fake checks the bearer). */
export const fakeFcmOptions = (): FcmOptions => ({
  credential: { getAccessToken: async () => ({ access_token: 'test-access-token', expires_in: 3600 }) },
  projectId: FAKE_PROJECT,
})

export interface FakeFcm {
  port: number
  ca: Buffer
  /** Every send received, in arrival order (stalled ones included, with status 0). */
  sends: RecordedSend[]
  /** Sends answered 200: what FCM accepted, i.e. what reached devices. */
  delivered(): RecordedSend[]
  respond: Responder
  /** FCM options whose credential needs no OAuth round trip. */
  options(): FcmOptions
  /** Provides `options()` to a service being built: `startTestService({ provide: fcm.provide })`. */
  provide(services: ServiceRegistry): void
  /** Answers every stalled request with a connection reset and forgets them. */
  releaseStalled(): void
  /** Stops the server (and undoes the redirect, when it started with one). */
  close(): Promise<void>
}

export interface FakeFcmOptions {
  /** Points this process's firebase-admin connections at the fake (`redirectFcm`) until `close`. */
  redirect?: boolean
}

export async function startFakeFcm(respond: Responder = () => undefined, startOptions: FakeFcmOptions = {}): Promise<FakeFcm> {
  const { key, cert, ca } = certificates()
  const sends: RecordedSend[] = []
  const attempts = new Map<string, number>()
  const stalled = new Set<http2.ServerHttp2Stream>()
  const sessions = new Set<http2.ServerHttp2Session>()
  let counter = 0
  const fake: FakeFcm = {
    port: 0,
    ca,
    sends,
    delivered: () => sends.filter((send) => send.status === 200),
    respond,
    options: fakeFcmOptions,
    provide: (services) => services.provide(FcmOptionsRef, fake.options()),
    releaseStalled() {
      for (const stream of stalled) stream.close(http2.constants.NGHTTP2_CANCEL)
      stalled.clear()
    },
    async close() {
      fake.releaseStalled()
      for (const session of sessions) session.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      undoRedirect?.()
    },
  }
  const server = http2.createSecureServer({ key, cert, allowHTTP1: true })
  server.on('session', (session) => {
    sessions.add(session)
    session.on('close', () => sessions.delete(session))
  })
  server.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    const chunks: Buffer[] = []
    stream.on('data', (chunk: Buffer) => chunks.push(chunk))
    stream.on('error', () => {})
    stream.on('end', () => {
      const path = String(headers[':path'])
      const answer = (status: number, body: unknown, extra: Record<string, string> = {}) => {
        if (stream.destroyed) return
        stream.respond({ ':status': status, 'content-type': 'application/json; charset=UTF-8', ...extra })
        stream.end(JSON.stringify(body))
      }
      if (headers[':method'] !== 'POST' || path !== `/v1/projects/${FAKE_PROJECT}/messages:send`) return answer(404, { error: { code: 404, message: 'Not found', status: 'NOT_FOUND' } })
      let parsed: { message: RecordedSend['message'] }
      try {
        parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      } catch {
        return answer(400, { error: { code: 400, message: 'Invalid JSON payload', status: 'INVALID_ARGUMENT' } })
      }
      const token = parsed.message.token
      const attempt = (attempts.get(token) ?? 0) + 1
      attempts.set(token, attempt)
      const record: RecordedSend = { token, message: parsed.message, authorization: headers.authorization as string | undefined, path, receivedAt: Date.now(), status: 0 }
      sends.push(record)
      const decided = fake.respond(token, attempt)
      if (decided === 'stall') {
        stalled.add(stream)
        stream.on('close', () => stalled.delete(stream))
        return
      }
      const { status, body, headers: extra } = decided ?? { status: 200, body: { name: `projects/${FAKE_PROJECT}/messages/${++counter}` } }
      record.status = status
      answer(status, body, extra)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  fake.port = (server.address() as { port: number }).port
  const undoRedirect = startOptions.redirect ? redirectFcm(fake.port, ca) : undefined
  return fake
}

/**
 * Points firebase-admin's HTTP/2 connections for fcm.googleapis.com at the fake (TLS with the
 * test CA), and writes `:scheme` without the colon the SDK adds (local servers reset the stream
 * otherwise; Google's accept it). Returns the undo.
 */
export function redirectFcm(port: number, ca: string | Buffer): () => void {
  const original = http2.connect
  ;(http2 as any).connect = function (authority: any, options: any, listener: any) {
    if (String(authority).startsWith('https://fcm.googleapis.com'))
      options = { ...options, createConnection: () => tls.connect({ host: '127.0.0.1', port, servername: 'fcm.googleapis.com', ALPNProtocols: ['h2'], ca }) }
    const session = (original as any).call(this, authority, options, listener)
    session.setMaxListeners?.(0)
    const request = session.request
    session.request = function (headers: any, ...rest: any[]) {
      const scheme = headers?.[':scheme']
      if (typeof scheme === 'string' && scheme.endsWith(':')) headers = { ...headers, ':scheme': scheme.slice(0, -1) }
      return request.call(this, headers, ...rest)
    }
    return session
  }
  return () => {
    ;(http2 as any).connect = original
  }
}
