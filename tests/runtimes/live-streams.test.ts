/**
 * Live pages stay connected on every runtime: through the real entry
 * of Bun (`bun entries/bun.ts`), Node (`npm run build:node`, `node dist/node/node.js`) and Deno
 * (`npm run build:deno`, `deno run --allow-all dist/deno/deno.js`), a signed-in viewer's stream
 * and a share link's stream stay open 30 s and still deliver a change posted after 25 s. Runtime
 * servers cut idle connections (Bun after 10 s by default); the stream's heartbeat must come
 * well inside every such limit. And a viewer that goes away gives back its place within two
 * heartbeats (a stream the runtime never ends would hold one of `display.maxStreamsPerUser`
 * forever, and queue events for nobody). The three runtimes run at once, so the file takes
 * ~35 s of real waiting on open streams, which is the behaviour under test. A runtime that is
 * not installed is skipped, saying so.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HEARTBEAT_MS } from '../../plugins/display/live/client'
import { openDatabase } from '../../src/db'
import { createTestDatabase, pgliteTemplate, usingServer, type TestDatabase } from '../helpers/database'
import { createDisplayFixture, SAMPLE_DATA } from '../helpers/display-fixture'
import { freePort } from '../helpers/http'
import { startTestService } from '../helpers/service'
import { webSession } from '../helpers/sessions'

const HOLD_MS = 30_000
/** When the change is posted: long after every runtime's default idle timeout (Bun: 10 s). */
const CHANGE_AT_MS = 25_000
/** The servers' `display.maxStreamsPerUser`: one place, so a place never given back is seen at once. */
const STREAMS_PER_USER = 1

const bin = (name: string) => join(process.cwd(), 'node_modules/.bin', name)

/** Why `command` cannot run here (not installed, or too old), or undefined when it can. */
function unavailable(command: string, minimumMajor: number): string | undefined {
  const found = spawnSync(command, ['--version'], { encoding: 'utf8' })
  if (found.error || found.status !== 0) return `${command} is not installed`
  const major = Number(/(\d+)\./.exec(found.stdout)?.[1])
  return major >= minimumMajor ? undefined : `${command} ${found.stdout.trim()} is older than ${minimumMajor}`
}

interface Runtime {
  name: string
  build?: string
  start: string[]
  skip?: string
}

const deno = existsSync(bin('deno')) ? bin('deno') : 'deno'
const runtimes: Runtime[] = [
  { name: 'bun', start: [process.execPath, 'entries/bun.ts'] },
  { name: 'node', build: 'build:node', start: ['node', 'dist/node/node.js'], skip: unavailable('node', 20) },
  { name: 'deno', build: 'build:deno', start: [deno, 'run', '--allow-all', 'dist/deno/deno.js'], skip: unavailable(deno, 2) },
]

/** One page of one organization per runtime, seeded in-process before the runtime's server opens the database. */
interface Seed {
  databaseUrl: string
  pageName: string
  componentId: string
  displayApiKey: string
  /** The reader's session: the stream held open. */
  cookie: string
  /** The creator's session: the streams opened and dropped. */
  creatorCookie: string
  shareUrl: string
}

async function seed(database: TestDatabase): Promise<Seed> {
  const api = await startTestService({ database })
  try {
    const fixture = await createDisplayFixture(api)
    const link = await api.request('POST', `/api/v1/pages/${fixture.pageId}/share-links`, { key: fixture.creatorKey, body: {} })
    if (link.status !== 201) throw new Error(`share link: ${link.status} ${link.text}`)
    return {
      databaseUrl: database.url,
      pageName: fixture.pageName,
      componentId: fixture.components.barChart,
      displayApiKey: fixture.creator.displayApiKey!,
      cookie: (await webSession(api, fixture.reader)).cookie,
      creatorCookie: (await webSession(api, fixture.creator)).cookie,
      shareUrl: link.body.data.url,
    }
  } finally {
    await api.stop()
  }
}

interface Server {
  base: string
  stderr(): string
  stop(): Promise<void>
}

/** Starts `runtime`'s entry on `databaseUrl` as its own process and waits until /health answers. */
async function startServer(runtime: Runtime, databaseUrl: string): Promise<Server> {
  const port = await freePort()
  const child = Bun.spawn(runtime.start, {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), SERVICE_CONFIG: configFile, LOG_LEVEL: 'warn' },
    stdout: 'ignore',
    stderr: 'pipe',
  })
  let stderr = ''
  void (async () => {
    const reader = child.stderr.getReader()
    const decoder = new TextDecoder()
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) stderr += decoder.decode(chunk.value, { stream: true })
  })()
  const server: Server = {
    base: `http://127.0.0.1:${port}`,
    stderr: () => stderr,
    async stop() {
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await child.exited
      clearTimeout(timer)
    },
  }
  for (const deadline = Date.now() + 90_000; ; ) {
    if (child.exitCode !== null) throw new Error(`${runtime.name} exited with ${child.exitCode}: ${stderr.trim()}`)
    try {
      if ((await fetch(`${server.base}/health`, { signal: AbortSignal.timeout(2000) })).ok) return server
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await server.stop()
      throw new Error(`${runtime.name} did not answer /health within 90 s: ${stderr.trim()}`)
    }
    await Bun.sleep(100)
  }
}

