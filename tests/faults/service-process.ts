/**
 * Shared pieces of the fault tests: the real service as a separate process (`bun
 * entries/bun.ts`, killable), fixtures seeded through the service's own functions, a fetch
 * that can never hang, and the 503 envelope every outage must produce.
 */
import { expect } from 'bun:test'
import { openDatabase } from '../../src/db'
import { freePort } from '../helpers/http'
import { createProjectFixture } from '../helpers/project-fixture'
import { startTestService } from '../helpers/service'
import type { TestDatabase } from '../helpers/database'

/** Why the fault tests cannot run on this database, or undefined when they can. */
export const serverSkipReason = process.env.TEST_DATABASE_URL ? undefined : 'needs a PostgreSQL server: TEST_DATABASE_URL'

/** The suffix of a skipped test's name, and one console line, stating why it is skipped. */
export function skipNote(reason: string | undefined, what: string): string {
  if (!reason) return ''
  console.info(`skipped: ${what} (${reason})`)
  return ` (skipped: ${reason})`
}

export interface ServiceProcess {
  pid: number
  base: string
  /** Everything the process wrote on stderr so far (for failure messages). */
  stderr(): string
  alive(): boolean
  /** SIGKILL: no shutdown hook runs, open transactions are left to the server. */
  kill(): Promise<void>
  /** SIGTERM and wait. */
  stop(): Promise<void>
}

/** Starts `bun entries/bun.ts` on `databaseUrl` and waits until /health answers. */
export async function startServiceProcess(databaseUrl: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const port = await freePort()
  const child = Bun.spawn([process.execPath, 'entries/bun.ts'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), SERVICE_CONFIG: '', LOG_LEVEL: 'silent', ...env },
    stdout: 'ignore',
    stderr: 'pipe',
  })
  let stderr = ''
  void (async () => {
    const reader = child.stderr.getReader()
    const decoder = new TextDecoder()
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) stderr += decoder.decode(chunk.value)
  })()
  const base = `http://127.0.0.1:${port}`
  const handle: ServiceProcess = {
    pid: child.pid,
    base,
    stderr: () => stderr,
    alive: () => child.exitCode === null && child.signalCode === null,
    async kill() {
      child.kill('SIGKILL')
      await child.exited
    },
    async stop() {
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await child.exited
      clearTimeout(timer)
    },
  }
  for (const deadline = Date.now() + 30_000; ; ) {
    if (!handle.alive()) throw new Error(`the service exited with ${child.exitCode}: ${stderr.trim()}`)
    try {
      if ((await fetch(`${base}/health`, { signal: AbortSignal.timeout(1000) })).ok) return handle
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await handle.kill()
      throw new Error(`the service did not answer /health within 30 s: ${stderr.trim()}`)
    }
    await Bun.sleep(50)
  }
}

export interface Seeded {
  projectId: string
  organizationId: string
  /** An editor's key with every scope. */
  key: string
}

/**
 * Migrates `databaseUrl` and seeds an organization, users with keys and a project through an
 * in-process service (the same functions the operator CLI and the API use), then lets go of it.
 */
export async function seedProject(databaseUrl: string): Promise<Seeded> {
  const handle = await openDatabase(databaseUrl, { maxConnections: 2 })
  const database: TestDatabase = { ...handle, url: databaseUrl }
  try {
    const api = await startTestService({ database, plugins: ['auth', 'teams', 'projects', 'work-items'] })
    try {
      const fixture = await createProjectFixture(api)
      return { projectId: fixture.projectId, organizationId: fixture.organizationId, key: fixture.keys.editor }
    } finally {
      await api.stop()
    }
  } finally {
    await handle.close()
  }
}

export interface Answer {
  status: number
  headers: Headers
  body: any
  startedAt: number
  endedAt: number
}

/** fetch with a JSON body and a hard client timeout: a request that hangs rejects, it never waits forever. */
export async function call(base: string, method: string, path: string, key: string, body?: unknown, timeoutMs = 8000): Promise<Answer> {
  const startedAt = Date.now()
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON: kept as text, and the envelope check below fails on it
  }
  return { status: response.status, headers: response.headers, body: parsed, startedAt, endedAt: Date.now() }
}

/** The API v1 answer to "the database cannot serve right now" (src/http/errors.ts `unavailable`). */
export function expectUnavailable(answer: Answer): void {
  expect(answer.status).toBe(503)
  expect(answer.headers.get('retry-after')).toMatch(/^[1-9]\d*$/)
  expect(answer.body).toEqual({
    data: null,
    errors: [{ code: 'UNAVAILABLE', message: expect.any(String) }],
    meta: { requestId: expect.any(String) },
  })
  expect(answer.headers.get('x-request-id')).toBe(answer.body.meta.requestId)
}
