/**
 * A fresh database for one test file: a new database on the PostgreSQL server when
 * TEST_DATABASE_URL is set, otherwise an in-memory PGlite loaded from a migrated template
 * (built once, cached under node_modules/.cache, so each file starts in a fraction of a second).
 * When TEST_DATABASE_URL names a database of a Citus coordinator with its workers added, the new
 * database is a copy, on every node, of a migrated and placed template (built once per set of
 * migrations; creating and placing a cluster database takes 10 to 20 s, a copy under a second).
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import postgres from 'postgres'
import { openDatabase, queryText, type Database, type DatabaseHandle } from '../../src/db'
import { declaredPlacements } from '../../src/citus'
import { applyMigrations, migrate, MIGRATIONS_FOLDER } from '../../src/migrate'
import { registry } from '../../plugins'
import { createClusterDatabase } from './citus-cluster'

export interface TestDatabase extends DatabaseHandle {
  /** postgres://… of this database, or `pglite:memory` (a separate process cannot share it). */
  url: string
}

export const usingServer = () => Boolean(process.env.TEST_DATABASE_URL)

/** What `sqlOn` queries: a test service (its database), or a database handle. */
export type SqlTarget = { service: { core: { db: Database } } } | { db: Database }

/**
 * A test's SQL: `sql(text, parameters)` on `target`, a service or a handle, or a function giving
 * one (read at each call, so it may name a service that `beforeAll` starts later). A call may
 * name another target as its third argument (a second instance on the same database).
 */
export function sqlOn(target: SqlTarget | (() => SqlTarget)) {
  const dbOf = (on: SqlTarget) => ('db' in on ? on.db : on.service.core.db)
  return <T = any>(text: string, parameters: unknown[] = [], on?: SqlTarget): Promise<T[]> =>
    queryText<T>(dbOf(on ?? (typeof target === 'function' ? target() : target)), text, parameters)
}

export { timeLimit } from './time'

function migrationsFingerprint(): string {
  const hash = createHash('sha256')
  const pglite = JSON.parse(readFileSync('node_modules/@electric-sql/pglite/package.json', 'utf8')).version
  hash.update(pglite)
  for (const file of readdirSync(MIGRATIONS_FOLDER).sort()) if (file.endsWith('.sql')) hash.update(readFileSync(join(MIGRATIONS_FOLDER, file)))
  hash.update(readFileSync(join(MIGRATIONS_FOLDER, 'meta/_journal.json')))
  return hash.digest('hex').slice(0, 16)
}

let template: Promise<Blob> | undefined

/** The migrated embedded database every test file starts from, built once and cached on disk. */
export async function pgliteTemplate(): Promise<Blob> {
  const dir = 'node_modules/.cache/worktrack'
  const file = join(dir, `pglite-template-${migrationsFingerprint()}.tar`)
  if (existsSync(file)) return new Blob([readFileSync(file)])
  const database = await openDatabase('pglite:memory')
  await migrate(database.db)
  const dump = await database.pglite!.dumpDataDir('none')
  await database.close()
  mkdirSync(dir, { recursive: true })
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, Buffer.from(await dump.arrayBuffer()))
  renameSync(temporary, file)
  return dump
}

