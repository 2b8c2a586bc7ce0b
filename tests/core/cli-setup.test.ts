/**
 * `npm run setup`: the first organization, its superadministrator and a key of every scope in one
 * command, all or nothing, with or without the server running. On the embedded database the
 * server holds the database, so the CLI's commands run through it (src/control.ts): its control
 * file is private to its user, its door answers only its token from this machine, and it goes
 * away with the server.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { controlPath, readControl } from '../../src/control'
import { openDatabase, queryText } from '../../src/db'
import { createTestDatabase, timeLimit, usingServer, type TestDatabase } from '../helpers/database'

let directory: string
beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), 'worktrack-setup-'))
})
afterAll(() => rmSync(directory, { recursive: true, force: true }))

const ENV = { LOG_LEVEL: '', SERVICE_CONFIG: '' }

async function cli(databaseUrl: string, ...args: string[]) {
  const child = Bun.spawn([process.execPath, 'entries/cli.ts', ...args], { env: { ...process.env, ...ENV, DATABASE_URL: databaseUrl }, stdout: 'pipe', stderr: 'pipe' })
  const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
  return { code, stdout: stdout.trim(), stderr: stderr.trim() }
}

/** The server entry on `databaseUrl`, once it listens: its base URL. */
async function startServer(databaseUrl: string) {
  const child = Bun.spawn([process.execPath, 'entries/bun.ts'], { env: { ...process.env, ...ENV, LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl, PORT: '0' }, stdout: 'pipe', stderr: 'pipe' })
  const reader = (child.stderr as ReadableStream<Uint8Array>).getReader()
  let text = ''
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    const chunk = await reader.read()
    if (chunk.done) throw new Error(`the server exited: ${text}`)
    text += new TextDecoder().decode(chunk.value)
    const port = /listening on http:\/\/[^:]+:(\d+) /.exec(text)?.[1]
    if (port) return { child, url: `http://127.0.0.1:${port}` }
  }
  child.kill()
  throw new Error(`the server did not listen: ${text}`)
}

const running: Array<{ child: ReturnType<typeof Bun.spawn> }> = []
afterEach(async () => {
  for (const server of running.splice(0)) {
    server.child.kill()
    await server.child.exited
  }
})

const me = (url: string, secret: string) => fetch(`${url}/api/v1/users/me`, { headers: { authorization: `Bearer ${secret}` } })

