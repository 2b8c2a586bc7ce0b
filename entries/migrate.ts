/**
 * `npm run db:migrate`: applies pending migrations to DATABASE_URL (or the embedded database);
 * on a Citus coordinator, also places every table as its plugin's manifest declares.
 */
import { registry } from '../plugins'
import { declaredPlacements } from '../src/citus'
import { openDatabase } from '../src/db'
import { applyMigrations } from '../src/migrate'

const database = await openDatabase(process.env.DATABASE_URL || undefined)
try {
  const { applied, placed } = await applyMigrations(database.db, { placements: declaredPlacements(registry) })
  process.stdout.write(`${JSON.stringify({ applied, ...(placed.length ? { placed: placed.length } : {}), database: database.location })}\n`)
} finally {
  await database.close()
}