/** Opens a new, migrated, empty database; `close()` drops it. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL
  if (!serverUrl) {
    template ??= pgliteTemplate()
    const handle = await openDatabase('pglite:memory', { loadDataDir: await template })
    return { ...handle, url: 'pglite:memory' }
  }
  const name = `wt_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
  if (await isCitusCoordinator(admin)) return citusTestDatabase(serverUrl, admin, name)
  await admin.unsafe(`create database "${name}"`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  const handle = await openDatabase(url.toString(), { maxConnections: 10 })
  return {
    ...handle,
    url: url.toString(),
    async close() {
      await handle.close()
      await retryWhileInUse(() => admin.unsafe(`drop database if exists "${name}" with (force)`))
      await admin.end()
    },
  }
}

async function isCitusCoordinator(admin: postgres.Sql): Promise<boolean> {
  citusNodes ??= (async () => {
    const [row] = await admin.unsafe<{ citus: boolean }[]>(`select exists (select 1 from pg_extension where extname = 'citus') as citus`)
    if (!row?.citus) return null
    const workers = await admin.unsafe<{ host: string; port: number }[]>('select node_name as host, node_port as port from citus_get_active_worker_nodes() order by 1, 2')
    const url = new URL(process.env.TEST_DATABASE_URL!)
    return [{ host: url.hostname, port: Number(url.port || 5432) }, ...workers.map((worker) => ({ host: worker.host, port: Number(worker.port) }))]
  })()
  return (await citusNodes) !== null
}

let citusNodes: Promise<{ host: string; port: number }[] | null> | undefined
let citusTemplate: Promise<string> | undefined

/**
 * Runs `run` again while it fails with 55006 (object in use), for up to 60 s: `drop database …
 * with (force)` waits only 5 s for the sessions it terminates to exit, and on a loaded cluster a
 * worker's backend serving the coordinator can take longer than that.
 */
async function retryWhileInUse<T>(run: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 60_000
  for (;;) {
    try {
      return await run()
    } catch (error) {
      if ((error as { code?: string }).code !== '55006' || Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
  }
}

/** Runs `statements` in the `postgres` database of each node, one after another. */
async function onEveryNode(statements: (node: number) => string[]): Promise<void> {
  const nodes = (await citusNodes)!
  for (const [index, node] of nodes.entries()) {
    const url = new URL(process.env.TEST_DATABASE_URL!)
    url.hostname = node.host
    url.port = String(node.port)
    url.pathname = '/postgres'
    const client = postgres(url.toString(), { max: 1, onnotice: () => {} })
    try {
      for (const statement of statements(index)) await retryWhileInUse(() => client.unsafe(statement))
    } finally {
      await client.end()
    }
  }
}

/**
 * The migrated, placed template of this set of migrations on every node, built by the first test
 * file that needs it (an advisory lock on the coordinator keeps concurrent runs to one build).
 * Connections to it are then refused, so Citus's maintenance daemons leave it and it can be copied.
 */
function citusTemplateDatabase(serverUrl: string, admin: postgres.Sql): Promise<string> {
  citusTemplate ??= (async () => {
    const name = `wt_citus_template_${migrationsFingerprint()}`
    await admin.unsafe('select pg_advisory_lock(7210331115)')
    try {
      const [exists] = await admin.unsafe<{ ready: boolean }[]>(`select not datallowconn as ready from pg_database where datname = '${name}'`)
      if (exists?.ready) return name
      if (exists) await onEveryNode(() => [`drop database if exists "${name}" with (force)`])
      const cluster = await createClusterDatabase(serverUrl, name)
      const handle = await openDatabase(cluster.url, { maxConnections: 2 })
      try {
        await applyMigrations(handle.db, { placements: declaredPlacements(registry) })
      } finally {
        await handle.close()
      }
      await onEveryNode(() => [`alter database "${name}" with allow_connections false`, `select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}'`])
      return name
    } finally {
      await admin.unsafe('select pg_advisory_unlock(7210331115)')
    }
  })()
  return citusTemplate
}

async function citusTestDatabase(serverUrl: string, admin: postgres.Sql, name: string): Promise<TestDatabase> {
  const template = await citusTemplateDatabase(serverUrl, admin)
  await onEveryNode(() => [`create database "${name}" template "${template}"`])
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  const handle = await openDatabase(url.toString(), { maxConnections: 10 })
  return {
    ...handle,
    url: url.toString(),
    async close() {
      await handle.close()
      await onEveryNode(() => [`drop database if exists "${name}" with (force)`])
      await admin.end()
    },
  }
}
