/**
 * Applies the drizzle-kit migrations in `migrations/`, in one transaction under an advisory
 * lock, so several instances starting at once apply each migration exactly once. The
 * bookkeeping table is drizzle's own (`drizzle.__drizzle_migrations`), so drizzle-kit agrees.
 * On a Citus coordinator, the same transaction then places every table not placed yet as the
 * manifests declare (src/citus.ts), so a fresh database and a later migration's new tables end
 * up distributed, reference or local with no other step.
 */
import { readMigrationFiles, type MigrationMeta } from 'drizzle-orm/migrator'
import { sql } from 'drizzle-orm'
import { hasCitus, isSchemaPlaced, placeTables, prepareCitusTransaction, type PlacedTable, type TablePlacements } from './citus'
import { queryRows, type Database } from './db'

export const MIGRATIONS_FOLDER = './migrations'
/** The advisory lock migrations run under (arbitrary, constant: "worktrack migrations"). */
export const MIGRATION_LOCK_KEY = 7_210_331_114

/** Reads the journal; throws if the folder is missing. */
export function readMigrations(folder = MIGRATIONS_FOLDER): MigrationMeta[] {
  return readMigrationFiles({ migrationsFolder: folder })
}

export interface MigrationOptions {
  /** Default: the folder's. */
  migrations?: readonly MigrationMeta[]
  /**
   * The manifests' table placements (`declaredPlacements(registry)`): with them, a Citus
   * coordinator's tables are placed; without, only the migrations are applied.
   */
  placements?: TablePlacements
}

export interface MigrationOutcome {
  /** How many migrations were applied. */
  applied: number
  /** The tables placed on Citus by this run (none on plain PostgreSQL and PGlite). */
  placed: PlacedTable[]
}

/** Applies pending `migrations` (default: the folder's), then places tables on Citus when `placements` are given; returns how many migrations were applied. */
export async function migrate(db: Database, migrations: readonly MigrationMeta[] = readMigrations(), placements?: TablePlacements): Promise<number> {
  return (await applyMigrations(db, { migrations, placements })).applied
}

/** `migrate`, telling also which tables it placed on Citus. */
export async function applyMigrations(db: Database, options: MigrationOptions = {}): Promise<MigrationOutcome> {
  const migrations = options.migrations ?? readMigrations()
  return db.transaction(async (tx) => {
    // database.statementTimeoutMs bounds requests, not this: an index built over a large table (or
    // the wait for another instance's migration, or a busy Citus cluster's placement checks) may
    // rightly take longer, and cancelling it would refuse the start.
    await tx.execute(sql`set local statement_timeout = 0`)
    await tx.execute(sql`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`)
    const citus = await hasCitus(tx)
    if (citus) await prepareCitusTransaction(tx)
    await tx.execute(sql`create schema if not exists drizzle`)
    await tx.execute(
      sql`create table if not exists drizzle.__drizzle_migrations (id serial primary key, hash text not null, created_at bigint)`,
    )
    const [last] = await queryRows<{ created_at: string | number }>(
      tx,
      sql`select created_at from drizzle.__drizzle_migrations order by created_at desc limit 1`,
    )
    const lastApplied = last ? Number(last.created_at) : -1
    const placements = citus ? options.placements : undefined
    let placeEachTable: boolean | undefined
    const placed: PlacedTable[] = []
    let applied = 0
    for (const migration of migrations) {
      if (migration.folderMillis <= lastApplied) continue
      placeEachTable ??= placements !== undefined && (await isSchemaPlaced(tx))
      for (const statement of migration.sql) {
        if (!statement.trim()) continue
        await tx.execute(sql.raw(statement))
        if (placeEachTable) placed.push(...(await placeTables(tx, placements!)))
      }
      await tx.execute(
        sql`insert into drizzle.__drizzle_migrations (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`,
      )
      applied++
    }
    if (placements) placed.push(...(await placeTables(tx, placements)))
    return { applied, placed }
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
