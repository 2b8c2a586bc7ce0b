import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openDatabase, queryRows } from '../../src/db'
import { createTestDatabase, usingServer, type TestDatabase } from '../helpers/database'
import { timeLimit } from '../helpers/time'

// The CLI is a separate process, so it needs a database it can open itself: a new database on
// the server, or an embedded database in a temporary directory.
let databaseUrl: string
let serverDatabase: TestDatabase | undefined
let directory: string | undefined

beforeAll(async () => {
  if (usingServer()) {
    serverDatabase = await createTestDatabase()
    databaseUrl = serverDatabase.url
  } else {
    directory = mkdtempSync(join(tmpdir(), 'worktrack-cli-'))
    databaseUrl = `pglite:${directory}/db`
  }
})
afterAll(async () => {
  await serverDatabase?.close()
  if (directory) rmSync(directory, { recursive: true, force: true })
})

async function cli(...args: string[]) {
  return cliWith({}, ...args)
}

async function cliWith(env: Record<string, string>, ...args: string[]) {
  const child = Bun.spawn([process.execPath, 'entries/cli.ts', ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: '', SERVICE_CONFIG: '', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [code, stdout, stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
  return { code, stdout: stdout.trim(), stderr: stderr.trim() }
}

const json = (text: string) => JSON.parse(text)

describe('operator CLI', () => {
  test('org, user, key create, deactivate and revoke: one JSON object each on stdout', async () => {
    const org = await cli('org', 'create', '--name', 'Acme')
    expect(org.code).toBe(0)
    expect(org.stdout.split('\n')).toHaveLength(1)
    const { id: orgId } = json(org.stdout)
    expect(Object.keys(json(org.stdout))).toEqual(['id'])

    const user = await cli('user', 'create', '--org', orgId, '--email', 'Ops@Example.com', '--username', 'ops', '--name', 'Ops Person', '--role', 'administrator', '--password', 'long enough password')
    expect(user.code).toBe(0)
    const { id: userId, displayApiKey } = json(user.stdout)
    expect(Object.keys(json(user.stdout))).toEqual(['id', 'displayApiKey'])
    expect(displayApiKey).toMatch(/^dpk_[0-9A-Za-z]{42}$/)

    const limit = await cli('display-limit', 'set', '--user', userId, '--limit', '250')
    expect(json(limit.stdout)).toEqual({ userId, dailyLimit: 250 })

    const key = await cli('key', 'create', '--user', userId, '--name', 'deploy', '--scopes', 'users:read', '--expires', '2099-01-01T00:00:00Z')
    expect(key.code).toBe(0)
    const created = json(key.stdout)
    expect(created).toEqual({ id: expect.any(String), secret: expect.stringMatching(/^wtk_/), prefix: created.secret.slice(0, 8), scopes: ['users:read'] })

    const revoked = await cli('key', 'revoke', '--id', created.id)
    expect(revoked.code).toBe(0)
    expect(json(revoked.stdout)).toEqual({ id: created.id, revokedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) })

    const deactivated = await cli('user', 'deactivate', '--id', userId)
    expect(json(deactivated.stdout)).toEqual({ id: userId, status: 'deactivated' })

    // Every change is in the audit log with via "cli", and no secret anywhere in it.
    const database = await openDatabase(databaseUrl)
    try {
      const rows = await queryRows<{ action: string; via: string; changes: unknown }>(database.db, sql`select action, via, changes from audit_logs order by occurred_at, id`)
      expect(rows.map((row) => row.action)).toEqual(['organization.created', 'user.created', 'display_account.limit_set', 'api_key.created', 'api_key.revoked', 'user.deactivated'])
      expect(rows.every((row) => row.via === 'cli')).toBe(true)
      expect(JSON.stringify(rows)).not.toContain(created.secret.slice(8))
      expect(JSON.stringify(rows)).not.toContain('long enough password')
      expect(JSON.stringify(rows)).not.toContain(displayApiKey.slice(8))
    } finally {
      await database.close()
    }
  }, timeLimit(120_000))

  test('errors: a JSON object with "error" on stderr, nothing on stdout, non-zero exit', async () => {
    const unknownCommand = await cli('org', 'explode')
    expect(unknownCommand.code).not.toBe(0)
    expect(unknownCommand.stdout).toBe('')
    expect(json(unknownCommand.stderr).error).toStartWith('unknown command "org explode"')

    const missingFlag = await cli('org', 'create')
    expect(missingFlag.code).not.toBe(0)
    expect(json(missingFlag.stderr).error).toContain('--name')

    const badRole = await cli('user', 'create', '--org', '01a20000-0000-7000-8000-000000000000', '--email', 'x@example.com', '--username', 'x', '--name', 'X', '--role', 'king', '--password', 'long enough password')
    expect(badRole.code).not.toBe(0)
    expect(badRole.stdout).toBe('')
    expect(json(badRole.stderr)).toMatchObject({ code: 'BAD_REQUEST', flag: 'role' })
    expect(json(badRole.stderr).error).toStartWith('invalid --role (member | administrator | superadministrator): ')
  }, timeLimit(120_000))

  test('--help and -h print the usage on stdout and exit 0, without a database', async () => {
    for (const help of ['--help', '-h']) {
      // An unusable DATABASE_URL proves the help opens no database.
      const overall = await cliWith({ DATABASE_URL: 'mysql://nowhere' }, help)
      expect(overall.code).toBe(0)
      expect(overall.stderr).toBe('')
      for (const command of ['org create', 'user create', 'user deactivate', 'key create', 'key revoke', 'display-limit set']) expect(overall.stdout).toContain(command)
    }
    const keyCreate = await cli('key', 'create', '--help')
    expect(keyCreate.code).toBe(0)
    expect(keyCreate.stdout).toStartWith('usage: npm run --silent cli -- key create --user USER --name NAME --scopes SCOPES [--expires EXPIRES]')
    expect(keyCreate.stdout).toMatch(/--user +required +Owner user id/)
    expect(keyCreate.stdout).toMatch(/--expires +optional +Expiry, an ISO 8601 date-time/)
    // Help wins over missing or value-less flags, wherever it stands.
    expect((await cli('key', 'create', '--user', '-h')).stdout).toStartWith('usage: npm run --silent cli -- key create')
    const group = await cli('key', '-h')
    expect(group.stdout).toContain('key create')
    expect(group.stdout).not.toContain('org create')

    const unknown = await cli('org', 'explode', '--help')
    expect(unknown.code).toBe(2)
    expect(json(unknown.stderr).error).toStartWith('unknown command "org explode"')
    const none = await cli()
    expect(none.code).toBe(2)
    expect(json(none.stderr).error).toStartWith('no command given (commands: setup, org create, ')
  }, timeLimit(120_000))

  test('key create: --scopes all grants every scope of the enabled plugins; an unknown scope lists the valid ones; errors name the flag', async () => {
    const { id: orgId } = json((await cli('org', 'create', '--name', 'Scopes')).stdout)
    const { id: userId } = json((await cli('user', 'create', '--org', orgId, '--email', 'scopes@example.com', '--username', 'scopes', '--name', 'Scopes', '--role', 'member', '--password', 'long enough password')).stdout)

    const all = await cli('key', 'create', '--user', userId, '--name', 'everything', '--scopes', 'all')
    expect(all.code).toBe(0)
    const { registry } = await import('../../plugins')
    // Every scope, in the order the plugins are mounted (dependencies first).
    expect([...json(all.stdout).scopes].sort()).toEqual(registry.flatMap((plugin) => (plugin.scopes ?? []).map((scope) => scope.name)).sort())
    const withoutDashboards = await cliWith({ PLUGINS_DISABLED: 'alerts,push,work-dashboards,display' }, 'key', 'create', '--user', userId, '--name', 'no dashboards', '--scopes', 'all')
    expect(withoutDashboards.code).toBe(0)
    expect(json(withoutDashboards.stdout).scopes).toEqual(json(all.stdout).scopes.filter((scope: string) => !scope.startsWith('dashboards:')))

    const typo = await cli('key', 'create', '--user', userId, '--name', 'typo', '--scopes', 'users:read,usres:read')
    expect(typo.code).toBe(1)
    expect(typo.stdout).toBe('')
    const refusal = json(typo.stderr)
    expect(refusal).toMatchObject({ code: 'BAD_REQUEST', flag: 'scopes' })
    expect(refusal.error).toContain('unknown scope "usres:read"; valid: users:read, users:write, teams:read, ')
    expect(refusal.error).toEndWith('audit_logs:read, webhooks:read, webhooks:write, or all')

    const expires = await cli('key', 'create', '--user', userId, '--name', 'soon', '--scopes', 'users:read', '--expires', 'tomorrow')
    expect(expires.code).toBe(1)
    const expiry = json(expires.stderr)
    expect(expiry.flag).toBe('expires')
    expect(expiry.field).toBeUndefined()
    expect(expiry.error).toStartWith('invalid --expires (Expiry, an ISO 8601 date-time')
    expect(expiry.error).not.toContain('expiresAt')

    const badOrg = await cli('user', 'create', '--org', 'acme', '--email', 'x@example.com', '--username', 'x', '--name', 'X', '--role', 'member', '--password', 'long enough password')
    expect(json(badOrg.stderr)).toMatchObject({ flag: 'org', error: expect.stringMatching(/^invalid --org \(/) })
    expect(badOrg.stderr).not.toContain('organizationId')
  }, timeLimit(120_000))

  test('user list: the users of an organization by username, with --status; --org needed once there are several', async () => {
    const { id: orgId } = json((await cli('org', 'create', '--name', 'Listed')).stdout)
    const made: Record<string, string> = {}
    for (const [username, role] of [['zoe', 'member'], ['adam', 'administrator'], ['mia', 'member']])
      made[username] = json((await cli('user', 'create', '--org', orgId, '--email', `${username}@listed.example`, '--username', username, '--name', username, '--role', role, '--password', 'long enough password')).stdout).id
    await cli('user', 'deactivate', '--id', made.mia!)
    const listed = await cli('user', 'list', '--org', orgId)
    expect(listed.code).toBe(0)
    expect(json(listed.stdout)).toEqual({
      organization: { id: orgId, name: 'Listed' },
      users: [
        { id: made.adam, email: 'adam@listed.example', username: 'adam', role: 'administrator', status: 'active' },
        { id: made.mia, email: 'mia@listed.example', username: 'mia', role: 'member', status: 'deactivated' },
        { id: made.zoe, email: 'zoe@listed.example', username: 'zoe', role: 'member', status: 'active' },
      ],
    })
    expect(json((await cli('user', 'list', '--org', orgId, '--status', 'deactivated')).stdout).users.map((user: { username: string }) => user.username)).toEqual(['mia'])
    // Several organizations by now: which one must be said.
    const unnamed = await cli('user', 'list')
    expect(unnamed.code).toBe(1)
    expect(json(unnamed.stderr)).toMatchObject({ code: 'BAD_REQUEST', flag: 'org', error: expect.stringContaining('several organizations') })
    const badStatus = await cli('user', 'list', '--org', orgId, '--status', 'gone')
    expect(json(badStatus.stderr)).toMatchObject({ flag: 'status' })
  }, timeLimit(120_000))
})
