import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openDatabase, queryRows } from '../../src/db'
import { createTestDatabase, usingServer, type TestDatabase } from '../helpers/database'

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
  const child = Bun.spawn([process.execPath, 'entries/cli.ts', ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: '', SERVICE_CONFIG: '' },
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
  }, 120_000)

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
    expect(json(badRole.stderr)).toMatchObject({ code: 'BAD_REQUEST', field: 'role' })
  }, 120_000)
})
