/**
 * Runtime smoke check (run by .ci/run, not by `bun test`): the same service starts on Bun,
 * Node 20 and Deno 2, answers /health, and serves an authenticated call with a key made by the
 * operator CLI. Then again through `npm start`, `npm run start:node` and `npm run start:deno` in a
 * production install (`npm ci --omit=dev` in a copy of the project), which must need no dev
 * dependency; Deno itself comes from PATH there (here: the dev install's, alone in a directory).
 * Uses a temporary embedded database, or DATABASE_URL when it is set.
 */
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'

const directory = mkdtempSync(join(tmpdir(), 'worktrack-runtimes-'))
const env = { ...process.env, DATABASE_URL: process.env.DATABASE_URL || `pglite:${directory}/db`, LOG_LEVEL: 'warn', SERVICE_CONFIG: '' }
const bin = (name: string) => join(process.cwd(), 'node_modules/.bin', name)

async function run(command: string[]): Promise<string> {
  const child = Bun.spawn(command, { env, stdout: 'pipe', stderr: 'inherit' })
  const [code, out] = await Promise.all([child.exited, new Response(child.stdout).text()])
  if (code !== 0) throw new Error(`${command.join(' ')} exited with ${code}`)
  return out
}

const cli = async (...args: string[]) => JSON.parse(await run([process.execPath, 'entries/cli.ts', ...args]))

/** A copy of what a production install needs, installed with `npm ci --omit=dev`; returns its PATH. */
function productionInstall(target: string): string {
  for (const entry of ['package.json', 'package-lock.json', 'scripts', 'entries', 'src', 'plugins', 'migrations'])
    cpSync(entry, join(target, entry), { recursive: true })
  const install = spawnSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: target, env, stdio: ['ignore', 'ignore', 'inherit'] })
  if (install.status !== 0) throw new Error(`npm ci --omit=dev exited with ${install.status}`)
  const denoOnly = join(directory, 'deno-only')
  mkdirSync(denoOnly)
  symlinkSync(realpathSync(bin('deno')), join(denoOnly, 'deno'))
  const path = (process.env.PATH ?? '').split(delimiter).filter((entry) => !entry.endsWith(join('node_modules', '.bin')))
  return [...path, denoOnly].join(delimiter)
}

/** Starts a server in its own process group, so that `npm run`'s shell and server stop with it. */
function startServer(command: string[], options: { cwd?: string; env: Record<string, string | undefined> }) {
  const child = spawn(command[0]!, command.slice(1), { ...options, detached: true, stdio: ['ignore', 'ignore', 'inherit'] })
  const group = -child.pid!
  const alive = () => {
    try {
      process.kill(group, 0)
      return true
    } catch {
      return false
    }
  }
  return {
    child,
    /** Ends the whole group and waits until no process of it is left. */
    async stop() {
      if (alive()) process.kill(group, 'SIGTERM')
      for (let waited = 0; alive(); waited += 100) {
        if (waited === 10_000) process.kill(group, 'SIGKILL')
        await Bun.sleep(100)
      }
    },
  }
}

async function waitForHealth(port: number, child: { exitCode: number | null }): Promise<void> {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode} before answering`)
    try {
      const response = await fetch(`http://127.0.0.1:${port}/health`)
      if (response.ok) return
    } catch {
      // not listening yet
    }
    await Bun.sleep(200)
  }
  throw new Error('no answer on /health within 60 s')
}

const production = join(directory, 'production')
const runtimes: Array<{ name: string; build?: string[]; start: string[]; production?: true }> = [
  { name: 'bun', start: [process.execPath, 'entries/bun.ts'] },
  { name: 'node', build: [bin('bun'), 'run', 'build:node'], start: ['node', 'dist/node/node.js'] },
  { name: 'deno', build: [bin('bun'), 'run', 'build:deno'], start: [bin('deno'), 'run', '--allow-all', 'dist/deno/deno.js'] },
  { name: 'npm start (production install)', start: ['npm', 'start'], production: true },
  { name: 'npm run start:node (production install)', start: ['npm', 'run', 'start:node'], production: true },
  { name: 'npm run start:deno (production install)', start: ['npm', 'run', 'start:deno'], production: true },
]

let failures = 0
try {
  const org = await cli('org', 'create', '--name', 'Smoke')
  const user = await cli('user', 'create', '--org', org.id, '--email', `smoke-${Date.now()}@example.com`, '--username', 'smoke', '--name', 'Smoke', '--role', 'member', '--password', 'smoke test password')
  const key = await cli('key', 'create', '--user', user.id, '--name', 'smoke', '--scopes', 'users:read')
  let productionPath: string | undefined
  for (const [index, runtime] of runtimes.entries()) {
    const port = 3900 + index
    if (runtime.build) await run(runtime.build)
    if (runtime.production) productionPath ??= productionInstall(production)
    const server = runtime.production
      ? startServer(runtime.start, { cwd: production, env: { ...env, PORT: String(port), PATH: productionPath } })
      : startServer(runtime.start, { env: { ...env, PORT: String(port) } })
    try {
      await waitForHealth(port, server.child)
      const me = await fetch(`http://127.0.0.1:${port}/api/v1/users/me`, { headers: { authorization: `Bearer ${key.secret}` } })
      const body = (await me.json()) as { data?: { user?: { id?: string } } }
      if (me.status !== 200 || body.data?.user?.id !== user.id) throw new Error(`/api/v1/users/me answered ${me.status}`)
      console.log(`ok   ${runtime.name}: /health and an authenticated /api/v1/users/me`)
    } catch (error) {
      failures++
      console.log(`FAIL ${runtime.name}: ${(error as Error).message}`)
    } finally {
      await server.stop()
    }
  }
} finally {
  rmSync(directory, { recursive: true, force: true })
}
process.exit(failures ? 1 : 0)