interface WatchedStream {
  events: Array<{ event: string; data: any; at: number }>
  /** performance.now() when the server said `: connected`. */
  connectedAt: number
  /** When the stream ended (done or broken), and how; undefined while it is open. */
  ended?: { at: number; how: string }
  /** Resolves true as soon as `predicate` matches an event, false when the stream ends or `timeoutMs` passes. */
  waitFor(predicate: (event: { event: string; data: any }) => boolean, timeoutMs: number): Promise<boolean>
  /** Resolves once the stream ended or `at` (performance.now()) has come. */
  openUntil(at: number): Promise<void>
  close(): void
}

/** Opens a server-sent event stream and keeps reading it, noting every event and how and when it ends. */
async function watchStream(url: string, headers: Record<string, string>): Promise<WatchedStream> {
  const abort = new AbortController()
  const response = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' }, signal: abort.signal })
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${await response.text()}`)
  const connected = Promise.withResolvers<void>()
  let wake = Promise.withResolvers<void>()
  const stream: WatchedStream = {
    events: [],
    connectedAt: 0,
    async waitFor(predicate, timeoutMs) {
      const deadline = performance.now() + timeoutMs
      for (;;) {
        if (stream.events.some(predicate)) return true
        const left = deadline - performance.now()
        if (stream.ended || left <= 0) return false
        await Promise.race([wake.promise, Bun.sleep(left)])
      }
    },
    async openUntil(at) {
      while (!stream.ended && performance.now() < at) await Promise.race([wake.promise, Bun.sleep(at - performance.now())])
    },
    close: () => abort.abort(),
  }
  void (async () => {
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let buffer = ''
    let how = 'the server ended the response'
    try {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        buffer += decoder.decode(chunk.value, { stream: true })
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          if (/^: connected$/m.test(block)) {
            stream.connectedAt = performance.now()
            connected.resolve()
          }
          const event = /^event: (.*)$/m.exec(block)?.[1]
          const data = /^data: (.*)$/m.exec(block)?.[1]
          if (event && data) stream.events.push({ event, data: JSON.parse(data), at: performance.now() })
        }
        wake.resolve()
        wake = Promise.withResolvers<void>()
      }
    } catch (error) {
      how = `the connection broke (${(error as Error).message})`
    }
    stream.ended = { at: performance.now(), how }
    wake.resolve()
  })()
  const ready = await Promise.race([connected.promise.then(() => true), Bun.sleep(10_000).then(() => false)])
  if (!ready) {
    abort.abort()
    throw new Error(`${url}: no ": connected" within 10 s`)
  }
  return stream
}

interface StreamReport {
  /** How long it was open when the hold ended; less than HOLD_MS means it was cut. */
  openForSeconds: number
  /** Undefined while open. */
  endedBy: string | undefined
  receivedTheChange: boolean
  pings: number
}

interface HoldReport {
  signedIn: StreamReport
  shared: StreamReport
}

interface PlaceReport {
  /** The status of a second stream of the same user while the first is open: 429 when the bound applies. */
  secondWhileOpen: number
  /** Whether a stream could be opened again within 2 heartbeats of the first one's client going away. */
  freedAfterLeaving: boolean
}

/**
 * One user's place (STREAMS_PER_USER = 1): taken by an open stream, given back when its client
 * goes away. Tries again until a deadline, since the server learns of the close a moment later.
 */
async function placeGivenBack(server: Server, seeded: Seed): Promise<PlaceReport> {
  const url = `${server.base}/pages/${seeded.pageName}/events`
  const cookie = seeded.creatorCookie
  const first = await watchStream(url, { cookie })
  const second = await fetch(url, { headers: { cookie, accept: 'text/event-stream' } })
  await second.body?.cancel()
  first.close()
  let freedAfterLeaving = false
  for (const deadline = performance.now() + 2 * HEARTBEAT_MS; !freedAfterLeaving && performance.now() < deadline; ) {
    const again = await fetch(url, { headers: { cookie, accept: 'text/event-stream' }, signal: AbortSignal.timeout(5000) })
    await again.body?.cancel()
    freedAfterLeaving = again.status === 200
    if (!freedAfterLeaving) await Bun.sleep(100)
  }
  return { secondWhileOpen: second.status, freedAfterLeaving }
}

interface RuntimeReport {
  hold: HoldReport
  place: PlaceReport
}

/**
 * On `runtime`'s server: a signed-in viewer's stream and a share link's stream are held open
 * HOLD_MS; at CHANGE_AT_MS a component is updated through the same server. Meanwhile another
 * user's place is taken and given back.
 */
async function onRuntime(runtime: Runtime, seeded: Seed): Promise<RuntimeReport> {
  const server = await startServer(runtime, seeded.databaseUrl)
  try {
    const [hold, place] = await Promise.all([holdStreams(server, seeded), placeGivenBack(server, seeded)])
    return { hold, place }
  } finally {
    await server.stop()
  }
}

async function holdStreams(server: Server, seeded: Seed): Promise<HoldReport> {
  const streams: WatchedStream[] = []
  try {
    const signedIn = await watchStream(`${server.base}/pages/${seeded.pageName}/events`, { cookie: seeded.cookie })
    streams.push(signedIn)
    const shared = await watchStream(`${server.base}${seeded.shareUrl}/events`, {})
    streams.push(shared)
    const since = Math.max(signedIn.connectedAt, shared.connectedAt)
    await Promise.all(streams.map((stream) => stream.openUntil(since + CHANGE_AT_MS)))
    const y = Math.round(Math.random() * 1e6)
    const data = { ...SAMPLE_DATA.barChart, points: [{ x: 'Now', y, color: '#2563eb' }] }
    const posted = await fetch(`${server.base}/api/component`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ componentId: seeded.componentId, apiKey: seeded.displayApiKey, timestamp: Date.now() / 1000, data }),
    })
    if (posted.status !== 200) throw new Error(`POST /api/component: ${posted.status} ${await posted.text()}`)
    const isTheChange = (event: { event: string; data: any }) => event.event === 'component' && event.data.id === seeded.componentId && event.data.data?.points?.[0]?.y === y
    const received = await Promise.all(streams.map((stream) => stream.waitFor(isTheChange, 5000)))
    await Promise.all(streams.map((stream) => stream.openUntil(since + HOLD_MS)))
    const report = (stream: WatchedStream, receivedTheChange: boolean): StreamReport => ({
      openForSeconds: Math.floor(((stream.ended?.at ?? performance.now()) - stream.connectedAt) / 1000),
      endedBy: stream.ended?.how,
      receivedTheChange,
      pings: stream.events.filter((event) => event.event === 'ping').length,
    })
    return { signedIn: report(signedIn, received[0]!), shared: report(shared, received[1]!) }
  } finally {
    for (const stream of streams) stream.close()
  }
}

const directory = mkdtempSync(join(tmpdir(), 'worktrack-live-streams-'))
const configFile = join(directory, 'service.config.json')
writeFileSync(configFile, JSON.stringify({ display: { maxStreamsPerUser: STREAMS_PER_USER } }))
let serverDatabase: TestDatabase | undefined
const reports = new Map<string, Promise<RuntimeReport>>()

beforeAll(async () => {
  const ready = runtimes.filter((runtime) => !runtime.skip)
  for (const runtime of ready)
    if (runtime.build) {
      const built = spawnSync(process.execPath, ['run', runtime.build], { encoding: 'utf8' })
      if (built.status !== 0) throw new Error(`npm run ${runtime.build}: ${built.stderr}`)
    }
  if (usingServer()) serverDatabase = await createTestDatabase()
  for (const runtime of ready) {
    let seeded: Promise<Seed>
    if (serverDatabase) seeded = seed(serverDatabase)
    else {
      // The embedded database is one process's: each server gets its own, seeded and let go of first.
      const url = `pglite:${join(directory, runtime.name)}`
      const handle = await openDatabase(url, { loadDataDir: await pgliteTemplate() })
      seeded = seed({ ...handle, url }).finally(() => handle.close())
    }
    const report = onRuntime(runtime, await seeded)
    report.catch(() => {})
    reports.set(runtime.name, report)
  }
}, 120_000)

afterAll(async () => {
  await Promise.allSettled(reports.values())
  await serverDatabase?.close()
  rmSync(directory, { recursive: true, force: true })
})

describe('live streams through each runtime entry', () => {
  for (const runtime of runtimes) {
    const held = `${runtime.name}: a live stream stays open ${HOLD_MS / 1000} s and still delivers a change posted after ${CHANGE_AT_MS / 1000} s`
    const freed = `${runtime.name}: a viewer who goes away gives back their place among display.maxStreamsPerUser`
    if (runtime.skip) {
      console.info(`skipped: ${runtime.name} live streams (${runtime.skip})`)
      test.skip(`${held} (skipped: ${runtime.skip})`, () => {})
      test.skip(`${freed} (skipped: ${runtime.skip})`, () => {})
      continue
    }
    test(
      held,
      async () => {
        const report = (await reports.get(runtime.name)!).hold
        const expected: StreamReport = {
          openForSeconds: expect.any(Number) as unknown as number,
          endedBy: undefined,
          receivedTheChange: true,
          pings: expect.any(Number) as unknown as number,
        }
        expect(report).toEqual({ signedIn: expected, shared: expected })
        for (const stream of [report.signedIn, report.shared]) {
          expect(stream.openForSeconds).toBeGreaterThanOrEqual(HOLD_MS / 1000)
          // The heartbeat reached the client all along: it is what keeps the connection from idling out.
          expect(stream.pings).toBeGreaterThanOrEqual(Math.floor(HOLD_MS / HEARTBEAT_MS) - 1)
        }
      },
      120_000,
    )
    test(
      freed,
      async () => {
        expect((await reports.get(runtime.name)!).place).toEqual({ secondWhileOpen: 429, freedAfterLeaving: true })
      },
      120_000,
    )
  }
})
