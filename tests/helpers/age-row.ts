/**
 * Moves a row's `updated_at` back, as if it had last been written `seconds` earlier (its ETag
 * then changes). Citus refuses an UPDATE that applies a STABLE function to a column
 * (`updated_at - interval '1 second'`), so the earlier time is read first and written as a value,
 * to the row of its organization (one shard); the text keeps every microsecond.
 */
import { sql } from 'drizzle-orm'
import { queryRows, type Executor } from '../../src/db'

export async function moveUpdatedAtBack(db: Executor, table: string, row: { id: string; organizationId: string }, seconds = 1): Promise<void> {
  const name = sql.identifier(table)
  const [found] = await queryRows<{ earlier: string }>(
    db,
    sql`select (updated_at - make_interval(secs => ${seconds}))::text as earlier from ${name} where id = ${row.id} and organization_id = ${row.organizationId}`,
  )
  if (!found) throw new Error(`no ${table} row ${row.id} in organization ${row.organizationId}`)
  await db.execute(sql`update ${name} set updated_at = ${found.earlier}::timestamptz where id = ${row.id} and organization_id = ${row.organizationId}`)
}
