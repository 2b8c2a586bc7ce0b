/**
 * Applies the drizzle-kit migrations in `migrations/`, in one transaction under an advisory
 * lock, so several instances starting at once apply each migration exactly once. The
 * bookkeeping table is drizzle's own (`drizzle.__drizzle_migrations`), so drizzle-kit agrees.
 */
import { readMigrationFiles, type MigrationMeta } from 'drizzle-orm/migrator'
import { sql } from 'drizzle-orm'
import { queryRows, type Database } from './db'

export const MIGRATIONS_FOLDER = './migrations'
const LOCK_KEY = 7_210_331_114 // arbitrary, constant: "worktrack migrations"

/** Reads the journal; throws if the folder is missing. */
export function readMigrations(folder = MIGRATIONS_FOLDER): MigrationMeta[] {
  return readMigrationFiles({ migrationsFolder: folder })
}

/** Applies pending `migrations` (default: the folder's); returns how many were applied. */
export async function migrate(db: Database, migrations: readonly MigrationMeta[] = readMigrations()): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${LOCK_KEY})`)
    await tx.execute(sql`create schema if not exists drizzle`)
    await tx.execute(
      sql`create table if not exists drizzle.__drizzle_migrations (id serial primary key, hash text not null, created_at bigint)`,
    )
    const [last] = await queryRows<{ created_at: string | number }>(
      tx,
      sql`select created_at from drizzle.__drizzle_migrations order by created_at desc limit 1`,
    )
    const lastApplied = last ? Number(last.created_at) : -1
    let applied = 0
    for (const migration of migrations) {
      if (migration.folderMillis <= lastApplied) continue
      for (const statement of migration.sql) if (statement.trim()) await tx.execute(sql.raw(statement))
      await tx.execute(
        sql`insert into drizzle.__drizzle_migrations (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`,
      )
      applied++
    }
    return applied
  })
}

/**
 * A check that every one of `migrations` (default: the folder's, read once) is applied: one
 * query per call. It throws when the database cannot be reached.
 */
export function migrationCheck(db: Database, migrations: readonly MigrationMeta[] = readMigrations()): () => Promise<boolean> {
  const latest = migrations.at(-1)
  return async () => {
    if (!latest) return true
    const [row] = await queryRows<{ applied: boolean }>(
      db,
      sql`select coalesce(to_regclass('drizzle.__drizzle_migrations') is not null and exists(select 1 from drizzle.__drizzle_migrations where created_at >= ${latest.folderMillis}), false) as applied`,
    )
    return Boolean(row?.applied)
  }
}
