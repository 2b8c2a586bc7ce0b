/**
 * Bulk seeding of work items and entries in SQL (a million rows in minutes, not hours), with
 * text drawn from a fixed vocabulary of 2,000 made-up words so a search term is as selective as
 * a real one: each word lands in ~0.2 % of titles.
 */
import { sql } from 'drizzle-orm'
import type { Database } from '../src/db'

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'be', 'da', 'fu', 'go', 'hi', 'jo', 'pe', 'zu', 'ra', 'no', 'ma', 'te']

/** 2,000 distinct pronounceable words, the same on every run. */
export const VOCABULARY: string[] = (() => {
  const words: string[] = []
  for (const a of SYLLABLES) for (const b of SYLLABLES) for (const c of SYLLABLES.slice(0, 5)) words.push(`${a}${b}${c}`)
  return words
})()

interface SeedCounts {
  workItems: number
  entries: number
}

/** Adds `counts` rows to the project, in batches, numbering work items from where they are. */
export async function seedWork(db: Database, target: { organizationId: string; projectId: string; userId: string }, counts: SeedCounts): Promise<void> {
  const words = sql.raw(`array[${VOCABULARY.map((word) => `'${word}'`).join(',')}]`)
  const phrase = (length: number) =>
    // `0 * g` ties the subquery to each row (every row draws its own words); `0 * s.i` keeps the
    // aggregate at the subquery's level.
    sql.raw(`(select string_agg(w[1 + floor(random() * ${VOCABULARY.length})::int + 0 * s.i], ' ') from generate_series(1, ${length} + 0 * g) as s(i))`)
  const batch = 50_000
  for (let done = 0; done < counts.workItems; done += batch) {
    const n = Math.min(batch, counts.workItems - done)
    await db.execute(sql`
      with w as (select ${words} as w)
      insert into work_items (id, organization_id, project_id, number, title, description, status, priority, position, created_by)
      select gen_random_uuid(), ${target.organizationId}, ${target.projectId}, ${done} + g, ${phrase(4)}, ${phrase(12)},
        (array['todo','in_progress','done','cancelled'])[1 + g % 4], g % 5, ${done} + g - 1, ${target.userId}
      from generate_series(1, ${n}) as g, w`)
  }
  await db.execute(sql`insert into work_item_counters (project_id, organization_id, last_number) values (${target.projectId}, ${target.organizationId}, ${counts.workItems})
    on conflict (project_id, organization_id) do update set last_number = excluded.last_number`)
  for (let done = 0; done < counts.entries; done += batch) {
    const n = Math.min(batch, counts.entries - done)
    await db.execute(sql`
      with w as (select ${words} as w), items as (select id, row_number() over (order by number) as r from work_items where project_id = ${target.projectId})
      insert into entries (id, organization_id, project_id, work_item_id, kind, body, author_id, position)
      select gen_random_uuid(), ${target.organizationId}, ${target.projectId}, items.id, 'comment', ${phrase(15)}, ${target.userId}, g
      from generate_series(1, ${n}) as g, w, items where items.r = 1 + (${done} + g) % ${counts.workItems}`)
  }
  await db.execute(sql`analyze work_items`)
  await db.execute(sql`analyze entries`)
}
