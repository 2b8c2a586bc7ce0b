/** `npm run db:migrate`: applies pending migrations to DATABASE_URL (or the embedded database). */
import { openDatabase } from '../src/db'
import { migrate } from '../src/migrate'

const database = await openDatabase(process.env.DATABASE_URL || undefined)
try {
  const applied = await migrate(database.db)
  process.stdout.write(`${JSON.stringify({ applied, database: database.location })}\n`)
} finally {
  await database.close()
}
