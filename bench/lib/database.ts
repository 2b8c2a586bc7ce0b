/** Bench databases on the PostgreSQL server: made fresh for each benchmark, seeded, dropped. */
import postgres from 'postgres'
import { openDatabase, type Database } from '../../src/db'
import { migrate } from '../../src/migrate'
import { SERVER_URL } from './settings'

/** Creates (or recreates) a database on the server and returns its URL. */
export async function freshDatabase(name: string): Promise<string> {
  const admin = postgres(SERVER_URL, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`drop database if exists "${name}" with (force)`)
    await admin.unsafe(`create database "${name}"`)
  } finally {
    await admin.end()
  }
  const url = new URL(SERVER_URL)
  url.pathname = `/${name}`
  return url.toString()
}

/** Drops the database of `url` (connected through the server's `postgres` database). */
export async function dropDatabase(url: string): Promise<void> {
  const admin = new URL(url)
  const name = admin.pathname.slice(1)
  admin.pathname = '/postgres'
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} })
  try {
    await sql.unsafe(`drop database if exists "${name}" with (force)`)
  } finally {
    await sql.end()
  }
}

/** A fresh database `name`, migrated as the service migrates it, seeded by `seed`: its URL and what `seed` returned. */
export async function seededDatabase<T>(name: string, seed: (db: Database) => Promise<T>): Promise<{ url: string; seeded: T }> {
  const url = await freshDatabase(name)
  const database = await openDatabase(url)
  try {
    await migrate(database.db)
    return { url, seeded: await seed(database.db) }
  } finally {
    await database.close()
  }
}

/** Runs `work` with a client of the benchmark's own on the database (one connection), then closes it. */
export async function withClient<T>(url: string, work: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    return await work(sql)
  } finally {
    await sql.end()
  }
}
