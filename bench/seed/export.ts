/**
 * The export benchmark's project: one organization, its owner's key (the export's scopes), one
 * project grown by SQL to `rows` work items (`insert … select … from generate_series`, batches of
 * 100,000, the text indexes built once afterwards): titles of 100 characters (one in seven with
 * quotes and accented letters, which JSON escapes or sends as UTF-8), descriptions of 200 with a
 * line break (escaped), statuses in turn, priorities 0–4, 1 % assigned to the owner, one in five
 * with a due date, numbers 1..N, positions 0..N-1, a second apart in creation; five labels of the
 * organization, on one work item in ten (a second one on one in twenty-five). The counter and the
 * maintained counts are set to the rows (bench/seed/work.ts `recount`), and the table vacuumed as
 * autovacuum would have done.
 */
import { sql } from 'drizzle-orm'
import { queryRows, queryText, type Database } from '../../src/db'
import { seedOrganization, type Seeded } from './organization'
import { recount, withoutTextIndexes } from './work'

/** Every scope the export asks for (docs/api.md, "Moving work in and out: export"). */
export const EXPORT_SCOPES = ['projects:read', 'work_items:read', 'entries:read', 'relationships:read']

const LABELS: Array<[string, string]> = [
  ['bug', '#d73a4a'],
  ['feature', '#a2eeef'],
  ['chore', '#cfd3d7'],
  ['design', '#7057ff'],
  ['urgent "now"', '#b60205'],
]

export interface ExportProject extends Seeded {
  rows: number
  /** Rows of work_item_labels on the project's work items. */
  labelled: number
}

/** Seeds `db` (fresh, migrated) with the export's organization and project of `rows` work items. */
export async function seedExportProject(db: Database, rows: number): Promise<ExportProject> {
  const seeded = await seedOrganization(db, { scopes: EXPORT_SCOPES })
  const { organizationId: org, projectId: project, userId: user } = seeded
  const batch = 100_000
  await withoutTextIndexes(db, async () => {
    for (let done = 0; done < rows; done += batch) {
      const n = Math.min(batch, rows - done)
      await db.execute(sql`
        insert into work_items (id, organization_id, project_id, number, title, description, status, priority, assignee_id, due_date, position, created_by, created_at, updated_at, started_at, closed_at)
        select gen_random_uuid(), ${org}, ${project}, i,
          left('Item ' || i || case when i % 7 = 0 then ' "quoted" café — naïve ' else ' plain words, nothing to escape ' end || md5(i::text) || ' ' || md5((i + 1)::text) || ' ' || md5((i + 2)::text), 100),
          left(md5('a' || i) || ' ' || md5('b' || i) || ' ' || md5('c' || i) || E'\n' || md5('d' || i) || ' ' || md5('e' || i) || ' ' || md5('f' || i) || ' ' || md5('g' || i), 200),
          (array['todo','in_progress','done','cancelled'])[1 + i % 4], i % 5,
          case when i % 100 = 0 then ${user}::uuid end,
          case when i % 5 = 0 then date '2027-01-01' + (i % 365) end,
          i - 1, ${user}, c.at, c.at,
          case when i % 4 in (1, 2) then c.at end,
          case when i % 4 in (2, 3) then c.at end
        from generate_series(${done + 1}::int, ${done + n}::int) as i, lateral (select now() - make_interval(secs => ${rows} - i) as at) c`)
    }
  })
  await db.execute(sql`insert into work_item_counters (project_id, organization_id, last_number) values (${project}, ${org}, ${rows})
    on conflict (project_id, organization_id) do update set last_number = excluded.last_number`)
  await recount(db, seeded)

  // Arrays as bound values (the sql template would list an array's items as `($1, $2, …)`).
  const labels = await queryText<{ id: string }>(
    db,
    `insert into labels (id, organization_id, name, color)
       select gen_random_uuid(), $1, l.name, l.color from unnest($2::text[], $3::text[]) with ordinality as l(name, color, n) order by l.n
     returning id`,
    [org, LABELS.map(([name]) => name), LABELS.map(([, color]) => color)],
  )
  const ids = labels.map((label) => label.id)
  await queryText(
    db,
    `insert into work_item_labels (work_item_id, label_id, organization_id, project_id)
       select w.id, ($3::uuid[])[1 + w.number % $4], w.organization_id, w.project_id from work_items w
        where w.project_id = $1 and w.organization_id = $2 and w.number % 10 = 0
       union all
       select w.id, ($3::uuid[])[1 + (w.number + 1) % $4], w.organization_id, w.project_id from work_items w
        where w.project_id = $1 and w.organization_id = $2 and w.number % 25 = 0`,
    [project, org, ids, ids.length],
  )
  await db.execute(sql.raw('vacuum (analyze) work_items'))
  await db.execute(sql.raw('vacuum (analyze) work_item_labels'))
  const [counted] = await queryRows<{ rows: string; maintained: string; labelled: string }>(
    db,
    sql`select count(*) as rows, (select coalesce(sum(items), 0) from work_item_counts where project_id = ${project}) as maintained,
          (select count(*) from work_item_labels where project_id = ${project}) as labelled
        from work_items where project_id = ${project}`,
  )
  if (Number(counted!.rows) !== rows || Number(counted!.maintained) !== rows) throw new Error(`export seeding: ${counted!.rows} work items and maintained counts of ${counted!.maintained}, not ${rows}`)
  return { ...seeded, rows, labelled: Number(counted!.labelled) }
}
