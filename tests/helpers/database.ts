/**
 * A fresh database for one test file: a new database on the PostgreSQL server when
 * TEST_DATABASE_URL is set, otherwise an in-memory PGlite loaded from a migrated template
 * (built once, cached under node_modules/.cache, so each file starts in a fraction of a second).
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import postgres from 'postgres'
import { openDatabase, type DatabaseHandle } from '../../src/db'
import { migrate, MIGRATIONS_FOLDER } from '../../src/migrate'

export interface TestDatabase extends DatabaseHandle {
  /** postgres://… of this database, or `pglite:memory` (a separate process cannot share it). */
  url: string
}

export const usingServer = () => Boolean(process.env.TEST_DATABASE_URL)

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
  await admin.unsafe(`create database "${name}"`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  const handle = await openDatabase(url.toString(), { maxConnections: 10 })
  return {
    ...handle,
    url: url.toString(),
    async close() {
      await handle.close()
      await admin.unsafe(`drop database if exists "${name}" with (force)`)
      await admin.end()
    },
  }
}
