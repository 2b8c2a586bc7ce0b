import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { exited } from '../helpers/process'
import { timeLimit } from '../helpers/time'

/**
 * How long a real process may take to start (or to say why not) before the test gives up on it:
 * 90 s. Start-up time is not what these tests prove, and a start on a machine whose two cores run
 * other test files takes tens of seconds; each test's own limit is above it.
 */
const START_MS = 90_000
const TEST_MS = timeLimit(120_000)

/** Starts the real entry with `env` and returns its exit code and stderr. */
async function startProcess(env: Record<string, string>) {
  const child = Bun.spawn([process.execPath, 'entries/bun.ts'], {
    env: { ...process.env, DATABASE_URL: 'pglite://memory', PORT: '0', LOG_LEVEL: 'silent', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => child.kill(), START_MS)
  const code = await child.exited
  clearTimeout(timer)
  return { code, stderr: (await new Response(child.stderr).text()).trim() }
}

describe('start-up refusals (real process)', () => {
  test('an unknown plugin: exit 1 and one line naming it', async () => {
    const { code, stderr } = await startProcess({ PLUGINS_ENABLED: 'auth,serch' })
    expect(code).toBe(1)
    expect(stderr.split('\n')).toHaveLength(1)
    expect(stderr).toStartWith('startup refused: unknown plugin "serch"')
  })

  test('SERVICE_CONFIG naming a missing file: exit 1 and one line naming it (empty: no file, the defaults)', async () => {
    const { code, stderr } = await startProcess({ SERVICE_CONFIG: '/no/such/service.config.json' })
    expect(code).toBe(1)
    expect(stderr).toBe('startup refused: SERVICE_CONFIG names /no/such/service.config.json, which does not exist (set it empty for no config file)')
  })

  test('an unknown LOG_LEVEL: exit 1 and one line listing the levels', async () => {
    const { code, stderr } = await startProcess({ LOG_LEVEL: 'loud', SERVICE_CONFIG: '' })
    expect(code).toBe(1)
    expect(stderr).toBe('startup refused: LOG_LEVEL must be one of debug, info, warn, error, silent (got "loud")')
  })

  test('a missing dependency: exit 1 and one line naming both plugins', async () => {
    const { code, stderr } = await startProcess({ PLUGINS_ENABLED: 'users,docs' })
    expect(code).toBe(1)
    expect(stderr).toBe('startup refused: users needs auth, which is disabled')
  })

  test('a bad config value: exit 1 and one line naming the setting', async () => {
    const file = `/tmp/worktrack-config-${process.pid}.json`
    await Bun.write(file, JSON.stringify({ auth: { keyCacheTtlSeconds: 'forever' } }))
    const { code, stderr } = await startProcess({ SERVICE_CONFIG: file })
    expect(code).toBe(1)
    // The middle is the shared validation wording (src/http/validation-items.ts).
    expect(stderr.split('\n')).toHaveLength(1)
    expect(stderr).toStartWith('startup refused: config auth.keyCacheTtlSeconds: ')
    expect(stderr).toEndWith(' (got "forever")')
  })
})

/** A running entry or listener: its stderr (or stdout) so far, and a wait for a line matching a pattern. */
interface Running {
  child: ReturnType<typeof Bun.spawn>
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>
  stop(): Promise<void>
}

function run(command: string[], env: Record<string, string>, stream: 'stdout' | 'stderr' = 'stderr'): Running {
  const child = Bun.spawn(command, { env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' })
  let text = ''
  const decoder = new TextDecoder()
  const reader = (child[stream] as ReadableStream<Uint8Array>).getReader()
  const reading = (async () => {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value, { stream: true })
  })()
  return {
    child,
    async waitFor(pattern, timeoutMs = START_MS) {
      for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await Bun.sleep(25)) {
        const match = text.match(pattern)
        if (match) return match
        if (child.exitCode !== null) {
          await reading
          throw new Error(`exited with ${child.exitCode} before printing ${pattern}: ${text}`)
        }
      }
      throw new Error(`no ${pattern} within ${timeoutMs} ms: ${text}`)
    },
    async stop() {
      child.kill()
      await child.exited
    },
  }
}

const startEntry = (env: Record<string, string>) =>
  run([process.execPath, 'entries/bun.ts'], { DATABASE_URL: 'pglite://memory', PORT: '0', LOG_LEVEL: 'silent', SERVICE_CONFIG: '', ...env })
const LISTENING = /listening on http:\/\/[^:]+:(\d+) /

describe('start-up refusals: the database URL (real process)', () => {
  test('a DATABASE_URL that is not PostgreSQL: exit 1 and one line, without echoing the URL (it may hold a password)', async () => {
    const { code, stderr } = await startProcess({ DATABASE_URL: 'mysql://admin:hunter2@db.internal/app', SERVICE_CONFIG: '' })
    expect(code).toBe(1)
    expect(stderr).toBe('startup refused: DATABASE_URL must be a postgres:// or postgresql:// URL, pglite:<directory> or pglite://memory (got mysql://…)')
  })

  test('a database that cannot be reached: one line naming DATABASE_URL and where it points, without its password', async () => {
    const { code, stderr } = await startProcess({ DATABASE_URL: 'postgres://app:hunter2@127.0.0.1:1/worktrack', SERVICE_CONFIG: '' })
    expect(code).toBe(1)
    expect(stderr.split('\n')).toHaveLength(1)
    expect(stderr).toStartWith('startup refused: cannot reach the database at postgres://app@127.0.0.1:1/worktrack (DATABASE_URL): ')
    expect(stderr).toContain('ECONNREFUSED')
    expect(stderr).not.toContain('hunter2')
  }, TEST_MS)
})

test('a port a program other than Bun holds: exit 1 and one line naming it and server.reusePort, no stack trace', async () => {
  const listener = run(['node', '-e', "const s = require('node:net').createServer().listen(0, '0.0.0.0', () => console.log('port', s.address().port))"], {}, 'stdout')
  try {
    const port = (await listener.waitFor(/port (\d+)/))[1]!
    const { code, stderr } = await startProcess({ PORT: port, SERVICE_CONFIG: '' })
    expect(code).toBe(1)
    expect(stderr).toBe(`startup refused: port ${port} on 0.0.0.0 is already in use (another instance? set server.reusePort to share it)`)
  } finally {
    await listener.stop()
  }
}, TEST_MS)

test('a taken port is refused within 2 s, before the database is opened or migrated', async () => {
  const listener = run(['node', '-e', "const s = require('node:net').createServer().listen(0, '0.0.0.0', () => console.log('port', s.address().port))"], {}, 'stdout')
  const dir = mkdtempSync(join(tmpdir(), 'worktrack-taken-port-'))
  try {
    const port = (await listener.waitFor(/port (\d+)/))[1]!
    const data = join(dir, 'data')
    const begun = performance.now()
    const { code, stderr } = await startProcess({ PORT: port, SERVICE_CONFIG: '', DATABASE_URL: `pglite:${data}`, LOG_LEVEL: 'info' })
    const ms = performance.now() - begun
    expect(code).toBe(1)
    expect(stderr).toBe(`startup refused: port ${port} on 0.0.0.0 is already in use (another instance? set server.reusePort to share it)`)
    expect(ms).toBeLessThan(2000)
    // Nothing was opened: no data directory (a fresh one is made by opening it), no migration, no lock held.
    expect(existsSync(data)).toBe(false)
    expect(readdirSync(dir)).toEqual([])
  } finally {
    await listener.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}, TEST_MS)

/**
 * One instance (server.reusePort: true, log at info) serves the tests that need a running service
 * beside the process they start: a full start is the costly part of each, so they share it, in
 * order, and the last one stops it.
 */
describe('a running instance: what it says while it starts, serves and stops, and the processes started beside it (real processes)', () => {
  const file = `/tmp/worktrack-reuse-port-${process.pid}.json`
  let instance: Running
  let port: string
  beforeAll(async () => {
    await Bun.write(file, JSON.stringify({ server: { reusePort: true } }))
    instance = startEntry({ SERVICE_CONFIG: file, LOG_LEVEL: 'info' })
    port = (await instance.waitFor(LISTENING))[1]!
  }, TEST_MS)
  afterAll(() => instance.stop())

  test('ready once listening, with the address', async () => {
    const ready = JSON.parse((await instance.waitFor(/\{[^\n]*"service ready"[^\n]*\}/))[0])
    expect(ready).toMatchObject({ level: 'info', message: 'service ready', url: expect.stringContaining(`:${port}`), runtime: expect.stringMatching(/^bun \d/) })
  }, TEST_MS)

  test('a port another instance holds (without server.reusePort): exit 1 and one line naming it and server.reusePort', async () => {
    const { code, stderr } = await startProcess({ PORT: port, SERVICE_CONFIG: '' })
    expect(code).toBe(1)
    expect(stderr).toBe(`startup refused: port ${port} on 0.0.0.0 is already in use (another instance? set server.reusePort to share it)`)
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200)
  }, TEST_MS)

  test('a taken port is refused before anything says the service is ready', async () => {
    const { code, stderr } = await startProcess({ PORT: port, SERVICE_CONFIG: '', LOG_LEVEL: 'info' })
    expect(code).toBe(1)
    expect(stderr).not.toContain('service ready')
    expect(stderr.split('\n').filter((line) => line.startsWith('startup refused: '))).toEqual([expect.stringContaining(`port ${port} on 0.0.0.0 is already in use`)])
  }, TEST_MS)

  test('with server.reusePort: true a second instance shares the port', async () => {
    const second = startEntry({ SERVICE_CONFIG: file, PORT: port })
    try {
      expect((await second.waitFor(LISTENING))[1]).toBe(port)
      expect(second.child.exitCode).toBeNull()
      expect(instance.child.exitCode).toBeNull()
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200)
    } finally {
      await second.stop()
    }
  }, TEST_MS)

  test('on SIGTERM: stopping, stopped, exit 0', async () => {
    instance.child.kill('SIGTERM')
    await instance.waitFor(/"service stopping"[^\n]*"reason":"SIGTERM"/)
    const stopped = JSON.parse((await instance.waitFor(/\{[^\n]*"service stopped"[^\n]*\}/))[0])
    expect(stopped).toMatchObject({ reason: 'SIGTERM', ms: expect.any(Number) })
    expect(await instance.child.exited).toBe(0)
  }, TEST_MS)
})

test('started through a shell that is then killed (npm start): the service stops instead of running on as an orphan', async () => {
  const shell = run(['sh', '-c', `"${process.execPath}" entries/bun.ts & echo "child $!" 1>&2; wait`], { DATABASE_URL: 'pglite://memory', PORT: '0', LOG_LEVEL: 'info', SERVICE_CONFIG: '' })
  const child = Number((await shell.waitFor(/child (\d+)/))[1])
  const alive = () => !exited(child)
  try {
    await shell.waitFor(LISTENING)
    shell.child.kill('SIGKILL')
    // It notices within a second and then stops its database: how long that takes on a busy
    // machine is not the promise, so the wait is long and ends as soon as the process is gone.
    for (const deadline = Date.now() + timeLimit(90_000); alive() && Date.now() < deadline; ) await Bun.sleep(50)
    expect(alive()).toBe(false)
  } finally {
    // Whatever happened above, neither the shell nor the service outlives the test.
    shell.child.kill('SIGKILL')
    if (alive()) process.kill(child, 'SIGKILL')
  }
}, TEST_MS)