describe('npm run setup', () => {
  test('while the server runs on the embedded database: a working key in one command, no restart', async () => {
    const databaseUrl = `pglite:${directory}/running/db`
    const server = await startServer(databaseUrl)
    running.push(server)
    const file = controlPath(`${directory}/running/db`)
    expect(statSync(file).mode & 0o777).toBe(0o600)

    const started = performance.now()
    const setup = await cli(databaseUrl, 'setup', '--email', 'first@example.com')
    expect(setup.stderr).toBe('')
    expect(setup.code).toBe(0)
    const made = JSON.parse(setup.stdout)
    console.log(`setup through the running server: ${Math.round(performance.now() - started)} ms`)
    expect(made).toMatchObject({ organization: { name: 'My organization' }, user: { email: 'first@example.com', username: 'admin', role: 'superadministrator' } })
    expect(made.user.password).toMatch(/^[\w-]{16}$/)
    expect(made.key.secret).toMatch(/^wtk_/)
    expect(made.next[0]).toContain(made.key.secret)
    // The hints are true: teammates are invited on the People page, or with POST /api/v1/users (which the key may call).
    expect(made.next.join('\n')).toContain('/account/people')
    const invite = made.next.find((line: string) => line.includes('/api/v1/users') && line.includes('-d '))
    expect(invite).toContain('teammate@example.com')

    const answer = await me(server.url, made.key.secret)
    expect(answer.status).toBe(200)
    expect((await answer.json()).data.user).toMatchObject({ email: 'first@example.com', role: 'superadministrator' })
    // Every scope of the enabled plugins: a project can be created with it.
    const project = await fetch(`${server.url}/api/v1/projects`, { method: 'POST', headers: { authorization: `Bearer ${made.key.secret}`, 'content-type': 'application/json' }, body: '{"name":"First"}' })
    expect(project.status).toBe(201)
    // The password signs in.
    const session = await fetch(`${server.url}/account/api/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'first@example.com', password: made.user.password }) })
    expect(session.status).toBeLessThan(300)

    // Any CLI command goes through the server the same way; a second setup is refused, and changes nothing.
    const key = await cli(databaseUrl, 'key', 'create', '--user', made.user.id, '--name', 'second', '--scopes', 'users:read')
    expect(key.code).toBe(0)
    expect((await me(server.url, JSON.parse(key.stdout).secret)).status).toBe(200)
    // One organization: `user list` needs no --org.
    const listed = await cli(databaseUrl, 'user', 'list')
    expect(JSON.parse(listed.stdout)).toEqual({
      organization: made.organization,
      users: [{ id: made.user.id, email: 'first@example.com', username: 'admin', role: 'superadministrator', status: 'active' }],
    })
    // The invitation hint works as printed (its key holds users:write).
    const invited = await fetch(`${server.url}/api/v1/users`, { method: 'POST', headers: { authorization: `Bearer ${made.key.secret}`, 'content-type': 'application/json' }, body: '{"email":"teammate@example.com"}' })
    expect(invited.status).toBe(201)
    expect((await invited.json()).data.inviteUrl).toContain('/account/invite/wti_')
    const again = await cli(databaseUrl, 'setup')
    expect(again.code).toBe(1)
    expect(JSON.parse(again.stderr)).toMatchObject({ code: 'CONFLICT', error: expect.stringContaining('already set up') })
    const usage = await cli(databaseUrl, 'key', 'create', '--user', made.user.id)
    expect(usage.code).toBe(2)

    server.child.kill('SIGTERM')
    await server.child.exited
    expect(existsSync(file)).toBe(false)
  }, timeLimit(120_000))

  test("the control door answers only its own token, from this machine, with a list of words", async () => {
    const databaseUrl = `pglite:${directory}/door/db`
    const server = await startServer(databaseUrl)
    running.push(server)
    const control = readControl(`${directory}/door/db`, server.child.pid)!
    expect(control.url).toContain(server.url.split(':').at(-1)!)
    const post = (token: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/_control/cli`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
    expect((await post('wrong', { argv: ['setup'] })).status).toBe(401)
    expect((await post(control.token.slice(0, -1), { argv: ['setup'] })).status).toBe(401)
    expect((await post(control.token, { argv: 'setup' })).status).toBe(401)
    expect((await post(control.token, { argv: Array.from({ length: 65 }, () => 'x') })).status).toBe(401)
    // The door is not in the API's document.
    const document = await (await fetch(`${server.url}/docs/json`)).json()
    expect(Object.keys(document.paths).filter((path) => path.includes('_control'))).toEqual([])
    // Nothing was set up by the refused calls.
    const ok = await post(control.token, { argv: ['setup', '--password', 'long enough password'] })
    expect(ok.status).toBe(200)
    const outcome = await ok.json()
    expect(outcome.code).toBe(0)
    expect(JSON.parse(outcome.stdout).user).not.toHaveProperty('password')
  }, timeLimit(120_000))
})

describe('npm run setup without a server', () => {
  let serverDatabase: TestDatabase | undefined
  afterAll(async () => {
    await serverDatabase?.close()
  })

  test('all or nothing: an invalid email writes nothing, then the same command with a good one works', async () => {
    let databaseUrl = `pglite:${directory}/alone/db`
    if (usingServer()) {
      serverDatabase = await createTestDatabase()
      databaseUrl = serverDatabase.url
    }
    const refused = await cli(databaseUrl, 'setup', '--email', 'not an email', '--org', 'Acme')
    expect(refused.code).toBe(1)
    const error = JSON.parse(refused.stderr)
    expect(error.flag).toBe('email')
    expect(error.error).not.toContain('Expected')
    const short = await cli(databaseUrl, 'setup', '--password', 'short')
    expect(short.code).toBe(1)
    expect(JSON.parse(short.stderr).flag).toBe('password')

    const made = await cli(databaseUrl, 'setup', '--org', 'Acme', '--email', 'Owner@Example.com', '--username', 'owner', '--name', 'Owner', '--password', 'long enough password')
    expect(made.code).toBe(0)
    const result = JSON.parse(made.stdout)
    expect(result).toMatchObject({ organization: { name: 'Acme' }, user: { email: 'owner@example.com', username: 'owner' } })
    expect(result.user).not.toHaveProperty('password')
    // Only one organization exists: the refused attempts left none behind.
    const orgs = await cli(databaseUrl, 'org', 'create', '--name', 'Second')
    expect(orgs.code).toBe(0)
    const database = serverDatabase ?? (await openDatabase(databaseUrl))
    try {
      const [row] = await queryText<{ n: number }>(database.db, 'select count(*)::int as n from organizations', [])
      expect(row!.n).toBe(2)
    } finally {
      if (!serverDatabase) await database.close()
    }
  }, timeLimit(120_000))
})
