/**
 * The growth benchmarks' projects: one project per size on a fresh database, grown by SQL
 * (bench/seed/work.ts `seedWork`, synthetic corpus, no entries), statuses in turn (25 %
 * `in_progress`), 1 % of the work items assigned to the caller, vacuumed as autovacuum would
 * have done to a table of this age; and the check that the maintained counts equal the rows.
 */
import { sql } from 'drizzle-orm'
import { queryText } from '../../src/db'
import { seededDatabase, withClient } from '../lib/database'
import { round } from '../lib/stats'
import { seedOrganization, type Seeded } from './organization'
import { seedWork, withoutTextIndexes } from './work'

/** The sizes grown (BENCH_GROWTH_SIZES). */
export const SIZES = (process.env.BENCH_GROWTH_SIZES ?? '10000,100000,1000000').split(',').map(Number)

/** A size as the tables show it: 10k, 100k, 1M. */
export const label = (rows: number) => (rows >= 1_000_000 ? `${round(rows / 1_000_000, 1)}M` : rows >= 1000 ? `${round(rows / 1000, 1)}k` : String(rows))

export interface GrownProject {
  url: string
  seeded: Seeded
  seconds: number
  /** 100 work items spread over the project: the ones the PATCHes change. */
  itemIds: string[]
  /** Rows in `in_progress` and rows assigned to the caller, as seeded. */
  inProgress: number
  assigned: number
}

/** A database (`<prefix>_<size>`) grown to `rows` work items in one project; the maintained counts are checked against the rows. */
export async function growProject(prefix: string, rows: number): Promise<GrownProject> {
  const started = performance.now()
  const { url, seeded } = await seededDatabase(`${prefix}_${label(rows).toLowerCase().replace('.', '_')}`, async (db) => {
    const seeded = await seedOrganization(db, { scopes: ['work_items:read', 'work_items:write'] })
    await withoutTextIndexes(db, async () => {
      await seedWork(db, seeded, { workItems: rows, entries: 0 })
      await queryText(db, 'update work_items set assignee_id = $1 where project_id = $2 and number % 100 = 0', [seeded.userId, seeded.projectId])
    })
    // Vacuumed as autovacuum would have done to a table of this age (and so that it does not start
    // during the measurements): visibility map and statistics in their steady state.
    await db.execute(sql.raw('vacuum (analyze) work_items'))
    const [counted] = await queryText<{ rows: string; inProgress: string; assigned: string; maintained: string }>(
      db,
      `select count(*) as rows, count(*) filter (where status = 'in_progress') as "inProgress", count(*) filter (where assignee_id = $2) as assigned,
         (select coalesce(sum(items), 0) from work_item_counts where project_id = $1) as maintained
       from work_items where project_id = $1`,
      [seeded.projectId, seeded.userId],
    )
    if (Number(counted!.rows) !== rows || Number(counted!.maintained) !== rows) throw new Error(`seeding: ${counted!.rows} work items and maintained counts of ${counted!.maintained}, not ${rows}`)
    const step = Math.max(1, Math.floor(rows / 100))
    const items = await queryText<{ id: string }>(db, 'select id from work_items where project_id = $1 and number % $2 = 0 order by number limit 100', [seeded.projectId, step])
    return { seeded, itemIds: items.map((item) => item.id), inProgress: Number(counted!.inProgress), assigned: Number(counted!.assigned) }
  })
  return { url, ...seeded, seconds: (performance.now() - started) / 1000 }
}

/** Where the project's maintained counts differ from its rows, by status (empty: exact). */
export function countDifferences(url: string, seeded: Seeded): Promise<string[]> {
  return withClient(url, async (client) => {
    const rows = await client.unsafe(
      `select coalesce(r.status, c.status) as status, coalesce(r.items, 0) as rows, coalesce(c.items, 0) as maintained
         from (select status, count(*)::int as items from work_items where project_id = $1 group by status) r
         full join (select status, items from work_item_counts where project_id = $1) c on c.status = r.status
        where coalesce(r.items, 0) <> coalesce(c.items, 0)`,
      [seeded.projectId],
    )
    return rows.map((row) => `${row.status}: ${row.rows} rows, counted ${row.maintained}`)
  })
}
