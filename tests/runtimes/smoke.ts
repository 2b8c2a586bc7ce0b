/**
 * Runtime smoke check (run by .ci/run, not by `bun test`): the same service starts on Bun,
 * Node 20 and Deno 2, answers /health, and serves an authenticated call with a key made by the
 * operator CLI. Uses a temporary embedded database, or DATABASE_URL when it is set.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

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

const runtimes: Array<{ name: string; build?: string[]; start: string[] }> = [
  { name: 'bun', start: [process.execPath, 'entries/bun.ts'] },
  { name: 'node', build: [bin('bun'), 'run', 'build:node'], start: ['node', 'dist/node/node.js'] },
  { name: 'deno', build: [bin('bun'), 'run', 'build:deno'], start: [bin('deno'), 'run', '--allow-all', 'dist/deno/deno.js'] },
]

let failures = 0
try {
  const org = await cli('org', 'create', '--name', 'Smoke')
  const user = await cli('user', 'create', '--org', org.id, '--email', `smoke-${Date.now()}@example.com`, '--username', 'smoke', '--name', 'Smoke', '--role', 'member', '--password', 'smoke test password')
  const key = await cli('key', 'create', '--user', user.id, '--name', 'smoke', '--scopes', 'users:read')
  for (const [index, runtime] of runtimes.entries()) {
    const port = 3900 + index
    if (runtime.build) await run(runtime.build)
    const child = Bun.spawn(runtime.start, { env: { ...env, PORT: String(port) }, stdout: 'ignore', stderr: 'inherit' })
    try {
      await waitForHealth(port, child)
      const me = await fetch(`http://127.0.0.1:${port}/api/v1/users/me`, { headers: { authorization: `Bearer ${key.secret}` } })
      const body = (await me.json()) as { data?: { user?: { id?: string } } }
      if (me.status !== 200 || body.data?.user?.id !== user.id) throw new Error(`/api/v1/users/me answered ${me.status}`)
      console.log(`ok   ${runtime.name}: /health and an authenticated /api/v1/users/me`)
    } catch (error) {
      failures++
      console.log(`FAIL ${runtime.name}: ${(error as Error).message}`)
    } finally {
      child.kill('SIGTERM')
      await child.exited
    }
  }
} finally {
  rmSync(directory, { recursive: true, force: true })
}
process.exit(failures ? 1 : 0)
