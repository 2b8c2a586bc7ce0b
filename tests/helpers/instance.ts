/**
 * Service instances as separate processes, for tests that run several on one PostgreSQL database.
 *
 * As a module: `startInstance` spawns `bun tests/helpers/instance.ts` and resolves once it serves
 * and `/health` answers 200. As a process it reads DATABASE_URL, INSTANCE_CONFIG (the content of
 * service.config.json as JSON), PORT (unset or 0: any free port), INSTANCE_NAME, and optionally
 * FAKE_FCM_PORT with FAKE_FCM_CA (a file) to deliver pushes to the fake FCM; it prints
 * `ready <port>` once it serves and stops cleanly on SIGTERM.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { registry } from '../../plugins'
import { createService, type Service } from '../../src/app'
import { loadConfig } from '../../src/config'
import { FcmOptionsRef } from '../../plugins/push/api'
import { createTestDatabase } from './database'
import { fakeFcmOptions, redirectFcm } from './fake-fcm'
import { timeLimit } from './time'

export interface InstanceProcessOptions {
  databaseUrl: string
  /** service.config.json content. */
  raw?: Record<string, unknown>
  /** Serve HTTP on 127.0.0.1 at this port (0: any free one); undefined: no HTTP (workers only). */
  port?: number
  /** Deliver pushes to the fake FCM on this port, trusting `ca`. */
  fcm?: { port: number; ca: string | Buffer }
  /** Names the FCM access token (`test-access-token-<name>`), so the fake can tell senders apart. */
  name?: string
}

/** Builds the service in this process (the body of an instance process); returns its HTTP port. */
export async function runInstance(options: InstanceProcessOptions): Promise<{ service: Service; port?: number; stop(): Promise<void> }> {
  if (options.fcm) redirectFcm(options.fcm.port, options.fcm.ca)
  const config = loadConfig(registry, { raw: options.raw ?? {}, env: { DATABASE_URL: options.databaseUrl } })
  const fcm = fakeFcmOptions()
  const credential = options.name ? { getAccessToken: async () => ({ access_token: `test-access-token-${options.name}`, expires_in: 3600 }) } : fcm.credential
  // An embedded database of its own starts from the migrated template the test files use (cached
  // on disk), not by migrating in this process: under CI's load a fresh one took over 90 s.
  const embedded = /^pglite:(\/\/)?memory$/.test(options.databaseUrl) && !process.env.TEST_DATABASE_URL ? await createTestDatabase() : undefined
  const service = await createService({
    registry,
    config,
    ...(embedded ? { database: embedded } : {}),
    provide: options.fcm ? (services) => services.provide(FcmOptionsRef, { ...fcm, credential }) : undefined,
    // A write with a list scope that changes rows without an audit record fails (src/writes.ts).
    requireAudit: true,
  })
  const server =
    options.port === undefined
      ? undefined
      : Bun.serve({ port: options.port, hostname: '127.0.0.1', fetch: (request, bun) => service.fetch(request, { ip: bun.requestIP(request)?.address }) })
  return {
    service,
    port: server?.port,
    async stop() {
      server?.stop(true)
      await service.stop()
      await embedded?.close()
    },
  }
}

export interface Instance {
  name: string
  url: string
  port: number
  pid: number
  /** What the process wrote on stderr (its log lines), for diagnostics. */
  output(): string
  /** SIGTERM (a clean stop), then SIGKILL if it has not exited within 5 s. */
  stop(): Promise<void>
}

export interface StartInstanceOptions {
  name: string
  databaseUrl: string
  /** service.config.json content for this instance. */
  config?: Record<string, unknown>
  /** The fake FCM to deliver pushes to (tests/helpers/fake-fcm.ts). */
  fcm?: { port: number; ca: string | Buffer }
  /** Extra environment (LOG_LEVEL defaults to warn). */
  env?: Record<string, string>
  timeoutMs?: number
}

/** Starts an instance process and waits until it serves and `/health` answers 200. */
export async function startInstance(options: StartInstanceOptions): Promise<Instance> {
  const scratch = mkdtempSync(join(tmpdir(), 'worktrack-instance-'))
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    LOG_LEVEL: 'warn',
    ...options.env,
    DATABASE_URL: options.databaseUrl,
    INSTANCE_CONFIG: JSON.stringify(options.config ?? {}),
    INSTANCE_NAME: options.name,
    PORT: '0',
  }
  if (options.fcm) {
    writeFileSync(join(scratch, 'ca.pem'), options.fcm.ca)
    env.FAKE_FCM_PORT = String(options.fcm.port)
    env.FAKE_FCM_CA = join(scratch, 'ca.pem')
  }
  const child = Bun.spawn([process.execPath, import.meta.path], { env, stdout: 'pipe', stderr: 'pipe' })
  let stderr = ''
  void (async () => {
    const reader = child.stderr.getReader()
    const decoder = new TextDecoder()
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) stderr = (stderr + decoder.decode(chunk.value, { stream: true })).slice(-64_000)
  })()
  const output = () => stderr
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await child.exited
      clearTimeout(timer)
    }
    rmSync(scratch, { recursive: true, force: true })
  }

  try {
    // Stretched like every test's time limit (TEST_TIME_SCALE): CI's lanes share two cores.
    const port = await readyPort(child, options.timeoutMs ?? timeLimit(30_000), output)
    const url = `http://127.0.0.1:${port}`
    const health = await fetch(`${url}/health`)
    if (health.status !== 200) throw new Error(`instance ${options.name}: /health answered ${health.status}`)
    return { name: options.name, url, port, pid: child.pid, output, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

/** Reads the child's stdout until `ready <port>`; fails if it exits or takes too long. */
async function readyPort(child: Bun.Subprocess<'ignore', 'pipe', 'pipe'>, timeoutMs: number, output: () => string): Promise<number> {
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let text = ''
  const deadline = Date.now() + timeoutMs
  try {
    for (;;) {
      const match = /^ready (\d+)$/m.exec(text)
      if (match) return Number(match[1])
      const left = deadline - Date.now()
      const chunk = left > 0 ? await Promise.race([reader.read(), Bun.sleep(left).then(() => 'timeout' as const)]) : 'timeout'
      if (chunk === 'timeout') throw new Error(`instance did not start within ${timeoutMs} ms; stderr:\n${output()}`)
      if (chunk.done) {
        await child.exited
        throw new Error(`instance exited with ${child.exitCode ?? child.signalCode} before serving; stderr:\n${output()}`)
      }
      text += decoder.decode(chunk.value, { stream: true })
    }
  } finally {
    reader.releaseLock()
  }
}

if (import.meta.main) {
  const fakePort = process.env.FAKE_FCM_PORT
  const instance = await runInstance({
    databaseUrl: process.env.DATABASE_URL!,
    raw: JSON.parse(process.env.INSTANCE_CONFIG ?? '{}'),
    port: Number(process.env.PORT ?? 0),
    fcm: fakePort ? { port: Number(fakePort), ca: readFileSync(process.env.FAKE_FCM_CA!) } : undefined,
    name: process.env.INSTANCE_NAME || undefined,
  })
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await instance.stop().catch(() => {})
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  process.stdout.write(`ready ${instance.port}\n`)
}
